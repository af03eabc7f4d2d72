"""The pfc judge on what a real ai-cluster lab's lossless data plane showed (tests/observations/
pfc/): the 7->1 incast as recorded (lossless, paused hop by hop, the victim slowed), what the
negative control recorded (PFC on priority 4 on the port gpu02 comes in by: its packets
dropped, named there), and the recorded pass changed one figure at a time."""
from __future__ import annotations

import dataclasses

import pytest

from harness.checks.pfc import Count, PfcResult
from harness.checks.pfc.judge import MARGIN

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
    (lambda s: dataclasses.replace(s, storms=(Count("be-g1-r0:Ethernet260", 3, 1),)), False,
     "PFC storm on be-g1-r0:Ethernet260 queue 3"),
    (lambda s: dataclasses.replace(s, drops=(Count("be-s1:Ethernet0", 3, 7),)), False,
     "be-s1:Ethernet0 queue 3 dropped 7 packets"),
])
def test_one_figure_changed_changes_the_verdict(seen, change, verdict, words):
    r = tables.verdict("pfc/ai-cluster", change(seen))
    assert r.passed is verdict, r.reason
    assert words in r.reason
