"""Lesson 3 — the fabric fails over within budget.

Claim: while 16 RoCEv2 QPs run at 1000 packets/s each across the spines, one leaf-spine
link fails. A hard failure (carrier loss) costs each affected QP at most 50 ms of packets;
a gray failure (the link stays up, frames vanish) at most the BFD detection time
(300 ms × 3) plus 200 ms. QPs on the other link lose nothing, and once the link is
restored, traffic returns to it without loss.

Why it matters in an AI data center: a collective is as fast as its slowest QP, and RoCEv2
(go-back-N) answers loss by resending whole windows: a second of black-holing stalls the
whole job. Carrier loss is easy; the dangerous failure is the gray one — a dirty optic,
a failing ASIC port — where the link looks up and only BFD can tell.

Make it fail: turn BFD off (the gray failure then lasts until the BGP hold timer, 9 s),
or raise `Bfd(interval_ms=...)` in the declaration beyond the budget you need.
"""
from __future__ import annotations

import pytest

from harness.checks.failover import check_failover
from harness.report import plot_failover


@pytest.mark.parametrize("mode", ["hard", "gray"])
def test_failover_within_budget(lab, results, mode):
    result = check_failover(lab, mode=mode, flows=16, rate_pps=1000)
    plot = plot_failover(result, results.path(f"failover-{mode}.png"))
    results.record(f"failover-{mode}", result, plots=(plot,))
    assert result.flows_on_failed_link > 0  # the failure hit traffic, so the figures mean something
    assert result.lost_elsewhere == 0
    assert result.passed, result.reason


def test_gray_failure_without_bfd_is_caught(lab, results):
    from harness.checks.sabotage import bfd_off
    from harness.wait import until

    leaf = lab.plan.host("gpu01").nic("rail0").peer
    spine = lab.plan.switch(leaf).fabric_ports[0].peer
    def routed_without_bfd() -> bool:  # sessions reset when BFD goes: wait for BGP and the FIB only
        return not [s for s in lab.shortfalls() if s.missing_routes or s.sessions_up < s.sessions_expected]

    with bfd_off(lab, [leaf, spine]):
        until(routed_without_bfd, 60, "BGP to converge without BFD")
        result = check_failover(lab, mode="gray", leaf=leaf, spine=spine, flows=16, rate_pps=1000)
    results.record("failover-gray-bfd-off", result)
    assert not result.passed
    assert result.detected_ms is None and "is BFD on" in result.reason
    assert result.worst_window_ms > result.budget_ms
    until(lambda: not lab.shortfalls(), 60, "the fabric to converge again with BFD back on")
