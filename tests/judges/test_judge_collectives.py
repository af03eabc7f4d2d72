"""The collectives judges on observations recorded on ai-cluster (tests/observations/collectives-*/):
each as recorded, then changed the way a broken fabric or a broken measurement would change it
(a packet lost or reordered; an incast whose congested fan-ins lose nothing, or whose fan-in
within capacity loses, or whose receiver saw nothing). No lab, no root."""
from __future__ import annotations

from dataclasses import replace

import pytest

from harness.checks.collectives import IncastSeen
from harness.checks.common.drops import Count, PauseTiming
from harness.report.recorded import judge

import judge_tables as tables


def _fan_in(seen: IncastSeen, k: int, **changes) -> IncastSeen:
    """The k-th fan-in with every sender's figures changed."""
    fans = list(seen.fan_ins)
    fans[k] = replace(fans[k], per_sender=tuple(replace(s, **changes) for s in fans[k].per_sender))
    return replace(seen, fan_ins=tuple(fans))


def _lossless(seen: IncastSeen) -> IncastSeen:
    """Every fan-in delivered everything: as if the shaper never was on the port."""
    for k in range(len(seen.fan_ins)):
        seen = _fan_in(seen, k, received=seen.packets)
    return seen


DELIVERY = [  # (recorded, what changed, the change, passed, words in the reason)
    ("collectives-ring/ai-cluster", "as recorded", lambda s: s, True,
     "delivered: ring on rail 0: 8 GPUs, 8 QPs (300 packets each, 1000 pps), 2400/2400 packets, 0 lost, 0 reordered"),
    ("collectives-all-to-all/ai-cluster", "as recorded", lambda s: s, True, "all-to-all on rail 0: 8 GPUs, 56 QPs"),
    ("collectives-incast/ai-cluster", "as recorded", lambda s: s, True, "incast on rail 0: 8 GPUs, 7 QPs"),
    ("collectives-ring/ai-cluster", "one packet lost",
     lambda s: replace(s, missing=1, packets_received=s.packets_received - 1), False, "FAILED: 1 packets lost |"),
    ("collectives-ring/ai-cluster", "a source's kernel refused 300",
     lambda s: replace(s, missing=300, refused=300, packets_sent=s.packets_sent - 300,
                       packets_received=s.packets_received - 300), False,
     "300 packets lost (300 refused by the sources' own kernels)"),
    ("collectives-all-to-all/ai-cluster", "3 packets reordered", lambda s: replace(s, reordered=3), False,
     "FAILED: 3 packets reordered |"),
]


@pytest.mark.parametrize("name, what, change, passed, words", DELIVERY, ids=[f"{c[0]}: {c[1]}" for c in DELIVERY])
def test_a_collective_is_delivered_whole_and_in_order(name, what, change, passed, words):
    recorded = tables.recorded(name)
    outcome = judge(recorded, change(recorded.observation))
    assert outcome.passed is passed, outcome.reason
    assert words in outcome.reason


def _lossless_drop(seen: IncastSeen, late: int) -> IncastSeen:
    """On the lossless data plane, everything delivered but 6 packets of the biggest fan-in,
    dropped at a spine and come in by another leaf's uplink, whose pauses were `late` late."""
    seen = replace(_lossless(seen), lossless=True, pause_bytes=1_418_467)
    last = len(seen.fan_ins) - 1
    fans = [replace(f, pauses_sent=500, pauses_received=400) for f in seen.fan_ins]  # PFC acted at every fan-in
    first = replace(fans[last].per_sender[0], received=seen.packets - 6)
    fans[last] = replace(fans[last], per_sender=(first,) + fans[last].per_sender[1:], drops=6,
                         drop_places=("be-s1:Ethernet0 queue 3: 6",),
                         drop_counts=(Count("be-s1:Ethernet0", 3, 6),), in_drops=(Count("be-s1:Ethernet16", 3, 6),),
                         pfc_on=(("be-s1:Ethernet0", (3,)), ("be-s1:Ethernet16", (3,))),
                         pause_timing=(PauseTiming("be-s1:Ethernet16", 3, 40, late, 1.0, 9.0),))
    return replace(seen, fan_ins=tuple(fans))


INCAST = [
    ("lossless: 6 dropped behind pauses all in time", lambda s: _lossless_drop(s, 0), False,
     "7→1 lost 0.0 % on a lossless port: be-s1:Ethernet0 queue 3 dropped 6 packets; 6 of them came in by "
     "be-s1:Ethernet16, which could not pause its peer: it had no headroom left (40 pauses timed, none late: "
     "mean 1.0 ms, worst 9.0 ms)"),
    ("lossless: 6 dropped, come in by a port whose pauses never took effect",
     lambda s: replace(_lossless_drop(s, 0), fan_ins=tuple(replace(f, pause_timing=(PauseTiming(
         "be-s1:Ethernet8", 3, 40, 0, 1.0, 9.0),) if f.pause_timing else ()) for f in _lossless_drop(s, 0).fan_ins)),
     False, "came in by be-s1:Ethernet16, which could not pause its peer: it had no headroom left (no pause of its "
     "took effect at its peer)"),
    ("lossless: 6 dropped behind a pause that ran out before its refresh",
     lambda s: replace(_lossless_drop(s, 0), fan_ins=tuple(replace(f, pause_timing=(PauseTiming(
         "be-s1:Ethernet16", 3, 40, 1, 1.0, 9.0, expired=1),) if f.pause_timing else ())
         for f in _lossless_drop(s, 0).fan_ins)),
     None, "1 of whose 40 pauses reached its peer later than its 367 kB headroom lasts, 1 ran out there before "
     "its refresh came"),
    ("lossless: 6 dropped behind a pause the data plane timed late", lambda s: _lossless_drop(s, 1), None,
     "whether the headroom holds cannot be judged on this machine"),
    ("as recorded", lambda s: s, True, "measured: incast into be-g1-r0:Ethernet256 shaped to 26.352 Mbit/s"),
    ("the port was never congested", _lossless, False,
     "2→1 offered 35.1 Mbit/s into 26.4 and lost nothing: the port was not congested "
     "(is the shaper on be-g1-r0:Ethernet256?)"),
    ("the fan-in within capacity lost 10 %", lambda s: _fan_in(s, 0, received=s.packets - s.packets // 10), False,
     "1→1 offered 17.6 Mbit/s, within the port's 26.4, yet lost 10.0 %: the path is not clean"),
    ("its sender 40 ms late, the fan-in within capacity lost 10 %",
     lambda s: replace(_fan_in(s, 0, received=s.packets - s.packets // 10, max_lag_ns=40_000_000), queue_bytes=65_880),
     None, "NOT MEASURABLE: 1→1 lost 10.0 % within the port's 26.4 Mbit/s, but gpu02:rail0 sent up to 40 ms late: "
     "the senders' catch-up (88 kB at once) overflows the port's 66 kB queue"),
    ("its sender 1 ms late (a burst the queue holds), the fan-in within capacity lost 10 %",
     lambda s: replace(_fan_in(s, 0, received=s.packets - s.packets // 10, max_lag_ns=1_000_000), queue_bytes=65_880),
     False, "1→1 offered 17.6 Mbit/s, within the port's 26.4, yet lost 10.0 %: the path is not clean"),
    ("the receiver saw nothing of the biggest fan-in",
     lambda s: _fan_in(s, len(s.fan_ins) - 1, received=0, last_arrival_ns=None), False,
     "7→1: the receiver saw none of 14000 packets: not measured"),
]


@pytest.mark.parametrize("what, change, passed, words", INCAST, ids=[c[0] for c in INCAST])
def test_an_incast_measurement_is_sound(what, change, passed, words):
    recorded = tables.recorded("collectives-incast-congested/ai-cluster")
    outcome = judge(recorded, change(recorded.observation))
    assert outcome.passed is passed, outcome.reason
    assert words in outcome.reason


def test_the_incast_figures_come_from_the_counts():
    recorded = tables.recorded("collectives-incast-congested/ai-cluster")
    seen, outcome = recorded.observation, judge(recorded)
    assert [f.senders for f in outcome.fan_ins] == [1, 2, 4, 7]
    for fan, figures in zip(seen.fan_ins, outcome.fan_ins):
        got = sum(s.received for s in fan.per_sender)
        assert figures.received == got
        assert figures.loss_pct == round(100 * (seen.packets * fan.senders - got) / (seen.packets * fan.senders), 2)
        assert figures.completion_ms == round(max(s.last_arrival_ns for s in fan.per_sender) / 1e6, 1)
    one, most = outcome.fan_ins[0], outcome.fan_ins[-1]
    assert one.loss_pct == 0 and most.loss_pct > outcome.fan_ins[1].loss_pct > 0  # the lesson's figures
    assert most.queue_avg_ms > one.queue_avg_ms + 5
