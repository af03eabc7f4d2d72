"""The BE's ECN and DCQCN hold an incast below the pause threshold, fairly, sparing a victim.

One case, on the lab's lossless data plane (harness/dataplane; the netns runtime): the pfc
check's incast (up to 7 GPU NICs of rail 0 send to its first one), its senders under DCQCN
from their NICs' line rate, while the congested queue's depth is read every 50 ms (measure.py):
the start-up backlog drains, the senders climb back, and the steady state begins when the queue
is marked again; it is watched for 20 of DCQCN's periods (2.2 s for the built-ins' tuning), the
run at most 30 s. The verdict (judge.py): the queue's WRED marked CE and the receiver's NIC sent
CNPs; a steady state began within the run; in it the queue never reached the pause threshold
(pauses in the start-up backlog are reported) and the incast kept the port at least 80 % busy;
the senders' rates reached a fair share (Jain >= 0.9); a victim flow
sharing a sender's NIC kept its rate alone (no pause held its NIC back: what the pfc check
shows PFC alone cannot); nothing dropped.

Break it: `fablab break LAB ecn-off` takes the WRED profile off the congested queue (the leaf
port facing rail 0's first GPU NIC): it never marks, PFC carries the incast alone, and the
verdict names the port that did not mark.
"""
from __future__ import annotations

from harness.checks.base import Case, Check
from harness.checks.dcqcn.judge import FAIR, DcqcnResult, judge_dcqcn
from harness.checks.dcqcn.measure import DcqcnSeen, Depth, SenderSeen, measure_dcqcn
from harness.core.capabilities import Feature
from harness.core.plan import Plan

__all__ = ["CHECK", "FAIR", "DcqcnResult", "DcqcnSeen", "Depth", "SenderSeen", "judge_dcqcn", "measure_dcqcn"]


def _applies(plan: Plan) -> str | None:
    if not any(s.lossless for s in plan.switches):
        return "no switch carries the lossless contract: there is no ECN to prove"
    if not plan.fabric.cluster.lossless.dcqcn.enabled:
        return "DCQCN is disabled in the declaration (Dcqcn.enabled false): PFC alone holds the BE"
    members = sum(1 for h in plan.hosts for n in h.nics if n.rail == 0)
    return None if members >= 3 else f"rail 0 has {members} GPU NIC(s): an incast with a victim needs 3"


CHECK = Check("dcqcn", "an incast under ECN and DCQCN: the congested queue marks CE and CNPs slow the senders, "
              "its steady-state depth stays below the pause threshold, the senders share the port fairly, and a "
              "victim sharing a sender's NIC keeps its rate",
              (Case("dcqcn", measure_dcqcn, judge_dcqcn, needs=(Feature.LOSSLESS_DATA_PATH,)),), _applies)
