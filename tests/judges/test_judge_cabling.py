"""The cabling judge on kernel views recorded on a real ai-cluster lab (tests/observations/cabling/):
the view as cabled, then the same view broken the ways a technician breaks it, and the views a
negative control recorded (a rogue FE–BE cable, two GPU NICs swapped between rail leaves)."""
from __future__ import annotations

import dataclasses
from collections.abc import Callable

import pytest

from harness.checks.cabling import CablingResult, CablingSeen, KernelPort
from harness.core.model import Plane
from harness.report.recorded import judge

import judge_tables as tables


@pytest.fixture(scope="module")
def cabled():
    return tables.recorded("cabling/ai-cluster")


@pytest.fixture(scope="module")
def plan():
    return tables.plan("cabling/ai-cluster")


def _ports(seen: CablingSeen, end: tuple[str, str], **changes) -> CablingSeen:
    ports = tuple(dataclasses.replace(p, **changes) if (p.node, p.port) == end else p for p in seen.ports)
    return dataclasses.replace(seen, ports=ports)


def _without(seen: CablingSeen, *ends: tuple[str, str]) -> CablingSeen:
    return dataclasses.replace(seen, ports=tuple(p for p in seen.ports if (p.node, p.port) not in ends))


def _rogue(plan, seen: CablingSeen) -> CablingSeen:
    """A cable between a free FE leaf port and a free BE leaf port, both ends in the kernel."""
    fe, be = ("fe-l1", "Ethernet120"), ("be-g1-r0", "Ethernet124")
    return dataclasses.replace(seen, ports=seen.ports + (KernelPort(*fe, be), KernelPort(*be, fe)))


def _swap(plan, seen: CablingSeen) -> CablingSeen:
    r0, r1 = plan.host("gpu02").nic("rail0"), plan.host("gpu02").nic("rail1")
    leaf0, leaf1 = (r0.peer, r0.peer_port), (r1.peer, r1.peer_port)
    seen = _ports(seen, ("gpu02", "rail0"), peer=leaf1)
    seen = _ports(seen, leaf1, peer=("gpu02", "rail0"))
    seen = _ports(seen, ("gpu02", "rail1"), peer=leaf0)
    return _ports(seen, leaf0, peer=("gpu02", "rail1"))


def _be_cable(plan):
    return next(c for c in plan.cables if c.plane is Plane.BE)


def _mgmt_cable(plan):
    return next(c for c in plan.cables if c.plane is Plane.MGMT and c.b_node == "oob1")


def _outside(plan, seen: CablingSeen) -> CablingSeen:
    nic = plan.host("gpu04").nic("fe0")
    seen = _without(seen, (nic.peer, nic.peer_port))
    return _ports(seen, ("gpu04", "fe0"), peer=None, outside="the host's root namespace")


def _absent(plan, seen: CablingSeen) -> CablingSeen:
    c = _be_cable(plan)
    return _without(seen, (c.a_node, c.a_port), (c.b_node, c.b_port))


Change = Callable[[object, CablingSeen], CablingSeen]
CASES: list[tuple[str, Change, str | None]] = [  # what is done to the recorded view, the finding (None: passes)
    ("as recorded", lambda plan, seen: seen, None),
    ("a rogue FE-BE cable", _rogue, "unknown: fe-l1:Ethernet120 expected no cable, actual be-g1-r0:Ethernet124 "
                                    "(joins FE and BE)"),
    ("two GPU NICs swapped", _swap, "swapped: gpu02:rail0"),
    ("an end administratively down",
     lambda plan, seen: _ports(seen, (_be_cable(plan).b_node, _be_cable(plan).b_port), up=False),
     "is administratively down"),
    ("no carrier", lambda plan, seen: _ports(seen, (_be_cable(plan).a_node, _be_cable(plan).a_port), carrier=False),
     "no carrier"),
    ("a mgmt end outside the OOB bridge",
     lambda plan, seen: _ports(seen, (_mgmt_cable(plan).b_node, _mgmt_cable(plan).b_port), bridge=None),
     "not bridged: oob1:"),
    ("the OOB bridge down",
     lambda plan, seen: _ports(seen, (_mgmt_cable(plan).b_node, _mgmt_cable(plan).b_port), bridge_up=False),
     "is down"),
    ("a cable leading out of the lab", _outside, "miswired: gpu04:fe0 expected"),
    ("a planned cable absent", _absent, "neither end has an interface"),
]


@pytest.mark.parametrize("what, change, finding", CASES, ids=[c[0] for c in CASES])
def test_the_judge_on_the_recorded_view(cabled, plan, what, change, finding):
    result = judge(cabled, change(plan, cabled.observation))
    assert isinstance(result, CablingResult)
    if finding is None:
        assert result.passed, result.reason
        assert result.matched == result.planned == result.observed == len(plan.cables)
    else:
        assert not result.passed, what
        assert finding in result.reason, result.reason


def test_the_swap_names_all_four_ends_and_the_rails(cabled, plan):
    result = judge(cabled, _swap(plan, cabled.observation))
    r0, r1 = plan.host("gpu02").nic("rail0"), plan.host("gpu02").nic("rail1")
    assert {(f.node, f.port) for f in result.findings} == {("gpu02", "rail0"), ("gpu02", "rail1"),
                                                           (r0.peer, r0.peer_port), (r1.peer, r1.peer_port)}
    assert result.matched == result.planned - 2
    (f,) = [f for f in result.findings if (f.node, f.port) == ("gpu02", "rail0")]
    assert f"gpu02:rail0 is rail 0, {r1.peer} is a rail-1 leaf" in f.notes


def test_only_the_planes_the_runtime_shows_are_compared(cabled, plan):
    """A runtime whose kernel shows no mgmt cable (clab) is not failed for their absence."""
    seen = cabled.observation
    data_only = dataclasses.replace(
        seen, planes=(Plane.FE, Plane.BE),
        ports=tuple(p for p in seen.ports if not any(
            c.plane is Plane.MGMT and (p.node, p.port) in ((c.a_node, c.a_port), (c.b_node, c.b_port))
            for c in plan.cables)))
    result = judge(cabled, data_only)
    assert result.passed, result.reason
    assert result.planned == sum(1 for c in plan.cables if c.plane is not Plane.MGMT)


@pytest.mark.parametrize("label, kinds", [("rogue-cable", {"unknown": 1}), ("swapped-pair", {"swapped": 4})])
def test_a_negative_control_recorded_on_the_lab_fails(label, kinds):
    recorded = tables.recorded(f"cabling/{label}")
    result = judge(recorded)
    assert not result.passed and not recorded.passed
    found: dict[str, int] = {}
    for f in result.findings:
        found[f.kind] = found.get(f.kind, 0) + 1
    assert found == kinds, result.reason
    assert result.reason == recorded.reason
