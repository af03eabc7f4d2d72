"""The 4,096-GPU example (docs/examples/gpu4096.py): 512 nodes × 8 in 4 pods under 32
super-spines plans within fablab's limits, non-blocking at both stages, every spine meshed
to every super-spine."""
from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from harness.catalog import load_cluster
from harness.core.model import Plane, Role, build
from harness.core.plan import make_plan

EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "examples" / "gpu4096.py"


@pytest.fixture(scope="module")
def plan():
    return make_plan(build(load_cluster(str(EXAMPLE))))


def test_counts(plan):
    roles = Counter(s.role for s in plan.switches)
    assert (roles[Role.BE_LEAF], roles[Role.BE_SPINE], roles[Role.BE_SUPERSPINE]) == (256, 64, 32)
    assert sum(1 for h in plan.hosts if h.role is Role.GPU) == 512
    assert sum(1 for h in plan.hosts for n in h.nics if n.plane is Plane.BE) == 4096  # a BE NIC per GPU


def test_within_the_planning_limits(plan):
    from harness.core.declcheck import MAX_LINKS, MAX_NODES
    assert len(plan.fabric.nodes) <= MAX_NODES and len(plan.fabric.links) <= MAX_LINKS


def test_non_blocking_at_both_stages(plan):
    above = {Role.BE_LEAF: Role.BE_SPINE, Role.BE_SPINE: Role.BE_SUPERSPINE}
    for sw in (s for s in plan.switches if s.role in above):
        up = sum(1 for p in sw.fabric_ports if plan.switch(p.peer).role is above[sw.role])
        down = len(sw.host_ports) if sw.role is Role.BE_LEAF else sum(
            1 for p in sw.fabric_ports if plan.switch(p.peer).role is Role.BE_LEAF)
        assert up == down == (16 if sw.role is Role.BE_LEAF else 64), sw.name


def test_every_spine_reaches_every_superspine_twice(plan):
    for sw in (s for s in plan.switches if s.role is Role.BE_SPINE):
        above = Counter(p.peer for p in sw.fabric_ports if plan.switch(p.peer).role is Role.BE_SUPERSPINE)
        assert len(above) == 32 and set(above.values()) == {2}, sw.name


def test_the_superspine_check_finds_its_destinations_in_each_other_pod_in_turn(plan):
    """97,280 QPs at 16,384 source ports: 6 GPUs on the rail, none in the source's pod."""
    from harness.checks.ecmp import first_gpu_nic
    from harness.checks.ecmp_superspine import far_peers

    src = first_gpu_nic(plan)
    six = far_peers(plan, src[0], src[1], 6)
    pods = [plan.host(h).pod for h, _ in six]
    assert pods == [p for p in sorted(set(pods))] * 2 and plan.host(src[0]).pod not in pods
    rail = plan.host(src[0]).nic(src[1]).rail
    assert len(set(six)) == 6 and all(plan.host(h).nic(n).rail == rail for h, n in six)
