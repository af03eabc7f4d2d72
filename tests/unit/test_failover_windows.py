"""Loss windows from the sender's timestamps around each gap, and when sender lag makes them
unmeasurable: the arithmetic of harness.checks.failover_windows, on real result objects."""
from __future__ import annotations

import pytest

from harness.checks.failover import measure_failover
from harness.checks.failover_windows import QpLoss, judge, lane, losses, seen
from harness.core.errors import HarnessError
from harness.traffic.flows import RoceFlow
from harness.traffic.results import FlowReceived, FlowSent, Gap, ReceiveResult, SendResult

MS = 1_000_000
T0 = 1_000_000 * MS  # an arbitrary wall-clock origin
FAIL, RESTORE = T0 + 1000 * MS, T0 + 3000 * MS


def _flow(fid: int) -> RoceFlow:
    return RoceFlow(flow_id=fid, dst="10.0.0.9", dst_qp=0x300 + fid, src_qp=0x300 + fid)


def _received(fid: int, gaps: tuple[Gap, ...], max_seq: int = 5999) -> FlowReceived:
    missing = sum(g.missing for g in gaps)
    return FlowReceived(key=0x300 + fid, flow_id=fid, dst_qp=0x300 + fid, received=max_seq + 1 - missing,
                        unique=max_seq + 1 - missing, duplicates=0, reordered=0, lost=missing, psn_gaps=len(gaps),
                        psn_missing=missing, first_seq=0, max_seq=max_seq, first_ns=T0, last_ns=T0 + max_seq * MS,
                        latency_min_ns=1, latency_avg_ns=1, latency_max_ns=1, seq_runs=(), gaps=gaps, buckets=())


def _gap(after_seq: int, next_seq: int) -> Gap:
    # 1000 pps: packet s left at T0 + s ms
    return Gap(after_seq, next_seq, T0 + after_seq * MS, T0 + next_seq * MS, 0, 0)


def _run(gaps_by_flow: dict[int, tuple[Gap, ...]], lag_spans=(), on=(1,)):
    flows = [_flow(f) for f in gaps_by_flow]
    sent = SendResult(flows=tuple(FlowSent(f.flow_id, f.dst_qp, 50000 + f.flow_id, 6000, 5999, T0, T0 + 5999 * MS)
                                  for f in flows), start_ns=T0, end_ns=T0 + 6000 * MS, lag_spans=lag_spans)
    received = ReceiveResult("roce", 4791, T0, T0 + 6000 * MS, 10 * MS, "quiet",
                             tuple(_received(f, g) for f, g in gaps_by_flow.items()))
    path_of = {f.flow_id: "leaf:E16" if f.flow_id in on else "leaf:E20" for f in flows}
    sports = {f.flow_id: 50000 + f.flow_id for f in flows}
    qps = seen(flows, sports, path_of, {"leaf:E16"}, sent, received)
    return losses(qps, sent.lag_spans, FAIL, RESTORE, 50.0, 10.0, 1e6)


def test_window_is_send_time_after_minus_before_the_gap():
    per_qp, before = _run({1: (_gap(1000, 1031),), 2: ()})
    assert per_qp[0].window_ms == 31.0 and per_qp[0].lost == 30 and before == 0
    assert judge(per_qp, 50.0, 10.0) == ([], [])


def test_window_over_the_objective_fails():
    per_qp, _ = _run({1: (_gap(1000, 1080),), 2: ()})
    problems, _ = judge(per_qp, 50.0, 10.0)
    assert len(problems) == 1 and "loss window 80.0 ms > objective 50 ms" in problems[0]


def test_loss_after_the_restore_is_judged_against_its_own_objective():
    per_qp, _ = _run({1: (_gap(3100, 3125),), 2: ()})
    assert per_qp[0].window_ms == 0 and per_qp[0].restore_window_ms == 25.0
    problems, _ = judge(per_qp, 50.0, 10.0)
    assert "after the restore" in problems[0]


def test_a_qp_off_the_element_must_lose_nothing():
    per_qp, _ = _run({1: (), 2: (_gap(1000, 1002),)})
    problems, _ = judge(per_qp, 50.0, 10.0)
    assert "not on the failed element lost" in problems[0]


def test_loss_before_the_failure_is_counted_apart():
    _, before = _run({1: (_gap(200, 205),), 2: ()})
    assert before == 4


def test_sender_lag_inside_a_gap_changes_nothing():
    # Everything sent between the two delivered packets was lost anyway: the window stands.
    per_qp, _ = _run({1: (_gap(1000, 1031),), 2: ()}, lag_spans=((T0 + 1010 * MS, T0 + 1015 * MS),))
    assert per_qp[0].lag_ms == 0
    assert judge(per_qp, 50.0, 10.0) == ([], [])


def test_sender_lag_at_a_gap_edge_leaves_an_over_objective_window_unmeasurable():
    # The first packet after the gap left 15 ms late: the fabric may have healed 15 ms earlier.
    per_qp, _ = _run({1: (_gap(1000, 1055),), 2: ()}, lag_spans=((T0 + 1040 * MS, T0 + 1055 * MS),))
    assert per_qp[0].edge_lag_ms == 15.0
    problems, unsure = judge(per_qp, 50.0, 10.0)
    assert problems == [] and [q.flow_id for q in unsure] == [1]


def test_sender_lag_cannot_excuse_a_window_far_over_the_objective():
    per_qp, _ = _run({1: (_gap(1000, 1900),), 2: ()}, lag_spans=((T0 + 1890 * MS, T0 + 1900 * MS),))
    problems, unsure = judge(per_qp, 50.0, 10.0)
    assert problems and not unsure


def test_a_stall_right_after_the_failure_could_hide_a_loss():
    # No gap, but the sender sent nothing for 58 ms just after the failure: a loss that long
    # would not show. Over the objective: not measurable, never a pass.
    per_qp, _ = _run({1: (), 2: ()}, lag_spans=((FAIL + 2 * MS, FAIL + 60 * MS),))
    assert per_qp[0].hidden_lag_ms == 58.0 and per_qp[1].hidden_lag_ms == 0.0  # QP 2 is not on the element
    assert [q.flow_id for q in judge(per_qp, 50.0, 10.0)[1]] == [1]


def test_a_short_stall_cannot_hide_enough_to_matter():
    per_qp, _ = _run({1: (), 2: ()}, lag_spans=((FAIL + 2 * MS, FAIL + 20 * MS),))
    assert per_qp[0].hidden_lag_ms == 18.0
    assert judge(per_qp, 50.0, 10.0) == ([], [])


def test_lag_far_from_any_transition_does_not_matter():
    per_qp, _ = _run({1: (), 2: ()}, lag_spans=((T0 + 500 * MS, T0 + 520 * MS),))
    assert judge(per_qp, 50.0, 10.0) == ([], [])


def test_unknown_case():
    with pytest.raises(HarnessError, match="valid cases are local, remote, gray, spine"):
        measure_failover(None, "flaky")


def test_rate_below_one_packet_per_ms():
    with pytest.raises(HarnessError, match="rate_pps 500"):
        measure_failover(None, "local", rate_pps=500)


def test_no_qp_on_the_element():
    with pytest.raises(HarnessError, match="k 0"):
        measure_failover(None, "local", k=0)


def test_qploss_serialises():
    import dataclasses
    import json

    q = QpLoss(1, 0x300, 50001, "leaf:E16", True, 3, 4.0, 0, 0.0, 0.0)
    assert json.loads(json.dumps(dataclasses.asdict(q), default=str))["window_ms"] == 4.0


def _case(problems=(), not_measurable=""):
    from harness.checks.failover import FailoverCase

    return FailoverCase(case="local", element="a:E16–b:E0", objective_ms=50.0, restore_objective_ms=10.0, qps=8,
                        qps_on_element=4, min_on_element=4, candidates=32, rate_pps=1000.0, worst_window_ms=1.0,
                        worst_restore_ms=0.0, lost_elsewhere=0, lost_before=0, detected_ms=5.0, restored_ms=900.0,
                        returned_packets=100, sender_lag_ms=0.0, not_measurable=not_measurable, per_qp=(),
                        timeline={}, seconds=1.0, problems=tuple(problems))


def test_a_case_is_passed_failed_or_not_measurable():
    ok, unsure, bad = _case(), _case(not_measurable="sender lag"), _case(problems=("window 80 ms > 50",))
    assert (ok.passed, unsure.passed, bad.passed) == (True, None, False)  # not measurable is never a pass
    assert unsure.reason.startswith("NOT MEASURABLE: sender lag") and bad.reason.startswith("FAILED: window 80")


def test_plot_a_case(tmp_path):
    from dataclasses import replace

    from harness.checks.failover import plot_failover

    timeline = {"bucket_ms": 10.0, "received": [120] * 50 + [60] * 3 + [120] * 50, "failure_ms": 500.0,
                "restore_ms": 800.0, "offered_pps": 12000.0}
    one = plot_failover(replace(_case(), timeline=timeline), tmp_path / "one.png")
    unsure = plot_failover(replace(_case(not_measurable="lag"), case="gray", timeline=timeline), tmp_path / "u.png")
    assert one.stat().st_size > 1000 and unsure.stat().st_size > 1000


def test_a_lane_is_what_arrived_of_what_was_sent_by_send_time():
    # 1000 pps from 0 to 99 ms, packet s sent at s ms; 31..59 lost (window 30..60 ms); 10 ms buckets
    flows = [_flow(1)]
    sent = SendResult(flows=(FlowSent(1, 0x301, 50001, 100, 99, T0, T0 + 99 * MS),), start_ns=T0, end_ns=T0 + 100 * MS)
    received = ReceiveResult("roce", 4791, T0, T0 + 100 * MS, 10 * MS, "quiet",
                             (_received(1, (_gap(30, 60),), max_seq=99),))
    (q,) = seen(flows, {1: 50001}, {1: "leaf:E16"}, {"leaf:E16"}, sent, received, origin_ns=T0)
    assert q.gaps[0].tx_before_ns == 30 * MS and q.on_element
    assert lane(q, 1e6, 10 * MS, 11) == [10.0, 10.0, 10.0, 1.0, 0.0, 0.0, 10.0, 10.0, 10.0, 10.0, 0.0]


def test_when_several_links_of_one_group_fail_a_rehashed_qp_is_held_to_the_objective():
    short = QpLoss(2, 0x301, 50002, "leaf:E20", False, 2, 3.0, 0, 0.0, 0.0)
    long = QpLoss(3, 0x302, 50003, "leaf:E20", False, 80, 80.0, 0, 0.0, 0.0)
    assert judge([short], 50.0, 10.0, rehashed=True) == ([], [])
    problems, _ = judge([long], 50.0, 10.0, rehashed=True)
    assert problems == ["QP 0x302 (sport 50003) on leaf:E20: loss window 80.0 ms > objective 50 ms"]


@pytest.mark.parametrize("switches, expected", [
    (3, (10.0, 15.0)),  # a small fabric: the floors
    (86, (10.0, 17.2)),  # xlarge
    (100, (10.0, 20.0)),
    (366, (36.6, 73.2)),  # gpu4096: twice the 18.0 s and 30.9 s it took
])
def test_a_case_waits_for_the_control_plane_by_the_fabric_s_size(switches, expected):
    from harness.checks.failover_run import windows

    assert windows(switches) == expected
