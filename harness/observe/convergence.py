"""When is a fabric converged? What each switch must show, derived from the plan.

Each switch originates what `Plan.originated` says: its loopback and its host links, one /31
each or its summaries. A route propagates as eBGP does: every hop prepends its ASN, and a
switch refuses a path that already carries its own ASN (so one spine never learns through
another spine of the same tier, RFC 7938). Shortest accepted paths win, and with
multipath-relax every port that delivers one is an ECMP next hop: that count is the width
the kernel FIB must show.
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from ipaddress import IPv4Network

from harness.core.observed import BfdPeer, BgpPeer, Shortfall
from harness.core.plan import Plan


@dataclass(frozen=True)
class Expectation:
    switch: str
    sessions: int
    bfd: int  # BFD sessions that must be up (0 when BFD is off)
    routes: tuple[tuple[IPv4Network, int], ...]  # prefix, ECMP width
    keys: tuple[str, ...] = ()  # each route's prefix as text, in the same order (FIBs are read as text)


_WHY = {"Idle": "no peer address learned", "Active": "no TCP connection to the peer",
        "Connect": "TCP connection in progress", "OpenSent": "OPEN sent, no answer",
        "OpenConfirm": "waiting for the first KEEPALIVE"}


def stuck_sessions(peers: tuple[BgpPeer, ...], bfd: tuple[BfdPeer, ...], expected: int) -> tuple[str, ...]:
    """Each session that is not up, with its state and what that state means here."""
    out = []
    for p in peers:
        if not p.established:
            why = _WHY.get(p.state, "")
            if p.state == "Idle" and p.remote_as:
                why = "peer known, session not started"
            out.append(f"{p.peer}: BGP {p.state}" + (f" ({why})" if why else ""))
    if expected and not peers:
        out.append("bgpd: no sessions seen (daemon not answering)")
    out += [f"{b.interface or b.peer}: BFD {b.status}" for b in bfd if not b.up]
    return tuple(out)


def stuck_detail(shortfalls: list[Shortfall], switches: int = 5) -> str:
    """A timeout's explanation: how many sessions are stuck in which state, then the first switches."""
    states: dict[str, int] = defaultdict(int)
    for s in shortfalls:
        for item in s.stuck:
            states[item.split(": ", 1)[1]] += 1
    head = ", ".join(f"{n} {state}" for state, n in sorted(states.items(), key=lambda kv: -kv[1]))
    lines = "; ".join(str(s) for s in shortfalls[:switches])
    more = f"; (+{len(shortfalls) - switches} more switches)" if len(shortfalls) > switches else ""
    return (f"sessions not up: {head}. " if head else "") + lines + more


@dataclass(frozen=True)
class _Speaker:
    """A BGP speaker of the plan: a switch, or a dual-homed host (which is never transit)."""

    asn: int
    peers: tuple[tuple[str, str], ...]  # (peer, the peer's port towards this speaker)
    transit: bool


def _speakers(plan: Plan) -> dict[str, _Speaker]:
    out = {}
    for sw in plan.switches:
        out[sw.name] = _Speaker(sw.asn, tuple((p.peer, p.peer_port) for p in (*sw.fabric_ports, *sw.host_peers)), True)
    for h in plan.hosts:
        if h.routed:
            out[h.name] = _Speaker(h.asn, tuple((n.peer, n.peer_port) for n in h.fe_nics), False)
    return out


def expectations(plan: Plan) -> dict[str, Expectation]:
    """What every switch, and every dual-homed host (it runs BGP too), must show."""
    speakers = _speakers(plan)
    widths: dict[str, dict[IPv4Network, int]] = {name: {} for name in speakers}
    origins = [(plan.originated(sw), sw.name) for sw in plan.switches]
    origins += [((h.loopback.network,), h.name) for h in plan.hosts if h.routed]
    for prefixes, origin in origins:
        for node, width in _ecmp_widths(speakers, origin).items():
            for prefix in prefixes:
                widths[node][prefix] = width
    bfd = plan.fabric.cluster.bfd.enabled
    out = {}
    for name, speaker in speakers.items():
        routes = tuple(sorted(widths[name].items(), key=lambda kv: kv[0]))
        sessions = len(speaker.peers)
        out[name] = Expectation(name, sessions, sessions if bfd else 0, routes,
                                tuple(str(prefix) for prefix, _ in routes))
    return out


def _ecmp_widths(speakers: dict[str, _Speaker], origin: str) -> dict[str, int]:
    """For every speaker that learns what `origin` advertises: how many of its ports carry a
    shortest path."""
    advertised: dict[str, set[tuple[int, ...]]] = {origin: {(speakers[origin].asn,)}}
    settled = {origin}
    frontier = [origin]
    widths: dict[str, int] = {}
    while frontier:
        received: dict[str, set[tuple[int, ...]]] = defaultdict(set)
        ports_with_path: dict[str, set[str]] = defaultdict(set)
        for u in frontier:
            if u != origin and not speakers[u].transit:
                continue
            for v, v_port in speakers[u].peers:
                if v in settled or v not in speakers:
                    continue
                for path in advertised[u]:
                    if speakers[v].asn in path:
                        continue  # AS-path loop: refused
                    received[v].add((speakers[v].asn,) + path)
                    ports_with_path[v].add(v_port)
        for v, paths in received.items():
            advertised[v] = paths
            widths[v] = len(ports_with_path[v])
        settled |= set(received)
        frontier = list(received)
    return widths


_CACHE: dict[int, tuple[Plan, dict[str, Expectation]]] = {}


def cached_expectations(plan: Plan) -> dict[str, Expectation]:
    """expectations(plan), computed once per plan object: a poll at 86 switches otherwise
    spent seconds re-deriving 88,000 (prefix, width) pairs each round."""
    hit = _CACHE.get(id(plan))
    if hit is None or hit[0] is not plan:
        if len(_CACHE) >= 8:
            _CACHE.clear()
        hit = _CACHE[id(plan)] = (plan, expectations(plan))  # the plan is kept, so its id stays its own
    return hit[1]


def shortfall(exp: Expectation, peers: tuple[BgpPeer, ...], bfd: tuple[BfdPeer, ...],
              widths: Mapping[str, int] | None) -> Shortfall:
    """`widths`: next hops per prefix (`routing.route_widths`); None when the FIB was not read
    because sessions are still missing (every route then counts as missing, width unknown)."""
    up = sum(1 for p in peers if p.established)
    bfd_up = sum(1 for b in bfd if b.up)
    missing = []
    for (prefix, width), key in zip(exp.routes, exp.keys):
        have = None if widths is None else widths.get(key, 0)
        if have != width:
            missing.append(f"{prefix} ({'?' if have is None else have}/{width} paths)")
    return Shortfall(exp.switch, up, exp.sessions, bfd_up, exp.bfd, tuple(missing),
                     stuck_sessions(peers, bfd, exp.sessions), sum(p.drops for p in peers))
