"""Lesson 5 — the BE carries a job's collectives, loss-free.

Claim: the traffic of a training job's collectives crosses the BE whole and in order:
a ring (each GPU to the next on its rail, the step of a ring all-reduce), an all-to-all
within a rail (expert parallelism's dispatch), and an incast (N GPUs to one, as when a
parameter shard or a checkpoint is gathered). Every QP's packets arrive, none reordered.

Why it matters in an AI data center: RoCEv2 has no TCP to hide loss — a dropped packet
costs a go-back-N retransmission of the window, and a collective waits for its slowest
QP. Real fabrics get this from PFC and ECN (rendered into config_db.json here, but not
enforced by SONiC-VS or the kernel); this lab checks the part the emulation can: routing
delivers every QP over its rail without loss or reordering.

Make it fail: break a leaf-spine link with `fablab link LAB be-g1-r0 be-s1 gray` while it
runs, or send more than the fabric can forward.
"""
from __future__ import annotations

import pytest

from harness.checks.collectives import check_collective


@pytest.mark.parametrize("pattern", ["ring", "all-to-all", "incast"])
def test_collective_is_delivered_whole_and_in_order(lab, results, pattern):
    result = check_collective(lab, pattern, rail=0, packets=300, rate_pps=1000)
    results.record(f"collective-{pattern}", result)
    assert result.packets_sent > 0 and result.flows >= result.members - 1  # incast: N-1 senders
    assert result.passed, result.reason
