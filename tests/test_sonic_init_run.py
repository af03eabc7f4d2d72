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

from harness.render import artifacts

SWITCH = "be-g1-r0"
FRR = Path("/usr/lib/frr")

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root: creates a network namespace and mounts"),
    pytest.mark.skipif(shutil.which("vtysh") is None or not (FRR / "bfdd").exists(),
                       reason="needs FRR (Debian package: frr)"),
    pytest.mark.skipif(shutil.which("ip") is None, reason="needs iproute2"),
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

VTYSH = r"""#!/bin/bash
echo "vtysh $* [$(cat "$FABLAB_INIT_ROOT/tmp/fablab-init.status")]" >>"$FABLAB_TEST_STATE/trace"
exec /usr/bin/vtysh "$@"
"""

# Inside `ip netns exec` (its own mount namespace, / a slave): FRR's default paths on tmpfs,
# the sysctls containerlab would set, the switch's ports, zebra as start.sh starts it.
DRIVER = r"""#!/bin/bash
set -u
T=$1
PORTS=$2
HASH=$3
mount -t tmpfs tmpfs /run && mkdir -p /run/frr && chown frr:frr /run/frr
mount -t tmpfs tmpfs /etc/frr
cleanup() {
  for pid in /run/frr/*.pid; do [ -e "$pid" ] && kill "$(cat "$pid")" 2>/dev/null; done
}
trap cleanup EXIT
ip link set lo up
sysctl -qw net.ipv6.conf.all.disable_ipv6=0 net.ipv6.conf.default.disable_ipv6=0 \
  net.ipv4.fib_multipath_hash_policy="$HASH"
i=0
for p in $PORTS; do ip link add "$p" type veth peer name "peer$i"; i=$((i + 1)); done
/usr/lib/frr/zebra -d -A 127.0.0.1
PATH=$T/stubs:$PATH FABLAB_INIT_ROOT=$T/root FABLAB_TEST_STATE=$T/state FABLAB_INIT_STEP_TIMEOUT=3 \
  bash "$T/root/etc/fablab/init.sh" >"$T/init.log" 2>&1
echo "init exit $?" >>"$T/init.log"
if flock -n "$T/root/tmp/fablab-init.status.lock" true; then echo free; else echo held; fi >"$T/lock"
vtysh -c 'show running-config' >"$T/running.conf" 2>&1
for d in zebra bgpd bfdd; do
  if [ -e "/run/frr/$d.pid" ]; then echo "$d" >>"$T/daemons"; fi
done
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

    def start_sh_made_its_own_config(self) -> None:
        (self.root / "etc/sonic").mkdir(parents=True)
        (self.root / "etc/sonic/config_db.json").write_text(json.dumps({"DEVICE_METADATA": {"localhost": {
            "hostname": "sonic"}}}))

    def run(self, ports: list[str], hash_policy: int = 1) -> str:
        ns = f"fabinit{os.getpid()}"
        subprocess.run(["ip", "netns", "add", ns], check=True)
        try:
            subprocess.run(["ip", "netns", "exec", ns, "bash", str(self.tmp / "driver.sh"), str(self.tmp),
                            " ".join(ports), str(hash_policy)], check=True, timeout=120)
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


def test_boots_when_start_sh_loaded_its_own_config(switch, ports):
    switch.start_sh_made_its_own_config()
    assert switch.run(ports) == "ok\n", switch.read("init.log")
    fablab = str(switch.root / "etc/fablab")
    assert [t for t in switch.trace if t.startswith("config ")] == [f"config load -y {fablab}/config_db.json"]
    running = switch.read("running.conf")
    assert "router bgp 64601" in running and "neighbor Ethernet0 interface peer-group fabric" in running
    assert " profile fabric" in running and "no bgp ebgp-requires-policy" not in running
    assert switch.read("daemons").split() == ["zebra", "bgpd", "bfdd"]
    assert switch.read("lock") == "free\n"  # bfdd, started by the script, does not hold its lock


def test_status_passes_through_every_step_in_order(switch, ports):
    assert switch.run(ports) == "ok\n", switch.read("init.log")
    seen = []
    for line in switch.trace:
        if "[running " in line:
            step = line.rsplit("[running ", 1)[1].rstrip("]")
            if not seen or seen[-1] != step:
                seen.append(step)
    assert seen == ["config_db", "zebra", "bgpd", "bfdd", "frr.conf"]


def test_config_in_place_before_start_sh_looked_needs_no_reload(switch, ports, files):
    assert switch.run(ports) == "ok\n", switch.read("init.log")
    assert not [t for t in switch.trace if t.startswith("config ")]
    assert (switch.root / "etc/sonic/config_db.json").read_text() == files[f"configs/{SWITCH}/config_db.json"]


def test_a_missing_port_fails_the_ports_step(switch, ports):
    status = switch.run(ports[:-1])
    assert status.startswith(f"failed ports: not in the kernel: {ports[-1]} "), status
    assert status.count("\n") == 1


def test_a_sysctl_left_unset_fails_first(switch, ports):
    status = switch.run(ports, hash_policy=0)
    assert status.startswith("failed sysctls: net.ipv4.fib_multipath_hash_policy=0 (want 1)"), status


def test_no_config_loaded_by_start_sh_fails_the_config_db_step(switch, ports):
    (switch.state / "start_sh_runs").unlink()
    status = switch.run(ports)
    assert status.startswith("failed config_db: CONFIG_DB_INITIALIZED is not 1"), status


def test_a_config_frr_rejects_fails_the_frr_conf_step(switch, ports):
    conf = switch.root / "etc/fablab/frr.conf"
    conf.write_text(conf.read_text().replace("maximum-paths 64", "maximum-pathz 64"))
    status = switch.run(ports)
    assert status.startswith(f"failed frr.conf: vtysh -f {conf} exited "), status
    assert "maximum-pathz" in status
