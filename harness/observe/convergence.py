"""When is a fabric converged? What each switch must show, derived from the plan.

Each switch originates its loopback and its host-facing /31s. A route propagates as eBGP
does: every hop prepends its ASN, and a switch refuses a path that already carries its own
ASN (so one spine never learns through another spine of the same tier, RFC 7938).
Shortest accepted paths win, and with multipath-relax every port that delivers one is an
ECMP next hop: that count is the width the kernel FIB must show.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from ipaddress import IPv4Network

from harness.observe.routing import BfdPeer, BgpPeer, Route
from harness.plan import Plan, SwitchPlan


@dataclass(frozen=True)
class Expectation:
    switch: str
    sessions: int
    bfd: int  # BFD sessions that must be up (0 when BFD is off)
    routes: tuple[tuple[IPv4Network, int], ...]  # prefix, ECMP width


@dataclass(frozen=True)
class Shortfall:
    switch: str
    sessions_up: int
    sessions_expected: int
    bfd_up: int
    bfd_expected: int
    missing_routes: tuple[str, ...]  # "10.0.2.0/31 (0/2 paths)"

    @property
    def ok(self) -> bool:
        return (self.sessions_up >= self.sessions_expected and self.bfd_up >= self.bfd_expected
                and not self.missing_routes)

    def __str__(self) -> str:
        parts = []
        if self.sessions_up < self.sessions_expected:
            parts.append(f"{self.sessions_up}/{self.sessions_expected} BGP sessions")
        if self.bfd_up < self.bfd_expected:
            parts.append(f"{self.bfd_up}/{self.bfd_expected} BFD sessions up")
        if self.missing_routes:
            more = f" (+{len(self.missing_routes) - 3} more)" if len(self.missing_routes) > 3 else ""
            parts.append("routes " + ", ".join(self.missing_routes[:3]) + more)
        return f"{self.switch}: " + "; ".join(parts)


def originated(sw: SwitchPlan) -> list[IPv4Network]:
    return [sw.loopback.network] + [p.address.network for p in sw.host_ports]


def expectations(plan: Plan) -> dict[str, Expectation]:
    switches = {s.name: s for s in plan.switches}
    widths: dict[str, dict[IPv4Network, int]] = {name: {} for name in switches}
    for dest in plan.switches:
        for node, width in _ecmp_widths(switches, dest).items():
            for prefix in originated(dest):
                widths[node][prefix] = width
    bfd = plan.fabric.cluster.bfd.enabled
    return {name: Expectation(name, len(sw.fabric_ports), len(sw.fabric_ports) if bfd else 0, tuple(sorted(widths[name].items(),
                                                                      key=lambda kv: kv[0])))
            for name, sw in switches.items()}


def _ecmp_widths(switches: dict[str, SwitchPlan], dest: SwitchPlan) -> dict[str, int]:
    """For every switch that learns dest's prefixes: how many of its ports carry a shortest path."""
    advertised: dict[str, set[tuple[int, ...]]] = {dest.name: {(dest.asn,)}}
    settled = {dest.name}
    frontier = [dest.name]
    widths: dict[str, int] = {}
    while frontier:
        received: dict[str, set[tuple[int, ...]]] = defaultdict(set)
        ports_with_path: dict[str, set[str]] = defaultdict(set)
        for u in frontier:
            for port in switches[u].fabric_ports:
                v = port.peer
                if v in settled or v not in switches:
                    continue
                for path in advertised[u]:
                    if switches[v].asn in path:
                        continue  # AS-path loop: refused
                    received[v].add((switches[v].asn,) + path)
                    ports_with_path[v].add(port.peer_port)
        for v, paths in received.items():
            advertised[v] = paths
            widths[v] = len(ports_with_path[v])
        settled |= set(received)
        frontier = list(received)
    return widths


def shortfall(exp: Expectation, peers: tuple[BgpPeer, ...], bfd: tuple[BfdPeer, ...],
              fib: dict[IPv4Network, Route]) -> Shortfall:
    up = sum(1 for p in peers if p.established)
    bfd_up = sum(1 for b in bfd if b.up)
    missing = []
    for prefix, width in exp.routes:
        route = fib.get(prefix)
        have = route.width if route else 0
        if have != width:
            missing.append(f"{prefix} ({have}/{width} paths)")
    return Shortfall(exp.switch, up, exp.sessions, bfd_up, exp.bfd, tuple(missing))
