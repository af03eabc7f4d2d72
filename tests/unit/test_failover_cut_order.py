"""A whole switch's cables are cut one netlink call at a time (197.5 ms for a spine's 8 once,
beside another lab), where a switch losing power loses them together: the switch that must
reroute first has its own cut first, so no QP it carries dies on a far cable it cannot know of."""
from __future__ import annotations

import pytest

from harness.checks.failover_elements import Failure, element_of
from harness.core.model import Plane, Role, build
from harness.core.plan import make_plan
from harness.lab import LinkHandle
from topologies import BUILTINS


class FakeLab:
    """What element_of uses of a lab: its plan, its cables, and carriers that record their cut."""

    name = "unit"

    def __init__(self, topology: str):
        self.plan = make_plan(build(BUILTINS[topology]()))
        self.cut: list[tuple[str, str]] = []

    def all_cables(self):
        return list(self.plan.cables)

    def cables(self, a: str, b: str):
        return [c for c in self.all_cables() if {c.a_node, c.b_node} == {a, b}]

    def link(self, a: str, b: str, index: int = 0) -> LinkHandle:
        return LinkHandle(self, self.cables(a, b)[index])

    def set_carriers(self, handles, up: bool) -> None:
        if not up:
            self.cut += [(h.cable.a_node, h.cable.b_node) for h in handles]


def _uplink(lab: FakeLab, leaf: str, spine: str) -> str:
    return next(p.name for p in lab.plan.switch(leaf).fabric_ports if p.peer == spine)


def _last_below(lab: FakeLab, switch: str, role: Role) -> tuple[str, list]:
    """The switch's BE cables in the plan's order, and the one of `role` below it cabled last."""
    cables = [c for c in lab.all_cables() if switch in (c.a_node, c.b_node) and c.plane is Plane.BE]
    below = next(n for c in reversed(cables) for n in (c.a_node, c.b_node)
                 if n != switch and lab.plan.switch(n).role is role)
    assert below not in (cables[0].a_node, cables[0].b_node)  # the plan's order would cut it late
    return below, cables


@pytest.mark.parametrize("topology", ["ai-cluster", "pods"])
def test_a_spine_failure_cuts_the_watching_leafs_cables_first(topology):
    lab = FakeLab(topology)
    spine = next(s.name for s in lab.plan.switches if s.role is Role.BE_SPINE)
    leaf, cables = _last_below(lab, spine, Role.BE_LEAF)
    element_of(lab, Failure.SPINE, leaf, "", (leaf, _uplink(lab, leaf, spine))).fail()
    mine = [i for i, ends in enumerate(lab.cut) if leaf in ends]
    assert mine == list(range(len(mine))) and len(lab.cut) == len(cables)  # its own first, then every other


def test_a_superspine_failure_cuts_the_watching_spines_cables_first():
    lab = FakeLab("pods")
    superspine = next(s.name for s in lab.plan.switches if s.role is Role.BE_SUPERSPINE)
    spine, cables = _last_below(lab, superspine, Role.BE_SPINE)
    leaf = next(p.peer for p in lab.plan.switch(spine).fabric_ports if lab.plan.switch(p.peer).role is Role.BE_LEAF)
    element_of(lab, Failure.SUPERSPINE, leaf, "", (spine, _uplink(lab, spine, superspine))).fail()
    mine = [i for i, ends in enumerate(lab.cut) if spine in ends]
    assert mine == list(range(len(mine))) and len(lab.cut) == len(cables)
