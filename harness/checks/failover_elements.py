"""What fails in each failover case, where its QPs are counted and whose route must show it
avoided: the element of a case, chosen by the QPs it carries (harness/checks/failover.py)."""
from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum

from harness.core.errors import HarnessError
from harness.core.model import Plane, Role
from harness.plumbing.labview import LabView


class Failure(StrEnum):
    """What fails in a failover case (reported as the case failover-<value>). A StrEnum: it
    prints, and is recorded, as its value, and compares equal to it."""

    LOCAL = "local"  # a leaf–spine link loses its carrier
    REMOTE = "remote"  # a spine loses its link to the far leaf
    GRAY = "gray"  # a leaf–spine link drops everything, carrier up
    SPINE = "spine"  # every link of one spine
    SUPERSPINE_LINK = "superspine-link"  # a spine's link to a super-spine (5-stage BE)
    SUPERSPINE = "superspine"  # every link of a super-spine (5-stage BE)

    @classmethod
    def named(cls, name: str) -> Failure:
        try:
            return cls(name)
        except ValueError:
            raise HarnessError(f"failover case {name!r}: valid cases are {', '.join(cls)}") from None


# The cases of a 5-stage BE: a spine's link to a super-spine, a whole super-spine.
SUPERSPINE_CASES = (Failure.SUPERSPINE_LINK, Failure.SUPERSPINE)


@dataclass(frozen=True)
class Element:
    """What fails in a case, where its QPs are counted, and whose route shows it avoided."""

    name: str
    fail: Callable[[], None]
    restore: Callable[[], None]
    counted_at: tuple[tuple[str, str], ...]  # (switch, egress port) whose traffic crosses the element
    route_ports: tuple[str, ...]  # `watch`'s ports to it: none in its route = the element avoided
    watch: str  # the switch that must reroute: the source leaf, or a spine that reroutes by itself
    rehashed: bool = False  # several links of one switch's ECMP group fail (failover_windows.judge)
    ends: tuple[tuple[str, str], ...] = ()  # (switch, port) at both ends of every cable it fails


def _ends(*handles) -> tuple[tuple[str, str], ...]:
    return tuple(end for h in handles for end in ((h.cable.a_node, h.cable.a_port), (h.cable.b_node, h.cable.b_port)))


def _port_on(cable, node: str) -> str:
    return cable.a_port if cable.a_node == node else cable.b_port


def element_of(lab: LabView, case: Failure, leaf: str, far_leaf: str, choice: tuple[str, str]) -> Element:
    """choice: (switch, port) that carried the most candidate QPs: a leaf uplink, or for
    `remote` a spine's port towards the far leaf."""
    node, port = choice
    if case in (Failure.LOCAL, Failure.GRAY):
        handle = link_of(lab, leaf, port)
        fail, restore = (handle.down, handle.up) if case is Failure.LOCAL else (handle.gray, handle.heal)
        return Element(str(handle), fail, restore, ((leaf, port),), (port,), leaf, ends=_ends(handle))
    if case is Failure.SPINE:
        spine = _peer_of(lab, leaf, port)
        handles = _watched_first([link_for(lab, c) for c in lab.all_cables()
                                  if spine in (c.a_node, c.b_node) and c.plane is Plane.BE], [leaf])
        ports = tuple(_port_on(h.cable, leaf) for h in handles if leaf in (h.cable.a_node, h.cable.b_node))

        def fail() -> None:
            lab.set_carriers(handles, up=False)

        def restore() -> None:
            lab.set_carriers(handles, up=True)

        return Element(spine, fail, restore, tuple((leaf, p) for p in ports), ports, leaf, len(ports) > 1,
                       _ends(*handles))
    if case is Failure.SUPERSPINE_LINK:  # a spine's link up to a super-spine: the spine reroutes by itself
        handle = link_of(lab, node, port)
        return Element(str(handle), handle.down, handle.up, ((node, port),), (port,), node, ends=_ends(handle))
    if case is Failure.SUPERSPINE:  # every link of a super-spine; each spine above the source leaf reroutes
        superspine = _peer_of(lab, node, port)
        spines = set(_spines_above(lab, leaf))
        handles = _watched_first([link_for(lab, c) for c in lab.all_cables() if superspine in (c.a_node, c.b_node)
                                  and c.plane is Plane.BE], [node, *sorted(spines - {node})])
        below = [(n, _port_on(h.cable, n)) for h in handles for n in (h.cable.a_node, h.cable.b_node)
                 if n != superspine and n in spines]
        links_per_spine = Counter(n for n, _ in below)
        return Element(superspine, lambda: lab.set_carriers(handles, up=False), lambda: lab.set_carriers(handles, up=True),
                       tuple(below), tuple(p for n, p in below if n == node), node,
                       max(links_per_spine.values(), default=0) > 1, _ends(*handles))
    # remote: the spine's link to the far leaf; the source leaf must stop sending to that spine
    # (when it has no other link to the far leaf) or the spine must stop using the port.
    spine = node
    handle = link_of(lab, spine, port)
    if sum(1 for p in lab.plan.switch(spine).fabric_ports if p.peer == far_leaf) > 1:
        # parallel links (uplinks_per_spine > 1): the spine still reaches the far leaf, so it
        # reroutes by itself and the source leaf's route rightly stays as it was
        return Element(str(handle), handle.down, handle.up, ((spine, port),), (port,), spine, ends=_ends(handle))
    to_spine = tuple(p.name for p in lab.plan.switch(leaf).fabric_ports if p.peer == spine)
    return Element(str(handle), handle.down, handle.up, ((spine, port),), to_spine, leaf, ends=_ends(handle))


def _watched_first(handles: list, nodes: list[str]) -> list:
    """A whole switch's cables in the order they are cut: those of `nodes` (the switch that
    must reroute first) before the rest. A switch losing power loses them all at once; here
    each is a netlink call behind the rtnl lock (197.5 ms for a spine's 8 once beside another
    lab), and a QP whose far cable died first would lose packets its leaf could not yet know of."""
    rank = {n: i for i, n in enumerate(nodes)}
    last = len(nodes)
    return sorted(handles, key=lambda h: min(rank.get(h.cable.a_node, last), rank.get(h.cable.b_node, last)))


def link_of(lab: LabView, node: str, port: str):
    for c in lab.all_cables():
        if (c.a_node, c.a_port) == (node, port) or (c.b_node, c.b_port) == (node, port):
            return link_for(lab, c)
    raise HarnessError(f"no cable on {node}:{port}")


def link_for(lab: LabView, cable):
    found = lab.cables(cable.a_node, cable.b_node)
    if cable not in found:
        raise HarnessError(f"cable {cable} is not in lab {lab.name}")
    return lab.link(cable.a_node, cable.b_node, found.index(cable))


def _peer_of(lab: LabView, node: str, port: str) -> str:
    for p in lab.plan.switch(node).fabric_ports:
        if p.name == port:
            return p.peer
    raise HarnessError(f"{node} has no fabric port {port}")


def observation_points(lab: LabView, case: Failure, leaf: str, far_leaf: str) -> dict[str, list[str]]:
    """switch -> egress ports to count per QP: the source leaf's uplinks, and for `remote`
    every spine's ports towards the far leaf."""
    points = {leaf: [p.name for p in lab.plan.switch(leaf).fabric_ports]}
    if case in SUPERSPINE_CASES:
        for spine in _spines_above(lab, leaf):
            points[spine] = [p.name for p in lab.plan.switch(spine).fabric_ports
                             if lab.plan.switch(p.peer).role is Role.BE_SUPERSPINE]
    if case is Failure.REMOTE:
        for spine in _spines_above(lab, leaf):
            points[spine] = [p.name for p in lab.plan.switch(spine).fabric_ports if p.peer == far_leaf]
    return points


def pick(case: Failure, leaf: str, seen: dict[int, set[tuple[str, str]]], choice: tuple[str, str] | None
          ) -> tuple[tuple[str, str], list[int]]:
    """The (switch, port) that carried the most QPs (unless given), and the QPs that crossed it."""
    tally: dict[tuple[str, str], list[int]] = {}
    for qp, where in seen.items():
        for point in where:
            if case in (Failure.REMOTE, *SUPERSPINE_CASES) and point[0] == leaf:
                continue
            tally.setdefault(point, []).append(qp)
    if choice is None:
        if not tally:
            return (leaf, ""), []
        choice = max(sorted(tally), key=lambda p: len(tally[p]))
    return choice, tally.get(choice, [])


def _spines_above(lab: LabView, leaf: str) -> list[str]:
    return sorted({p.peer for p in lab.plan.switch(leaf).fabric_ports})
