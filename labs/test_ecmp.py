"""Lesson 2 — ECMP spreads RoCEv2 queue pairs over the spine tier.

Claim: the QPs between two GPUs of different groups (same rail) spread over every uplink
of their leaf as a fair hash would, and each QP stays on exactly one uplink.

The unit is the QP: every packet of a QP follows its 5-tuple's path, so counting packets
only repeats each QP's choice. The leaf counts packets per (uplink, QP) in nftables, which
gives each QP's path. Under a fair hash the QPs per uplink are Binomial(N, 1/k); the check
accepts each uplink inside exact binomial quantiles at 0.1 % / (2k) per tail (so a fair hash
fails at most 0.1 % of the time), and picks N from k so that one uplink at twice the weight
of the others lands above the band 99.9 % of the time (380 QPs for 2 uplinks, 712 for 8,
1328 for 16; a few packets each).

Why it matters in an AI data center: a collective moves a few huge, long flows (elephants)
with almost no entropy: between two GPUs, source and destination addresses and the UDP
destination port (4791) are the same for every QP. Only the UDP source port, which an
RDMA NIC derives from the QP number, tells them apart. A fabric that hashes on addresses
alone puts all of them on one spine: half the bisection idles, the other half congests,
PFC pauses spread, and the job runs at the speed of the hottest link. An uplink weighted
above the others (UCMP left on, a typo in a weight) does the same more quietly.

Make it fail: hash on L3 only (`fib_multipath_hash_policy=0` on the leaf), or give one
next hop of the leaf's route a higher weight (`ip route replace ... nexthop ... weight 2`):
the two negative controls below do exactly that, next to the positive control.
"""
from __future__ import annotations

from harness.checks.ecmp import default_pair, distinct_sport_qpns
from harness.faults.sabotage import hash_seed, weighted_uplink
from harness.checks.registry import case, run_case
from harness.faults.sabotage import l3_hashing
from harness.observe.flowcount import FlowCounters, paths_of
from harness.traffic.flows import RoceFlow, SendSpec
from harness.traffic.roce import roce_sport
from harness.traffic.runner import run_sender


def _leaf_and_prefix(lab):
    """The source leaf of the ecmp case's default QPs, and its route to their destination."""
    (src, src_nic), (dst, dst_nic) = default_pair(lab.plan)
    return lab.plan.host(src).nic(src_nic).peer, str(lab.plan.route_prefix(lab.plan.host(dst).nic(dst_nic)))


def test_roce_qps_spread_over_every_uplink(lab, results):
    result = run_case(case("ecmp"), lab, results)
    assert result.passed, result.reason
    assert sum(result.per_path.values()) == result.qps and result.split_qps == 0
    assert all(p.packets >= p.qps * result.packets_per_qp for p in result.paths)
    assert result.lost == 0 and result.reordered == 0


def test_l3_only_hashing_collapses_roce_onto_one_path(lab, results, control):
    leaf, _ = _leaf_and_prefix(lab)
    before = control(case("ecmp"), lab)  # positive control in the same run
    with l3_hashing(lab, [leaf]) as s:
        result = run_case(case("ecmp"), lab, results, name="ecmp-l3-hashing", sabotage=s.description)
    assert before.passed, before.reason
    assert not result.passed
    assert sorted(result.per_path.values())[-1] == result.qps  # every QP on one uplink
    assert "fib_multipath_hash_policy=0" in result.reason
    assert result.split_qps == 0  # collapsed, not split: each QP still on one path


def test_skewed_nexthop_weight_is_caught(lab, results, control):
    leaf, prefix = _leaf_and_prefix(lab)
    heavy = lab.plan.switch(leaf).fabric_ports[0].name
    before = control(case("ecmp"), lab)  # positive control in the same run
    with weighted_uplink(lab, leaf, prefix, heavy, weight=2) as s:
        result = run_case(case("ecmp"), lab, results, name="ecmp-skewed-weight", sabotage=s.description)
    after = control(case("ecmp"), lab)  # the undo put the fair weights back
    assert before.passed, before.reason
    assert after.passed, after.reason
    assert not result.passed
    assert any(p.uplink == heavy and p.qps > p.high for p in result.paths), result.reason
    assert f"{leaf}:{heavy} carried" in result.reason
    assert result.nexthop_weights[heavy] == 2 and "unequal next-hop weights" in result.reason


def test_a_qp_that_changes_path_is_counted_on_both_uplinks(lab):
    """The stickiness count can see a split: the same QPs sent twice, under two hash seeds of
    the leaf, so most of them move (none moving has odds (1/k)^64 on k uplinks)."""
    (src, src_nic), (dst, dst_nic) = default_pair(lab.plan)
    leaf = lab.plan.host(src).nic(src_nic).peer
    uplinks = [p.name for p in lab.plan.switch(leaf).fabric_ports]
    dst_addr = lab.address(dst, dst_nic)
    qps = tuple(RoceFlow(flow_id=i + 1, dst=dst_addr, dst_qp=q, src_qp=q, src=lab.address(src, src_nic))
                for i, q in enumerate(distinct_sport_qpns(64)))
    spec = SendSpec(flows=qps, packets=2, device=src_nic)
    with FlowCounters(lab, leaf, uplinks, [roce_sport(q.src_qp, q.dst_qp) for q in qps]) as counters:
        with hash_seed(lab, leaf, 0x5EED0001):
            run_sender(lab.namespace(src), spec)
            once = paths_of(counters.read_flows())
        with hash_seed(lab, leaf, 0x5EED0002):
            run_sender(lab.namespace(src), spec)
        twice = paths_of(counters.read_flows())
    assert len(once) == 64 and all(len(p) == 1 for p in once.values())  # control: one seed, one path each
    split = [s for s, p in twice.items() if len(p) > 1]
    assert split and all(len(twice[s]) == 2 for s in split)  # named with both uplinks
