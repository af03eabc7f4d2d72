"""Lesson 11 — a leaf that carries several rails.

Claim: with `Backend(rails_per_leaf=2)` a leaf serves two rails through two port groups
(rail r's NICs on contiguous ports, rail by rail, then the uplinks both rails share). The
lab is cabled into those groups, QPs of either rail spread over the same shared uplinks, and
the planes stay isolated. In a rail-only fabric the two rails of a leaf stay as apart as on
leaves of their own: a packet from rail 0 towards rail 1 is undeliverable, even through the
leaf that carries both.

Why it matters in an AI data center: a 64-port leaf serving one rail of 16 GPU nodes leaves
half its ports idle; bundling two rails per leaf halves the leaf count. The price is a new
way to cable wrong that a per-leaf check cannot see: a NIC of rail 1 in rail 0's port group
lands on the right switch and still breaks the rail's order (its port, its address, the
collective's ring). And a rail-only design that shares a leaf between rails must not let the
leaf join them.

Make it fail: swap a GPU node's rail 0 and rail 1 NICs (same leaf, each in the other rail's
group): the cabling check names both, "in rail 1's port group". On the rail-only variant,
drop the separation between the port groups (SONiC: both groups in one VRF): the rail 0 ->
rail 1 probes through the shared leaf are delivered and isolation fails.
"""
from __future__ import annotations

import pytest

from harness.checks.registry import case, run_case
from harness.faults.sabotage import join_rails, swap_cables
from harness.plumbing.wait import until
from harness.pytest_plugin import boot, measured
from topologies.multi_rail import multi_rail


@pytest.fixture(scope="module")
def mr_lab(pytestconfig):
    yield from boot(multi_rail(), pytestconfig.getoption("runtime"), "mr")


@pytest.fixture(scope="module")
def mr_rail_only_lab(pytestconfig):
    yield from boot(multi_rail(kind="rail-only"), pytestconfig.getoption("runtime"), "mro")


def test_cabled_into_port_groups_and_a_nic_in_the_wrong_group_is_caught(mr_lab, results, control):
    assert control(case("cabling"), mr_lab).passed  # the positive control: as planned
    host = mr_lab.plan.hosts[0]
    nic0, nic1 = host.nic("rail0"), host.nic("rail1")
    assert nic0.peer == nic1.peer  # one leaf, two groups
    with swap_cables(mr_lab, (host.name, nic0.name), (host.name, nic1.name)) as s:
        result = run_case(case("cabling"), mr_lab, results, name="cabling-wrong-port-group", sabotage=s.description)
    assert not result.passed
    rows = {(f.node, f.port): f for f in result.findings}
    assert set(rows) == {(host.name, "rail0"), (host.name, "rail1"), (nic0.peer, nic0.peer_port),
                         (nic1.peer, nic1.peer_port)}, result.reason
    assert (f"{host.name}:rail0 is rail 0, {nic1.peer}:{nic1.peer_port} is in rail 1's port group"
            in rows[(host.name, "rail0")].notes), rows[(host.name, "rail0")]
    assert control(case("cabling"), mr_lab).passed
    until(lambda: not mr_lab.shortfalls(), 60, lambda: "; ".join(map(str, mr_lab.shortfalls())))


@pytest.mark.parametrize("rail", [0, 1])
def test_both_rails_of_a_leaf_spread_over_its_shared_uplinks(mr_lab, results, rail):
    src = next(h for h in mr_lab.plan.hosts if h.group == 1)
    dst = next(h for h in mr_lab.plan.hosts if h.group == 2)
    result = run_case(case("ecmp"), mr_lab, results, name=f"ecmp-multi-rail-rail{rail}",
                      src=(src.name, f"rail{rail}"), dst=(dst.name, f"rail{rail}"))
    leaf = mr_lab.plan.switch(src.nic(f"rail{rail}").peer)
    assert {p.uplink for p in result.paths} == {p.name for p in leaf.fabric_ports}
    assert len(result.paths) == 4
    assert result.passed, result.reason


def test_planes_stay_isolated(mr_lab, results):
    result = run_case(case("isolation"), mr_lab, results, name="isolation-multi-rail")
    assert result.controls_delivered == result.controls > 0
    assert result.passed, result.reason


def test_a_rail_only_leaf_keeps_its_rails_apart(mr_rail_only_lab, results, control):
    lab = mr_rail_only_lab
    leaf = lab.plan.switch(lab.plan.host("gpu01").nic("rail0").peer)
    assert leaf.separate_rails and set(leaf.rails) == {0, 1}
    result = run_case(case("isolation"), lab, results, name="isolation-rail-only-multi-rail")
    assert result.probes_per_kind.get("rail0->rail1", 0) > 0
    assert result.controls_delivered == result.controls > 0
    assert result.passed, result.reason
    with join_rails(lab, leaf.name) as s:
        broken = run_case(case("isolation"), lab, results, name="isolation-rail-only-rails-joined",
                          sabotage=s.description)
    assert not broken.passed
    through = [leak for leak in broken.leaks if leak.kind in ("rail0->rail1", "rail1->rail0")]
    assert through and all(leaf.name in " ".join(leak.path) for leak in through), broken.reason
    assert control(case("isolation"), lab).passed


def test_a_remote_failure_beside_a_parallel_link_is_rerouted_by_the_spine(mr_lab, results):
    """uplinks_per_spine=2: a spine that loses one of its two links to the far leaf still
    reaches it, so the spine moves the QPs to the other link by itself and the source leaf's
    route rightly stays (the case watches the spine's route, not the leaf's)."""
    result = measured(run_case(case("failover-remote"), mr_lab, results, name="failover-remote-parallel-links"))
    assert "be-s" in result.element, result.element  # a spine's link to the far leaf
    assert result.detected_ms is not None and result.passed, result.reason
