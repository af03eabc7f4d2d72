#!/bin/bash
# be-g1-r0: brings this docker-sonic-vs container up with fablab's configs; rendered by
# fablab from ai-cluster. containerlab's exec starts it in the background.
# Progress and result, one line in /tmp/fablab-init.status:
#   running <step>   while working, then exactly
#   ok               or
#   failed <step>: <detail>
# Steps: sysctls, config_db, ports, data ports, mgmt, flavour, zebra, mgmtd, bgpd, bfdd, frr.conf.
# Its log: /tmp/fablab-init.log.
set -u

NAME=be-g1-r0
# FABLAB_INIT_ROOT prefixes every file path, so that tests can run the script on a tree of their own.
ROOT=${FABLAB_INIT_ROOT:-}
DIR=$ROOT/etc/fablab
SONIC_ETC=$ROOT/etc/sonic
BFDD=$ROOT/usr/lib/frr/bfdd
STATUS=$ROOT/tmp/fablab-init.status
STEP_TIMEOUT=${FABLAB_INIT_STEP_TIMEOUT:-285}
POLL=1
PORTS=(Ethernet0 Ethernet8 Ethernet256 Ethernet260 Ethernet264 Ethernet268)
# The containerlab endpoint (ethN) of each port, in the same order: vslib copies frames
# between it and the port's tap.
DATA_PORTS=(eth1 eth2 eth33 eth34 eth35 eth36)
MGMT=eth0
MGMT_IP=172.31.0.16
MGMT_BROADCAST=172.31.15.255
# containerlab sets these from the node's sysctls (the clab file says why each).
SYSCTLS=(
  net.ipv6.conf.all.disable_ipv6=0
  net.ipv6.conf.default.disable_ipv6=0
  net.ipv4.ip_forward=1
  net.ipv6.conf.all.forwarding=1
  net.ipv4.fib_multipath_hash_policy=1
  net.ipv4.conf.all.ignore_routes_with_linkdown=1
  net.ipv4.conf.default.ignore_routes_with_linkdown=1
  net.ipv6.conf.all.accept_dad=0
  net.ipv6.conf.default.accept_dad=0
  net.ipv4.conf.all.rp_filter=0
  net.ipv4.conf.default.rp_filter=0
)
STEP=start

# One run at a time: a second start (exec run again) leaves the first one to finish.
exec 9>"$STATUS.lock"
if ! flock -n 9; then
  echo "$(date '+%F %T') init.sh is already running"
  exit 0
fi

status() {
  # Written aside and renamed, so that a reader never sees half a line.
  printf '%s\n' "$1" >"$STATUS.tmp" && mv -f "$STATUS.tmp" "$STATUS"
}

begin() {
  STEP=$1
  echo "$(date '+%F %T') $STEP"
  status "running $STEP"
}

fail() {
  local detail
  detail=$(printf '%s' "$*" | tr -s '\n\t' '  ' | cut -c1-500)
  echo "$(date '+%F %T') failed $STEP: $detail"
  trap - EXIT
  status "failed $STEP: $detail"
  exit 1
}

trap 'fail "init.sh ended before its last step"' EXIT
trap 'fail "init.sh was stopped by a signal"' TERM INT HUP

# Runs "$@" every POLL seconds until it succeeds; false once STEP_TIMEOUT seconds have passed.
wait_for() {
  local deadline=$((SECONDS + STEP_TIMEOUT))
  until "$@"; do
    if ((SECONDS >= deadline)); then
      return 1
    fi
    sleep "$POLL"
  done
}

answers() {
  vtysh -d "$1" -c 'show version' >/dev/null 2>&1
}

redis_answers() {
  sonic-db-cli PING 2>/dev/null | grep -q PONG
}

config_db_initialized() {
  [ "$(sonic-db-cli CONFIG_DB GET CONFIG_DB_INITIALIZED 2>/dev/null)" = 1 ]
}

db_hostname() {
  sonic-db-cli CONFIG_DB HGET 'DEVICE_METADATA|localhost' hostname 2>/dev/null
}

hostname_is_ours() {
  [ "$(db_hostname)" = "$NAME" ]
}

# Every interface named is in the kernel; MISSING names those that are not.
MISSING=
all_present() {
  local p
  MISSING=
  for p in "$@"; do
    [ -e "/sys/class/net/$p" ] || MISSING="$MISSING $p"
  done
  [ -z "$MISSING" ]
}

# The kernel also handles what arrives on ethN (vslib only reads it): left alone, ethN
# answers ARP for its EthernetN's addresses with its own MAC, hosts keep that answer, and
# their traffic is routed without crossing EthernetN (a fault there misses it, counters
# lie). SONiC's own tests turn ARP and IPv6 off on ethN (sonic-swss tests/conftest.py).
quiet_data_ports() {
  local p wrong=
  for p in "${DATA_PORTS[@]}"; do
    ip link set dev "$p" arp off || wrong="$wrong $p(arp)"
    echo 1 >"/proc/sys/net/ipv6/conf/$p/disable_ipv6" || wrong="$wrong $p(ipv6)"
    ip -o link show dev "$p" | grep -q NOARP || wrong="$wrong $p(still arp)"
    [ "$(cat "/proc/sys/net/ipv6/conf/$p/disable_ipv6")" = 1 ] || wrong="$wrong $p(still ipv6)"
  done
  [ -z "$wrong" ] || fail "could not quiet the data interfaces:$wrong"
}

# A SONiC switch keeps its management port in a VRF of its own (MGMT_VRF_CONFIG, applied by
# hostcfgd and interfaces-config); docker-sonic-vs has neither, and its eth0 sits in the
# default VRF with Docker's default route and forwarding on. So the same separation is made
# with iptables, as the netns runtime makes it with nft: nothing forwarded into or out of
# eth0, eth0 takes only what is addressed to its own address, and that address is not
# reachable from the data ports.
separate_mgmt() {
  local cmd
  for cmd in iptables ip6tables; do
    "$cmd" -w -N FABLAB_MGMT_FWD 2>/dev/null || "$cmd" -w -F FABLAB_MGMT_FWD || return 1
    "$cmd" -w -A FABLAB_MGMT_FWD -i "$MGMT" -j DROP &&
      "$cmd" -w -A FABLAB_MGMT_FWD -o "$MGMT" -j DROP || return 1
    "$cmd" -w -C FORWARD -j FABLAB_MGMT_FWD 2>/dev/null || "$cmd" -w -I FORWARD 1 -j FABLAB_MGMT_FWD || return 1
  done
  iptables -w -N FABLAB_MGMT_IN 2>/dev/null || iptables -w -F FABLAB_MGMT_IN || return 1
  iptables -w -A FABLAB_MGMT_IN -i lo -j RETURN &&
    iptables -w -A FABLAB_MGMT_IN -i "$MGMT" -d "$MGMT_IP" -j RETURN &&
    iptables -w -A FABLAB_MGMT_IN -i "$MGMT" -d "$MGMT_BROADCAST" -j RETURN &&
    iptables -w -A FABLAB_MGMT_IN -i "$MGMT" -d 255.255.255.255 -j RETURN &&
    iptables -w -A FABLAB_MGMT_IN -i "$MGMT" -d 224.0.0.0/4 -j RETURN &&
    iptables -w -A FABLAB_MGMT_IN -i "$MGMT" -j DROP &&
    iptables -w -A FABLAB_MGMT_IN -d "$MGMT_IP" -j DROP || return 1
  iptables -w -C INPUT -j FABLAB_MGMT_IN 2>/dev/null || iptables -w -I INPUT 1 -j FABLAB_MGMT_IN
}

# master images since 2026-06 run FRR from supervisord after start.sh exits, with bgpcfgd,
# which renders FRR config of its own from CONFIG_DB (and adds RM_SET_SRC once Loopback0 is
# up); released images (202305..202605) start FRR from start.sh and have no bgpcfgd.
FLAVOUR=released
detect_flavour() {
  if [ -e "$ROOT/usr/local/bin/bgpcfgd" ] ||
    supervisorctl status bgpcfgd 2>&1 | grep -Eq 'RUNNING|STARTING|STOPPED|EXITED|BACKOFF|FATAL'; then
    FLAVOUR=bgpcfgd
  fi
}

# fablab's frr.conf is the switch's whole FRR configuration: a second writer would fight it
# (and hold mgmtd's lock while it writes).
stop_bgpcfgd() {
  local p
  for p in bgpcfgd bgpmon staticroutebfd; do
    case $(supervisorctl status "$p" 2>&1) in
      *RUNNING* | *STARTING* | *BACKOFF*) supervisorctl stop "$p" >/dev/null 2>&1 ;;
    esac
  done
  case $(supervisorctl status bgpcfgd 2>&1) in
    *RUNNING* | *STARTING* | *BACKOFF*) return 1 ;;
  esac
}

# What bgpcfgd added before it was stopped.
remove_bgpcfgd_config() {
  local running rm
  running=$(vtysh -c 'show running-config' 2>/dev/null) || return 1
  for rm in RM_SET_SRC RM_SET_SRC6; do
    if printf '%s\n' "$running" | grep -q "route-map $rm"; then
      echo "$(date '+%F %T') removing route-map $rm (bgpcfgd's)"
      vtysh -c 'configure terminal' -c "no ip protocol bgp route-map $rm" -c "no ipv6 protocol bgp route-map $rm" \
        -c "no route-map $rm" >/dev/null 2>&1
    fi
  done
  ! vtysh -c 'show running-config' 2>/dev/null | grep -Eq 'route-map (RM_SET_SRC|RM_SET_SRC6)'
}

HAS_MGMTD=
[ -e "$ROOT/usr/lib/frr/mgmtd" ] && HAS_MGMTD=yes
# FRR 10's mgmtd holds its datastore lock while it loads its own config; a vtysh -f then is
# refused ("could not lock candidate DS", "Lock already taken on DS"): wait until mgmtd is
# connected and no datastore shows locked, as SONiC's bgpcfgd does.
mgmtd_ready() {
  vtysh -c 'show daemons' 2>/dev/null | grep -qw mgmtd &&
    ! vtysh -c 'show mgmt datastore all' 2>/dev/null | grep -Eq 'Locked:.*True'
}

# What only the emulation needs (harness/core/emulation.py), before the frr.conf: never the
# engineer's to write. Refused while mgmtd holds its lock, like the frr.conf: asked again.
EMULATE_OUT=
emulate() {
  EMULATE_OUT=$(vtysh -c 'configure terminal' -c 'no zebra nexthop kernel enable' 2>&1)
}

FRR_OUT=
apply_frr_conf() {
  local rc=0
  FRR_OUT=$(vtysh -f "$DIR/frr.conf" 2>&1) || rc=$?
  if printf '%s' "$FRR_OUT" | grep -Eqi 'could not lock|lock already taken'; then
    echo "$(date '+%F %T') mgmtd's datastore was locked: vtysh -f again in $POLL s"
    return 1
  fi
  [ "$rc" = 0 ] || fail "vtysh -f $DIR/frr.conf exited $rc: $FRR_OUT"
}

# containerlab asks supervisord for bgpd right after starting supervisord, which may not
# be listening yet; so ask again until bgpd answers.
start_bgpd() {
  answers bgpd && return 0
  case $(supervisorctl status bgpd 2>&1) in
    *RUNNING* | *STARTING*) ;;
    *) supervisorctl start bgpd >/dev/null 2>&1 ;;
  esac
  return 1
}

# supervisord of released images has no bfdd ("no such process"); start it the way SONiC's
# bgp container does (bfdd -A 127.0.0.1), detached, once.
BFDD_DIRECT=
start_bfdd() {
  answers bfdd && return 0
  case $(supervisorctl status bfdd 2>&1) in
    *"no such process"*)
      if [ -z "$BFDD_DIRECT" ]; then
        # 9>&-: the daemon must not keep this script's lock held after the script ends.
        if "$BFDD" -d -A 127.0.0.1 9>&-; then BFDD_DIRECT=started; else BFDD_DIRECT="exited $?"; fi
      fi
      ;;
    *RUNNING* | *STARTING*) ;;
    *) supervisorctl start bfdd >/dev/null 2>&1 ;;
  esac
  return 1
}

begin sysctls
wrong=
for kv in "${SYSCTLS[@]}"; do
  key=${kv%%=*}
  want=${kv#*=}
  have=$(cat "/proc/sys/${key//.//}" 2>/dev/null || echo missing)
  [ "$have" = "$want" ] || wrong="$wrong $key=$have (want $want)"
done
[ -z "$wrong" ] || fail "${wrong# }: the node's sysctls were not applied"

begin config_db
# start.sh (run by supervisord) merges /etc/sonic/config_db.json into CONFIG_DB if the file
# is there when it looks; it later renames a file onto that path, so the path cannot be a
# bind mount. ln refuses to replace a file start.sh made itself: then config load below.
if [ ! -e "$SONIC_ETC/config_db.json" ]; then
  mkdir -p "$SONIC_ETC"
  cp "$DIR/config_db.json" "$SONIC_ETC/.fablab-config_db.json" &&
    ln "$SONIC_ETC/.fablab-config_db.json" "$SONIC_ETC/config_db.json" 2>/dev/null
  rm -f "$SONIC_ETC/.fablab-config_db.json"
fi
wait_for redis_answers || fail "redis does not answer sonic-db-cli PING"
wait_for config_db_initialized || fail "CONFIG_DB_INITIALIZED is not 1: start.sh loaded no config (see /var/log/syslog)"
if ! hostname_is_ours; then
  out=$(config load -y "$DIR/config_db.json" 2>&1) || fail "config load -y $DIR/config_db.json exited $?: $out"
fi
wait_for hostname_is_ours || fail "DEVICE_METADATA|localhost hostname is '$(db_hostname)', not $NAME"

begin ports
wait_for all_present "${PORTS[@]}" || fail "not in the kernel:$MISSING (are the PORT lanes those of HwSKU ${HWSKU:-unset}?)"
wait_for all_present "${DATA_PORTS[@]}" || fail "containerlab's endpoints not in the container:$MISSING"

begin "data ports"
quiet_data_ports
echo "$(date '+%F %T') ARP and IPv6 off on 6 data interfaces (${DATA_PORTS[0]}..): traffic crosses EthernetN"

begin mgmt
separate_mgmt || fail "iptables could not keep $MGMT apart from the data ports"
echo "$(date '+%F %T') $MGMT: docker-sonic-vs does not apply MGMT_VRF_CONFIG (config_db.json has it, for hardware);" \
  "the same separation is enforced with iptables: nothing forwarded into or out of $MGMT, $MGMT_IP only on $MGMT"

begin flavour
detect_flavour
echo "$(date '+%F %T') image flavour: $FLAVOUR"
if [ "$FLAVOUR" = bgpcfgd ]; then
  wait_for stop_bgpcfgd || fail "bgpcfgd does not stop; supervisorctl: $(supervisorctl status bgpcfgd 2>&1)"
  echo "$(date '+%F %T') stopped bgpcfgd, bgpmon, staticroutebfd: fablab's frr.conf is the FRR configuration"
fi

begin zebra
wait_for answers zebra || fail "zebra does not answer vtysh; supervisorctl: $(supervisorctl status zebra 2>&1)"

begin mgmtd
if [ -n "$HAS_MGMTD" ]; then
  wait_for mgmtd_ready || fail "mgmtd is not connected, or its datastore stays locked: $(vtysh -c 'show mgmt datastore all' 2>&1 | tr '\n' ' ')"
fi

begin bgpd
wait_for start_bgpd || fail "bgpd does not answer vtysh; supervisorctl: $(supervisorctl status bgpd 2>&1)"

begin bfdd
wait_for start_bfdd ||
  fail "bfdd does not answer vtysh; supervisorctl: $(supervisorctl status bfdd 2>&1); $BFDD: ${BFDD_DIRECT:-not run}"

begin frr.conf
if [ "$FLAVOUR" = bgpcfgd ]; then
  wait_for remove_bgpcfgd_config || fail "bgpcfgd's route-maps stay in FRR's config"
fi
wait_for emulate || fail "FRR refused the emulation's own lines: $EMULATE_OUT"
wait_for apply_frr_conf || fail "mgmtd's datastore stayed locked for $STEP_TIMEOUT s: $FRR_OUT"

trap - EXIT
status ok
echo "$(date '+%F %T') ok"
