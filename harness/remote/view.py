"""A fabric reached over SSH, as a check sees a lab (`LabView`): the read-only checks run on it
unchanged (`fablab check LAB --via ssh`, `fablab check --inventory FILE`).

Every read is a command on the node, chosen by its kind (harness/remote/commands.py), and read
by the same parsers the direct path uses (iproute2's JSON, FRR's JSON, lldpd's JSON, a
CONFIG_DB), so a verdict over SSH and one taken directly can be compared figure by figure.
What needs fablab's own hands in a node (its namespace, probes and traffic, a cable pulled, a
config changed) is not measurable here, and says why; a node that cannot be reached is named
with the reason, in the case that needed it.
"""
from __future__ import annotations

import socket
import threading
import subprocess
import tempfile
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from ipaddress import IPv4Network
from pathlib import Path
from typing import NoReturn, TypeVar

from harness.checks.base import NotMeasurable
from harness.core.capabilities import Feature
from harness.core.errors import HarnessError
from harness.core.inventory import InventoryNode, Reach, RemoteKind
from harness.core.model import Plane
from harness.core.observed import (BfdPeer, BgpPeer, CablingScope, Counters, LldpNeighbour, PortState, Route,
                                   Shortfall)
from harness.core.plan import CableRow, Plan
from harness.observe.convergence import cached_expectations, shortfall
from harness.observe.links import json_loads, port_states
from harness.observe.lldp import neighbours_from_lldpctl_json, neighbours_from_show_lldp_table
from harness.observe.routing import bfd_peers, bgp_peers, kernel_routes, route_widths
from harness.plumbing import namespaces
from harness.remote.commands import Change, Read, change, command, read_only, vtysh_args
from harness.remote.iproute import RemoteIpRoute
from harness.remote.agents import Agent, AgentEnd, AgentError
from harness.remote.ssh import CommandFailed, SshPool, Unreachable, direct
from harness.traffic.probe import OpenProbes

T = TypeVar("T")
NO_TRAFFIC = ("over SSH fablab sends no traffic and changes nothing: this case needs its own tools in the nodes "
              "(the direct path, on a lab fablab booted; --allow-traffic sends isolation's probes through fablab's "
              "agent)")
NO_FAULTS = "over SSH fablab changes nothing unless asked (--allow-faults)"
AGENT_ONLY = ("over SSH fablab's traffic agent carries isolation's probes only: this case needs fablab's own "
              "processes in the nodes (the direct path, on a lab fablab booted)")


class RemoteView:
    """What a check may use of a fabric reached over SSH (satisfies harness.plumbing.labview.LabView)."""

    def __init__(self, plan: Plan, reach: Reach, name: str, allow_traffic: bool = False,
                 allow_faults: bool = False) -> None:
        """allow_traffic: fablab's agent may run on the nodes and send its probes (--allow-traffic);
        allow_faults: ports, sysctls and FRR's configuration may be changed (--allow-faults)."""
        self._plan = plan
        self.reach = reach
        self._name = name
        self.allow_traffic = allow_traffic
        self.allow_faults = allow_faults
        self._agents: dict[str, Agent] = {}
        self._agents_lock = threading.Lock()
        self._ifindex: dict[str, dict[str, int]] = {}
        self.extra_cables: list[CableRow] = []
        connect = direct if reach.station_netns is None else partial(_connect_in, reach.station_netns)
        self.ssh = SshPool(connect, Path(reach.known_hosts) if reach.known_hosts else None)

    # -- what it is
    @property
    def name(self) -> str:
        return self._name

    @property
    def plan(self) -> Plan:
        return self._plan

    @property
    def run_dir(self) -> Path:
        """Files a run keeps live on this machine; the fabric has no directory of fablab's."""
        return Path(tempfile.gettempdir()) / f"fablab-{self._name}"

    def close(self) -> None:
        with ThreadPoolExecutor(max_workers=8) as pool:
            list(pool.map(Agent.close, self._agents.values()))
        self._agents.clear()
        self.ssh.close()

    def __enter__(self) -> RemoteView:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- reads, one command each
    def _node(self, node: str) -> InventoryNode:
        self.check_node(node)
        found = self.reach.inventory.node(node)
        if found is None:
            raise NotMeasurable(f"{node} is not in {self.reach.inventory.source}: not reached")
        return found

    def _ask(self, node: str, read: Read, **values: str) -> str:
        inv = self._node(node)
        line = command(inv, read, **values)
        if line is None:
            raise NotMeasurable(f"{node} ({inv.kind}) has no command for {read.value}"
                                + (": give its config_db path in the inventory" if read is Read.CONFIG_DB else ""))
        try:
            return self.ssh.run(inv, line)
        except Unreachable as e:
            raise NotMeasurable(f"unreachable: {e}") from None
        except CommandFailed as e:
            raise NotMeasurable(f"no answer: {e}") from None

    def check_node(self, node: str) -> None:
        if node not in {n.name for n in self._plan.fabric.nodes}:
            raise NotMeasurable(f"{self._name} has no node {node!r}")

    def vtysh(self, node: str, *commands: str) -> str:
        changing = next((c for c in commands if not read_only(c)), None)
        if changing is not None and not self.allow_faults:
            raise NotMeasurable(f"`{changing}` in {node}'s FRR would change it: {NO_FAULTS}")
        return self._ask(node, Read.VTYSH, commands=vtysh_args(commands))

    def change(self, node: str, what: Change, **values: str) -> None:
        """One change on a node, with --allow-faults only; kept in the transcript as every command."""
        if not self.allow_faults:
            raise NotMeasurable(f"{what.value} on {node}: {NO_FAULTS}")
        inv = self._node(node)
        try:
            self.ssh.run(inv, change(inv, what, **values))
        except Unreachable as e:
            raise NotMeasurable(f"unreachable: {e}") from None
        except CommandFailed as e:
            raise NotMeasurable(f"not changed: {e}") from None

    def sysctl(self, node: str, key: str) -> str:
        return self._ask(node, Read.SYSCTL, key_path=key.replace(".", "/")).strip()

    def routes(self, node: str) -> dict[IPv4Network, Route]:
        return kernel_routes(self._ask(node, Read.ROUTES))

    def route(self, node: str, prefix: IPv4Network) -> Route | None:
        return self.routes(node).get(prefix)  # one dump: a failover's 20 ms polls are not read over SSH

    def bgp_peers(self, node: str) -> tuple[BgpPeer, ...]:
        return bgp_peers(node, json_loads(self._ask(node, Read.BGP), f"{node}: show bgp summary json"))  # type: ignore[arg-type]

    def bfd_peers(self, node: str) -> tuple[BfdPeer, ...]:
        return bfd_peers(node, json_loads(self._ask(node, Read.BFD), f"{node}: show bfd peers json"))  # type: ignore[arg-type]

    def running_config_db(self, switch: str) -> dict:
        doc = json_loads(self._ask(switch, Read.CONFIG_DB), f"{switch}: its running CONFIG_DB")
        if not isinstance(doc, dict):
            raise NotMeasurable(f"{switch}: its CONFIG_DB is not a JSON object")
        return doc

    def port_states(self, node: str) -> tuple[PortState, ...]:
        return port_states(self._ask(node, Read.LINKS), f"ip -j -d link show on {node}")

    def mtus(self, node: str) -> dict[str, int]:
        return {p.name: p.mtu for p in self.port_states(node)}

    def lldp(self, node: str) -> tuple[LldpNeighbour, ...] | None:
        inv = self._node(node)
        text = self._ask(node, Read.LLDP)
        if inv.kind is RemoteKind.SONIC:
            return neighbours_from_show_lldp_table(text)
        return neighbours_from_lldpctl_json(json_loads(text, f"lldpctl -f json on {node}"))

    def shortfalls(self) -> list[Shortfall]:
        """Every reached switch (and BGP host) against the plan: sessions up, prefixes at their width."""
        exp = cached_expectations(self._plan)

        def look(name: str) -> Shortfall:
            peers = self.bgp_peers(name)
            bfd = self.bfd_peers(name) if exp[name].bfd else ()
            widths = route_widths(self._ask(name, Read.WIDTHS)) if exp[name].routes else None
            return shortfall(exp[name], peers, bfd, widths)

        names = [n for n in exp if self.reach.inventory.node(n) is not None]
        with ThreadPoolExecutor(max_workers=8) as pool:
            return [s for s in pool.map(look, names) if not s.ok]

    def address(self, node: str, nic: str) -> str:
        return str(self._plan.host(node).nic(nic).address.ip)

    # -- cables: the plan's; LLDP is the evidence of what is cabled
    def all_cables(self) -> list[CableRow]:
        return list(self._plan.cables)

    def cables(self, a: str, b: str) -> list[CableRow]:
        return [c for c in self._plan.cables if {c.a_node, c.b_node} == {a, b}]

    def kernel_port_names(self) -> dict[tuple[str, str], str]:
        return {}

    def cabling_scope(self) -> CablingScope:
        nodes = tuple(n.name for n in self._plan.fabric.nodes if self.reach.inventory.node(n.name) is not None)
        return CablingScope(tuple(Plane), nodes, frozenset(),
                            f"LLDP over SSH from {len(nodes)} nodes of {self.reach.inventory.source}", veth=False)

    def lacks(self, feature: Feature) -> str | None:
        if feature is Feature.OWN_TRAFFIC and self.allow_traffic:
            return None
        return AGENT_ONLY if self.allow_traffic else NO_TRAFFIC

    def acl_data_path(self, switch: str) -> str | None:
        return NO_TRAFFIC

    # -- what needs fablab's own hands in a node: not over SSH
    def _no(self, what: str) -> NoReturn:
        raise NotMeasurable(f"{what}: {AGENT_ONLY if self.allow_traffic else NO_TRAFFIC}")

    def namespace(self, node: str) -> str:
        self._no("a node's namespace")

    def ns_exec(self, node: str, argv: Sequence[str], check: bool = False, timeout: float | None = 60.0,
                input: str | None = None) -> subprocess.CompletedProcess:
        self._no(f"{' '.join(argv)} in {node}'s namespace")

    def netlink(self, node: str) -> RemoteIpRoute:
        """Read-only: the look-ups a leak's path trace makes (links, `ip route get`)."""
        def names() -> dict[str, int]:
            if node not in self._ifindex:
                links = json_loads(self._ask(node, Read.LINKS), f"ip -j -d link show on {node}")
                self._ifindex[node] = {str(l.get("ifname")): int(l.get("ifindex", 0)) for l in links}  # type: ignore[union-attr]
            return self._ifindex[node]

        self.check_node(node)
        return RemoteIpRoute(node, partial(self._ask, node), names)

    def in_namespace(self, node: str, fn: Callable[[], T]) -> T:
        """A round of probes (`OpenProbes`) is held by fablab's agent on the node (--allow-traffic);
        any other code of fablab's cannot run in a node reached over SSH."""
        if not (self.allow_traffic and isinstance(fn, OpenProbes)):
            self._no(f"fablab's own sockets in {node}")
        try:
            return AgentEnd(self._agent(node), fn)  # type: ignore[return-value]
        except (Unreachable, CommandFailed, AgentError) as e:
            raise NotMeasurable(f"probes from {node}: {e}") from None

    def _agent(self, node: str) -> Agent:
        """The node's agent; the first call starts every reached node's at once (a start is an SFTP
        copy and a python3 start: seconds, one after another)."""
        with self._agents_lock:
            if not self._agents:
                names = [n.name for n in self.reach.inventory.nodes if n.name not in self.ssh.unreachable]
                with ThreadPoolExecutor(max_workers=8) as pool:
                    started = list(pool.map(self._start_agent, names))
                self._agents.update({n: a for n, a in zip(names, started) if isinstance(a, Agent)})
            if node not in self._agents:
                self._agents[node] = self._start_agent(node, quiet=False)  # type: ignore[assignment]
            return self._agents[node]

    def _start_agent(self, node: str, quiet: bool = True) -> Agent | HarnessError:
        try:
            return Agent(self.ssh, self._node(node), self._name)
        except (Unreachable, CommandFailed, AgentError) as e:
            if quiet:
                return e  # named when a round asks for this node
            raise

    def set_sysctls(self, node: str, values: dict[str, str | int]) -> None:
        for key, value in values.items():
            self.change(node, Change.SYSCTL, key=key, value=str(value))

    def link(self, a: str, b: str, index: int = 0) -> RemoteLink:
        found = self.cables(a, b)
        if index >= len(found):
            raise NotMeasurable(f"{a}–{b} has {len(found)} planned cable(s); index {index} is out of range")
        if not self.allow_faults:
            raise NotMeasurable(f"the cable {a}–{b} failed on purpose: {NO_FAULTS}")
        return RemoteLink(self, found[index])

    def set_carriers(self, handles: Sequence[RemoteLink], up: bool) -> None:
        with ThreadPoolExecutor(max_workers=8) as pool:
            list(pool.map(lambda h: h.up() if up else h.down(), handles))

    def counters(self, node: str, ifname: str | None = None) -> dict[str, Counters]:
        self._no(f"{node}'s interface counters")

    def acl_counters(self, switch: str) -> dict[str, int]:
        self._no(f"{switch}'s ACL counters")

    def acl_rules(self, switch: str) -> dict[str, str]:
        self._no(f"{switch}'s ACL rules")

    def set_config_db(self, switch: str, table: str, key: str, field: str, value: str | None) -> str | None:
        self._no_change(f"{switch}'s CONFIG_DB changed")

    def set_pause_storm(self, node: str, port: str, priorities: frozenset[int]) -> None:
        self._no_change(f"a pause storm from {node}:{port}")

    def _no_change(self, what: str) -> NoReturn:
        raise NotMeasurable(f"{what}: " + ("over SSH fablab changes ports, sysctls and FRR's configuration only"
                                            if self.allow_faults else NO_FAULTS))

    def lossless_counters(self):
        self._no("the lossless data plane's counters")

    def logs(self, nodes: Collection[str]) -> dict[str, str]:
        return {}  # a staged fabric's logs are its operators' to collect, not read over fablab's SSH

    def daemon_pids(self, nodes: Collection[str]) -> dict[str, int]:
        return {}  # a real switch's control plane has its CPU: no wait of the machine's to read


@dataclass(frozen=True)
class RemoteLink:
    """A planned cable of a fabric reached over SSH, failed by shutting its upper end's port
    (the spine side, as the direct path's `LinkHandle.down`): its peer loses the carrier."""

    view: RemoteView
    cable: CableRow

    @property
    def ends(self) -> tuple[tuple[str, str], tuple[str, str]]:
        return self.cable.ends

    def down(self) -> None:
        self.view.change(self.cable.b_node, Change.PORT_DOWN, port=self.cable.b_port)

    def up(self) -> None:
        self.view.change(self.cable.b_node, Change.PORT_UP, port=self.cable.b_port)

    def gray(self) -> None:
        raise NotMeasurable(f"a gray failure on {self}: over SSH fablab only shuts ports (nothing of its own "
                            "drops frames there)")

    def heal(self) -> None:
        self.gray()

    def __str__(self) -> str:
        return self.cable.label


def _connect_in(netns: str, address: str, port: int, timeout: float) -> socket.socket:
    """A TCP connection made in `netns` (the lab's management station): the socket stays there."""
    return namespaces.run_in(netns, lambda: socket.create_connection((address, port), timeout=timeout))
