"""The ecmp-superspine judge on observations recorded on the pods topology
(tests/observations/ecmp-superspine/), and on the recorded pass changed the way a fault would
change it: a spine hashing every QP onto one super-spine link, a QP split or lost at a spine,
a lost packet. No lab, no root."""
from __future__ import annotations

import dataclasses

import pytest

from harness.checks.ecmp import PortsSeen
from harness.checks.common.bounds import bound
from harness.checks.ecmp_superspine import EcmpStagesSeen

import judge_tables as tables

PASSING = "ecmp-superspine/pods"  # the recorded pass: every row is judged on its plan


def _passing() -> EcmpStagesSeen:
    return tables.recorded(PASSING).observation


def _spine(seen: EcmpStagesSeen, flows: dict[str, tuple[int, ...]]) -> EcmpStagesSeen:
    """The first spine's ports counted with these flows."""
    first = seen.spines[0]
    return dataclasses.replace(seen, spines=(PortsSeen(first.node, flows, first.packets), *seen.spines[1:]))


def _one_link(seen: EcmpStagesSeen) -> EcmpStagesSeen:
    """The first spine hashes like the leaf: every QP it got on its first link."""
    ports = list(seen.spines[0].flows)
    every = tuple(sorted(s for on in seen.spines[0].flows.values() for s in on))
    return _spine(seen, {p: every if i == 0 else () for i, p in enumerate(ports)})


def _split_at_spine(seen: EcmpStagesSeen) -> EcmpStagesSeen:
    (a, on_a), (b, on_b) = list(seen.spines[0].flows.items())[:2]
    return _spine(seen, {**seen.spines[0].flows, b: tuple(sorted(on_b + on_a[:1]))})


def _unseen_at_spine(seen: EcmpStagesSeen) -> EcmpStagesSeen:
    a, on_a = next(iter(seen.spines[0].flows.items()))
    return _spine(seen, {**seen.spines[0].flows, a: on_a[1:]})


def _lost(seen: EcmpStagesSeen) -> EcmpStagesSeen:
    return dataclasses.replace(seen, received=(0, *seen.received[1:]))


def _one_five_tuple(seen: EcmpStagesSeen) -> EcmpStagesSeen:
    """The second QP sent to the first one's destination from the first one's source port."""
    second = next(i for i in range(1, len(seen.to)) if seen.to[i] == seen.to[0])
    sports = list(seen.sports)
    sports[second] = sports[0]
    return dataclasses.replace(seen, sports=tuple(sports))


def _spread_over_destinations() -> EcmpStagesSeen:
    return tables.recorded("ecmp-superspine/pods-3-destinations").observation


CASES = [  # (what, observation, passed, words in the reason)
    ("the recorded pass", _passing, True, ["spread at both stages:", "0 split, 0 lost"]),
    ("a spine on one super-spine link", lambda: _one_link(_passing()), False, ["QPs, more than a fair hash gives"]),
    ("a QP split at a spine", lambda: _split_at_spine(_passing()), False, ["1 QPs split over two ports of one switch"]),
    ("a QP the spine should forward, seen on none of its ports", lambda: _unseen_at_spine(_passing()), False,
     ["1 of the", "should forward seen on none of its ports"]),
    ("a QP lost", lambda: _lost(_passing()), False, ["packets lost"]),
    ("recorded: QPs to 3 GPUs, a source port used once per destination", _spread_over_destinations, True,
     ["spread at both stages:", "-> 3 GPUs ("]),
    ("two QPs on one 5-tuple", lambda: _one_five_tuple(_passing()), False,
     ["1 QPs share their destination and source port with another QP"]),
    ("two QPs on one 5-tuple, QPs to 3 GPUs", lambda: _one_five_tuple(_spread_over_destinations()), False,
     ["1 QPs share their destination and source port"]),
    ("recorded: a spine hashing on addresses only",
     lambda: tables.recorded("ecmp-superspine/l3-hashing").observation, False,
     ["carried", "than a fair hash gives"]),
]


@pytest.mark.parametrize("what, seen, passed, words", CASES, ids=[c[0] for c in CASES])
def test_the_ecmp_superspine_judge(what, seen, passed, words):
    outcome = tables.verdict(PASSING, seen())  # every recording here is of the pods topology
    assert outcome.passed is passed, outcome.reason
    assert all(w in outcome.reason for w in words), outcome.reason


def test_a_spine_fault_is_named_at_the_spine_and_the_leaf_still_spreads():
    seen = _one_link(_passing())
    outcome = tables.verdict(PASSING, seen)
    spine = seen.spines[0].node
    assert all(p.startswith(f"{spine}:") for p in outcome.problems if "carried" in p), outcome.reason
    assert all(p.within for p in outcome.leaf.paths)


def test_each_band_follows_from_the_qps_each_switch_got():
    """The leaf's band is for every QP sent, a spine's for the QPs the leaf sent it, each at
    the false-fail budget split over all the bands."""
    seen = _passing()
    outcome = tables.verdict(PASSING, seen)
    each = seen.false_fail / (1 + len(seen.spines))
    assert outcome.qps == len(seen.sports) == sum(s.qps for s in outcome.spines)
    for stage, counted in zip((outcome.leaf, *outcome.spines), (seen.leaf, *seen.spines)):
        b = bound(stage.qps, len(counted.flows), each)
        assert all((p.low, p.high) == (b.low, b.high) for p in stage.paths)
    assert [s.switch for s in outcome.spines] == [s.node for s in seen.spines]
