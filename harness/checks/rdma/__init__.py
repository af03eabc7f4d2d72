"""Claims about real RDMA (rdma_rxe) across the fabric, judged from the switches' counters.

Every other check sends RoCEv2 packets built by hand; these come from a real RDMA stack
(connection setup, RC's acknowledgements and retransmissions, the source ports rxe derives
from the QP number) through the same routed fabric. This host's kernel has no rdma_rxe, so
both endpoints run in a QEMU microVM whose NICs take the GPU nodes' places on their cables
(harness/rdma, the RDMA lane). Where the lane is not set up, every case is not measurable,
with the fix (`make rdma-deps`), never passed.

Cases: rdma-path (`path`: crossing the spines, source ports by rxe's rule, spread over the
uplinks, from one transfer) and rdma-gray (`gray`) on a BE with spines; rdma-rails (`rails`)
on a rail-only BE. Each case boots one microVM per transfer (~40 s under TCG), so the cases
are few and their transfers short: `fablab validate` pays for two boots on a BE with spines.
"""
from __future__ import annotations

from harness.checks.base import Case, Check, needs_spine_tier
from harness.checks.rdma.gray import RdmaGrayResult, RdmaGraySeen, judge_gray, measure_gray
from harness.checks.rdma.lane import PortFlow, require_lane
from harness.checks.rdma.path import QpRow, RdmaPathResult, RdmaPathSeen, SpinePath, SpineSeen, judge_path, measure_path
from harness.checks.rdma.plots import plot_rdma_gray, plot_rdma_path
from harness.checks.rdma.rails import RdmaRailsResult, RdmaRailsSeen, judge_rails, measure_rails, rail_only
from harness.core.plan import Plan

__all__ = ["CHECK", "PortFlow", "QpRow", "RdmaGrayResult", "RdmaGraySeen", "RdmaPathResult", "RdmaPathSeen",
           "RdmaRailsResult", "RdmaRailsSeen", "SpinePath", "SpineSeen", "judge_gray", "judge_path", "judge_rails",
           "measure_gray", "measure_path", "measure_rails", "plot_rdma_gray", "plot_rdma_path", "require_lane"]


def has_gpu_nics(plan: Plan) -> str | None:
    if any(n.rail is not None for h in plan.hosts for n in h.nics):
        return None
    return "no GPU node has a BE (RDMA) NIC"


CHECK = Check("rdma", "real RDMA (rdma_rxe RC queue pairs) crosses leaf -> spine -> leaf with the source ports "
              "fablab's RoCEv2 generator gives a QP, spreads over the uplinks as a fair hash would and survives a "
              "gray uplink with its data verified; in a rail-only BE no QP finds a path between rails",
              (Case("rdma-path", measure_path, judge_path, plot_rdma_path, needs_spine_tier),
               Case("rdma-gray", measure_gray, judge_gray, plot_rdma_gray, needs_spine_tier),
               Case("rdma-rails", measure_rails, judge_rails, applies=rail_only)),
              applies=has_gpu_nics)
