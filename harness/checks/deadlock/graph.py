"""The buffer dependency graph of a lossless priority, from FIBs and cables; its cycles.

A channel is one direction of a switch-to-switch cable: the ingress buffer at its receiving
end, which PFC fills from its sending end. A packet held in channel c (arrived at switch s)
waits for room in the channel it leaves by, c'; so c depends on c' whenever some destination
is routed into c by c's sender and on into c' by s. The graph is built per destination (a
packet reaches c only if the sender's FIB sends its destination there) and united over all
destinations, since one priority's buffer is shared by all of them. A cycle in it is a set of
buffers that can all wait on each other: PFC deadlock, which no timer clears (Hu et al.,
"Deadlocks in Datacenter Networks: Why Do They Form, and How to Avoid Them", HotNets 2016).
Up-down routing (every path up, then down) cannot make one; a route that goes down then up
again (a valley) is the ingredient every cycle needs.
"""
from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from ipaddress import IPv4Address, IPv4Network

from harness.checks.deadlock.observation import FibRoute, Wire


@dataclass(frozen=True, order=True)
class Channel:
    tx: str  # "switch:port" that sends (and honours the pause)
    rx: str  # "switch:port" whose ingress buffer fills (and sends the pause)

    @property
    def sender(self) -> str:
        return self.tx.partition(":")[0]

    @property
    def receiver(self) -> str:
        return self.rx.partition(":")[0]

    def __str__(self) -> str:
        return f"{self.tx} → {self.rx}"


def channels(wires: Iterable[Wire]) -> dict[str, Channel]:
    """"switch:port" -> the channel that port sends into: both directions of every cable."""
    out: dict[str, Channel] = {}
    for w in wires:
        out[w.a] = Channel(w.a, w.b)
        out[w.b] = Channel(w.b, w.a)
    return out


class Lpm:
    """Longest-prefix match over one switch's routes, as its kernel does it."""

    def __init__(self, routes: Iterable[FibRoute]) -> None:
        self._by_length: dict[int, dict[int, FibRoute]] = {}
        for r in routes:
            net = IPv4Network(r.prefix)
            self._by_length.setdefault(net.prefixlen, {})[int(net.network_address)] = r
        self._lengths = sorted(self._by_length, reverse=True)

    def __call__(self, address: IPv4Address) -> FibRoute | None:
        a = int(address)
        for n in self._lengths:
            found = self._by_length[n].get(a & (0xFFFFFFFF << (32 - n)) & 0xFFFFFFFF)
            if found is not None:
                return found
        return None


Edge = tuple[Channel, Channel]


def dependencies(fibs: Mapping[str, Iterable[FibRoute]], wires: Iterable[Wire],
                 destinations: Iterable[IPv4Address]) -> dict[Edge, frozenset[str]]:
    """(in-channel, out-channel) -> the receiving switch's routes ("prefix") that make it, for
    every destination. Destinations that every switch routes by the same routes forward alike,
    so each such class is walked once (a leaf's summary: once per leaf, not per GPU)."""
    into = channels(wires)
    lpms = {sw: Lpm(routes) for sw, routes in fibs.items()}
    switches = sorted(lpms)
    seen: set[tuple[FibRoute | None, ...]] = set()
    edges: dict[Edge, set[str]] = {}
    for d in destinations:
        routes = tuple(lpms[sw](d) for sw in switches)
        if routes in seen:
            continue
        seen.add(routes)
        out = {sw: (r, [into[f"{sw}:{p}"] for p in r.ports if f"{sw}:{p}" in into])
               for sw, r in zip(switches, routes) if r is not None}
        for _, (_, sent) in out.items():
            for c in sent:
                if c.receiver not in out:
                    continue
                route, onward = out[c.receiver]
                for c2 in onward:
                    edges.setdefault((c, c2), set()).add(route.prefix)
    return {e: frozenset(p) for e, p in edges.items()}


def components(nodes: Iterable[Channel], succ: Mapping[Channel, tuple[Channel, ...]]) -> list[list[Channel]]:
    """Tarjan's strongly connected components, iteratively (a large fabric's graph is deeper
    than Python's recursion limit), each sorted, those of one channel left out (no channel
    depends on itself: a packet never leaves by the channel it arrived in)."""
    index: dict[Channel, int] = {}
    low: dict[Channel, int] = {}
    stack: list[Channel] = []
    on_stack: set[Channel] = set()
    found: list[list[Channel]] = []
    counter = 0
    for root in sorted(nodes):
        if root in index:
            continue
        work = [(root, iter(succ.get(root, ())))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            v, children = work[-1]
            advanced = False
            for w in children:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(succ.get(w, ()))))
                    advanced = True
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                part = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    part.append(w)
                    if w == v:
                        break
                if len(part) > 1:
                    found.append(sorted(part))
    return sorted(found)


def shortest_cycle(component: list[Channel], succ: Mapping[Channel, tuple[Channel, ...]]) -> tuple[Channel, ...]:
    """The shortest cycle through the component's first channel, inside the component: the
    one a finding names (breadth first, so the same graph always names the same cycle)."""
    start, inside = component[0], set(component)
    parent: dict[Channel, Channel] = {}
    queue = deque([start])
    while queue:
        v = queue.popleft()
        for w in succ.get(v, ()):
            if w not in inside:
                continue
            if w == start:
                path = [v]
                while path[-1] != start:
                    path.append(parent[path[-1]])
                return tuple(reversed(path))
            if w not in parent:
                parent[w] = v
                queue.append(w)
    raise ValueError("a strongly connected component of several channels has a cycle through each of them")


def successors(edges: Iterable[Edge], keep: frozenset[Channel]) -> dict[Channel, tuple[Channel, ...]]:
    """The graph restricted to the channels in `keep` (those lossless for one priority)."""
    succ: dict[Channel, list[Channel]] = {}
    for a, b in edges:
        if a in keep and b in keep:
            succ.setdefault(a, []).append(b)
    return {a: tuple(sorted(bs)) for a, bs in succ.items()}
