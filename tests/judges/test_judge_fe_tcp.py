"""The fe-tcp judges on observations recorded on real labs (tests/observations/fe-ecmp/,
fe-failover/, fe-host-failover/, fe-leaf-failover/), and on recorded passes changed the way a
fault would change them: connections skewed, split or unseen; a stall over the failure's or
the restore's budget, a route that never moved or never came back, bytes lost. The budgets
come from the plan's objectives: the same observation on a plan with another objective gets
another verdict. No lab, no root."""
from __future__ import annotations

import dataclasses

import pytest

from harness.checks.ecmp import PortsSeen
from harness.checks.fe_tcp import TCP_RTO_MIN_MS, FeEcmpSeen, FeFailoverSeen, StreamSeen
from harness.checks.fe_tcp.failover import stream_seen
from harness.traffic.results import TcpStream
from harness.checks.registry import case
from harness.core.declarations import Objectives
from harness.core.model import build
from harness.core.plan import make_plan

import judge_tables as tables


# ---------------------------------------------------------------------------- fe-ecmp


def _ecmp(name: str = "fe-ecmp/ai-cluster") -> FeEcmpSeen:
    return tables.recorded(name).observation


def _leaf_flows(seen: FeEcmpSeen, flows: dict[str, tuple[int, ...]]) -> FeEcmpSeen:
    first = seen.leaves[0]
    return dataclasses.replace(seen, leaves=(PortsSeen(first.node, flows, first.packets), *seen.leaves[1:]))


def _ecmp_moved(seen: FeEcmpSeen, k: int) -> FeEcmpSeen:
    (a, on_a), (b, on_b) = list(seen.leaves[0].flows.items())[:2]
    return _leaf_flows(seen, {**seen.leaves[0].flows, a: tuple(sorted(on_a + on_b[:k])), b: on_b[k:]})


def _ecmp_split(seen: FeEcmpSeen) -> FeEcmpSeen:
    (a, on_a), (b, on_b) = list(seen.leaves[0].flows.items())[:2]
    return _leaf_flows(seen, {**seen.leaves[0].flows, b: tuple(sorted(on_b + on_a[:1]))})


def _ecmp_unseen(seen: FeEcmpSeen) -> FeEcmpSeen:
    a, on_a = next(iter(seen.leaves[0].flows.items()))
    return _leaf_flows(seen, {**seen.leaves[0].flows, a: on_a[1:]})


def _ecmp_few(seen: FeEcmpSeen) -> FeEcmpSeen:
    keep = range(seen.first_sport, seen.first_sport + 40)
    out = _leaf_flows(seen, {p: tuple(s for s in on if s in keep) for p, on in seen.leaves[0].flows.items()})
    return dataclasses.replace(out, connections=40)


ECMP = [  # (what, recorded file, change, passed, words in the reason)
    ("the recorded pass", "fe-ecmp/ai-cluster", None, True,
     ["spread: 380 TCP connections gpu03 -> gpu07 over the uplinks", "(fair band 156..224), 0 split, 0 unseen"]),
    ("a skew inside the band", "fe-ecmp/ai-cluster", lambda s: _ecmp_moved(s, 10), True, ["spread:"]),
    ("a skew past the band", "fe-ecmp/ai-cluster", lambda s: _ecmp_moved(s, 60), False,
     ["connections, outside a fair hash's 156..224"]),
    ("a split connection", "fe-ecmp/ai-cluster", _ecmp_split, False, ["1 connections split over two uplinks"]),
    ("an unseen connection", "fe-ecmp/ai-cluster", _ecmp_unseen, False, ["1 connections seen on no uplink of fe-l1"]),
    ("too few connections", "fe-ecmp/ai-cluster", _ecmp_few, False, ["40 connections over 2 uplinks"]),
    ("recorded: L3-only hashing on the leaf", "fe-ecmp/l3-hashing", None, False,
     ["carried 380 connections", "carried 0 connections"]),
]


@pytest.mark.parametrize("what, name, change, passed, words", ECMP, ids=[c[0] for c in ECMP])
def test_the_fe_ecmp_judge(what, name, change, passed, words):
    seen = _ecmp(name)
    outcome = tables.verdict(name, change(seen) if change else seen)
    assert outcome.passed is passed, outcome.reason
    assert all(w in outcome.reason for w in words), outcome.reason


def _nic_split(seen: FeEcmpSeen) -> FeEcmpSeen:
    """The host's first connection on its first NIC counted on its second as well."""
    nics = seen.nics
    (a, on_a), (b, on_b) = list(nics.flows.items())[:2]
    flows = {**nics.flows, b: tuple(sorted(on_b + on_a[:1]))}
    return dataclasses.replace(seen, nics=PortsSeen(nics.node, flows, nics.packets))


def _one_nic(seen: FeEcmpSeen) -> FeEcmpSeen:
    """Every connection on the host's first NIC (the leaves' counts left as they were)."""
    nics = seen.nics
    every = tuple(sorted(s for on in nics.flows.values() for s in on))
    flows = {nic: every if i == 0 else () for i, nic in enumerate(nics.flows)}
    return dataclasses.replace(seen, nics=PortsSeen(nics.node, flows, nics.packets))


DUAL = [  # (what, recorded file, change, passed, words in the reason)
    ("the recorded pass", "fe-ecmp/dual-homed", None, True,
     ["over gpu01's NICs fe0 233, fe1 207 (fair band 184..256), then the uplinks"]),
    ("a connection split over the host's NICs", "fe-ecmp/dual-homed", _nic_split, False,
     ["connections split over gpu01's NICs"]),
    ("every connection on one NIC", "fe-ecmp/dual-homed", _one_nic, False,
     ["gpu01:fe0 sent 440 connections, outside a fair hash's 184..256"]),
    ("recorded: L3-only hashing on the host", "fe-ecmp/dual-homed-l3", None, False,
     ["sent 440 connections, outside a fair hash's 184..256", "sent 0 connections"]),
]


@pytest.mark.parametrize("what, name, change, passed, words", DUAL, ids=[c[0] for c in DUAL])
def test_the_fe_ecmp_judge_on_a_dual_homed_source(what, name, change, passed, words):
    seen = _ecmp(name)
    outcome = tables.verdict(name, change(seen) if change else seen)
    assert outcome.passed is passed, outcome.reason
    assert all(w in outcome.reason for w in words), outcome.reason
    assert set(outcome.per_nic) == {"fe0", "fe1"} and len({u.split(":")[0] for u in outcome.per_uplink}) == 2


# ---------------------------------------------------------------------------- fe-failover


def _failover(name: str = "fe-failover/ai-cluster") -> FeFailoverSeen:
    return tables.recorded(name).observation


def _stalled(seen: FeFailoverSeen, start_ms: float, length_ms: float) -> FeFailoverSeen:
    """The first stream stalls once more, from start_ms after the failure, for length_ms."""
    first = seen.received[0]
    stalls = tuple(sorted((*first.stalls, (start_ms, length_ms))))
    return dataclasses.replace(seen, received=(StreamSeen(first.sport, first.bytes, stalls, first.rto),
                                               *seen.received[1:]))


def _armed(seen: FeFailoverSeen, *rto: tuple[float, float]) -> FeFailoverSeen:
    """The first stream's sender had these (from ms, RTO ms) armed."""
    first = seen.received[0]
    return dataclasses.replace(seen, received=(dataclasses.replace(first, rto=rto), *seen.received[1:]))


FAILOVER = [  # (what, change, passed, words in the reason)
    ("the recorded pass", None, True, ["held: fe-l1:Ethernet52–fe-s2:Ethernet0 down under 8 TCP streams (6 on it)",
                                       "(budget 450)", "(budget 210)"]),
    ("a stall just under the budget", lambda s: _stalled(s, 40.0, 449.9), True, ["worst stall 450 ms"]),
    ("a stall over the budget", lambda s: _stalled(s, 40.0, 460.0), False,
     ["stream from port 21000 (on fe-l1:Ethernet52) stalled 460 ms from +40 ms after the failure, over 450 ms"]),
    ("a stall on a stream not on the failed uplink", lambda s: dataclasses.replace(
        _stalled(s, 40.0, 460.0), on_failed=s.on_failed[1:]), False, ["(not on fe-l1:Ethernet52)"]),
    ("a stall that ended before the failure is no event's (the fabric was whole)",
     lambda s: _stalled(s, -499.0, 491.0), True, ["worst stall"]),
    ("a stall under way at the failure counts from it", lambda s: _stalled(s, -100.0, 560.0), False,
     ["stalled 460 ms from +0 ms after the failure, over 450 ms"]),
    ("a stall just before the restore is the failure's", lambda s: _stalled(s, s.restored_ms - 60, 300.0), True,
     ["worst stall 300 ms (budget 450)"]),
    ("a stall at the restore over its budget", lambda s: _stalled(s, s.restored_ms - 40, 300.0), False,
     ["stalled 300 ms after the restore of fe-l1:Ethernet52–fe-s2:Ethernet0, over 210 ms"]),
    ("a restore stall within the RTO its sender had armed + restore_ms",
     lambda s: _armed(_stalled(s, s.restored_ms + 30, 230.0), (-1000.0, 204.0), (s.restored_ms, 224.0)), True,
     ["worst stall after it 230 ms"]),
    ("a restore stall over the RTO its sender had armed + restore_ms",
     lambda s: _armed(_stalled(s, s.restored_ms + 30, 230.0), (-1000.0, 204.0), (s.restored_ms + 40, 224.0)), False,
     ["stalled 230 ms after the restore of fe-l1:Ethernet52–fe-s2:Ethernet0, over 214 ms (its 204 ms RTO + "
      "restore_ms)"]),
    ("an armed RTO under Linux's floor is the floor", lambda s: _armed(_stalled(s, 40.0, 460.0), (-1000.0, 150.0)),
     False, ["over 450 ms (its 200 ms RTO + the slower of hard_ms and remote_ms)"]),
    ("a failure stall within a longer armed RTO", lambda s: _armed(_stalled(s, 40.0, 470.0), (10.0, 236.0)), True,
     ["worst stall 470 ms (budget 450)"]),
    ("a stall after the restore, not judged when the route came back late",
     lambda s: dataclasses.replace(_stalled(s, s.restored_ms + 500, 300.0), back_ms=None), None,
     ["restore_ms (210 ms with TCP's RTO) not judged: Ethernet52 rejoined fe-l1's route only after"]),
    ("the route never moved", lambda s: dataclasses.replace(s, route_moved_ms=None), False,
     ["fe-l1's route to 10.16.1.12/31 still used Ethernet52 1.0 s after"]),
    ("the route never came back", lambda s: dataclasses.replace(s, back_ms=None, rejoined=False), False,
     ["Ethernet52 was not back in fe-l1's route to 10.16.1.12/31 60 s after"]),
    ("bytes lost", lambda s: dataclasses.replace(s, bytes_received=s.bytes_received - 1448), False,
     ["1448 bytes sent were never received"]),
    ("no stream on the failed uplink", lambda s: dataclasses.replace(s, on_failed=()), False,
     ["no stream was seen on fe-l1:Ethernet52: the failure tested nothing"]),
]


@pytest.mark.parametrize("what, change, passed, words", FAILOVER, ids=[c[0] for c in FAILOVER])
def test_the_fe_failover_judge(what, change, passed, words):
    seen = _failover()
    outcome = tables.verdict("fe-failover/ai-cluster", change(seen) if change else seen)
    assert outcome.passed is passed, outcome.reason
    assert all(w in outcome.reason for w in words), outcome.reason


RECORDED_FAILURES = [  # (file, passed, words): the negative controls, and the dual-homed cases
    ("fe-failover/no-path", False, ["stalled", "over 450 ms"]),
    ("fe-failover/restore-blackhole", False, ["after the restore of", "over 210 ms"]),
    ("fe-host-failover/dual-homed", True, ["held:"]),
    ("fe-host-failover/no-path", False, ["stalled"]),
    ("fe-leaf-failover/dual-homed", True, ["held:"]),
    ("fe-leaf-failover/partner-cut", False, ["stalled"]),
]


@pytest.mark.parametrize("name, passed, words", RECORDED_FAILURES, ids=[c[0] for c in RECORDED_FAILURES])
def test_the_fe_failover_judge_on_recorded_controls(name, passed, words):
    outcome = tables.verdict(name)
    assert outcome.passed is passed, outcome.reason
    assert all(w in outcome.reason for w in words), outcome.reason


def test_the_budgets_come_from_the_plans_objectives():
    """A stall of 460 ms fails at the defaults (200 + max(50, 250)) and passes where the
    declaration allows remote_ms 300; the restore budget follows restore_ms the same way."""
    seen = _stalled(_failover(), 40.0, 460.0)
    cluster = tables.plan("fe-failover/ai-cluster").fabric.cluster
    looser = make_plan(build(dataclasses.replace(cluster, objectives=Objectives(remote_ms=300.0, restore_ms=150.0))))
    strict, loose = case("fe-failover").verdict(tables.plan("fe-failover/ai-cluster"), seen), \
        case("fe-failover").verdict(looser, seen)
    assert strict.passed is False and strict.budget_ms == TCP_RTO_MIN_MS + 250.0
    assert loose.passed is True, loose.reason
    assert (loose.budget_ms, loose.restore_budget_ms) == (TCP_RTO_MIN_MS + 300.0, TCP_RTO_MIN_MS + 150.0)


def test_the_recorded_failover_figures():
    seen = _failover()
    outcome = tables.verdict("fe-failover/ai-cluster")
    assert set(outcome.stall_ms) == {s.sport for s in seen.received} and len(seen.received) == seen.streams
    assert max(outcome.stall_ms.values()) <= outcome.budget_ms
    assert outcome.bytes_received == outcome.bytes_sent > 0 and outcome.on_failed
    assert (outcome.leaf, outcome.uplink, outcome.element) == ("fe-l1", "Ethernet52", "uplink")


def test_the_dual_homed_failovers_reroute_at_the_host():
    host = tables.verdict("fe-host-failover/dual-homed")
    assert (host.element, host.leaf, host.uplink) == ("host-uplink", "gpu01", "fe0")
    leaf = tables.verdict("fe-leaf-failover/dual-homed")
    plan = tables.plan("fe-leaf-failover/dual-homed")
    assert leaf.element == "leaf" and leaf.failed == plan.host(leaf.leaf).nic(leaf.uplink).peer


def test_a_stream_carries_the_rto_its_sender_had_armed():
    """The receiver's stalls and the sender's RTOs, both from the failure; a timeout that fired
    (backoff > 0, the doubled value) is not an RTO a stall was armed with."""
    failed = 10_000_000_000
    received = TcpStream("10.0.0.2:5201", "10.0.0.1:21003", 1000, 0, 0, stalls=((failed + 40_000_000, 205_000_000),))
    other = TcpStream("10.0.0.1:21004", "10.0.0.2:5201", 1000, 0, 0, rto=((failed, 300_000, 0),))
    sender = TcpStream("10.0.0.1:21003", "10.0.0.2:5201", 1000, 0, 0,
                       rto=((failed - 1_000_000_000, 204_000, 0), (failed + 250_000_000, 408_000, 1),
                            (failed + 260_000_000, 220_000, 0)))
    seen = stream_seen(received, (other, sender), failed)
    assert seen == StreamSeen(21003, 1000, ((40.0, 205.0),), ((-1000.0, 204.0), (260.0, 220.0)))
    assert stream_seen(received, (other,), failed).rto == ()  # no sender record: the floor applies
