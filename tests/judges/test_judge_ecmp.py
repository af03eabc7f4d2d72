"""The ecmp judge on observations recorded on real labs (tests/observations/ecmp/), and on the
recorded pass changed the way a fault would change it: a skew, a split QP, an unseen QP, a
lost or reordered packet, too few QPs, L3-only hashing, an unequal weight. No lab, no root."""
from __future__ import annotations

import dataclasses

import pytest

from harness.checks.ecmp import EcmpSeen, PortsSeen
from harness.checks.common.bounds import bound, qps_for

import judge_tables as tables

PASSING = "ecmp/ai-cluster"  # the recorded pass: every row is judged on its plan


def _passing() -> EcmpSeen:
    return tables.recorded(PASSING).observation


def _with_flows(seen: EcmpSeen, flows: dict[str, tuple[int, ...]]) -> EcmpSeen:
    packets = {p: len(s) * seen.packets_per_qp for p, s in flows.items()}
    return dataclasses.replace(seen, leaf=PortsSeen(seen.leaf.node, flows, packets))


def _moved(seen: EcmpSeen, k: int, weights: dict[str, int] | None = None, policy: int | None = None) -> EcmpSeen:
    """k QPs of the second uplink counted on the first instead."""
    (a, on_a), (b, on_b) = list(seen.leaf.flows.items())[:2]
    out = _with_flows(seen, {**seen.leaf.flows, a: tuple(sorted(on_a + on_b[:k])), b: on_b[k:]})
    return dataclasses.replace(out, nexthop_weights=weights or seen.nexthop_weights,
                               hash_policy=seen.hash_policy if policy is None else policy)


def _split(seen: EcmpSeen) -> EcmpSeen:
    """The first QP of the first uplink counted on the second as well."""
    (a, on_a), (b, on_b) = list(seen.leaf.flows.items())[:2]
    return _with_flows(seen, {**seen.leaf.flows, b: tuple(sorted(on_b + on_a[:1]))})


def _unseen(seen: EcmpSeen) -> EcmpSeen:
    a, on_a = next(iter(seen.leaf.flows.items()))
    return _with_flows(seen, {**seen.leaf.flows, a: on_a[1:]})


def _lost(seen: EcmpSeen) -> EcmpSeen:
    return dataclasses.replace(seen, received=(seen.received[0] - 1, *seen.received[1:]))


def _few(seen: EcmpSeen) -> EcmpSeen:
    """The first 40 QPs only, as `fablab spread --qps 40` sends them (measure_only)."""
    keep = set(seen.sports[:40])
    out = _with_flows(seen, {p: tuple(s for s in on if s in keep) for p, on in seen.leaf.flows.items()})
    return dataclasses.replace(out, qpns=seen.qpns[:40], sports=seen.sports[:40], received=seen.received[:40])


def _l3(seen: EcmpSeen) -> EcmpSeen:
    return _moved(seen, len(list(seen.leaf.flows.values())[1]), policy=0)


CASES = [  # (what, observation, passed, words in the reason)
    ("the recorded pass", _passing, True, ["spread: 380 QPs over 2 uplinks of be-g1-r0, fair band 156..224"]),
    ("a skew inside the band", lambda: _moved(_passing(), 20), True, ["0 split, 0 lost"]),
    ("a skew past the band", lambda: _moved(_passing(), 60), False, ["carried", "more than a fair hash gives"]),
    ("past the band with unequal weights", lambda: _moved(_passing(), 60, {"Ethernet0": 2, "Ethernet8": 1}), False,
     ["unequal next-hop weights: Ethernet0 2, Ethernet8 1"]),
    ("unequal weights and a fair spread", lambda: dataclasses.replace(
        _passing(), nexthop_weights={"Ethernet0": 2, "Ethernet8": 1}), True, ["spread:"]),
    ("all on one uplink, L3 hashing", lambda: _l3(_passing()), False,
     ["all 380 QPs on one uplink", "fib_multipath_hash_policy=0"]),
    ("a split QP", lambda: _split(_passing()), False, ["split over be-g1-r0:Ethernet0 and be-g1-r0:Ethernet8"]),
    ("an unseen QP", lambda: _unseen(_passing()), False, ["1 QPs seen on no uplink of be-g1-r0 (first: QP"]),
    ("a lost packet", lambda: _lost(_passing()), False, ["1 packets lost"]),
    ("a reordered packet", lambda: dataclasses.replace(_passing(), reordered=2), False, ["2 packets reordered"]),
    ("too few QPs for a verdict", lambda: _few(_passing()), False, ["40 QPs over 2 uplinks: a verdict needs >= 380"]),
    ("recorded: L3-only hashing on the leaf", lambda: tables.recorded("ecmp/l3-hashing").observation, False,
     ["all 380 QPs on one uplink", "fib_multipath_hash_policy=0"]),
    ("recorded: one next hop at weight 2", lambda: tables.recorded("ecmp/skewed-weight").observation, False,
     ["be-g1-r0:Ethernet0 carried", "unequal next-hop weights: Ethernet0 2, Ethernet8 1"]),
]


@pytest.mark.parametrize("what, seen, passed, words", CASES, ids=[c[0] for c in CASES])
def test_the_ecmp_judge(what, seen, passed, words):
    outcome = tables.verdict(PASSING, seen())
    assert outcome.passed is passed, outcome.reason
    assert all(w in outcome.reason for w in words), outcome.reason


def test_the_band_follows_from_what_was_sent():
    """Fewer QPs judged, a narrower count per path: the band is the one for the QPs the
    observation says were sent, over the uplinks it counted."""
    for seen in (_passing(), _few(_passing())):
        outcome = tables.verdict(PASSING, seen)
        b = bound(len(seen.qpns), len(seen.leaf.flows), seen.false_fail)
        assert (outcome.qps, outcome.low, outcome.high) == (len(seen.qpns), b.low, b.high)
    assert len(_passing().qpns) == qps_for(2, _passing().false_fail)


def test_the_recorded_figures():
    outcome = tables.verdict(PASSING, _passing())
    assert outcome.per_path == {"Ethernet0": 185, "Ethernet8": 195}
    assert all(p.packets == p.qps * 4 for p in outcome.paths)  # 3 per QP, and the sender's probe
    assert (outcome.split_qps, outcome.unseen_qps, outcome.lost, outcome.reordered) == (0, 0, 0, 0)
    assert outcome.seconds == _passing().seconds


def test_the_judge_is_a_function_of_plan_and_observation():
    seen = _l3(_passing())
    assert tables.verdict(PASSING, seen) == tables.verdict(PASSING, seen)
