"""Lesson 9 — the BE is lossless under an incast: PFC pauses hop by hop instead of dropping.

Claim: every other GPU NIC of rail 0 sends to the first one at once, 2/3 of its port's rate
each (7 -> 1 on ai-cluster: 4.7 x what the port forwards), on the RoCE priority. The lab's
lossless data plane runs every BE port at its speed / time_scale with the queues, thresholds
and PFC priorities of its switch's running CONFIG_DB: nothing is lost; the receiver's leaf
sends 802.1Qbb pause frames to what feeds its congested queue, the spines pause the remote
leaves, the leaves pause the senders' NICs; the port runs full (the incast takes about its
bytes at the port's rate); and a victim flow from one sender's NIC to another, idle GPU slows
beside the incast, against its own rate alone: PFC pauses a whole priority on a port.

Why it matters: RoCEv2 has no TCP to hide loss: a lost packet is a go-back-N retransmission,
and a collective waits for its slowest QP. PFC is what makes the BE lossless, and its price
is congestion spreading: a paused port holds back flows that have nothing to do with the
congestion (head-of-line blocking), which ECN and DCQCN at the senders are there to avoid.

Make it fail: `fablab break LAB pfc-priority --on be-g1-r0:Ethernet260` puts PFC on priority 4
on the port gpu02 comes in by: gpu02 is never paused and its packets are dropped at the
congested queue; the verdict names the queue and the port they came in by. `fablab break LAB
pfc-storm` makes a GPU NIC send pause without end: the leaf's PFC watchdog names the storm.
"""
from __future__ import annotations

from harness.checks.registry import case, run_case
from harness.faults import BY_NAME, applied
from harness.faults.targets import Port
from harness.plumbing import wait
from harness.pytest_plugin import measured


def test_an_incast_is_paused_hop_by_hop_and_loses_nothing(lab, results):
    r = measured(run_case(case("pfc"), lab, results))
    assert r.passed, r.reason
    assert r.loss_pct == 0 and not r.drops
    assert r.pauses_by_leaf > 0 and r.pauses_at_senders > 0
    if r.senders > 3:  # senders behind another leaf: the spines paused them too
        assert r.pauses_upstream > 0
    assert r.victim_mbit < 0.9 * r.victim_alone_mbit  # congestion spreads to the victim


def test_pfc_off_on_one_port_drops_there_and_is_named(lab, results):
    members = [(h.name, n) for h in lab.plan.hosts for n in h.nics if n.rail == 0]
    receiver_leaf = members[0][1].peer
    sender = next(n for _, n in members[1:] if n.peer == receiver_leaf)  # a sender on the receiver's leaf
    target = Port(sender.peer, sender.peer_port)
    with applied(lab, BY_NAME["pfc-priority"], target) as broken:
        r = run_case(case("pfc"), lab, results, name="pfc-priority", sabotage=broken.description)
    assert r.passed is False
    assert f"came in by {target.node}:{target.port}" in r.reason, r.reason
    assert r.loss_pct > 0 and r.drops


def test_a_pause_storm_is_caught_by_the_watchdog_and_named(lab, results):
    fault = BY_NAME["pfc-storm"]
    nic = fault.default(lab.plan)
    leaf = lab.plan.host(nic.node).nic(nic.port)
    facing = f"{leaf.peer}:{leaf.peer_port}"

    def storming() -> bool:
        return any(q.storm for q in lab.lossless_counters().port(leaf.peer, leaf.peer_port).queues)

    assert not storming()  # the control: no storm before
    with applied(lab, fault, nic) as broken:
        wait.until(storming, 10, f"the watchdog on {facing}")
        r = run_case(case("pfc"), lab, results, name="pfc-storm", sabotage=broken.description)
    assert r.passed is False
    assert f"PFC storm on {facing} queue {lab.plan.fabric.cluster.lossless.roce_priority}, from {nic.node}:{nic.port}" \
        in r.reason, r.reason
    wait.until(lambda: not storming(), 10, f"the watchdog on {facing} to restore the queue")
