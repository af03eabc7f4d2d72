"""The pfc judge on what a real ai-cluster lab's lossless data plane showed (tests/observations/
pfc/): the 7->1 incast as recorded (lossless, paused hop by hop, the victim slowed), what the
negative control recorded (PFC on priority 4 on the port gpu02 comes in by: its packets
dropped, named there), and the recorded pass changed one figure at a time."""
from __future__ import annotations

import dataclasses

import pytest

from harness.checks.pfc import Count, PfcResult
from harness.checks.common import drops as lossless_drops
from harness.checks.common.drops import PauseTiming
from harness.core.asic import least_headroom
from harness.checks.pfc.judge import MARGIN
from harness.plumbing.cpu_wait import CpuWait

import judge_tables as tables


@pytest.fixture(scope="module")
def seen():
    return tables.recorded("pfc/ai-cluster").observation


def test_the_recorded_incast_is_lossless_paused_hop_by_hop_and_slows_the_victim(seen):
    r = tables.verdict("pfc/ai-cluster")
    assert isinstance(r, PfcResult) and r.passed, r.reason
    assert r.loss_pct == 0 and not r.drops and r.senders == 7
    assert r.pauses_by_leaf > 0 and r.pauses_upstream > 0 and r.pauses_at_senders > 0
    assert r.completion_ms <= MARGIN * r.ideal_ms
    assert r.victim_mbit < 0.9 * r.victim_alone_mbit


def test_pfc_on_the_wrong_priority_is_named_by_the_queue_and_the_port_it_came_in_by():
    r = tables.verdict("pfc/pfc-priority")
    assert r.passed is False
    assert "be-g1-r0:Ethernet256 queue 3 dropped" in r.reason
    assert "came in by be-g1-r0:Ethernet260" in r.reason and "on priority 4, not 3" in r.reason


def _flow(f, **kw):
    return dataclasses.replace(f, **kw)


@pytest.mark.parametrize("change, verdict, words", [
    (lambda s: dataclasses.replace(s, pfc_tx=tuple(c for c in s.pfc_tx if not c.port.startswith("be-g1-r0"))),
     False, "sent no pause frame"),
    (lambda s: dataclasses.replace(s, pfc_rx=tuple(c for c in s.pfc_rx if not c.port.startswith("gpu"))),
     False, "none reached the senders"),
    (lambda s: dataclasses.replace(s, victim=s.victim_alone), False, "did not hold back its priority"),
    (lambda s: dataclasses.replace(s, victim_alone=_flow(s.victim_alone, last_ns=s.victim_alone.last_ns * 2)),
     None, "the control failed"),
    (lambda s: dataclasses.replace(s, incast=(_flow(s.incast[0], received=s.incast[0].received - 5),) + s.incast[1:]),
     False, "no queue of the lossless data plane dropped any"),
    (lambda s: dataclasses.replace(s, incast=tuple(_flow(f, last_ns=f.last_ns * 2) for f in s.incast)),
     False, "the port did not run full"),
    # slow by what the machine withheld from the kernel's packet work: not the fabric's to answer for
    (lambda s: dataclasses.replace(s, incast=tuple(_flow(f, last_ns=f.last_ns + 400_000_000) for f in s.incast),
                                   cpu_wait=CpuWait((380.0, 120.0), (300.0, 10.0))),
     None, "whether the port ran full cannot be judged on this machine"),
    # ... but a wait too short to explain the excess leaves it the fabric's
    (lambda s: dataclasses.replace(s, incast=tuple(_flow(f, last_ns=f.last_ns * 2) for f in s.incast),
                                   cpu_wait=CpuWait((40.0, 45.0), (5.0, 0.0))),
     False, "too little to explain it"),
    (lambda s: dataclasses.replace(s, storms=(Count("be-g1-r0:Ethernet260", 3, 1),)), False,
     "PFC storm on be-g1-r0:Ethernet260 queue 3"),
    (lambda s: dataclasses.replace(s, drops=(Count("be-s1:Ethernet0", 3, 7),)), False,
     "be-s1:Ethernet0 queue 3 dropped 7 packets"),
])
def test_one_figure_changed_changes_the_verdict(seen, change, verdict, words):
    r = tables.verdict("pfc/ai-cluster", change(seen))
    assert r.passed is verdict, r.reason
    assert words in r.reason


DROPPED = dict(drops=(Count("be-s1:Ethernet0", 3, 7),), in_drops=(Count("be-s1:Ethernet16", 3, 7),))
LATE = (PauseTiming("be-s1:Ethernet16", 3, timed=14, late=2, lag_ms=1.2, worst_ms=14.1),)


def _lost(s, timing):
    """The recorded pass with 7 packets of one sender dropped at a spine, come in by another leaf's uplink."""
    incast = (_flow(s.incast[0], received=s.incast[0].received - 7),) + s.incast[1:]
    return dataclasses.replace(s, incast=incast, pause_timing=timing, **DROPPED)


@pytest.mark.parametrize("timing, verdict, words", [
    # the pause that should have held the feeder reached its peer after the headroom ran out: the machine's
    (LATE, None, "whether the headroom holds cannot be judged on this machine"),
    # every pause in time: the drop is the fabric's
    ((dataclasses.replace(LATE[0], late=0),), False, "which could not pause its peer: it had no headroom left"),
    # a late pause at another port explains nothing here
    ((dataclasses.replace(LATE[0], port="be-s1:Ethernet8"),), False, "priority 3 is not lossless"),
    ((), False, "priority 3 is not lossless"),
])
def test_a_drop_behind_a_late_pause_is_the_machines(seen, timing, verdict, words):
    r = tables.verdict("pfc/ai-cluster", _lost(seen, timing))
    assert r.passed is verdict, r.reason
    assert words in r.reason


def test_a_headroom_below_what_any_peer_needs_is_the_configs_however_late_the_pause(seen, monkeypatch):
    plan = tables.plan("pfc/ai-cluster")
    headroom, speed = lossless_drops._headroom(plan, "be-s1:Ethernet16")
    assert headroom >= least_headroom(speed, seen.packet_bytes)  # the control: the built-ins' headroom is enough
    monkeypatch.setattr(lossless_drops, "_headroom", lambda plan, port: (least_headroom(speed, seen.packet_bytes) - 1, speed))
    r = tables.verdict("pfc/ai-cluster", _lost(seen, LATE))
    assert r.passed is False and "no headroom left" in r.reason


@pytest.mark.parametrize("speed, frame, least", [
    (400, 4170, 905 * 64 + 2 * 4170),
    (100, 1100, 394 * 64 + 2 * 1100),
    (800, 4170, 1810 * 64 + 2 * 4170),  # past the standard's table: in proportion
    (30, 4170, 118 * 64 + 2 * 4170),  # between two speeds: the faster's
])
def test_the_least_headroom_is_the_peers_response_and_two_frames(speed, frame, least):
    assert least_headroom(speed, frame) == least
