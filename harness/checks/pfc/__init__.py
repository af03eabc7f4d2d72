"""The BE's RoCE priority is lossless under congestion: PFC pauses hop by hop instead of dropping.

One case, on the lab's lossless data plane (harness/dataplane; the netns runtime): every GPU
NIC of rail 0 but one sends to that one at 2/3 of its port's rate, N x 2/3 of what the port
forwards (measure.py). The verdict (judge.py): nothing lost, no queue dropped; the congested
leaf sent 802.1Qbb pause frames and they reached the senders' NICs, hop by hop through the
spines for the remote ones; the incast took no longer than MARGIN x its bytes at the port's
rate; a victim flow that shares an upstream port (a sender's NIC) but not the
destination slowed beside it, against its own rate alone (PFC pauses a whole priority:
congestion spreads; DCQCN at the senders is what would spare the victim); no PFC storm.

Break it: `fablab break LAB pfc-priority --on be-g1-r0:Ethernet260` turns PFC to the wrong
priority on the port gpu02 comes in by: gpu02 is never paused, and what it sends beyond the
queue's share is dropped there, named by the queue and by that port. `fablab break LAB
pfc-storm` makes a GPU NIC send pause without end: the leaf's watchdog names the storm.
"""
from __future__ import annotations

from harness.checks.base import Case, Check
from harness.checks.pfc.judge import MARGIN, PfcResult, judge_pfc
from harness.checks.pfc.measure import Count, FlowSeen, PfcSeen, measure_pfc
from harness.core.capabilities import Feature
from harness.core.plan import Plan

__all__ = ["CHECK", "MARGIN", "Count", "FlowSeen", "PfcResult", "PfcSeen", "judge_pfc", "measure_pfc"]


def _applies(plan: Plan) -> str | None:
    if not any(s.lossless for s in plan.switches):
        return "no switch carries the lossless contract: there is no PFC to prove"
    members = sum(1 for h in plan.hosts for n in h.nics if n.rail == 0)
    return None if members >= 3 else f"rail 0 has {members} GPU NIC(s): an incast with a victim needs 3"


CHECK = Check("pfc", "an incast beyond a port's rate loses nothing on the RoCE priority: the leaf pauses its feeders "
              "hop by hop to the senders' NICs, the port runs full, and a victim sharing a paused port slows",
              (Case("pfc", measure_pfc, judge_pfc, needs=(Feature.LOSSLESS_DATA_PATH,)),), _applies)
