"""The frontend carries TCP: ECMP spreads connections over every FE uplink, and a failed
uplink costs a connection no more than TCP's first retransmission.

Between two routed FE hosts in different racks (tenant members are L2 and have no route to
each other's leaves: harness/checks/tenants.py covers them; paths.py picks the pair). A
dual-homed host (`Frontend(dual_homed=True)`) is reached at its own /32 and sends over both
its NICs, so ECMP is counted at two stages (its NICs, then the uplinks of both its leaves),
and two more failures apply: a host uplink and a whole leaf (failover.py):

ECMP (spread.py). N TCP connections, each from its own source port; the source leaf (each
source leaf, and a dual-homed host itself) counts packets per (egress port, source port) in
nftables. Every connection must stay on one uplink, and the count per uplink must fall in the
band a fair 5-tuple hash keeps to (the same exact binomial band as the BE's ECMP check, N
chosen so that an uplink at twice the weight of the others falls outside it with probability
>= 99.9 %).

Failover (failover.py measures, failover_judge.py judges). Paced TCP streams for a few seconds;
the uplink (host uplink, leaf) carrying the most of them loses its carrier (the spine end, as a
pulled cable) for `down_s`, then comes back while the streams still run. Every stream must
finish with every byte (no reset). No stream may stall (the receiver's wait between two reads)
past the failure's budget: the retransmission timeout its sender had armed when the stall began
(from TCP_INFO, never below Linux's 200 ms floor) plus the slower of the fabric's objectives
for the two failures one cable makes: local for the data (`Objectives.hard_ms`: the source leaf
sees its carrier drop) and remote for the ACKs (`Objectives.remote_ms`: the far leaf learns it
from a BGP withdrawal). A stream whose data never used the failed uplink stalls too when its
ACKs did: a lost ACK window stops the sender until its retransmission timer fires. After the
restore, no stream may stall past that RTO plus `Objectives.restore_ms` (a restore must cost a
stream at most one lost segment's retransmission); that is judged only when the uplink is back
in the leaf's route a second before the streams end, and said when it is not. The leaf's FIB is
polled for when the uplink left the route and when it came back, and both are reported.
"""
from __future__ import annotations

from harness.checks.base import Case, Check
from harness.checks.fe_tcp.failover import (LEAF_DURATION_S, measure_fe_failover, measure_fe_host_failover,
                                            measure_fe_leaf_failover)
from harness.checks.fe_tcp.failover_judge import (ELEMENTS, TCP_RTO_MIN_MS, FeFailoverResult, FeFailoverSeen,
                                                  StreamSeen, judge_fe_failover)
from harness.checks.fe_tcp.paths import dual_homing_missing, fe_pair, fe_pair_missing
from harness.checks.fe_tcp.spread import FeEcmpResult, FeEcmpSeen, judge_fe_ecmp, measure_fe_ecmp

__all__ = ["CHECK", "ELEMENTS", "LEAF_DURATION_S", "TCP_RTO_MIN_MS", "FeEcmpResult", "FeEcmpSeen", "FeFailoverResult",
           "FeFailoverSeen", "StreamSeen", "fe_pair", "judge_fe_ecmp", "judge_fe_failover", "measure_fe_ecmp",
           "measure_fe_failover", "measure_fe_host_failover", "measure_fe_leaf_failover"]




CHECK = Check("fe-tcp", "TCP on the frontend: connections spread over every FE uplink (fair-hash band; over both "
              "NICs of a dual-homed host first), and a failed uplink, host uplink or leaf, and its restore, cost a "
              "stream no more than TCP's first retransmission after the objective",
              (Case("fe-ecmp", measure_fe_ecmp, judge_fe_ecmp),
               Case("fe-failover", measure_fe_failover, judge_fe_failover),
               Case("fe-host-failover", measure_fe_host_failover, judge_fe_failover, applies=dual_homing_missing),
               Case("fe-leaf-failover", measure_fe_leaf_failover, judge_fe_failover, applies=dual_homing_missing)),
              fe_pair_missing)
