"""Run a rendered init.sh against real FRR in a network namespace (needs root and FRR).

What only docker-sonic-vs has is stood in for by small scripts on PATH: sonic-db-cli (a
CONFIG_DB that, like start.sh's configdb-load.sh, loads /etc/sonic/config_db.json once the
file is there), SONiC's `config load`, and supervisorctl (which has no bfdd, as on released
images, and starts the real bgpd). zebra, bgpd, bfdd and vtysh are FRR's own, with FRR's
default paths on a tmpfs of the namespace's own mount namespace; the script's files live
under FABLAB_INIT_ROOT. Each test checks the status-file protocol the runtime polls.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from harness.render import artifacts

SWITCH = "be-g1-r0"
FRR = Path("/usr/lib/frr")

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root: creates a network namespace and mounts"),
    pytest.mark.skipif(shutil.which("vtysh") is None or not (FRR / "bfdd").exists(),
                       reason="needs FRR (Debian package: frr)"),
    pytest.mark.skipif(shutil.which("ip") is None, reason="needs iproute2"),
    pytest.mark.skipif(shutil.which("iptables") is None, reason="needs iptables (docker-sonic-vs has it; make deps)"),
]

SONIC_DB_CLI = r"""#!/bin/bash
S=$FABLAB_TEST_STATE
echo "sonic-db-cli $* [$(cat "$FABLAB_INIT_ROOT/tmp/fablab-init.status")]" >>"$S/trace"
case "$*" in
  PING) echo PONG ;;
  "CONFIG_DB GET CONFIG_DB_INITIALIZED")
    if [ -e "$S/start_sh_runs" ] && [ ! -e "$S/loaded" ] && [ -e "$FABLAB_INIT_ROOT/etc/sonic/config_db.json" ]; then
      python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["DEVICE_METADATA"]["localhost"]["hostname"])' \
        "$FABLAB_INIT_ROOT/etc/sonic/config_db.json" >"$S/hostname"
      touch "$S/loaded"
    fi
    [ -e "$S/loaded" ] && echo 1 ;;
  "CONFIG_DB HGET DEVICE_METADATA|localhost hostname") cat "$S/hostname" 2>/dev/null ;;
  *) exit 1 ;;
esac
"""

CONFIG = r"""#!/bin/bash
S=$FABLAB_TEST_STATE
echo "config $*" >>"$S/trace"
[ "$1 $2" = "load -y" ] || exit 2
python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["DEVICE_METADATA"]["localhost"]["hostname"])' \
  "$3" >"$S/hostname"
"""

SUPERVISORCTL = r"""#!/bin/bash
S=$FABLAB_TEST_STATE
echo "supervisorctl $* [$(cat "$FABLAB_INIT_ROOT/tmp/fablab-init.status")]" >>"$S/trace"
case "$1 $2" in
  # a master image (state file bgpcfgd): bgpcfgd runs until stopped
  "status bgpcfgd" | "status bgpmon" | "status staticroutebfd")
    if [ -e "$S/bgpcfgd" ]; then
      if [ -e "$S/stopped-$2" ]; then echo "$2 STOPPED"; exit 3; else echo "$2 RUNNING"; fi
    fi
    exit 1 ;;
  "stop bgpcfgd" | "stop bgpmon" | "stop staticroutebfd") touch "$S/stopped-$2"; echo "$2: stopped" ;;
  "status bfdd") echo "bfdd: ERROR (no such process)"; exit 4 ;;
  "status bgpd" | "status zebra")
    if [ -e "/var/run/frr/$2.pid" ] && kill -0 "$(cat "/var/run/frr/$2.pid")" 2>/dev/null; then
      echo "$2 RUNNING"
    else
      echo "$2 STOPPED"; exit 3
    fi ;;
  # supervisord starts bgpd, not the script: nothing of the script's is inherited
  "start bgpd") /usr/lib/frr/bgpd -d -A 127.0.0.1 9>&- && echo "bgpd: started" ;;
  *) exit 1 ;;
esac
"""

# FRR 8.4 has no mgmtd: where a test says so (state file `lock`: how many more times the
# datastore is locked), this stands in for FRR 10's: `show daemons` lists it, `show mgmt
# datastore all` and `vtysh -f` see the lock until it is released.
VTYSH = r"""#!/bin/bash
S=$FABLAB_TEST_STATE
echo "vtysh $* [$(cat "$FABLAB_INIT_ROOT/tmp/fablab-init.status")]" >>"$S/trace"
if [ -e "$S/lock" ]; then
  left=$(cat "$S/lock")
  case "$*" in
    "-c show daemons") echo " mgmtd zebra bgpd bfdd"; exit 0 ;;
    "-c show mgmt datastore all")
      state=False
      if [ "$left" -gt 0 ] && [ ! -e "$S/lock_only_on_commit" ]; then state=True; echo $((left - 1)) >"$S/lock"; fi
      printf 'Datastore: candidate\n    Locked: \t\t\t%s Session-ID: 1\n' "$state"; exit 0 ;;
    -f*)
      if [ "$left" -gt 0 ]; then
        echo $((left - 1)) >"$S/lock"
        echo "% command failed, could not lock candidate DS"; exit 1
      fi ;;
  esac
fi
exec /usr/bin/vtysh "$@"
"""

# Inside `ip netns exec` (its own mount namespace, / a slave): FRR's default paths on tmpfs,
# the sysctls containerlab would set, the switch's ports, zebra as start.sh starts it.
DRIVER = r"""#!/bin/bash
set -u
T=$1
PORTS=$2
DATA=$3
mount -t tmpfs tmpfs /run && mkdir -p /run/frr && chown frr:frr /run/frr
mount -t tmpfs tmpfs /etc/frr
cleanup() {
  for pid in /run/frr/*.pid; do [ -e "$pid" ] && kill "$(cat "$pid")" 2>/dev/null; done
}
trap cleanup EXIT
ip link set lo up
while read -r kv; do sysctl -qw "$kv"; done <"$T/sysctls"
set -- $DATA
for p in $PORTS; do
  if [ $# -gt 0 ]; then ip link add "$p" type veth peer name "$1"; shift; else ip link add "$p" type veth peer name "x$p"; fi
done
ip link add eth0 type veth peer name mgmtpeer
[ -e "$T/before.sh" ] && bash "$T/before.sh"
/usr/lib/frr/zebra -d -A 127.0.0.1
[ -e "$T/zebra.conf" ] && vtysh -f "$T/zebra.conf" >/dev/null 2>&1
PATH=$T/stubs:$PATH FABLAB_INIT_ROOT=$T/root FABLAB_TEST_STATE=$T/state FABLAB_INIT_STEP_TIMEOUT=3 \
  bash "$T/root/etc/fablab/init.sh" >"$T/init.log" 2>&1
echo "init exit $?" >>"$T/init.log"
if flock -n "$T/root/tmp/fablab-init.status.lock" true; then echo free; else echo held; fi >"$T/lock"
vtysh -c 'show running-config' >"$T/running.conf" 2>&1
for d in zebra bgpd bfdd; do
  if [ -e "/run/frr/$d.pid" ]; then echo "$d" >>"$T/daemons"; fi
done
iptables -w -S >"$T/iptables" 2>&1
ip6tables -w -S >"$T/ip6tables" 2>&1
ip -o link show >"$T/links"
for p in $DATA; do echo "$p $(cat /proc/sys/net/ipv6/conf/$p/disable_ipv6)"; done >"$T/data_ipv6"
exit 0
"""


class Switch:
    """A tree for one run: the rendered files under root/etc/fablab, stubs, stand-in state."""

    def __init__(self, tmp: Path, files: dict[str, str]):
        self.tmp = tmp
        self.root = tmp / "root"
        self.state = tmp / "state"
        for d in (self.root / "etc/fablab", self.root / "tmp", self.root / "usr/lib/frr", self.state, tmp / "stubs"):
            d.mkdir(parents=True)
        for name in ("config_db.json", "frr.conf", "init.sh"):
            (self.root / "etc/fablab" / name).write_text(files[f"configs/{SWITCH}/{name}"])
        (self.root / "usr/lib/frr/bfdd").symlink_to(FRR / "bfdd")
        for name, text in (("sonic-db-cli", SONIC_DB_CLI), ("config", CONFIG), ("supervisorctl", SUPERVISORCTL),
                           ("vtysh", VTYSH)):
            path = tmp / "stubs" / name
            path.write_text(text)
            path.chmod(0o755)
        (tmp / "driver.sh").write_text(DRIVER)
        (self.state / "trace").touch()
        (self.state / "start_sh_runs").touch()

    def mgmtd_locks(self, times: int, only_on_commit: bool = False) -> None:
        """FRR 10's mgmtd in the image, its datastore locked for the next `times` looks."""
        (self.root / "usr/lib/frr/mgmtd").write_text("")
        (self.state / "lock").write_text(f"{times}\n")
        if only_on_commit:
            (self.state / "lock_only_on_commit").touch()

    def master_image(self) -> None:
        """bgpcfgd running, and the route-map it adds once Loopback0 is up already in zebra."""
        (self.state / "bgpcfgd").touch()
        (self.tmp / "zebra.conf").write_text("route-map RM_SET_SRC permit 10\n!\nip protocol bgp route-map RM_SET_SRC\n")

    def start_sh_made_its_own_config(self) -> None:
        (self.root / "etc/sonic").mkdir(parents=True)
        (self.root / "etc/sonic/config_db.json").write_text(json.dumps({"DEVICE_METADATA": {"localhost": {
            "hostname": "sonic"}}}))

    def run(self, ports: list[str], data: list[str], sysctls: dict[str, str], **override: str) -> str:
        """Boot in a namespace of its own: the ports, their ethN ends, eth0 and the sysctls as
        containerlab would make them (`override`: a sysctl it failed to set, dots as __)."""
        values = sysctls | {k.replace("__", "."): v for k, v in override.items()}
        (self.tmp / "sysctls").write_text("".join(f"{k}={v}\n" for k, v in values.items()))
        ns = f"fabinit{os.getpid()}"
        subprocess.run(["ip", "netns", "add", ns], check=True)
        try:
            subprocess.run(["ip", "netns", "exec", ns, "bash", str(self.tmp / "driver.sh"), str(self.tmp),
                            " ".join(ports), " ".join(data)], check=True, timeout=120)
        finally:
            subprocess.run(["ip", "netns", "del", ns], check=True)
        return self.status

    @property
    def status(self) -> str:
        return (self.root / "tmp/fablab-init.status").read_text()

    @property
    def trace(self) -> list[str]:
        return (self.state / "trace").read_text().splitlines()

    def read(self, name: str) -> str:
        path = self.tmp / name
        return path.read_text() if path.exists() else ""


@pytest.fixture(scope="module")
def files(ai_plan):
    return artifacts(ai_plan)


@pytest.fixture
def switch(tmp_path, files):
    return Switch(tmp_path, files)


@pytest.fixture
def ports(ai_plan):
    return [p.name for p in ai_plan.switch(SWITCH).ports]


@pytest.fixture
def data(ai_plan):
    return [p.clab for p in ai_plan.switch(SWITCH).ports]


@pytest.fixture
def sysctls(files, ai_plan):
    """What containerlab sets: the node's sysctls in the rendered clab file."""
    return yaml.safe_load(files[f"{ai_plan.name}.clab.yml"])["topology"]["nodes"][SWITCH]["sysctls"]


@pytest.fixture
def boot(switch, ports, data, sysctls):
    return lambda **override: switch.run(ports, data, sysctls, **override)


def test_boots_when_start_sh_loaded_its_own_config(switch, boot):
    switch.start_sh_made_its_own_config()
    assert boot() == "ok\n", switch.read("init.log")
    fablab = str(switch.root / "etc/fablab")
    assert [t for t in switch.trace if t.startswith("config ")] == [f"config load -y {fablab}/config_db.json"]
    running = switch.read("running.conf")
    assert "router bgp 64601" in running and "neighbor Ethernet0 interface peer-group fabric" in running
    assert " profile fabric" in running and "no bgp ebgp-requires-policy" not in running
    assert switch.read("daemons").split() == ["zebra", "bgpd", "bfdd"]
    assert switch.read("lock") == "free\n"  # bfdd, started by the script, does not hold its lock


def test_status_passes_through_every_step_in_order(switch, boot):
    from harness.render.sonic_init import STEPS

    assert boot() == "ok\n", switch.read("init.log")
    logged = [line[20:] for line in switch.read("init.log").splitlines() if line[20:] in STEPS]
    assert logged == list(STEPS)
    seen = []  # and the status file says the step while the step works
    for line in switch.trace:
        if "[running " in line:
            step = line.rsplit("[running ", 1)[1].rstrip("]")
            if not seen or seen[-1] != step:
                seen.append(step)
    assert seen == ["config_db", "flavour", "zebra", "bgpd", "bfdd", "frr.conf"]


def test_data_interfaces_answer_no_arp_and_carry_no_ipv6(switch, boot, data, ports):
    """Else the kernel answers ARP on ethN and traffic skips EthernetN (SONIC-VS-FACTS.md)."""
    assert boot() == "ok\n", switch.read("init.log")
    links = {line.split(":")[1].strip().split("@")[0]: line for line in switch.read("links").splitlines()}
    assert all("NOARP" in links[p] for p in data)
    assert switch.read("data_ipv6").split() == [x for p in data for x in (p, "1")]
    assert not any("NOARP" in links[p] for p in ports)  # the control: SONiC's ports keep ARP (BGP, hosts)


def test_eth0_is_kept_apart_as_a_management_vrf_would(switch, boot, ai_plan):
    assert boot() == "ok\n", switch.read("init.log")
    mgmt = ai_plan.switch(SWITCH).mgmt.ip
    v4, v6 = switch.read("iptables").splitlines(), switch.read("ip6tables").splitlines()
    for rules in (v4, v6):
        assert "-A FORWARD -j FABLAB_MGMT_FWD" in rules
        assert {"-A FABLAB_MGMT_FWD -i eth0 -j DROP", "-A FABLAB_MGMT_FWD -o eth0 -j DROP"} <= set(rules)
    assert "-A INPUT -j FABLAB_MGMT_IN" in v4, "\n".join(v4)
    own = f"-A FABLAB_MGMT_IN -d {mgmt}/32 -i eth0 -j RETURN"  # as iptables -S prints it
    assert own in v4, "\n".join(v4)
    assert v4.index("-A FABLAB_MGMT_IN -i eth0 -j DROP") > v4.index(own)
    assert v4[-1] == f"-A FABLAB_MGMT_IN -d {mgmt}/32 -j DROP"  # not reachable from a data port
    assert "does not apply MGMT_VRF_CONFIG" in switch.read("init.log")


def test_a_datastore_locked_by_mgmtd_is_waited_out(switch, boot):
    switch.mgmtd_locks(2)
    assert boot() == "ok\n", switch.read("init.log")
    looks = [t for t in switch.trace if t.startswith("vtysh -c show mgmt datastore all")]
    assert len(looks) == 3 and all("[running mgmtd]" in t for t in looks)  # two locked, then free
    commits = [i for i, t in enumerate(switch.trace) if t.startswith("vtysh -f")]
    assert commits and commits[0] > switch.trace.index(looks[-1])
    assert "router bgp 64601" in switch.read("running.conf")


def test_a_vtysh_f_refused_on_the_lock_is_tried_again(switch, boot):
    switch.mgmtd_locks(2, only_on_commit=True)
    assert boot() == "ok\n", switch.read("init.log")
    assert switch.read("init.log").count("mgmtd's datastore was locked: vtysh -f again") == 2
    assert "router bgp 64601" in switch.read("running.conf")


def test_a_lock_that_is_never_released_fails_the_frr_conf_step_naming_it(switch, boot):
    switch.mgmtd_locks(1000, only_on_commit=True)
    status = boot()
    assert status.startswith("failed frr.conf: mgmtd's datastore stayed locked for 3 s: "), status
    assert "could not lock candidate DS" in status


def test_a_master_image_has_bgpcfgd_stopped_and_its_route_map_removed(switch, boot):
    switch.master_image()
    assert boot() == "ok\n", switch.read("init.log")
    assert "image flavour: bgpcfgd" in switch.read("init.log")
    assert any(t.startswith("supervisorctl stop bgpcfgd") for t in switch.trace)
    running = switch.read("running.conf")
    assert "RM_SET_SRC" not in running and "router bgp 64601" in running


def test_a_released_image_is_left_as_it_is(switch, boot):
    """The control: no bgpcfgd, nothing stopped, nothing removed."""
    (switch.tmp / "zebra.conf").write_text("route-map RM_KEEP permit 10\n")
    assert boot() == "ok\n", switch.read("init.log")
    assert "image flavour: released" in switch.read("init.log")
    assert not any(t.startswith("supervisorctl stop") for t in switch.trace)
    assert "route-map RM_KEEP permit 10" in switch.read("running.conf")


def test_config_in_place_before_start_sh_looked_needs_no_reload(switch, boot, files):
    assert boot() == "ok\n", switch.read("init.log")
    assert not [t for t in switch.trace if t.startswith("config ")]
    assert (switch.root / "etc/sonic/config_db.json").read_text() == files[f"configs/{SWITCH}/config_db.json"]


def test_a_missing_port_fails_the_ports_step(switch, ports, data, sysctls):
    status = switch.run(ports[:-1], data[:-1], sysctls)
    assert status.startswith(f"failed ports: not in the kernel: {ports[-1]} "), status
    assert status.count("\n") == 1


def test_a_sysctl_left_unset_fails_first(switch, boot):
    status = boot(net__ipv4__fib_multipath_hash_policy="0")
    assert status.startswith("failed sysctls: net.ipv4.fib_multipath_hash_policy=0 (want 1)"), status


def test_no_config_loaded_by_start_sh_fails_the_config_db_step(switch, boot):
    (switch.state / "start_sh_runs").unlink()
    status = boot()
    assert status.startswith("failed config_db: CONFIG_DB_INITIALIZED is not 1"), status


def test_a_config_frr_rejects_fails_the_frr_conf_step(switch, boot):
    conf = switch.root / "etc/fablab/frr.conf"
    conf.write_text(conf.read_text().replace("maximum-paths 64", "maximum-pathz 64"))
    status = boot()
    assert status.startswith(f"failed frr.conf: vtysh -f {conf} exited "), status
    assert "maximum-pathz" in status
