"""The paced sender reports when it fell behind its schedule, so a loss window measured
across such a moment is not taken for the fabric's."""
from __future__ import annotations

import time

from harness.traffic.flows import SendResult, from_json, to_json
from harness.traffic.sender import _run_paced


def _emits(stall_at: int | None, stall_s: float, sent: list[tuple[int, int]]):
    def emit(seq: int, ts: int) -> None:
        sent.append((seq, ts))
        if seq == stall_at:
            time.sleep(stall_s)
    return [emit]


def test_a_stall_longer_than_a_slot_is_a_lag_span():
    sent: list[tuple[int, int]] = []
    _, spans = _run_paced(_emits(5, 0.08, sent), [range(20)], 20, rate_pps=100.0)  # slot 10 ms
    assert len(spans) == 1
    due, out = spans[0]
    assert 0.05e9 < out - due < 0.2e9  # the packet after the stall went out ~70 ms late
    assert sent[5][1] <= due <= sent[6][1] and out >= sent[6][1] - 1e6


def test_a_run_on_schedule_has_no_lag_span():
    # Positive control: same run without the stall.
    _, spans = _run_paced(_emits(None, 0, []), [range(20)], 20, rate_pps=100.0)
    assert spans == ()


def test_lag_spans_travel_as_json_and_are_found_by_time():
    result = SendResult(flows=(), start_ns=0, end_ns=10, lag_spans=((100, 300), (1000, 1500)))
    again = from_json(SendResult, to_json(result))
    assert again.lag_spans == ((100, 300), (1000, 1500))
    assert again.lagged_during(250, 900) == 200
    assert again.lagged_during(400, 900) == 0
    assert again.lagged_during(0, 2000) == 500
