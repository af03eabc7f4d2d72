"""The dcqcn check — ECN and DCQCN hold an incast below the pause threshold, fairly, sparing a victim.

Claim: the pfc check's incast (up to 7 GPU NICs of rail 0 send to the first one), its
senders under DCQCN from their NICs' line rate. The receiver's leaf marks CE on the congested
queue by its WRED profile, the receiver's NIC answers with CNPs, and the senders' reaction
points cut their rates: in the steady state the queue stays below the pause threshold, the
senders share the port fairly (Jain's index >= 0.9 over their rates), and a victim flow from
one sender's NIC to another, idle GPU keeps its rate alone, where under PFC alone (the pfc
check) it slows.

Why it matters: PFC keeps RoCE lossless but pauses whole priorities, and the pause spreads to
flows that have nothing to do with the congestion. ECN and DCQCN slow the senders at the source
before the queue reaches the pause threshold, so PFC is left as the last resort.

Make it fail: `fablab break LAB ecn-off` takes the WRED profile off the congested queue (the
leaf port facing rail 0's first GPU NIC): it never marks, PFC alone holds the incast, and the
verdict names the port that did not mark.
"""
from __future__ import annotations

from harness.checks.registry import case, run_case
from harness.faults import BY_NAME, applied
from harness.pytest_plugin import measured


def test_ecn_and_dcqcn_hold_an_incast_fairly_below_the_pause_threshold(lab, results):
    r = measured(run_case(case("dcqcn"), lab, results))
    assert r.passed is True, r.reason
    assert r.marks_steady > 0 and r.cnps > 0 and r.cnps_at_senders > 0  # ECN and DCQCN acted, to the end
    assert r.pfc_frames_steady == 0 and not r.drops


def test_ecn_off_on_the_congested_port_is_named(lab, results):
    fault = BY_NAME["ecn-off"]
    target = fault.default(lab.plan)
    with applied(lab, fault, target) as broken:
        r = run_case(case("dcqcn"), lab, results, name="ecn-off", sabotage=broken.description)
    assert r.passed is False
    assert f"no CE mark on {target.node}:{target.port}" in r.reason, r.reason
    assert r.marks == 0
