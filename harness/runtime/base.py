"""What a runtime is: a small interface, separate from node kinds and from the Lab API.

Both runtimes give every node a network namespace linked under /run/netns (netns: the
namespace itself; containerlab: a link to the container's), so everything that acts on a
node's network from the host (netlink, sysctls, nft, AF_PACKET sockets, `ip route`) is
shared in `NamespaceAccess`. What differs (booting, running a command with the node's own
tools, vtysh, which interface carries a cable) each runtime says for itself.
"""
from __future__ import annotations

import dataclasses
import subprocess
import threading
import time
from contextlib import contextmanager
from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import dataclass
from ipaddress import IPv4Network
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, TypeVar


from harness.plumbing import namespaces, parallel, wait
from harness.core.errors import LabError
from harness.core.kinds import RuntimeName
from harness.core.inventory import Reach
from harness.core.observed import CablingScope
from harness.observe.convergence import Shortfall, cached_expectations, shortfall, stuck_detail
from harness.observe.routing import (FIBMATCH_ARGV, ROUTE_ARGV, WIDTH_ARGV, Route, bfd_peers, bgp_peers,
                                     kernel_routes, route_widths)
from harness.core.plan import Plan
from harness.runtime.kinds import NodeAccess, SwitchKind
from harness.runtime.state import LabState, run_dir

if TYPE_CHECKING:
    from pyroute2 import IPRoute
    from harness.core.switchconfigs import SwitchConfigs

T = TypeVar("T")
GRAY_TABLE = "fablab_gray"
# A boot that converges for minutes says where it stands this often even when no switch moved
# (gpu4096 printed nothing from 213 s to its timeout at 1,316 s).
HEARTBEAT_S = 30.0
FEW_STUCK = 8  # sessions not up that a heartbeat names one by one


class Progress(Protocol):
    def __call__(self, phase: str, detail: str) -> None: ...


def quiet(phase: str, detail: str) -> None:
    """A Progress that says nothing."""


@dataclass(frozen=True)
class TeardownReport:
    lab: str
    processes: int
    namespaces: int
    seconds: float


class Runtime(Protocol):
    name: RuntimeName
    switch_kind: SwitchKind  # how its switches' config and ACL are read (harness.runtime.kinds)

    def up(self, plan: Plan, lab: str, topology: str, progress: Progress = quiet, replace: bool = False,
           timeout: float | None = None, detached: bool = False, configs: SwitchConfigs | None = None,
           mgmt: bool | None = None) -> LabState:
        """Boot and wait until converged; `timeout`: seconds the fabric has to converge once every
        node's routing daemons run, the same on every runtime (None: harness.core.budgets'
        default for the plan's size). What comes before is the runtime's own, in budgets of its own."""
        ...

    def down(self, lab: str) -> TeardownReport: ...

    def leftovers(self, everything: bool = False) -> list[str]: ...

    def check_prerequisites(self) -> None:
        """Raise PrerequisiteError naming what this machine lacks for this runtime."""
        ...

    def plan_of(self, lab: str, plan: Plan) -> Plan:
        """The plan as this runtime runs it (clab: the lab's own mgmt subnet)."""
        ...

    # -- a node's own tools (its filesystem and namespace)
    def exec_argv(self, lab: str, node: str, argv: list[str]) -> list[str]: ...

    def vtysh(self, lab: str, node: str, *commands: str) -> str: ...

    def vtysh_json(self, lab: str, node: str, *commands: str) -> list[object]: ...

    # -- a node's network namespace, from the host
    def namespace(self, lab: str, node: str) -> str: ...

    def lldp_socket(self, lab: str, node: str) -> Path | None:
        """lldpd's control socket in the node, where the runtime runs one (netns: mgmt services)."""
        ...

    def mgmt_reach(self, plan: Plan, lab: str) -> Reach:
        """How the lab's nodes are reached over SSH from its management station; LabError where not."""
        ...

    def ns_argv(self, lab: str, node: str, argv: list[str]) -> list[str]: ...

    def netlink(self, lab: str, node: str) -> IPRoute: ...

    def run_in(self, lab: str, node: str, fn: Callable[[], T]) -> T: ...

    def read_sysctl(self, lab: str, node: str, key: str) -> str: ...

    def write_sysctls(self, lab: str, node: str, values: dict[str, str | int]) -> None: ...

    def fib(self, lab: str, node: str) -> dict[IPv4Network, Route]: ...

    def fib_route(self, lab: str, node: str, prefix: IPv4Network) -> Route | None: ...

    # -- failures of a cable end: `port` is the plan's port name
    def set_link(self, lab: str, node: str, port: str, up: bool) -> None: ...

    def set_links(self, lab: str, node: str, ports: Sequence[str], up: bool) -> None: ...

    def set_gray(self, lab: str, node: str, port: str, on: bool) -> None: ...

    def node_access(self, lab: str, node: str) -> NodeAccess:
        """What the switch kind needs of a node: its tools, its files, its kernel's MTUs."""
        ...

    def vtysh_argv(self, lab: str, node: str, tty: bool) -> list[str]:
        """The command line of vtysh on the node's FRR (a caller runs it with the terminal)."""
        ...

    def shell_argv(self, lab: str, node: str, tty: bool) -> list[str]:
        """The command line of a shell in the node (interactive where `tty`)."""
        ...

    # -- how the runtime cables the plan (the cabling audit)
    def kernel_port_names(self, plan: Plan) -> dict[tuple[str, str], str]:
        """(node, kernel interface) -> the plan's port name, where the two differ."""
        ...

    def cabling_scope(self, plan: Plan) -> CablingScope:
        """The planes, nodes and interfaces whose cables are this runtime's to audit."""
        ...

    # -- the lossless BE's data plane (harness.core.capabilities: LOSSLESS_DATA_PATH)
    def lossless_status(self, lab: str) -> dict:
        """Every BE port's PFC, queue and CNP counters and state (raises where there are none)."""
        ...

    def lossless_reload(self, lab: str, plan: Plan) -> None:
        """Each BE port's program again from the running configs (after a CONFIG_DB change)."""
        ...

    def lossless_storm(self, lab: str, plan: Plan, node: str, port: str, priorities: frozenset[int]) -> None:
        """A BE port that sends pause for `priorities` without end (empty: stops): a NIC gone wrong."""
        ...

    # -- evidence a failed case keeps (harness.checks.registry)
    def logs(self, lab: str, nodes: Collection[str]) -> dict[str, str]:
        """Each of these nodes' routing daemons' logs and the lab data planes' lines about them:
        a name (node/daemon.log) -> the log's tail."""
        ...

    def daemon_pids(self, lab: str, nodes: Collection[str]) -> dict[str, int]:
        """"node/daemon" -> the host pid of each daemon of these nodes (a lab data plane is a node
        of its own: "bfd-dp"), whose CPU waits a timed case reads; {} where not known."""
        ...

    # -- convergence, by the same rule on every runtime
    def observe(self, plan: Plan, lab: str, only: Collection[str] | None = None, fib: bool = True,
                bfd: bool = True) -> list[Shortfall]: ...


def shell_command(lab: str, node: str) -> list[str]:
    """bash where the node has it (sh else), its prompt naming lab and node."""
    return ["env", f"PS1=[{lab} {node}] \\w# ", "sh", "-c",
            "command -v bash >/dev/null 2>&1 && exec bash --norc || exec sh"]


class NamespaceAccess:
    """What both runtimes do the same way: act on a node's network namespace from the host."""

    name = "?"
    _run = staticmethod(subprocess.run)  # how a node's tool is run (the clab runtime's is given)

    def namespace(self, lab: str, node: str) -> str:
        raise NotImplementedError

    def lldp_socket(self, lab: str, node: str) -> Path | None:
        return None

    def daemon_pids(self, lab: str, nodes: Collection[str]) -> dict[str, int]:
        return {}  # a container's daemons are the container's: their CPU waits are not read

    def mgmt_reach(self, plan: Plan, lab: str) -> Reach:
        raise LabError(f"the {self.name} runtime starts no sshd in its nodes: `--via ssh` is the netns runtime's "
                       "(docs/staged.md)")

    def vtysh_json(self, lab: str, node: str, *commands: str) -> list[object]:
        raise NotImplementedError

    def plan_of(self, lab: str, plan: Plan) -> Plan:
        return plan

    def exec_argv(self, lab: str, node: str, argv: list[str]) -> list[str]:
        raise NotImplementedError

    def shell_argv(self, lab: str, node: str, tty: bool) -> list[str]:
        return self.exec_argv(lab, node, shell_command(lab, node))

    def node_access(self, lab: str, node: str) -> NodeAccess:
        def run(argv: list[str]) -> subprocess.CompletedProcess:
            return self._run(self.exec_argv(lab, node, argv), capture_output=True, text=True, timeout=60)

        return NodeAccess(lab, node, run, run_dir(lab) / node, lambda: self.kernel_mtus(lab, node))

    def ns_argv(self, lab: str, node: str, argv: list[str]) -> list[str]:
        return namespaces.exec_argv(self.namespace(lab, node), argv)

    def netlink(self, lab: str, node: str) -> IPRoute:
        return namespaces.ipr(self.namespace(lab, node))

    def run_in(self, lab: str, node: str, fn: Callable[[], T]) -> T:
        return namespaces.run_in(self.namespace(lab, node), fn)

    def read_sysctl(self, lab: str, node: str, key: str) -> str:
        return namespaces.read_sysctl(self.namespace(lab, node), key)

    def write_sysctls(self, lab: str, node: str, values: dict[str, str | int]) -> None:
        namespaces.write_sysctls(self.namespace(lab, node), values)

    def kernel_mtus(self, lab: str, node: str) -> dict[str, int]:
        """Interface name -> MTU, as the node's kernel has them now."""
        with self.netlink(lab, node) as s:
            return {link.get_attr("IFLA_IFNAME"): int(link.get_attr("IFLA_MTU")) for link in s.get_links()}

    def carrier_port(self, lab: str, node: str, port: str) -> str:
        """The kernel interface whose state is the cable's carrier at this end."""
        return port

    def set_link(self, lab: str, node: str, port: str, up: bool) -> None:
        self.set_links(lab, node, (port,), up)

    def set_links(self, lab: str, node: str, ports: Sequence[str], up: bool) -> None:
        """Carrier of several ports of one node at once, over one netlink socket: a whole
        switch failing takes its 64 links down in a fraction of what one call each took."""
        names = [self.carrier_port(lab, node, p) for p in ports]
        with self.netlink(lab, node) as s:
            for port, ifname in zip(ports, names):
                found = s.link_lookup(ifname=ifname)
                if not found:
                    raise LabError(f"{node}: no interface {ifname} (cable end of {port})")
                s.link("set", index=found[0], state="up" if up else "down")

    def gray_port(self, lab: str, node: str, port: str) -> str:
        """The kernel interface whose ingress a gray failure drops (where the kernel routes)."""
        return port

    def set_gray(self, lab: str, node: str, port: str, on: bool) -> None:
        """Drop everything arriving on the port at the netdev ingress hook; the carrier stays up."""
        ifname = self.gray_port(lab, node, port)
        table = f"{GRAY_TABLE}_{ifname}"
        if on:
            ruleset = (f"table netdev {table} {{\n  chain ingress {{\n"
                       f'    type filter hook ingress device "{ifname}" priority 0; policy drop;\n  }}\n}}\n')
        else:
            ruleset = f"delete table netdev {table}\n"
        namespaces.nft(self.namespace(lab, node), ruleset)

    def fib(self, lab: str, node: str) -> dict[IPv4Network, Route]:
        run = subprocess.run(self.ns_argv(lab, node, ROUTE_ARGV), capture_output=True, text=True)
        if run.returncode != 0:
            raise LabError(f"{node}: reading the FIB failed: {run.stderr.strip()}")
        return kernel_routes(run.stdout)

    def fib_route(self, lab: str, node: str, prefix: IPv4Network) -> Route | None:
        """One prefix's route, with every next hop: what a failover polls every 20 ms. The
        kernel looks it up (`route get fibmatch`) instead of dumping the table for `ip` to
        filter: at xlarge a dump is 1,100 routes of 16 hops per poll, and the polls, run under
        SCHED_FIFO, kept zebra from the CPU it needed to rewrite those very routes."""
        run = subprocess.run(self.ns_argv(lab, node, [*FIBMATCH_ARGV, str(prefix.network_address)]),
                             capture_output=True, text=True)
        if run.returncode != 0:
            if "unreachable" in run.stderr:  # no route covers it at all
                return None
            raise LabError(f"{node}: reading the route to {prefix} failed: {run.stderr.strip()}")
        return kernel_routes(run.stdout).get(prefix)  # a covering route is not this prefix's

    def fib_widths(self, lab: str, node: str) -> dict[str, int]:
        run = subprocess.run(self.ns_argv(lab, node, WIDTH_ARGV), capture_output=True, text=True)
        if run.returncode != 0:
            raise LabError(f"{node}: reading the FIB failed: {run.stderr.strip()}")
        return route_widths(run.stdout)

    def observe(self, plan: Plan, lab: str, only: Collection[str] | None = None, fib: bool = True,
                bfd: bool = True) -> list[Shortfall]:
        """One look at every switch (or those named in `only`): sessions and FIB against what
        the plan expects. A switch whose BGP sessions are not all up is not converged whatever
        its routes, so its FIB is not read until they are (on a loaded machine that read is
        most of a poll's cost). `fib=False` leaves routes out of the look, `bfd=False` BFD sessions."""
        exp = cached_expectations(plan)

        def look(name: str) -> Shortfall:
            peers, bfd_peers_ = (), ()
            e = exp[name]
            if not bfd:
                e = dataclasses.replace(e, bfd=0)
            if not fib:
                e = dataclasses.replace(e, routes=(), keys=())
            if e.sessions:
                commands = ["show bgp ipv4 unicast summary json"] + (["show bfd peers json"] if bfd else [])
                try:
                    docs = self.vtysh_json(lab, name, *commands)
                except LabError:
                    docs = [{}, []]  # a daemon not answering yet: no sessions seen, the poll goes on
                peers = bgp_peers(name, docs[0])  # type: ignore[arg-type]
                bfd_peers_ = bfd_peers(name, docs[1]) if bfd else ()  # type: ignore[arg-type]
            # BGP sessions only: checks that turn BFD off still read routes
            sessions_up = sum(1 for p in peers if p.established) >= e.sessions
            widths = self.fib_widths(lab, name) if sessions_up and e.routes else None
            return shortfall(e, peers, bfd_peers_, widths)

        # the switches, then the hosts that run BGP (dual-homed FE hosts)
        names = [n for n in exp if only is None or n in only]
        # round trips to the daemons and `ip` dominate; a few at once keep a poll of 40 switches under a second.
        return parallel.map_all(look, names)


def wait_converged(runtime: Runtime, plan: Plan, lab: str, timeout: float, progress: Progress = quiet,
                   now: Callable[[], float] = time.monotonic, fib: bool = True, bfd: bool = True,
                   phase: str = "converged") -> list[Shortfall]:
    """Poll until every BGP and BFD session is up and every planned prefix is in each
    switch's FIB at its ECMP width; raise naming the switches still short at the deadline.
    Each round looks again only at the switches not yet seen converged; when none is left,
    one look at all of them confirms that none fell back meanwhile, and is returned.
    `fib`/`bfd` False leave routes or BFD out (a boot that checks them at another step)."""
    total = len(cached_expectations(plan))  # the switches, and the dual-homed hosts (they run BGP)
    noun = "switches" if total == len(plan.switches) else "BGP speakers"
    last = -1
    said_at = now()
    pending: set[str] | None = None  # None: look at every switch
    progressing = "converging" if phase == "converged" else phase
    looked: list[Shortfall] = []
    shortfalls: list[Shortfall] = []

    def converged() -> bool:
        nonlocal last, said_at, pending, looked, shortfalls
        while True:
            asked = total if pending is None else len(pending)
            with _still_looking(lambda waited: progress(
                    progressing, f"a look at {asked} {noun} still running after {waited:.0f} s: their daemons "
                                 "answer slowly while they converge")):
                looked = runtime.observe(plan, lab, only=pending, fib=fib, bfd=bfd)
            shortfalls = [s for s in looked if not s.ok]
            if not shortfalls and pending is None:
                progress(phase, f"{total}/{total} {noun}: " + _rule(fib, bfd))
                return True
            pending = {s.switch for s in shortfalls} or None
            done = total - len(shortfalls)
            if done != last:
                progress(progressing, f"{done}/{total} {noun}: " + _rule(fib, bfd))
                last, said_at = done, now()
            elif shortfalls and now() - said_at >= HEARTBEAT_S:
                progress(progressing, f"{done}/{total} {noun}, still: " + _short_of(shortfalls))
                said_at = now()
            if shortfalls:
                return False
            # every switch looked at again is converged: the confirming look at all of them, at once

    wait.until(converged, timeout, "convergence", interval=0.1, clock=now,
               error=lambda: LabError(f"not converged after {timeout:.0f} s ({len(shortfalls)} {noun} short): "
                                      + stuck_detail(shortfalls)))
    return looked


@contextmanager
def _still_looking(say: Callable[[float], None]) -> Iterator[None]:
    """A line every HEARTBEAT_S while the body runs: at gpu4096 one look at 352 switches, their
    daemons busy converging, took over 7 minutes, and the boot said nothing meanwhile."""
    done = threading.Event()
    t0 = time.monotonic()

    def beat() -> None:
        while not done.wait(HEARTBEAT_S):
            say(time.monotonic() - t0)

    beater = threading.Thread(target=beat, name="still-looking", daemon=True)
    beater.start()
    try:
        yield
    finally:
        done.set()
        beater.join()


def not_converged(e: LabError, configs: SwitchConfigs | None, progress: Progress) -> str:
    """A boot that did not converge: with fablab's own configs a failure (raised again); with
    the engineer's (`up --configs`) the lab stays up for the checks, and this says what is missing."""
    if configs is None or not str(e).startswith("not converged"):
        raise e
    progress("converged", f"NOT converged with the configs of {configs.source}: the lab stays up for the checks")
    return str(e)


def session_counts(looks: list[Shortfall]) -> dict[str, int]:
    """The figures of one look at every switch: sessions up and expected, switches converged
    ("switches" counts every BGP speaker: dual-homed hosts run BGP too)."""
    return {"bgp_up": sum(s.sessions_up for s in looks), "bgp_expected": sum(s.sessions_expected for s in looks),
            "bfd_up": sum(s.bfd_up for s in looks), "bfd_expected": sum(s.bfd_expected for s in looks),
            "switches_converged": sum(1 for s in looks if s.ok), "switches": len(looks)}


def _short_of(shortfalls: list[Shortfall]) -> str:
    """Where the switches still short stand, summed (a boot of minutes shows it moving)."""
    n = session_counts(shortfalls)
    routes = sum(len(s.missing_routes) for s in shortfalls)
    stuck = [f"{s.switch} {item}" for s in shortfalls for item in s.stuck]
    return (f"the {len(shortfalls)} short have {n['bgp_up']}/{n['bgp_expected']} BGP sessions up"
            + (f", {n['bfd_up']}/{n['bfd_expected']} BFD" if n["bfd_expected"] else "")
            + (f", {routes} prefixes not at their width" if routes else "")
            # a few sessions holding up a whole boot are worth naming while it waits for them
            + (f"; not up: {', '.join(stuck)}" if 0 < len(stuck) <= FEW_STUCK else ""))


def _rule(fib: bool, bfd: bool) -> str:
    sessions = "every session up" if bfd else "every BGP session up"
    return sessions + (", every prefix at its ECMP width" if fib else "")
