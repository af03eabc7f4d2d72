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
import subprocess
import tempfile
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from ipaddress import IPv4Network
from pathlib import Path
from typing import NoReturn, TypeVar

from harness.checks.base import NotMeasurable
from harness.core.capabilities import Feature
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
from harness.remote.commands import Read, command, vtysh_args
from harness.remote.ssh import CommandFailed, SshPool, Unreachable, direct

T = TypeVar("T")
NO_TRAFFIC = ("over SSH fablab sends no traffic and changes nothing: this case needs its own tools in the nodes "
              "(the direct path, on a lab fablab booted)")


class RemoteView:
    """What a check may use of a fabric reached over SSH (satisfies harness.plumbing.labview.LabView)."""

    def __init__(self, plan: Plan, reach: Reach, name: str) -> None:
        self._plan = plan
        self.reach = reach
        self._name = name
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
        return self._ask(node, Read.VTYSH, commands=vtysh_args(commands))

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
        return NO_TRAFFIC

    def acl_data_path(self, switch: str) -> str | None:
        return NO_TRAFFIC

    # -- what needs fablab's own hands in a node: not over SSH
    def _no(self, what: str) -> NoReturn:
        raise NotMeasurable(f"{what}: {NO_TRAFFIC}")

    def namespace(self, node: str) -> str:
        self._no("a node's namespace")

    def ns_exec(self, node: str, argv: Sequence[str], check: bool = False, timeout: float | None = 60.0,
                input: str | None = None) -> subprocess.CompletedProcess:
        self._no(f"{' '.join(argv)} in {node}'s namespace")

    def netlink(self, node: str):
        self._no(f"netlink in {node}")

    def in_namespace(self, node: str, fn: Callable[[], T]) -> T:
        self._no(f"fablab's own sockets in {node}")

    def set_sysctls(self, node: str, values: dict[str, str | int]) -> None:
        self._no(f"sysctls of {node} changed")

    def link(self, a: str, b: str, index: int = 0):
        self._no(f"the cable {a}–{b} failed on purpose")

    def set_carriers(self, handles: Sequence, up: bool) -> None:
        self._no("carriers changed")

    def counters(self, node: str, ifname: str | None = None) -> dict[str, Counters]:
        self._no(f"{node}'s interface counters")

    def acl_counters(self, switch: str) -> dict[str, int]:
        self._no(f"{switch}'s ACL counters")

    def acl_rules(self, switch: str) -> dict[str, str]:
        self._no(f"{switch}'s ACL rules")

    def set_config_db(self, switch: str, table: str, key: str, field: str, value: str | None) -> str | None:
        self._no(f"{switch}'s CONFIG_DB changed")

    def set_pause_storm(self, node: str, port: str, priorities: frozenset[int]) -> None:
        self._no(f"a pause storm from {node}:{port}")

    def lossless_counters(self):
        self._no("the lossless data plane's counters")


def _connect_in(netns: str, address: str, port: int, timeout: float) -> socket.socket:
    """A TCP connection made in `netns` (the lab's management station): the socket stays there."""
    return namespaces.run_in(netns, lambda: socket.create_connection((address, port), timeout=timeout))
