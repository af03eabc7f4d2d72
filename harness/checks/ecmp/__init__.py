"""ECMP spreads RoCEv2 QPs over every uplink of a leaf.

N queue pairs between two GPUs in different groups (same rail), each QP with its own UDP
source port as an RDMA NIC derives it from the QP number. The unit is the QP, not the
packet: every packet of a QP follows one path. The source leaf counts packets per (uplink,
QP) in the kernel (one nftables dynamic set with a counter per element), which gives each
QP's path directly (measure.py, observation.py). The verdict (judge.py), with no lab:

- every QP on exactly one uplink (a QP on two is split: named with its uplinks);
- QPs per uplink inside the band a fair hash keeps to with probability 1 - 0.1 %
  (exact binomial quantiles, Bonferroni over the uplinks: harness/checks/common/bounds.py),
  with N chosen from the uplink count so that one uplink at twice the weight of the
  others, or L3-only hashing, falls outside it with probability >= 99.9 %;
- no packet lost, none reordered at the receiver.

A few packets per QP suffice to see its path, so the check stays cheap.
"""
from __future__ import annotations

from harness.checks.base import Case, Check, needs_spine_tier
from harness.checks.ecmp.judge import EcmpResult, PathCount, chi2_uniform_pvalue, judge_ecmp
from harness.checks.ecmp.measure import (PACKETS_PER_QP, _far_peer, default_pair, distinct_sport_qpns,
                                         first_gpu_nic, measure_ecmp, nexthop_weights, send_qps)
from harness.checks.ecmp.observation import EcmpSeen, PortsSeen, ports_seen
from harness.checks.ecmp.plot import plot_ecmp

__all__ = ["CHECK", "PACKETS_PER_QP", "EcmpResult", "EcmpSeen", "PathCount", "PortsSeen", "_far_peer",
           "chi2_uniform_pvalue", "default_pair", "distinct_sport_qpns", "first_gpu_nic", "judge_ecmp",
           "measure_ecmp", "nexthop_weights", "plot_ecmp", "ports_seen", "send_qps"]


CHECK = Check("ecmp", "RoCEv2 QPs spread over every uplink of a leaf",
              (Case("ecmp", measure_ecmp, judge_ecmp, plot_ecmp),), needs_spine_tier)
