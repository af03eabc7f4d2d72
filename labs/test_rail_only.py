"""Lesson 4 — a rail-only backend has no path between rails.

Claim: in a rail-only BE (one leaf per rail, no spine), GPU NIC r of any node reaches
rail r of every other node over its rail leaf, and nothing else: a packet from rail r to
an address on rail s is undeliverable over the BE. FE and mgmt stay isolated as before.

Why it matters: rail-only designs (Wang et al., 2023) drop the spine tier because
collectives mostly talk within a rail; traffic between ranks moves inside the node over
NVLink (e.g. NCCL's PXN). If a rail-only BE could carry cross-rail traffic it would be
hiding a mis-cable or a route leak — and the bandwidth math the design relies on would no
longer hold.

Make it fail: cable two rail leaves together (a stray cable) and the rail r -> rail s
probes are delivered.
"""
from __future__ import annotations

import pytest

from harness.checks.registry import case, run_case
from harness.pytest_plugin import boot
from topologies.rail_only import rail_only


@pytest.fixture(scope="module")
def rail_lab(pytestconfig):
    yield from boot(rail_only(), pytestconfig.getoption("runtime"), "r")


def test_rails_are_separate_and_planes_isolated(rail_lab, results):
    result = run_case(case("isolation"), rail_lab, results, name="isolation-rail-only")
    assert result.probes_per_kind.get("rail0->rail1", 0) > 0  # cross-rail probes were sent
    assert result.controls_delivered == result.controls > 0  # same-rail traffic works
    assert result.passed, result.reason


def test_same_rail_reaches_every_node(rail_lab):
    for node in ("gpu02", "gpu03", "gpu04"):
        for rail in range(4):
            nic = f"rail{rail}"
            run = rail_lab.exec("gpu01", ["ping", "-c1", "-W1", "-I", nic, rail_lab.address(node, nic)])
            assert run.returncode == 0, f"{nic} to {node}: {run.stdout}"
