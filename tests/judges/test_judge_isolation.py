"""The isolation judge on what a real ai-cluster lab showed (tests/observations/isolation/): the
deliveries, FIBs and BGP sessions as recorded, then with a probe delivered across planes, a
control lost, a route or a session across planes added; and what negative controls recorded
(a stray FE-BE cable held by the filters, a GPU node forwarding a leaked route)."""
from __future__ import annotations

import dataclasses
from collections.abc import Callable

import pytest

from harness.checks.isolation import IsolationResult, IsolationSeen, plan_probes
from harness.checks.isolation_measure import Heard, Session
from harness.report.recorded import judge

import judge_tables as tables


@pytest.fixture(scope="module")
def isolated():
    return tables.recorded("isolation/ai-cluster")


@pytest.fixture(scope="module")
def plan():
    return tables.plan("isolation/ai-cluster")


@pytest.fixture(scope="module")
def probes(plan):
    return plan_probes(plan, lambda: b"")


def _first(probes, kind: str):
    return next(p for p in probes if p.kind == kind)


def _heard(seen: IsolationSeen, *more: Heard, paths: dict[int, tuple[str, ...]] | None = None) -> IsolationSeen:
    return dataclasses.replace(seen, heard=seen.heard + more, paths={**seen.paths, **(paths or {})})


def _delivered(probes, kind: str, seen: IsolationSeen) -> IsolationSeen:
    """A probe of `kind` heard at its destination, with the path the FIBs gave it."""
    p = _first(probes, kind)
    path = (p.source, p.next_hop_node, "somewhere", p.dst_node)
    return _heard(seen, Heard(p.id, p.dst_node, "eth9", 2), paths={p.id: path})


def _at_source(probes, seen: IsolationSeen) -> IsolationSeen:
    p = _first(probes, "fe->be")
    return _heard(seen, Heard(p.id, p.src_node, p.src_port, 2))


def _lost_control(probes, seen: IsolationSeen) -> IsolationSeen:
    p = _first(probes, "be control")
    return dataclasses.replace(seen, heard=tuple(h for h in seen.heard if h.probe != p.id))


def _route(seen: IsolationSeen, node: str, prefix: str, *devs: str) -> IsolationSeen:
    return dataclasses.replace(seen, fibs={**seen.fibs, node: {**seen.fibs[node], prefix: devs}})


def _session(plan, seen: IsolationSeen, state: str) -> IsolationSeen:
    be_asn = plan.switch("be-g1-r0").asn
    stray = Session("Ethernet120", state, be_asn)
    return dataclasses.replace(seen, sessions={**seen.sessions, "fe-l1": seen.sessions["fe-l1"] + (stray,)})


Change = Callable[[object, list, IsolationSeen], IsolationSeen]
CASES: list[tuple[str, Change, str | None]] = [  # what is done to the recorded observation; the finding
    ("as recorded", lambda plan, probes, seen: seen, None),
    ("an FE probe delivered on the BE", lambda plan, probes, seen: _delivered(probes, "fe->be", seen),
     "1 cross-plane probes delivered, e.g. fe->be: "),
    ("a mgmt probe delivered on a data plane", lambda plan, probes, seen: _delivered(probes, "mgmt->be", seen),
     "1 cross-plane probes delivered, e.g. mgmt->be: "),
    ("a probe heard only by its own sender's stack", lambda plan, probes, seen: _at_source(probes, seen), None),
    ("a control lost", lambda plan, probes, seen: _lost_control(probes, seen),
     "1/114 controls not delivered (the check proves nothing until they are), e.g. be control"),
    ("an FE leaf routes into the BE range",
     lambda plan, probes, seen: _route(seen, "fe-l1", "10.0.1.0/31", "Ethernet8"),
     "1 nodes route across planes, e.g. fe-l1 (FE) has a route to 1 prefixes of BE 10.0.0.0/16, "
     "e.g. 10.0.1.0/31 via Ethernet8"),
    ("a host's mgmt port holds a default route",
     lambda plan, probes, seen: _route(seen, "gpu01", "0.0.0.0/0", "mgmt0"),
     "gpu01 (host) has a route to 1 prefixes of BE"),
    ("an established session to the other plane", lambda plan, probes, seen: _session(plan, seen, "Established"),
     "1 BGP sessions across planes, e.g. fe-l1:Ethernet120 (FE) has a BGP session with BE AS"),
    ("a session to the other plane that is not up", lambda plan, probes, seen: _session(plan, seen, "Active"), None),
    ("probes of another version of the check",
     lambda plan, probes, seen: dataclasses.replace(seen, probes=seen.probes + 1),
     "671 probes were sent, this plan makes 670"),
]


@pytest.mark.parametrize("what, change, finding", CASES, ids=[c[0] for c in CASES])
def test_the_judge_on_the_recorded_observation(isolated, plan, probes, what, change, finding):
    result = judge(isolated, change(plan, probes, isolated.observation))
    assert isinstance(result, IsolationResult)
    if finding is None:
        assert result.passed, result.reason
        assert result.controls_delivered == result.controls == 114
        assert result.reason.startswith("isolated: 0/556 cross-plane probes delivered, 114/114 controls delivered")
    else:
        assert not result.passed, what
        assert finding in result.reason, result.reason


def test_a_leak_names_where_it_arrived_and_its_path(isolated, plan, probes):
    result = judge(isolated, _delivered(probes, "fe->be", isolated.observation))
    (leak,) = result.leaks
    p = _first(probes, "fe->be")
    assert (leak.source, leak.arrived, leak.copies) == (p.source, (f"{p.dst_node}:eth9",), 2)
    assert leak.path == (p.source, p.next_hop_node, "somewhere", p.dst_node)
    assert result.controls_delivered == result.controls  # the fabric still works; it leaks


def test_the_figures_are_the_plans_probes_and_the_lab_s_scan(isolated, plan, probes):
    result = judge(isolated)
    seen = isolated.observation
    assert result.probes == len(probes) == seen.probes
    assert sum(result.probes_per_kind.values()) == result.probes
    assert {"fe->be", "be->fe", "mgmt->be", "mgmt->fe", "be->mgmt", "fe->mgmt"} <= set(result.probes_per_kind)
    assert result.nodes_scanned == len(plan.hosts) + len(plan.switches)
    assert result.routes_scanned == sum(len(f) for f in seen.fibs.values()) > 0


def test_a_stray_cable_held_by_the_filters_fails_on_its_sessions_alone():
    recorded = tables.recorded("isolation/stray-cable-filtered")
    result = judge(recorded)
    assert not result.passed and result.reason == recorded.reason
    assert not result.leaks and not result.leaked_routes and result.controls_delivered == result.controls
    assert len(result.cross_plane_sessions) == 2  # one from each end of the cable


def test_a_leaked_route_through_a_gpu_node_fails_with_the_path_walked_on_the_lab():
    recorded = tables.recorded("isolation/leaked-route")
    result = judge(recorded)
    assert not result.passed and result.reason == recorded.reason
    assert result.leaks and all(leak.path for leak in result.leaks)
    assert any(h.startswith("gpu") for leak in result.leaks for h in leak.path[1:-1]), result.leaks
