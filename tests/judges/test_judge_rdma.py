"""The RDMA check's judges on observations recorded on real labs through the RDMA lane
(tests/observations/rdma-*/), and on the same observations with one thing changed: a failed
transfer, a QP not seen on a spine, every QP on one uplink, a route that never moved, a
cross-rail transfer that got through. No lab, no root, no VM."""
from __future__ import annotations

import dataclasses

import pytest

from harness.checks.base import NotMeasurable
from harness.checks.rdma import PortFlow, require_lane
from harness.checks.registry import case
from harness.core.errors import PrerequisiteError
from harness.report.recorded import judge

import judge_tables as tables

CASES = ("rdma-path", "rdma-gray", "rdma-rails")


def _failed(transfer):
    return dataclasses.replace(transfer, ok=False, error="ib_write_bw exited 1: Couldn't connect")


def _counter(transfer, role: str, **values):
    counters = {k: dict(v) for k, v in transfer.counters.items()}
    counters.setdefault(role, {}).update(values)
    return dataclasses.replace(transfer, counters=counters)


# --------------------------------------------------------------------------- rdma-path


def _without_sport(seen, sport: int):
    return dataclasses.replace(seen, spines=tuple(dataclasses.replace(s, flows=tuple(
        f for f in s.flows if f.sport != sport)) for s in seen.spines))


def _halved(seen):
    return dataclasses.replace(seen, spines=tuple(dataclasses.replace(s, flows=tuple(
        dataclasses.replace(f, packets=f.packets // 2) for f in s.flows)) for s in seen.spines))


def _all_on(seen, uplink: str):
    """Every QP on one uplink of the source leaf, as with L3-only hashing there."""
    return dataclasses.replace(seen, leaf_flows=tuple(dataclasses.replace(f, port=uplink) for f in seen.leaf_flows))


def _split_first(seen):
    first = seen.transfer.qps[0].sport
    other = next(u for u in seen.uplinks if u != next(f.port for f in seen.leaf_flows if f.sport == first))
    return dataclasses.replace(seen, leaf_flows=seen.leaf_flows + (PortFlow(other, first, 1),))


def _fewer_qps(seen):
    return dataclasses.replace(seen, transfer=dataclasses.replace(seen.transfer, qps=seen.transfer.qps[:-1]))


def _other_traffic(seen):
    first = seen.spines[0]
    return dataclasses.replace(seen, spines=(dataclasses.replace(
        first, flows=first.flows + (PortFlow(first.ports[0], 1234, 5),)),) + seen.spines[1:])


PATH = [  # (what changed, change, passes, words the reason must hold)
    ("as recorded", lambda s: s, True, "crossed the spines, ports as the rule says, spread"),
    ("the transfer failed", lambda s: dataclasses.replace(s, transfer=_failed(s.transfer)), False,
     "the transfer failed: ib_write_bw exited 1"),
    ("a QP never on a spine", lambda s: _without_sport(s, s.transfer.qps[0].sport), False, "never seen on a spine"),
    ("half the packets elsewhere", _halved, False, "crossed a spine"),
    ("no spine cabled to the far leaf", lambda s: dataclasses.replace(s, spines=tuple(
        dataclasses.replace(x, ports=(), flows=()) for x in s.spines)), False, "share no spine"),
    ("the responder received nothing", lambda s: dataclasses.replace(s, transfer=_counter(s.transfer, "dst",
                                                                                         rcvd_pkts=0)),
     False, "received nothing"),
    ("other traffic on UDP 4791 too", _other_traffic, True, "crossed the spines"),
    ("every QP on one uplink", lambda s: _all_on(s, s.uplinks[0]), False, "outside the fair band"),
    ("a QP on two uplinks", _split_first, False, "QPs on more than one uplink"),
    ("a source port no QP's rule gives", lambda s: dataclasses.replace(
        s, leaf_flows=s.leaf_flows + (PortFlow(s.uplinks[0], 4791, 3),)), False,
     "source ports no QP's rule gives: [4791]"),
    ("a QP never seen leaving its leaf", lambda s: dataclasses.replace(s, leaf_flows=tuple(
        f for f in s.leaf_flows if f.sport != s.transfer.qps[0].sport)), False, "QPs never seen with their rule"),
    ("perftest reported one QP fewer", _fewer_qps, False, "perftest reported 63 QPs, 64 asked"),
]


@pytest.mark.parametrize("what,change,passes,words", PATH, ids=[p[0] for p in PATH])
def test_the_path_judge(what, change, passes, words):
    recorded = tables.recorded("rdma-path/ai-cluster")
    outcome = judge(recorded, change(recorded.observation))
    assert outcome.passed is passes and words in outcome.reason, outcome.reason
    if what == "other traffic on UDP 4791 too":
        assert outcome.other_sports == judge(recorded).other_sports + 5


def test_the_fair_band_follows_from_the_qps_and_uplinks():
    recorded = tables.recorded("rdma-path/ai-cluster")
    outcome = judge(recorded)
    assert len(outcome.rows) == recorded.observation.transfer.spec.qps == 64
    assert outcome.low <= 64 // len(recorded.observation.uplinks) <= outcome.high
    assert sum(outcome.per_uplink.values()) == 64


# --------------------------------------------------------------------------- rdma-gray


GRAY = [
    ("as recorded", lambda s: s, True, "recovered"),
    ("the route never moved", lambda s: dataclasses.replace(s, detected_ms=None), False,
     "still used"),
    ("rxe never retransmitted", lambda s: dataclasses.replace(s, transfer=_counter(
        _counter(s.transfer, "src", completer_retry_err=0), "dst", completer_retry_err=0)), False,
     "rxe did not retransmit"),
    ("the transfer did not complete", lambda s: dataclasses.replace(s, transfer=_failed(s.transfer)), False,
     "the transfer did not complete"),
    ("a longer stall", lambda s: dataclasses.replace(s, stall_ms=s.stall_ms * 3), True, "recovered"),
    # the heal watched (the recording predates it: after_s 0, not watched)
    ("healed and back", lambda s: dataclasses.replace(s, after_s=15.0, back_ms=2140.5), True,
     "back in the route 2140 ms after the heal"),
    ("the cable never back in the route", lambda s: dataclasses.replace(
        s, after_s=15.0, back_ms=None, sessions_not_back=(
            "be-g1-r0:Ethernet8 BGP Active (last reset: BFD down received; zebra's neighbour on it: fe80::1/128), BFD up",
            "be-s2:Ethernet0 BGP Active, BFD up")), False, "did not return to be-g1-r0's route"),
    ("back in the route, one session not", lambda s: dataclasses.replace(
        s, after_s=15.0, back_ms=900.0, sessions_not_back=("be-s2:Ethernet0 BGP Idle, BFD up",)), False,
     "1 of its BGP sessions still not Established 15 s after the heal: be-s2:Ethernet0 BGP Idle"),
]


@pytest.mark.parametrize("what,change,passes,words", GRAY, ids=[p[0] for p in GRAY])
def test_the_gray_judge(what, change, passes, words):
    recorded = tables.recorded("rdma-gray/ai-cluster")
    outcome = judge(recorded, change(recorded.observation))
    assert outcome.passed is passes and words in outcome.reason, outcome.reason


def test_the_gray_objective_is_the_declared_one_for_scale():
    recorded = tables.recorded("rdma-gray/ai-cluster")
    outcome = judge(recorded)
    assert outcome.objective_ms == tables.plan("rdma-gray/ai-cluster").fabric.cluster.objectives.gray_ms
    assert outcome.stall_ms >= outcome.detected_ms * 0.5


# --------------------------------------------------------------------------- rdma-rails


def _got_through(r):
    return _counter(dataclasses.replace(r, ok=True, error=""), "dst", rcvd_pkts=40)


RAILS = [
    ("as recorded", lambda s: s, True, "rails separate"),
    ("the control failed", lambda s: dataclasses.replace(s, control=_failed(s.control)), False, "control:"),
    ("cross-rail as planned got through", lambda s: dataclasses.replace(s, as_planned=_got_through(s.as_planned)),
     False, "cross-rail as planned:"),
    ("cross-rail forced got through", lambda s: dataclasses.replace(s, forced=_got_through(s.forced)), False,
     "cross-rail routed via the rail leaf:"),
    ("the forced requester sent nothing", lambda s: dataclasses.replace(s, forced=_counter(s.forced, "src",
                                                                                          sent_pkts=0)),
     False, "the fabric was not tried"),
]


@pytest.mark.parametrize("what,change,passes,words", RAILS, ids=[p[0] for p in RAILS])
def test_the_rails_judge(what, change, passes, words):
    recorded = tables.recorded("rdma-rails/rail-only")
    outcome = judge(recorded, change(recorded.observation))
    assert outcome.passed is passes and words in outcome.reason, outcome.reason


# --------------------------------------------------------------------------- where the cases run


def test_the_cases_apply_where_their_fabric_is(ai_plan):
    from topologies import BUILTINS
    from harness.core.model import build
    from harness.core.plan import make_plan

    rail = make_plan(build(BUILTINS["rail-only"]()))
    assert [case(n).applies(ai_plan) is None for n in CASES] == [True, True, False]
    assert [case(n).applies(rail) is None for n in CASES] == [False, False, True]


def test_without_the_lane_a_case_is_not_measurable(monkeypatch):
    """The lane missing is said, with its fix, before anything touches the lab (None: no lab)."""
    import harness.checks.rdma.lane as lane_module

    def missing():
        raise PrerequisiteError("the RDMA lane needs Debian packages not installed: perftest; run `make rdma-deps`")

    monkeypatch.setattr(lane_module, "boot_files", missing)
    with pytest.raises(NotMeasurable, match="make rdma-deps"):
        require_lane()
    for name in CASES:
        with pytest.raises(NotMeasurable, match="make rdma-deps"):
            case(name).measure(None)


def test_fablab_rdma_off_switches_the_lane_off_before_it_is_looked_for(monkeypatch):
    """FABLAB_RDMA=off: not measurable, naming the switch, with no microVM and no boot files
    looked for; unset (the control), the lane is looked for."""
    import harness.checks.rdma.lane as lane_module

    looked: list[bool] = []
    monkeypatch.setattr(lane_module, "boot_files", lambda: looked.append(True))
    monkeypatch.setenv("FABLAB_RDMA", "off")
    for name in CASES:
        with pytest.raises(NotMeasurable, match="FABLAB_RDMA=off"):
            case(name).measure(None)
    assert looked == []
    monkeypatch.delenv("FABLAB_RDMA")
    require_lane()
    assert looked == [True]


def test_validate_reports_a_missing_lane_not_measurable_never_passed(monkeypatch, ai_plan):
    import harness.checks.rdma.lane as lane_module
    from harness.checks.registry import run_checks, select

    def missing():
        raise PrerequisiteError("no Debian 6.1 kernel package in /var/cache/fablab/rdma: run `make rdma-deps`")

    class NoLab:  # the lane is looked for before the lab is touched
        plan = ai_plan

    monkeypatch.setattr(lane_module, "boot_files", missing)
    verdicts = {v.check: v for v in run_checks(NoLab(), select("rdma"))}
    assert [verdicts[n].passed for n in CASES] == [None] * 3
    assert all(verdicts[n].reason.startswith("not measurable: no RDMA lane") and "make rdma-deps" in verdicts[n].reason
               for n in ("rdma-path", "rdma-gray"))
    assert verdicts["rdma-rails"].reason.startswith("not applicable: the BE is not rail-only")
