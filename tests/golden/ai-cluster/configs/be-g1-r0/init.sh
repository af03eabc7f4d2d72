#!/bin/bash
# be-g1-r0: brings this docker-sonic-vs container up with fablab's configs; rendered by
# fablab from ai-cluster. containerlab's exec starts it in the background.
# Progress and result, one line in /tmp/fablab-init.status:
#   running <step>   while working, then exactly
#   ok               or
#   failed <step>: <detail>
# Steps: sysctls, config_db, ports, zebra, bgpd, bfdd, frr.conf. Its log: /tmp/fablab-init.log.
set -u

NAME=be-g1-r0
# FABLAB_INIT_ROOT prefixes every file path, so that tests can run the script on a tree of their own.
ROOT=${FABLAB_INIT_ROOT:-}
DIR=$ROOT/etc/fablab
SONIC_ETC=$ROOT/etc/sonic
BFDD=$ROOT/usr/lib/frr/bfdd
STATUS=$ROOT/tmp/fablab-init.status
STEP_TIMEOUT=${FABLAB_INIT_STEP_TIMEOUT:-300}
POLL=1
PORTS=(Ethernet0 Ethernet8 Ethernet256 Ethernet260 Ethernet264 Ethernet268)
# containerlab sets these from the node's sysctls; BGP unnumbered needs IPv6 link-local
# addresses, which Docker turns off on an IPv4-only network.
SYSCTLS=(
  net.ipv6.conf.all.disable_ipv6=0
  net.ipv6.conf.default.disable_ipv6=0
  net.ipv4.fib_multipath_hash_policy=1
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

MISSING=
all_ports_present() {
  local p
  MISSING=
  for p in "${PORTS[@]}"; do
    [ -e "/sys/class/net/$p" ] || MISSING="$MISSING $p"
  done
  [ -z "$MISSING" ]
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
wait_for all_ports_present || fail "not in the kernel:$MISSING (are the PORT lanes those of HwSKU ${HWSKU:-unset}?)"

begin zebra
wait_for answers zebra || fail "zebra does not answer vtysh; supervisorctl: $(supervisorctl status zebra 2>&1)"

begin bgpd
wait_for start_bgpd || fail "bgpd does not answer vtysh; supervisorctl: $(supervisorctl status bgpd 2>&1)"

begin bfdd
wait_for start_bfdd ||
  fail "bfdd does not answer vtysh; supervisorctl: $(supervisorctl status bfdd 2>&1); $BFDD: ${BFDD_DIRECT:-not run}"

begin frr.conf
out=$(vtysh -f "$DIR/frr.conf" 2>&1) || fail "vtysh -f $DIR/frr.conf exited $?: $out"

trap - EXIT
status ok
echo "$(date '+%F %T') ok"
