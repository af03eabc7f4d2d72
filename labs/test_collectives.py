"""Lesson 5 — the BE carries a job's collectives, and what a congested, lossy port does to them.

Claim 1 (unloaded): the traffic of a training job's collectives crosses the BE whole and in
order: a ring (each GPU to the next on its rail, the step of a ring all-reduce), an
all-to-all within a rail (expert parallelism's dispatch), and an incast (N GPUs to one, as
when a parameter shard or a checkpoint is gathered). Every QP's packets arrive, none reordered.

Claim 2 (congested): an incast is where a BE port overflows. The receiver's leaf port is
shaped (tbf, with a 20 ms queue) to 1.5 senders' worth of traffic; 1, 2, 4 and then every
other GPU of the rail (7 on ai-cluster) send to it at once. Within capacity (1 sender) nothing is lost and the queue stays empty;
beyond it the queue fills (queueing delay up to the 20 ms the port can hold), the port
drops what exceeds its rate (about 1 - 1.5/N of it), and the transfer takes as long as the
port needs, or longer.

Why it matters in an AI data center: RoCEv2 has no TCP to hide loss. Every PSN gap the
receiver sees is a NAK, and the sender goes back N: it resends everything from the lost
packet on, so a lossy port under incast multiplies its own load and the collective waits
for its slowest QP. Real BE fabrics are lossless: PFC on the RoCE priority pauses the
senders before the queue overflows (back-pressure instead of drops), and ECN/DCQCN slows
them earlier. fablab renders PFC and ECN into config_db.json, but SONiC-VS and the Linux
kernel do not act on them: here the port is lossy, and this lab measures exactly that.

Make it fail: remove the shaper from inside the run (the "congested" fan-ins then lose
nothing and the check says the port was not congested), or break a link on the rail.
"""
from __future__ import annotations

import pytest

from harness.checks.registry import case, run_case


@pytest.mark.parametrize("pattern", ["ring", "all-to-all", "incast"])
def test_collective_is_delivered_whole_and_in_order(lab, results, pattern):
    result = run_case(case(f"collectives-{pattern}"), lab, results, rail=0, packets=300, rate_pps=1000)
    assert result.packets_sent > 0 and result.flows >= result.members - 1  # incast: N-1 senders
    assert result.passed, result.reason


def test_incast_congests_a_lossy_port(lab, results):
    # fan-in 1, 2, 4 and every other GPU of the rail
    result = run_case(case("collectives-incast-congested"), lab, results, rail=0)
    assert result.passed, result.reason
    fan_ins = result.fan_ins
    if len(fan_ins) < 3:
        pytest.skip(f"rail 0 has {fan_ins[-1].senders + 1} GPUs: too few for a fan-in sweep")
    one, most = fan_ins[0], fan_ins[-1]
    # Positive control: within the port's rate nothing is lost and nothing waits.
    assert one.senders == 1 and one.loss_pct == 0 and one.queue_avg_ms < 5
    # Beyond it: loss grows with fan-in, the queue fills, the slowest sender finishes late.
    losses = [f.loss_pct for f in fan_ins[1:]]
    assert 0 < losses[0] and losses == sorted(losses) and losses[0] < losses[-1], losses
    assert most.queue_avg_ms > one.queue_avg_ms + 5
    assert most.gaps > 0  # each a go-back-N retransmission on a real RoCEv2 NIC
    # The shaper was removed afterwards: an unshaped incast delivers everything again.
    after = run_case(case("collectives-incast"), lab, results, name="collectives-incast-after-the-shaper",
                     rail=0, packets=300, rate_pps=1000)
    assert after.passed, after.reason
