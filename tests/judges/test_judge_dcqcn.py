"""The dcqcn judge on what real labs' lossless data plane showed (tests/observations/dcqcn/): the
7->1 incast on ai-cluster and the 3->1 on rail-only under the built-ins' DCQCN
(topologies/roce.py: the start-up backlog drained, the queue marked again, and in the steady
state that followed no pause, the port busy, the senders at a fair share, the victim at its
rate); the same 7->1 under ConnectX's defaults (a steady state held by PFC, far from a fair
share); the negative control (ECN off on the congested port: no mark there, named, PFC holding
the incast, the victim slowed); and the pass changed one figure at a time."""
from __future__ import annotations

import dataclasses

import pytest

from harness.checks.dcqcn import FAIR, DcqcnResult
from harness.checks.pfc import Count
from harness.checks.common.drops import PauseTiming
from harness.plumbing.cpu_wait import CpuWait

import judge_tables as tables

PORT = "be-g1-r0:Ethernet256"


@pytest.fixture(scope="module")
def recorded():
    return tables.recorded("dcqcn/ai-cluster").observation


@pytest.mark.parametrize("name", ["dcqcn/ai-cluster", "dcqcn/rail-only"])
def test_the_recorded_incasts_are_held_by_ecn_and_dcqcn(name):
    r = tables.verdict(name)
    assert isinstance(r, DcqcnResult) and r.passed is True, r.reason
    assert r.drained_s is not None and r.steady_from_s > r.drained_s and r.steady_s >= 2.0
    assert r.marks_steady > 0 and r.cnps > 0 and r.cnps_at_senders > 0 and not r.drops
    assert r.pfc_frames > 0 and r.pfc_frames_steady == 0  # pauses in the start-up backlog only
    assert r.wred_min_bytes <= r.depth_avg_bytes < r.pause_bytes
    assert r.jain >= FAIR and sum(r.arrived_mbit) >= 0.8 * r.port_mbit
    assert r.victim_mbit >= 0.9 * r.victim_alone_mbit


def test_connectx_defaults_leave_the_steady_state_to_pfc_and_unfair():
    r = tables.verdict("dcqcn/connectx-defaults")
    assert r.passed is False
    assert r.marks > 0 and r.cnps > 0 and r.cnps_at_senders > 0 and not r.drops
    assert r.pfc_frames_steady > 0 and "PFC, not DCQCN, held the incast" in r.reason
    assert r.jain < FAIR and "did not converge to a fair share" in r.reason and "ms of NIC time" in r.reason
    # what the verdict rests on, and the field that would change it (the built-ins' tuning: none)
    assert "the declaration tunes none" in r.assumed and "declare Dcqcn(...)" in r.reason and "lesson 10" in r.reason
    assert tables.verdict("dcqcn/ai-cluster").assumed == ""


@pytest.mark.parametrize("steady_from", [None, "late"])
def test_a_port_not_won_back_within_the_run_is_named_and_its_share_not_judged(recorded, steady_from):
    """The queue not marked again after the start-up backlog drained (the senders still climbing
    back when the run ended), or too late to watch: no steady state to judge the share on."""
    start = None if steady_from is None else recorded.duration_s * 1000 - 500
    r = tables.verdict("dcqcn/ai-cluster", dataclasses.replace(recorded, steady_from_ms=start))
    assert r.passed is False and len(r.problems) == 1
    assert "DCQCN did not win the port back within the run: the start-up backlog drained at" in r.reason
    assert "fair share" not in r.problems[0]


def test_a_port_left_idle_is_named(recorded):
    """The senders cut far below the port and kept there: fair, drained, and a quarter busy."""
    idle = dataclasses.replace(recorded, senders=tuple(dataclasses.replace(s, steady_packets=s.steady_packets // 4)
                                                       for s in recorded.senders))
    r = tables.verdict("dcqcn/ai-cluster", idle)
    assert r.passed is False and len(r.problems) == 1
    assert f"the incast kept {PORT} only" in r.reason and "busy in the steady state" in r.reason


@pytest.mark.parametrize("withheld_ms, verdict, words", [
    # the machine held the port and the senders longer than the port fell short: not the fabric's to answer for
    (2500.0, None, "whether DCQCN keeps the port busy cannot be judged on this machine"),
    # a wait shorter than the shortfall leaves it DCQCN's
    (100.0, False, "DCQCN cut the senders below the port's rate"),
])
def test_a_port_left_idle_while_the_machine_withheld_the_cpu(recorded, withheld_ms, verdict, words):
    """Two thirds busy: 3/4 of a second short of 80 % in a steady state of several seconds."""
    idle = dataclasses.replace(recorded, senders=tuple(dataclasses.replace(s, steady_packets=s.steady_packets * 2 // 3)
                                                       for s in recorded.senders),
                               steady_cpu_wait=CpuWait((withheld_ms, 10.0), (0.0, 0.0)))
    r = tables.verdict("dcqcn/ai-cluster", idle)
    assert r.passed is verdict, r.reason
    assert words in r.reason


def test_ecn_off_on_the_congested_port_is_named():
    r = tables.verdict("dcqcn/ecn-off")
    assert r.passed is False and r.marks == 0
    assert f"no CE mark on {PORT} queue 3" in r.reason and "marks ECN on no queue" in r.reason
    assert "PFC, not DCQCN, held the incast" in r.reason
    assert "congestion spread to it" in r.reason  # PFC alone held the incast, the victim waited


def _flow(f, **kw):
    return dataclasses.replace(f, **kw)


def _faster(sender):
    return dataclasses.replace(sender, steady_bps=10 * sender.steady_bps)


def _paused_in_steady_state(seen):
    """Every depth sample of the second half at the pause threshold, the leaf pausing again."""
    return tuple(dataclasses.replace(d, depth_bytes=1_418_467, pfc_tx=d.pfc_tx + int(d.t_ms))
                 if d.t_ms >= seen.steady_from_ms else d for d in seen.depth)


@pytest.mark.parametrize("change, verdict, words", [
    (lambda s: dataclasses.replace(s, marked=tuple(c for c in s.marked if c.port != PORT)),
     False, f"no CE mark on {PORT} queue 3"),
    (lambda s: dataclasses.replace(s, cnp_tx=()), False, "0 CNPs sent"),
    (lambda s: dataclasses.replace(s, senders=tuple(dataclasses.replace(x, cnps=0) for x in s.senders)),
     False, "acted on by the senders: DCQCN did not slow the incast"),
    (lambda s: dataclasses.replace(s, depth=_paused_in_steady_state(s)), False,
     "PFC pause frames in the steady state"),
    (lambda s: dataclasses.replace(s, depth=()), False, "DCQCN did not win the port back"),
    (lambda s: dataclasses.replace(s, senders=(_faster(s.senders[0]),) + s.senders[1:]), False,
     "did not converge to a fair share"),
    (lambda s: dataclasses.replace(s, victim=_flow(s.victim, last_ns=s.victim.last_ns * 2)), False,
     "congestion spread to it"),
    (lambda s: dataclasses.replace(s, victim_alone=_flow(s.victim_alone, last_ns=s.victim_alone.last_ns * 2)),
     None, "the control failed"),
    (lambda s: dataclasses.replace(s, drops=(Count("be-s1:Ethernet0", 3, 7),)), False,
     "be-s1:Ethernet0 queue 3 dropped 7 packets"),
    # dropped behind a pause that reached its peer after the headroom ran out: the machine's ...
    (lambda s: dataclasses.replace(s, drops=(Count("be-s2:Ethernet0", 3, 5),), in_drops=(Count("be-s2:Ethernet32", 3, 5),),
                                   pause_timing=(PauseTiming("be-s2:Ethernet32", 3, 30, 1, 2.0, 9.5),)), None,
     "whether the headroom holds cannot be judged on this machine"),
    # ... and behind pauses all in time, the fabric's
    (lambda s: dataclasses.replace(s, drops=(Count("be-s2:Ethernet0", 3, 5),), in_drops=(Count("be-s2:Ethernet32", 3, 5),),
                                   pause_timing=(PauseTiming("be-s2:Ethernet32", 3, 30, 0, 2.0, 9.5),)), False,
     "be-s2:Ethernet32, which could not pause its peer: it had no headroom left"),
    (lambda s: dataclasses.replace(s, senders=(dataclasses.replace(s.senders[0], flow=_flow(
        s.senders[0].flow, received=s.senders[0].flow.received - 5)),) + s.senders[1:]), False,
     "no queue of the lossless data plane dropped any"),
])
def test_one_figure_changed_changes_the_verdict(recorded, change, verdict, words):
    r = tables.verdict("dcqcn/ai-cluster", change(recorded))
    assert r.passed is verdict, r.reason
    assert words in r.reason
