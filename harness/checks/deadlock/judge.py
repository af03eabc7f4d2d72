"""The deadlock verdict: no lossless priority's buffer dependency graph has a cycle.

What is expected comes from the plan: the destinations (every BE GPU NIC's address) and the
tier of each switch (leaf, spine, super-spine: to call a dependency down-then-up). What is
judged is what ran: the FIBs, the cables and the PFC priorities of the observation. A
channel is lossless for a priority when both of its ends enable PFC on it: the receiver
pauses and the sender holds back, so the sender's buffer can wait on the receiver's.
"""
from __future__ import annotations

from dataclasses import dataclass

from harness.checks.base import Outcome, Table
from harness.checks.deadlock.graph import Channel, components, dependencies, shortest_cycle, successors
from harness.checks.deadlock.observation import DeadlockSeen
from harness.core.model import Plane, Role
from harness.core.plan import Plan

TIERS = {Role.BE_LEAF: 0, Role.BE_SPINE: 1, Role.BE_SUPERSPINE: 2}
SHOWN_PREFIXES = 3  # routes named per step of a cycle; the rest counted


@dataclass(frozen=True)
class Cycle:
    """Buffers that wait on each other, link by link: links[i]'s receiving switch routes
    `via[i]` on into links[i + 1] (the last into the first)."""

    priorities: tuple[int, ...]  # the lossless priorities whose graph holds it
    links: tuple[str, ...]  # each "switch:port → switch:port", sender first
    via: tuple[tuple[str, ...], ...]  # per link, the receiving switch's routes (prefixes) that make the step
    knot: int  # channels in the strongly connected set it was found in (>= len(links))

    def __str__(self) -> str:
        steps = []
        for i, (link, via) in enumerate(zip(self.links, self.via)):
            switch, _, port = self.links[(i + 1) % len(self.links)].partition(" → ")[0].partition(":")
            shown = ", ".join(via[:SHOWN_PREFIXES]) + (f" (+{len(via) - SHOWN_PREFIXES})"
                                                       if len(via) > SHOWN_PREFIXES else "")
            steps.append(f"{link}, where {switch} routes {shown} out of {port}")
        prio = "priority" if len(self.priorities) == 1 else "priorities"
        knot = f" (of a knot of {self.knot})" if self.knot > len(self.links) else ""
        return (f"{prio} {','.join(map(str, self.priorities))}, {len(self.links)} links{knot}: "
                + "; ".join(steps) + ", back into the first")


@dataclass(frozen=True)
class DeadlockResult(Outcome):
    switches: int  # BE switches whose FIB was read
    destinations: int  # BE GPU NIC addresses routed through them
    links: int  # switch-to-switch cables the kernels show
    lossless: dict[str, int]  # priority -> channels (one direction of a cable) with PFC on it at both ends
    dependencies: int  # (in-channel, out-channel) steps some route makes, over lossless channels
    valleys: int  # of those, down then up again: the only kind a cycle can be made of
    cycles: tuple[Cycle, ...]

    held, broken = "no cyclic buffer dependency", "CYCLIC buffer dependency (PFC can deadlock)"

    def sentence(self) -> str:
        if not self.links:
            return (f"{self.destinations} BE GPU addresses, {self.switches} switches and no switch-to-switch cable: "
                    "no buffer waits on another switch's")
        lossless = ", ".join(f"{n} on priority {p}" for p, n in self.lossless.items()) or "none"
        return (f"{self.destinations} BE GPU addresses routed through {self.switches} switches' FIBs over "
                f"{self.links} cables (lossless channels: {lossless}): {self.dependencies} buffer dependencies, "
                f"{self.valleys} down then up, {len(self.cycles)} cycle(s)")

    def findings_table(self) -> Table | None:
        if not self.cycles:
            return None
        return Table(("priorities", "link", "routed on by"),
                     tuple((",".join(map(str, c.priorities)), link, ", ".join(via))
                           for c in self.cycles for link, via in zip(c.links, c.via)))


def _tier(plan: Plan) -> dict[str, int]:
    return {s.name: TIERS.get(s.role, 0) for s in plan.switches if s.plane is Plane.BE}


def lossless_channels(seen: DeadlockSeen, every: tuple[Channel, ...]) -> dict[int, frozenset[Channel]]:
    """Priority -> the channels whose two ends both enable PFC on it."""
    def pfc(end: str) -> frozenset[int]:
        sw, _, port = end.partition(":")
        return frozenset(seen.pfc.get(sw, {}).get(port, ()))

    out: dict[int, set[Channel]] = {}
    for c in every:
        for p in pfc(c.tx) & pfc(c.rx):
            out.setdefault(p, set()).add(c)
    return {p: frozenset(cs) for p, cs in sorted(out.items())}


def judge_deadlock(plan: Plan, seen: DeadlockSeen) -> DeadlockResult:
    destinations = sorted({nic.address.ip for h in plan.hosts for nic in h.nics if nic.plane is Plane.BE})
    edges = dependencies(seen.fibs, seen.wires, destinations)
    every = tuple(sorted({c for e in edges for c in e} | {c for w in seen.wires for c in
                                                          (Channel(w.a, w.b), Channel(w.b, w.a))}))
    by_priority = lossless_channels(seen, every)
    tier = _tier(plan)
    # Priorities lossless on the same channels have the same graph: judged once, named together.
    groups: dict[frozenset[Channel], list[int]] = {}
    for p, keep in by_priority.items():
        groups.setdefault(keep, []).append(p)
    lossless_edges = {e for e in edges if any(e[0] in k and e[1] in k for k in groups)}
    def climbs(c: Channel) -> int:
        return tier.get(c.receiver, 0) - tier.get(c.sender, 0)

    valleys = sum(1 for a, b in lossless_edges if climbs(a) < 0 < climbs(b))
    cycles = []
    for keep, priorities in groups.items():
        succ = successors(edges, keep)
        for part in components(keep, succ):
            loop = shortest_cycle(part, succ)
            via = tuple(tuple(sorted(edges[(c, loop[(i + 1) % len(loop)])])) for i, c in enumerate(loop))
            cycles.append(Cycle(tuple(priorities), tuple(map(str, loop)), via, len(part)))
    cycles.sort(key=lambda c: (c.priorities, c.links))
    return DeadlockResult(switches=len(seen.fibs), destinations=len(destinations), links=len(seen.wires),
                          lossless={str(p): len(k) for p, k in by_priority.items()},
                          dependencies=len(lossless_edges), valleys=valleys, cycles=tuple(cycles),
                          seconds=seen.seconds, problems=tuple(map(str, cycles)))
