"""Collective traffic over the BE: ring, all-to-all within a rail, incast (N -> 1).

Every flow is a RoCEv2 QP from one GPU NIC to another on the same rail. Unloaded, every
packet must arrive, in order (collectives-<pattern>: harness/checks/collectives/delivery.py).
Loaded (collectives-incast-congested: harness/checks/collectives/incast.py), N GPUs send to one
beyond its port's rate: per sender and per fan-in we measure loss, completion time and
queueing delay. On the netns runtime the port is the lossless data plane's (PFC pauses the
senders hop by hop, harness/dataplane): nothing may be lost, and the data plane's counters say
where pause frames went and where anything dropped. Where a runtime has no lossless data plane
(SONiC-VS), the port is shaped by tbf and lossy, and the loss is what is measured.
"""
from __future__ import annotations

from functools import partial

from harness.checks.base import Case, Check
from harness.checks.collectives.delivery import (MAX_PACKETS, MAX_PPS, MIN_PACKETS, PATTERNS, CollectiveResult,
                                                 CollectiveSeen, budget, judge_collective, measure_collective,
                                                 rail_members)
from harness.checks.collectives.incast import (FanIn, IncastResult, IncastSeen, SenderFigures, default_fan_ins,
                                               judge_incast, measure_incast)

__all__ = ["CHECK", "MAX_PACKETS", "MAX_PPS", "MIN_PACKETS", "PATTERNS", "CollectiveResult", "CollectiveSeen",
           "FanIn", "IncastResult", "IncastSeen", "SenderFigures", "budget", "default_fan_ins", "judge_collective",
           "judge_incast", "measure_collective", "measure_incast", "rail_members"]


def _rail0_too_small(plan) -> str | None:
    members = sum(1 for h in plan.hosts for n in h.nics if n.rail == 0)
    return None if members >= 2 else f"rail 0 has {members} GPU NIC(s): a collective needs 2 or more"


CHECK = Check("collectives", "ring, all-to-all and incast on rail 0 as RoCEv2 QPs, then incast beyond a port's rate",
              tuple(Case(f"collectives-{p}", partial(measure_collective, pattern=p), judge_collective)
                    for p in PATTERNS)
              + (Case("collectives-incast-congested", partial(measure_incast, rail=0), judge_incast),),
              _rail0_too_small)
