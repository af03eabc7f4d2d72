"""A running lab, whatever the runtime: the API that labs, tests and the CLI share.

    with Lab.up(ai_cluster(), name="demo") as lab:
        lab.exec("gpu01", ["ping", "-c1", "10.0.1.9"])
        lab.link("be-g1-r0", "be-s1").down()

`Lab.up` boots and waits until converged; leaving the `with` block tears the lab down.
`Lab.attach(name)` picks up a lab that is already running (booted by `fablab up`).
"""
from __future__ import annotations

import subprocess
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from ipaddress import IPv4Network
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from harness.core.capabilities import Feature, lacks
from harness.core.errors import HarnessError, InputError, LabError, TopologyError, UnknownLab
from harness.core.inventory import Reach
from harness.core.lossless_counters import LosslessCounters, from_status
from harness.core.model import Cluster, Fabric, Plane, build, check_lab_name
from harness.core.observed import CablingScope, Counters, LldpNeighbour, PortState, Shortfall
from harness.observe.links import json_loads, port_states
from harness.observe.lldp import neighbours_from_lldpctl_json as lldp_from_json
from harness.observe.counters import interface_counters
from harness.observe.routing import BfdPeer, BgpPeer, Route, bfd_peers, bgp_peers
from harness.core.plan import CableRow, Plan, make_plan
from harness.runtime import RUNTIMES, get_runtime
from harness.runtime.base import Progress, Runtime, TeardownReport, quiet
from harness.runtime.state import LabState, is_stale, labs, load, namespaces_present

if TYPE_CHECKING:
    from harness.core.switchconfigs import SwitchConfigs

T = TypeVar("T")


@dataclass(frozen=True)
class LinkHandle:
    """One cable of a running lab: carrier loss (down/up) and gray failure (gray/heal)."""

    lab: Lab
    cable: CableRow

    @property
    def ends(self) -> tuple[tuple[str, str], tuple[str, str]]:
        return self.cable.ends

    def down(self) -> None:
        """Carrier loss: the upper end (spine side) goes down, so the lower end, the leaf
        that must route around it, sees its carrier drop, as when a cable is pulled."""
        self.lab.runtime.set_link(self.lab.name, self.cable.b_node, self.cable.b_port, up=False)

    def up(self) -> None:
        self.lab.runtime.set_link(self.lab.name, self.cable.b_node, self.cable.b_port, up=True)

    def gray(self) -> None:
        """Both ends drop every frame they receive; carriers stay up, only BFD can tell."""
        for node, port in self.ends:
            self.lab.runtime.set_gray(self.lab.name, node, port, on=True)

    def heal(self) -> None:
        for node, port in self.ends:
            self.lab.runtime.set_gray(self.lab.name, node, port, on=False)

    def __str__(self) -> str:
        return self.cable.label


def set_carriers(handles: Sequence[LinkHandle], up: bool) -> None:
    """Carrier of many cables at once, as when a switch loses power: each at its upper end
    (as LinkHandle.down), one netlink socket per node."""
    by_node: dict[tuple[Lab, str], list[str]] = {}
    for h in handles:
        by_node.setdefault((h.lab, h.cable.b_node), []).append(h.cable.b_port)
    for (lab, node), ports in by_node.items():
        lab.runtime.set_links(lab.name, node, ports, up)


@dataclass(frozen=True)
class LabSummary:
    lab: str
    runtime: str
    topology: str
    phase: str
    nodes: int  # of its namespaces, those present on the system now
    nodes_declared: int
    age_s: int


class Lab:
    """A running lab; what checks, observers and faults may use of it is `harness.plumbing.labview.LabView`."""

    def __init__(self, state: LabState, plan: Plan, runtime: Runtime) -> None:
        self.state = state
        self.runtime = runtime
        self.plan = runtime.plan_of(state.lab, plan)
        self.extra_cables: list[CableRow] = []  # cabled at runtime (the cabling faults, harness.faults.cabling)

    # ------------------------------------------------------------------ lifecycle

    @classmethod
    def up(cls, cluster: Cluster | Fabric | Plan, name: str | None = None, runtime: str = "netns",
           replace: bool = False, progress: Progress = quiet, timeout: float | None = None,
           topology: str | None = None, detached: bool = False, configs: SwitchConfigs | None = None,
           mgmt_services: bool | None = None) -> Lab:
        """Boot and wait until converged. The lab belongs to this process (`fablab clean`
        removes it once the process is gone) unless `detached`, as `fablab up` makes it.
        mgmt_services: sshd and lldpd in every node and a management station, for `--via ssh`
        (None: on the netns runtime for a lab of up to 64 nodes; docs/staged.md)."""
        plan = _plan_of(cluster)
        lab = name or plan.name
        problems = check_lab_name(lab, "name" if name else "name (default: the cluster's name)")
        if problems:  # before anything is booted or written
            raise TopologyError(problems, "lab")
        rt = get_runtime(runtime)
        state = rt.up(plan, lab, topology or plan.name, progress=progress, replace=replace, timeout=timeout,
                      detached=detached, configs=configs, mgmt=mgmt_services)
        return cls(state, plan, rt)

    @classmethod
    def attach(cls, name: str) -> Lab:
        state = load(name)
        plan = make_plan(build(state.declared_cluster()))
        return cls(state, plan, get_runtime(state.runtime))

    @staticmethod
    def names() -> list[str]:
        """The labs on this machine (those with a state, whatever their phase)."""
        return labs()

    @staticmethod
    def listing() -> list[LabSummary]:
        """Every lab on this machine, as `fablab status` shows them: its nodes counted on the
        system now, not taken from its state."""
        rows = []
        for name in labs():
            try:
                st = load(name)
            except HarnessError as e:
                rows.append(LabSummary(name, "?", "?", f"broken: {e}", 0, 0, 0))
                continue
            rows.append(LabSummary(name, st.runtime, st.topology, st.phase, namespaces_present(st),
                                   len(st.namespaces), round(time.time() - st.created)))
        return rows

    @staticmethod
    def remove(name: str) -> TeardownReport:
        """Tear down lab `name`, also one whose state is gone but whose namespaces, processes
        or containers are left (each runtime finds its own); UnknownLab if nothing carries it."""
        try:
            runtime = load(name).runtime
        except UnknownLab:
            runtime = next((r for r in RUNTIMES if name in get_runtime(r).leftovers(everything=True)), None)
            if runtime is None:
                raise
        except HarnessError:  # unreadable state: the netns runtime removes what carries the name
            runtime = "netns"
        return get_runtime(runtime).down(name)

    @staticmethod
    def clean(everything: bool = False) -> list[TeardownReport]:
        """Remove what labs left behind (their owner is gone), or with `everything` every
        lab on this machine; each runtime removes only its own."""
        removed = []
        for name in RUNTIMES:
            runtime = get_runtime(name)
            removed += [runtime.down(lab) for lab in runtime.leftovers(everything=everything)]
        return removed

    @property
    def stale(self) -> bool:
        """Left behind by a process that is gone."""
        return is_stale(self.state)

    def exec_argv(self, node: str, argv: Sequence[str]) -> list[str]:
        """The command line that runs `argv` in `node` (for a caller that runs it itself, with
        the terminal: `fablab exec`)."""
        self.check_node(node)
        return self.runtime.exec_argv(self.name, node, list(argv))

    def vtysh_argv(self, node: str, tty: bool = False) -> list[str]:
        """vtysh on the node's FRR, for a caller that runs it with the terminal (`fablab vtysh`)."""
        self.check_node(node)
        if node not in {s.name for s in self.plan.switches} | {h.name for h in self.plan.hosts if h.routed}:
            raise InputError(f"{node} runs no FRR (a host without BGP): `fablab shell {self.name} {node}` for its "
                             "kernel's routes (ip route)")
        return self.runtime.vtysh_argv(self.name, node, tty)

    def shell_argv(self, node: str, tty: bool = False) -> list[str]:
        """A shell in the node, for a caller that runs it with the terminal (`fablab shell`)."""
        self.check_node(node)
        return self.runtime.shell_argv(self.name, node, tty)

    def down(self) -> TeardownReport:
        return self.runtime.down(self.name)

    def __enter__(self) -> Lab:
        return self

    def __exit__(self, *exc: object) -> None:
        self.down()

    @property
    def name(self) -> str:
        return self.state.lab

    @property
    def run_dir(self) -> Path:
        """The lab's own directory (its state, configs, the RDMA lane's VM workdirs)."""
        return self.state.run_dir

    # ------------------------------------------------------------------ nodes

    def exec(self, node: str, cmd: Sequence[str] | str, check: bool = False, timeout: float | None = 60.0,
             input: str | None = None) -> subprocess.CompletedProcess:
        """Run a command in a node; a string runs through `sh -c`."""
        self.check_node(node)
        argv = ["sh", "-c", cmd] if isinstance(cmd, str) else list(cmd)
        run = subprocess.run(self.runtime.exec_argv(self.name, node, argv), capture_output=True, text=True,
                             timeout=timeout, input=input)
        if check and run.returncode != 0:
            raise HarnessError(f"{node}: {' '.join(argv)} exited {run.returncode}: {run.stderr.strip()}")
        return run

    def popen(self, node: str, argv: Sequence[str], **kwargs) -> subprocess.Popen:
        self.check_node(node)
        return subprocess.Popen(self.runtime.exec_argv(self.name, node, list(argv)), **kwargs)

    def namespace(self, node: str) -> str:
        """The node's network namespace, a name under /run/netns on every runtime."""
        self.check_node(node)
        return self.runtime.namespace(self.name, node)

    def ns_exec(self, node: str, argv: Sequence[str], check: bool = False, timeout: float | None = 60.0,
                input: str | None = None) -> subprocess.CompletedProcess:
        """Run a host tool (nft, ip, tc) in the node's network namespace: the same tool on every
        runtime, whatever the node's image has."""
        self.check_node(node)
        run = subprocess.run(self.runtime.ns_argv(self.name, node, list(argv)), capture_output=True, text=True,
                             timeout=timeout, input=input)
        if check and run.returncode != 0:
            raise HarnessError(f"{node}: {' '.join(argv)} exited {run.returncode}: {run.stderr.strip()}")
        return run

    def netlink(self, node: str):
        """A netlink socket (pyroute2 IPRoute) in the node's namespace; close it when done."""
        self.check_node(node)
        return self.runtime.netlink(self.name, node)

    def in_namespace(self, node: str, fn: Callable[[], T]) -> T:
        """Run fn in a thread that has joined the node's namespace (sockets made there stay there)."""
        self.check_node(node)
        return self.runtime.run_in(self.name, node, fn)

    def sysctl(self, node: str, key: str) -> str:
        self.check_node(node)
        return self.runtime.read_sysctl(self.name, node, key)

    def set_sysctls(self, node: str, values: dict[str, str | int]) -> None:
        self.check_node(node)
        self.runtime.write_sysctls(self.name, node, values)

    def vtysh(self, node: str, *commands: str) -> str:
        """FRR's vtysh in a switch; several commands run in one call, in order."""
        self.check_node(node)
        return self.runtime.vtysh(self.name, node, *commands)

    def check_node(self, node: str) -> None:
        names = [n.name for n in self.plan.fabric.nodes]
        if node not in names:
            raise InputError(f"lab {self.name} has no node {node!r}; nodes: {', '.join(names)}")

    # ------------------------------------------------------------------ links

    def all_cables(self) -> list[CableRow]:
        return list(self.plan.cables) + self.extra_cables

    def cables(self, a: str, b: str) -> list[CableRow]:
        return [c for c in self.all_cables() if {c.a_node, c.b_node} == {a, b}]

    def kernel_port_names(self) -> dict[tuple[str, str], str]:
        """(node, kernel interface) -> the plan's port name, where this runtime names them apart."""
        return self.runtime.kernel_port_names(self.plan)

    def cabling_scope(self) -> CablingScope:
        """What the cabling audit can see on this runtime: planes, nodes, interfaces left out."""
        return self.runtime.cabling_scope(self.plan)

    def mgmt_reach(self) -> Reach:
        """How the lab's nodes are reached over SSH, from its management station (`--via ssh`)."""
        return self.runtime.mgmt_reach(self.plan, self.name)

    def lldp(self, node: str) -> tuple[LldpNeighbour, ...] | None:
        """The LLDP neighbours the node's lldpd hears now; None where the lab runs no lldpd there."""
        self.check_node(node)
        socket = self.runtime.lldp_socket(self.name, node)
        if socket is None:
            return None
        run = self.ns_exec(node, ["lldpctl", "-u", str(socket), "-f", "json"])
        if run.returncode != 0:
            raise LabError(f"{node}: lldpctl failed ({run.returncode}): {run.stderr.strip()[:300]}")
        return lldp_from_json(json_loads(run.stdout, f"lldpctl -f json in {node}"))

    def port_states(self, node: str) -> tuple[PortState, ...]:
        """Every interface of the node as its kernel lists it (`ip -j -d link show`)."""
        run = self.ns_exec(node, ["ip", "-j", "-d", "link", "show"])
        if run.returncode != 0:
            raise LabError(f"{node}: ip link failed: {run.stderr.strip()[:300]}")
        return port_states(run.stdout, f"ip -j -d link show in {node}")

    def set_carriers(self, handles: Sequence[LinkHandle], up: bool) -> None:
        """Carrier of many of this lab's cables at once (a switch losing power): `set_carriers`."""
        set_carriers(handles, up)

    def link(self, a: str, b: str, index: int = 0) -> LinkHandle:
        found = self.cables(a, b)
        if not found:
            raise InputError(f"no cable between {a!r} and {b!r} in lab {self.name}")
        if index >= len(found):
            raise InputError(f"{a}–{b} has {len(found)} cable(s); index {index} is out of range")
        return LinkHandle(self, found[index])

    # ------------------------------------------------------------------ observation

    def counters(self, node: str, ifname: str | None = None) -> dict[str, Counters]:
        with self.netlink(node) as s:
            return interface_counters(s, ifname)

    def acl_counters(self, switch: str) -> dict[str, int]:
        """Packets each FE edge ACL entry (harness/core/acl.py names them) matched on a leaf."""
        return self.runtime.switch_kind.acl_counters(self.runtime.node_access(self.name, switch))

    def set_config_db(self, switch: str, table: str, key: str, field: str, value: str | None) -> str | None:
        """Set (None: remove) one field of the switch's running CONFIG_DB; the value it had."""
        self.check_node(switch)
        old = self.runtime.switch_kind.set_config_db(self.runtime.node_access(self.name, switch), table, key, field,
                                                     value)
        self.runtime.lossless_reload(self.name, self.plan)  # as orchagent reprograms the ASIC
        return old

    def acl_data_path(self, switch: str) -> str | None:
        """None where the switch's data plane filters by its edge ACL; else why not."""
        self.check_node(switch)
        return self.lacks(Feature.ACL_DATA_PATH)

    def lacks(self, feature: Feature) -> str | None:
        """None where this lab's data plane does `feature`; else why not (harness.core.capabilities)."""
        why = lacks(self.runtime.name, feature)
        if why is None and feature is Feature.LOSSLESS_DATA_PATH and not self.plan.fabric.cluster.lossless.emulate:
            return "the lab was declared with Lossless(emulate=False): its BE links are lossy, at veth speed"
        return why

    def set_pause_storm(self, node: str, port: str, priorities: frozenset[int]) -> None:
        """The BE port `node:port` sends pause for `priorities` without end, as a NIC gone wrong
        does (empty: it stops); the lossless data plane's watchdog is what must catch it."""
        self.check_node(node)
        self.runtime.lossless_storm(self.name, self.plan, node, port, priorities)

    def lossless_counters(self) -> LosslessCounters:
        """Every BE port's PFC, queue and CNP counters, as the lab's lossless data plane has them now."""
        return from_status(self.runtime.lossless_status(self.name))

    def acl_rules(self, switch: str) -> dict[str, str]:
        """Every edge ACL rule the switch has loaded, by entry name -> its status."""
        return self.runtime.switch_kind.acl_rules(self.runtime.node_access(self.name, switch))

    def running_config_db(self, switch: str) -> dict:
        """The switch's CONFIG_DB as it runs now (see each switch kind for what that is)."""
        self.check_node(switch)
        return self.runtime.switch_kind.running_config_db(self.runtime.node_access(self.name, switch))

    def mtus(self, node: str) -> dict[str, int]:
        """Interface -> MTU in the node's kernel, now."""
        self.check_node(node)
        return self.runtime.kernel_mtus(self.name, node)

    def routes(self, node: str) -> dict[IPv4Network, Route]:
        """The node's kernel FIB (IPv4, main table)."""
        self.check_node(node)
        return self.runtime.fib(self.name, node)

    def route(self, node: str, prefix: IPv4Network) -> Route | None:
        """The node's kernel route to exactly `prefix` (main table), or None."""
        self.check_node(node)
        return self.runtime.fib_route(self.name, node, prefix)

    def bgp_peers(self, node: str) -> tuple[BgpPeer, ...]:
        (doc,) = self.runtime.vtysh_json(self.name, node, "show bgp ipv4 unicast summary json")
        return bgp_peers(node, doc)  # type: ignore[arg-type]

    def bfd_peers(self, node: str) -> tuple[BfdPeer, ...]:
        (doc,) = self.runtime.vtysh_json(self.name, node, "show bfd peers json")
        return bfd_peers(node, doc)  # type: ignore[arg-type]

    def logs(self, nodes: Collection[str]) -> dict[str, str]:
        """These nodes' routing daemons' logs, and the lab data planes' lines about them."""
        return self.runtime.logs(self.name, nodes)

    def daemon_pids(self, nodes: Collection[str]) -> dict[str, int]:
        """"node/daemon" -> host pid, of these nodes' daemons ({} where the runtime does not know)."""
        return self.runtime.daemon_pids(self.name, nodes)

    def observe(self) -> list[Shortfall]:
        """Every switch against the plan: sessions up, prefixes at their ECMP width."""
        return self.runtime.observe(self.plan, self.name)

    def shortfalls(self) -> list[Shortfall]:
        return [s for s in self.observe() if not s.ok]

    def address(self, node: str, nic: str) -> str:
        return str(self.plan.host(node).nic(nic).address.ip)

    def nodes(self, plane: Plane | None = None) -> list[str]:
        if plane is None:
            return [n.name for n in self.plan.fabric.nodes]
        return sorted({c.a_node for c in self.plan.cables if c.plane is plane}
                      | {c.b_node for c in self.plan.cables if c.plane is plane})


def _plan_of(obj: Cluster | Fabric | Plan) -> Plan:
    if isinstance(obj, Plan):
        return obj
    if isinstance(obj, Cluster):
        obj = build(obj)
    return make_plan(obj)
