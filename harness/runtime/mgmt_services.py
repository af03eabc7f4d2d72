"""The management plane at work on the netns runtime: OpenSSH's sshd and lldpd in every node's
namespace, and a management station (a namespace of its own on the lab's OOB switch) that
reaches them, as an engineer's laptop on the staging floor reaches a fabric's switches.

Every sshd listens only on its node's management address, with the lab's own host key and
one authorized key, the lab's, all under the lab's run directory. Every lldpd (Debian's) runs
with a control socket of its own (`-u`), its node's name as its system name (the namespaces
share the machine's host name) and the interface name as its port ID, as SONiC's lldpmgrd
has it; the OOB switch runs one too, so a switch's mgmt cable has LLDP evidence. Once every
lldpd listens, each is told to send at once (`lldpcli update`): the last to start would
otherwise be heard only a transmit interval later.

Both daemons rewrite their process titles, so they are ours by the namespace they run in
(processes.is_ours), and `pids_of` finds them again, sessions included, for teardown.

Two directories outside the lab's are the packages' own, made as their systemd units would
make them when missing: sshd's privilege-separation directory /run/sshd and lldpd's chroot
/run/lldpd (both compiled in).
"""
from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from ipaddress import IPv4Interface
from pathlib import Path

from harness.core.errors import LabError, PrerequisiteError
from harness.core.inventory import Inventory, InventoryNode, Reach, RemoteKind
from harness.core.model import Role
from harness.core.plan import Plan
from harness.plumbing import namespaces, wait
from harness.runtime.netns_setup import OOB_BRIDGE
from harness.runtime.processes import pids_in_namespaces, pids_naming_path
from harness.runtime.state import namespace, run_dir

STATION = "+station"  # a node name no declaration or cabling plan can give (they start with a letter or digit)
STATION_PORT = "mgmt-station"  # the station's cable on the OOB switch (the cabling audit leaves it out)
SSHD = "/usr/sbin/sshd"
LLDPD = "/usr/sbin/lldpd"
PROGRAMS = (SSHD, LLDPD)
# What a boot that does not choose gets: `make test`'s lab phase sets it off (its many boots
# need none; tests/integration/test_staged_ssh.py asks for them).
DEFAULT_ENV = "FABLAB_MGMT_SERVICES"
TX_INTERVAL_S, TX_HOLD = 2, 2  # lldpd's transmit interval and hold: a neighbour's TTL is their product
# Above this many nodes a lab boots without them unless asked: each node's pair holds about
# 2.8 MB (PSS, docs/staged.md, measured on ai-cluster), 2.5 GB at gpu4096's 893 namespaces.
AUTO_UP_TO = 64


@dataclass(frozen=True)
class Endpoint:
    """What reaches one node over its management network."""

    node: str
    address: str
    lldp_socket: Path | None  # lldpctl -u, where the node runs fablab's lldpd
    sshd: bool


def wanted(plan: Plan, choice: bool | None, default: str | None = None) -> bool:
    """The choice, or by default (`default`, else $FABLAB_MGMT_SERVICES: on, off, or auto): a lab
    of up to AUTO_UP_TO nodes, on a machine that has both daemons."""
    if choice is not None:
        return choice
    default = (default if default is not None else os.environ.get(DEFAULT_ENV, "auto")).strip().lower()
    if default in ("on", "off"):
        return default == "on"
    return len(plan.fabric.nodes) <= AUTO_UP_TO and all(os.access(p, os.X_OK) for p in PROGRAMS)


def check_installed() -> None:
    for program, package in ((SSHD, "openssh-server"), (LLDPD, "lldpd")):
        if not os.access(program, os.X_OK):
            raise PrerequisiteError(f"{program} is missing: apt-get install {package} (or `make deps`), "
                                    "or boot with --no-mgmt-services")


def directory(lab: str) -> Path:
    return run_dir(lab) / "mgmt"


def client_key(lab: str) -> Path:
    """The private key the lab's sshds accept (root, key only)."""
    return directory(lab) / "client_ed25519"


def lldp_socket(lab: str, node: str) -> Path:
    return directory(lab) / node / "lldpd.sock"


def station_address(plan: Plan) -> IPv4Interface:
    """The first host address of the mgmt network: the plan leaves it to what bridges the
    nodes (containerlab's Docker bridge), and on netns nothing else takes it."""
    net = plan.mgmt_network
    return IPv4Interface(f"{net.network_address + 1}/{net.prefixlen}")


def endpoints(plan: Plan, lab: str) -> list[Endpoint]:
    """Every node with a management address, and how it is reached."""
    out = [Endpoint(sw.name, str(sw.mgmt.ip), lldp_socket(lab, sw.name), True) for sw in plan.switches]
    for h in plan.hosts:
        try:
            address = str(h.mgmt.address.ip)
        except KeyError:  # a host without a mgmt NIC is not reached over the mgmt network
            continue
        out.append(Endpoint(h.name, address, lldp_socket(lab, h.name), True))
    return out


def running(lab: str) -> bool:
    return client_key(lab).exists()


def start(plan: Plan, lab: str) -> dict[str, dict[str, int]]:
    """sshd and lldpd in every node (lldpd only on the OOB switch), and the station; node ->
    daemon -> pid. The caller records the pids as they come back (teardown ends them)."""
    check_installed()
    base = directory(lab)
    base.mkdir(parents=True, exist_ok=True)
    os.chmod(base, 0o711)  # lldpcli is set-uid _lldpd: it must reach the sockets; the keys are 0600
    _keys(base, lab)
    _known_hosts(plan, lab)
    Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
    _station(plan, lab)
    pids: dict[str, dict[str, int]] = {}
    oob = [n.name for n in plan.fabric.nodes if n.role is Role.OOB]
    for ep in endpoints(plan, lab):
        pids[ep.node] = {"sshd": _sshd(base, lab, ep), "lldpd": _lldpd(base, lab, ep.node, ep.address)}
    for node in oob:
        pids[node] = {"lldpd": _lldpd(base, lab, node, None)}
    _wait_listening(plan, lab, base, list(pids))
    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(partial(_configured, lab), pids))
    for node in pids:  # every lldpd configured and listening: each sends now, so each hears every neighbour
        _lldpcli(lab, node, "update")
    return pids


def reach(plan: Plan, lab: str) -> Reach:
    """The lab's management plane as an inventory (every node fablab's sshd listens in), from
    its management station, with the lab's own host key the only one accepted."""
    if not running(lab):
        raise LabError(f"lab {lab} runs no sshd: it was booted without its mgmt services; boot it again with "
                       "`fablab up ... --mgmt-services` (docs/staged.md)")
    nodes = []
    routed = {h.name for h in plan.hosts if h.routed}
    for ep in endpoints(plan, lab):
        is_switch = any(sw.name == ep.node for sw in plan.switches)
        kind = RemoteKind.FRR if is_switch or ep.node in routed else RemoteKind.LINUX
        config_db = str(run_dir(lab) / ep.node / "config_db.json") if is_switch else None
        vty = str(run_dir(lab) / ep.node) if kind is RemoteKind.FRR else None  # FRR's -N pathspace, as frr.py runs it
        nodes.append(InventoryNode(ep.node, ep.address, kind, "root", str(client_key(lab)), 22, False, config_db,
                                   str(ep.lldp_socket), vty))
    return Reach(Inventory(f"lab {lab}", plan.name, tuple(nodes)), namespace(lab, STATION),
                 str(directory(lab) / "known_hosts"))


class Background:
    """`start` in a thread of its own, while the fabric converges (its CPU is mostly spent
    waiting on BGP): result() gives its pids, or raises what it raised."""

    def __init__(self, plan: Plan, lab: str, progress) -> None:
        progress("mgmt", f"sshd and lldpd on the mgmt network of {len(plan.fabric.nodes)} nodes, and a management "
                         "station, while the fabric converges")
        self.seconds = 0.0
        self._pids: dict[str, dict[str, int]] = {}
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(plan, lab), name=f"mgmt-{lab}", daemon=True)
        self._thread.start()

    def _run(self, plan: Plan, lab: str) -> None:
        t = time.monotonic()
        try:
            self._pids = start(plan, lab)
        except BaseException as e:  # handed to the booting thread, which tears the lab down
            self._error = e
        self.seconds = round(time.monotonic() - t, 3)

    def wait(self) -> None:
        self._thread.join()

    def result(self) -> dict[str, dict[str, int]]:
        self.wait()
        if self._error is not None:
            raise self._error
        return self._pids


def pids_of(lab: str) -> dict[int, str]:
    """Every sshd and lldpd (sessions and children too) in the lab's namespaces: pid -> namespace."""
    return pids_in_namespaces(f"fl_{lab}_", PROGRAMS)


def leftover_pids(lab: str) -> list[int]:
    """The lab's sshd and lldpd still running, whether or not their namespaces are."""
    return pids_naming_path(PROGRAMS, f"{run_dir(lab)}/")


def _keys(base: Path, lab: str) -> None:
    for path in (base / "host_ed25519", client_key(lab)):
        if not path.exists():
            subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", f"fablab-{lab}", "-f", str(path)],
                           check=True, capture_output=True, timeout=30)
    (base / "authorized_keys").write_text(client_key(lab).with_suffix(".pub").read_text())


def _known_hosts(plan: Plan, lab: str) -> None:
    key = " ".join((directory(lab) / "host_ed25519.pub").read_text().split()[:2])
    (directory(lab) / "known_hosts").write_text("".join(f"{ep.address} {key}\n" for ep in endpoints(plan, lab)))


def _sshd(base: Path, lab: str, ep: Endpoint) -> int:
    node_dir = base / ep.node
    node_dir.mkdir(exist_ok=True)
    config = node_dir / "sshd_config"
    config.write_text(f"""# fablab lab {lab}, node {ep.node}: only its management address, only the lab's key
ListenAddress {ep.address}
HostKey {base / "host_ed25519"}
PidFile {node_dir / "sshd.pid"}
AuthorizedKeysFile {base / "authorized_keys"}
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
X11Forwarding no
AllowTcpForwarding no
PrintMotd no
MaxStartups 64:30:128
Subsystem sftp internal-sftp
""")
    return _spawn(lab, ep.node, [SSHD, "-D", "-e", "-f", str(config)], node_dir / "sshd.log")


def _lldpd(base: Path, lab: str, node: str, address: str | None) -> int:
    node_dir = base / node
    node_dir.mkdir(exist_ok=True)
    config = node_dir / "lldpd.conf"
    # Every 2 s, forgotten after 4 s without a frame: a cable moved (a fault) is seen within
    # seconds, where lldpd's defaults (30 s, 120 s) kept the old neighbour two minutes beside the new.
    config.write_text(f"configure system hostname {node}\nconfigure lldp portidsubtype ifname\n"
                      f"configure lldp tx-interval {TX_INTERVAL_S}\nconfigure lldp tx-hold {TX_HOLD}\n")
    argv = [LLDPD, "-d", "-u", str(lldp_socket(lab, node)), "-p", str(node_dir / "lldpd.pid"), "-O", str(config)]
    if address:
        argv += ["-m", address]
    return _spawn(lab, node, argv, node_dir / "lldpd.log")


def _lldpcli(lab: str, node: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(namespaces.exec_argv(namespace(lab, node), ["lldpcli", "-u", str(lldp_socket(lab, node)),
                                                                      *args]),
                          capture_output=True, text=True, timeout=10)


def _configured(lab: str, node: str) -> None:
    """The node's lldpd configured and sending. lldpd runs lldpcli on its -O file itself, but does
    not check that it worked: under load it was seen to send as the machine's host name, or to
    stay paused (SONiC's docker-lldp retries the same way, waitfor_lldp_ready.sh). So the file
    is applied again, with `resume`, until the daemon says its system name is the node's."""
    config = str(directory(lab) / node / "lldpd.conf")

    def named() -> bool:
        if _lldpcli(lab, node, "-c", config, "resume").returncode != 0:
            return False
        shown = _lldpcli(lab, node, "-f", "json", "show", "chassis")
        try:
            chassis = json.loads(shown.stdout)["local-chassis"]["chassis"]
        except (ValueError, KeyError, TypeError):
            return False
        return isinstance(chassis, dict) and node in chassis

    wait.until(named, 20.0, f"lldpd of {node} in lab {lab} to take its configuration", interval=0.2)


def _spawn(lab: str, node: str, argv: list[str], log: Path) -> int:
    with open(log, "ab") as out:
        # nsenter with only --net execs the daemon in place, so this pid is the daemon's.
        proc = subprocess.Popen(namespaces.exec_argv(namespace(lab, node), argv), stdin=subprocess.DEVNULL,
                                stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    return proc.pid


def _wait_listening(plan: Plan, lab: str, base: Path, nodes: list[str]) -> None:
    sshd = {ep.node for ep in endpoints(plan, lab)}
    paths = [lldp_socket(lab, n) for n in nodes] + [base / n / "sshd.pid" for n in sshd]

    def missing() -> LabError:
        gone = [str(p.relative_to(base)) for p in paths if not p.exists()]
        logs = [p.parent / ("sshd.log" if p.name == "sshd.pid" else "lldpd.log") for p in paths if not p.exists()]
        tail = next((log.read_text()[-300:] for log in logs if log.exists() and log.stat().st_size), "")
        return LabError(f"the management services of {lab} did not start ({', '.join(gone[:5])} missing): {tail}")

    wait.until(lambda: all(p.exists() for p in paths), 20.0, "sshd and lldpd", interval=0.05, error=missing)


def _station(plan: Plan, lab: str) -> None:
    """A namespace on the OOB switch's bridge, with the mgmt network's first address."""
    from pyroute2 import IPRoute  # here: a fablab command that only looks needs none

    oob = next((n.name for n in plan.fabric.nodes if n.role is Role.OOB), None)
    if oob is None:
        raise LabError(f"lab {lab} has no OOB switch: no management network to put a station on")
    ns = namespace(lab, STATION)
    namespaces.create(ns)
    address = station_address(plan)

    def cable() -> None:
        with IPRoute() as s:
            s.link("add", ifname=STATION_PORT, kind="veth", peer={"ifname": "eth0", "net_ns_fd": ns})
            port = s.link_lookup(ifname=STATION_PORT)[0]
            s.link("set", index=port, master=s.link_lookup(ifname=OOB_BRIDGE)[0], state="up")

    def address_it() -> None:
        with IPRoute() as s:
            s.link("set", ifname="lo", state="up")
            eth0 = s.link_lookup(ifname="eth0")[0]
            s.link("set", index=eth0, state="up")
            s.addr("add", index=eth0, address=str(address.ip), prefixlen=address.network.prefixlen)

    namespaces.run_in(namespace(lab, oob), cable)
    namespaces.run_in(ns, address_it)
