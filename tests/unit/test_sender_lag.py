"""The paced sender reports when it fell behind its schedule, so a loss window measured
across such a moment is not taken for the fabric's."""
from __future__ import annotations

import statistics
import time

from harness.traffic.flows import from_json, to_json
from harness.traffic.results import SendResult
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
    # A machine other tests keep busy may add a span of its own a slot or two long: the
    # stall's is the one over 50 ms, and there is exactly one such.
    stalls = [s for s in spans if s[1] - s[0] > 0.05e9]
    assert len(stalls) == 1
    due, out = stalls[0]
    assert 0.05e9 < out - due < 0.2e9  # the packet after the stall went out ~70 ms late
    assert sent[5][1] <= due <= sent[6][1] and out >= sent[6][1] - 1e6


def _on_schedule(run, attempts: int = 5):
    """The first of `attempts` runs that kept its schedule (no lag span), else the last: a
    machine whose cores other tests keep busy (make test's no-lab phase on both) can wake the
    pacer a slot late, which is the span working, not the property under test."""
    for _ in range(attempts):
        spans, result = run()
        if spans == ():
            break
    return spans, result


def test_a_run_on_schedule_has_no_lag_span():
    # Positive control: same run without the stall.
    spans, _ = _on_schedule(lambda: (_run_paced(_emits(None, 0, []), [range(20)], 20, rate_pps=100.0)[1], None))
    assert spans == ()


def test_lag_spans_travel_as_json_and_are_found_by_time():
    result = SendResult(flows=(), start_ns=0, end_ns=10, lag_spans=((100, 300), (1000, 1500)))
    again = from_json(SendResult, to_json(result))
    assert again.lag_spans == ((100, 300), (1000, 1500))
    assert again.lagged_during(250, 900) == 200
    assert again.lagged_during(400, 900) == 0
    assert again.lagged_during(0, 2000) == 500


def _recording(flows: int, sent: list[tuple[int, int, int]]):
    def make(j: int):
        return lambda seq, ts: sent.append((j, seq, ts))
    return [make(j) for j in range(flows)]


def test_per_slot_sends_every_flow_of_a_slot_back_to_back():
    # 4 flows at 50 pps each (20 ms slots): per slot, the 4 packets leave together and the
    # slots stay 20 ms apart; interleaved (the control), they are spread 5 ms apart. Medians,
    # since one packet delayed by a busy CI core shortens the next gap without changing the pattern.
    for per_slot, gap_in_slot in ((True, (0, 3e6)), (False, (3e6, 8e6))):
        def run(per_slot=per_slot):
            sent: list[tuple[int, int, int]] = []
            return _run_paced(_recording(4, sent), [range(6)] * 4, 6, rate_pps=50.0, per_slot=per_slot)[1], sent

        spans, sent = _on_schedule(run)
        assert spans == () and len(sent) == 24
        times = [ts for _, _, ts in sent]
        within = [times[k + 1] - times[k] for k in range(0, 24, 4)]  # flow 0 -> flow 1 of each slot
        assert gap_in_slot[0] <= statistics.median(within) <= gap_in_slot[1], (per_slot, within)
        slots = [times[k + 4] - times[k] for k in range(0, 20, 4)]
        assert 17e6 <= statistics.median(slots) <= 30e6, (per_slot, slots)
