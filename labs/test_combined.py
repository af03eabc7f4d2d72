"""Lesson 14 — every design at once.

Claim: the designs combine. `docs/examples/combined.py` declares 2 pods under super-spines,
leaves of two rails each, a dual-homed frontend, and BE leaves on 64 × 800G cages whose 400G
host ports are broken out; it plans, renders, boots and passes: the cabling is as planned
(port groups on broken-out ports), the planes stay isolated, a dual-homed host spreads TCP
over both NICs and every uplink, and QPs to the other pod spread at both stages.

Why it matters in an AI data center: a real cluster is never one of the textbook designs;
each feature must keep its meaning beside the others.

Make it fail: the negative controls of labs/test_multi_rail.py, test_pods.py and
test_dual_homed.py hold here too; this lesson is the positive control of their combination.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from harness.catalog import load_cluster
from harness.checks.registry import case, run_case
from harness.pytest_plugin import boot

EXAMPLE = Path(__file__).resolve().parents[1] / "docs" / "examples" / "combined.py"


@pytest.fixture(scope="module")
def combo_lab(pytestconfig):
    yield from boot(load_cluster(str(EXAMPLE)), pytestconfig.getoption("runtime"), "cb")


def test_the_combination_is_cabled_as_planned_on_broken_out_ports(combo_lab, results):
    leaf = next(s for s in combo_lab.plan.switches if s.rails)
    assert len(leaf.rails) == 2 and all(p.row.broken_out for p in leaf.host_ports)
    result = run_case(case("cabling"), combo_lab, results, name="combined-cabling")
    assert result.passed, result.reason


def test_the_combination_keeps_the_planes_apart(combo_lab, results):
    result = run_case(case("isolation"), combo_lab, results, name="combined-isolation")
    assert result.passed, result.reason


def test_a_dual_homed_host_spreads_tcp_in_the_combination(combo_lab, results):
    result = run_case(case("fe-ecmp"), combo_lab, results, name="combined-fe-ecmp")
    assert result.passed, result.reason
    assert set(result.per_nic) == {"fe0", "fe1"}


def test_qps_to_the_other_pod_spread_at_both_stages(combo_lab, results):
    result = run_case(case("ecmp-superspine"), combo_lab, results, name="combined-ecmp-superspine")
    assert result.passed, result.reason
