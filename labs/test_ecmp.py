"""Lesson 2 — ECMP spreads RoCEv2 queue pairs over the spine tier.

Claim: the QPs between two GPUs of different groups (same rail) spread over every uplink
of their leaf: each path within ±25 % of the mean, with at least 625 packets expected per
path (the sonic-mgmt rule), and each QP stays on one path (no reordering at the receiver).

Why it matters in an AI data center: a collective moves a few huge, long flows (elephants)
with almost no entropy: between two GPUs, source and destination addresses and the UDP
destination port (4791) are the same for every QP. Only the UDP source port, which an
RDMA NIC derives from the QP number, tells them apart. A fabric that hashes on addresses
alone puts all of them on one spine: half the bisection idles, the other half congests,
PFC pauses spread, and the job runs at the speed of the hottest link.

Make it fail: hash on L3 only (`fib_multipath_hash_policy=0` on the leaves, what the
negative control below does), or give all QPs one source port.
"""
from __future__ import annotations

from harness.checks.ecmp import check_ecmp
from harness.checks.sabotage import l3_hashing
from harness.report import plot_ecmp


def test_roce_qps_spread_over_every_uplink(lab, results):
    result = check_ecmp(lab, flows=256, packets_per_flow=20)
    plot = plot_ecmp(result, results.path("ecmp.png"))
    results.record("ecmp", result, plots=(plot,))
    assert min(result.per_path.values()) >= 625 * 0.75  # enough samples for the rule to mean something
    assert result.reordered == 0 and result.lost == 0
    assert result.passed, result.reason


def test_l3_only_hashing_collapses_roce_onto_one_path(lab, results):
    leaf = lab.plan.switch(lab.plan.host("gpu01").nic("rail0").peer).name
    with l3_hashing(lab, [leaf]):
        result = check_ecmp(lab, flows=256, packets_per_flow=20)
    plot = plot_ecmp(result, results.path("ecmp-l3-hashing.png"))
    results.record("ecmp-l3-hashing", result, plots=(plot,))
    assert not result.passed
    assert result.max_over_mean > 1.9  # every QP on one path
    assert "fib_multipath_hash_policy=0" in result.reason
