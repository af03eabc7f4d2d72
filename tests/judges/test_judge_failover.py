"""The failover judge on observations recorded on ai-cluster (tests/observations/failover-*/):
each passing one as recorded, then changed the way a broken fabric would change it (a longer
window, a loss off the element or after the restore, a route that never moved, a session
dropped elsewhere, a stalled sender), and every negative control as recorded. No lab, no root.
The objectives are the plan's: the same observation is judged again on other declared ones."""
from __future__ import annotations

from dataclasses import replace

import pytest

from harness.checks.failover import with_objectives
from harness.checks.failover_result import FailoverSeen, judge_failover
from harness.checks.failover_windows import GapSeen, QpSeen
from harness.core.model import Objectives
from harness.report.recorded import judge

import judge_tables as tables

MS = 1_000_000


def _qp(seen: FailoverSeen, on: bool) -> int:
    return next(i for i, q in enumerate(seen.qps) if q.on_element is on)


def _with_qp(seen: FailoverSeen, i: int, **changes) -> FailoverSeen:
    qps = list(seen.qps)
    qps[i] = replace(qps[i], **changes)
    return replace(seen, qps=tuple(qps))


def _spine_cut(seen: FailoverSeen, acted_ms: float) -> FailoverSeen:
    """A QP on the element losing 136 ms from 33.8 ms after the failure began, its leaf's kernel
    acting on that port's carrier loss acted_ms in, the cables' cut taking 197.5 ms."""
    i = _qp(seen, True)
    port = seen.qps[i].path.partition(":")[2]
    return replace(_gap(seen, True, 33.8, 136), failed_in_ms=197.5, carrier_lost_ms=((port, acted_ms),))


def _gap(seen: FailoverSeen, on: bool, start_ms: float, window_ms: float, after_restore: bool = False):
    """One more gap on the first QP on (or off) the element, start_ms after the failure (or the restore)."""
    i = _qp(seen, on)
    t0 = (seen.restore_ns if after_restore else seen.failure_ns) + int(start_ms * MS)
    gap = GapSeen(int(window_ms) - 1, t0, t0 + int(window_ms * MS))
    return _with_qp(seen, i, gaps=seen.qps[i].gaps + (gap,))


def _tail_lost_while_failed(seen: FailoverSeen) -> FailoverSeen:
    i = _qp(seen, True)
    q: QpSeen = seen.qps[i]
    return _with_qp(seen, i, max_seq=q.last_seq - 100, last_received_ns=seen.failure_ns + MS)


CHANGED = [  # (recorded, what changed, the change, passed, words in the reason)
    ("failover-local/ai-cluster", "as recorded", lambda s: s, True, "within objectives: local failure"),
    ("failover-local/ai-cluster", "a QP on the element loses 80 ms", lambda s: _gap(s, True, 200, 80), False,
     "loss window 86.0 ms > objective 50 ms"),
    ("failover-local/ai-cluster", "a QP on the element loses 40 ms more: 46 ms in all", lambda s: _gap(s, True, 200, 40),
     True, "worst window 46.0 ms"),
    ("failover-local/ai-cluster", "a QP elsewhere loses 3 ms", lambda s: _gap(s, False, 20, 3), False,
     "QPs not on the failed element lost packets: 0x300 on be-g1-r0:Ethernet8 lost 2"),
    ("failover-local/ai-cluster", "a QP loses 25 ms after the restore", lambda s: _gap(s, True, 100, 25, True),
     False, "25.0 ms lost after the restore > objective 10 ms"),
    ("failover-local/ai-cluster", "a QP's tail never arrives", _tail_lost_while_failed, False, "loss window"),
    ("failover-local/ai-cluster", "a QP loses 4 before the failure", lambda s: _gap(s, False, -1000, 5), False,
     "4 packets lost before the failure"),
    ("failover-local/ai-cluster", "the route never dropped the element", lambda s: replace(s, detected_ms=None),
     False, "be-g1-r0 still routed over be-g1-r0:Ethernet0–be-s1:Ethernet0 10 s after the failure: nothing detected it"),
    ("failover-local/ai-cluster", "the route never took the element back", lambda s: replace(s, restored_ms=None),
     False, "did not return to be-g1-r0's route within 15 s of the restore"),
    ("failover-local/ai-cluster", "the route never took the element back, its session stuck",
     lambda s: replace(s, restored_ms=None, element_sessions=("be-g1-r0:Ethernet0 BGP Idle, BFD down",
                                                              "be-s1:Ethernet0 BGP Active, BFD down")),
     False, "did not return to be-g1-r0's route within 15 s of the restore; its sessions then: "
     "be-g1-r0:Ethernet0 BGP Idle, BFD down, be-s1:Ethernet0 BGP Active, BFD down"),
    ("failover-local/ai-cluster", "no traffic came back", lambda s: replace(s, returned_packets=0), False,
     "no traffic returned to be-g1-r0:Ethernet0–be-s1:Ethernet0 after the restore"),
    ("failover-local/ai-cluster", "a session dropped elsewhere",
     lambda s: replace(s, sessions_dropped_elsewhere=("be-g2-r0:Ethernet8",)), False,
     "1 BGP session(s) away from be-g1-r0:Ethernet0–be-s1:Ethernet0 went down"),
    ("failover-local/ai-cluster", "no QP crossed the element",
     lambda s: replace(s, qps=tuple(replace(q, on_element=False, gaps=()) for q in s.qps)), False,
     "no chosen QP crossed be-g1-r0:Ethernet0–be-s1:Ethernet0 before the failure"),
    ("failover-local/ai-cluster", "the sender stalled 58 ms right after the failure",
     lambda s: replace(s, lag_spans=((s.failure_ns + 2 * MS, s.failure_ns + 60 * MS),)), None,
     "NOT MEASURABLE: the sender fell 58.0 ms behind its schedule"),
    ("failover-local/ai-cluster", "the sender stalled 10 ms right after the failure",
     lambda s: replace(s, lag_spans=((s.failure_ns + 2 * MS, s.failure_ns + 12 * MS),)), True, "within objectives"),
    ("failover-local/ai-cluster", "a QP on the element loses 80 ms from the failure on, the leaf's kernel acting 70 ms in",
     lambda s: replace(_gap(s, True, 1, 80), failed_in_ms=30.0, carrier_lost_ms=(("Ethernet0", 71.0),)), None,
     "NOT MEASURABLE: be-g1-r0's kernel acted on the carrier loss of be-g1-r0:Ethernet0 71.0 ms after the failure "
     "began (making it took 30.0 ms; the kernel's link-state work waits for the rtnl lock and a CPU, a switch's ASIC "
     "takes microseconds): 76.0 ms of QP 0x304's window 86.0 ms came before that"),
    ("failover-local/ai-cluster", "a QP on the element loses 80 ms from the failure on, the leaf's kernel acting 10 ms in",
     lambda s: replace(_gap(s, True, 1, 80), failed_in_ms=30.0, carrier_lost_ms=(("Ethernet0", 11.0),)), False,
     "loss window 86.0 ms > objective 50 ms"),
    ("failover-local/ai-cluster", "a QP on the element loses 80 ms after its leaf's kernel acted, however late",
     lambda s: replace(_gap(s, True, 200, 80), failed_in_ms=30.0, carrier_lost_ms=(("Ethernet0", 100.0),)), False,
     "loss window 86.0 ms > objective 50 ms"),
    ("failover-local/ai-cluster", "a QP on the element loses 80 ms, another port's carrier acted on late",
     lambda s: replace(_gap(s, True, 200, 80), carrier_lost_ms=(("Ethernet8", 100.0),)), False,
     "loss window 86.0 ms > objective 50 ms"),
    ("failover-local/ai-cluster", "a QP elsewhere loses 3 ms where several links of one group fail",
     lambda s: replace(_gap(s, False, 20, 3), rehashed=True), True, "other QPs lost 2"),
    ("failover-spine/ai-cluster", "as recorded", lambda s: s, True, "within objectives: spine failure of be-s1"),
    ("failover-spine/ai-cluster", "back in the route, one of its eight sessions not (seen beside a soak, FRR 8.4)",
     lambda s: replace(s, sessions_not_back=("be-s1:Ethernet40 BGP Idle, BFD up", "be-g2-r1:Ethernet0 BGP Active, BFD up")),
     False, "be-s1 came back to be-g1-r0's route, but not every session it took down: 2 still not Established 15 s "
     "after the restore settled: be-s1:Ethernet40 BGP Idle, BFD up, be-g2-r1:Ethernet0 BGP Active, BFD up"),
    # the soak of 2026-12-02, beside another lab: be-s2's 8 cables cut one after the other over
    # 197.5 ms, the QPs' loss from 33.8 ms in, their leaf's carrier acted on at 169.2 ms
    ("failover-spine/ai-cluster", "its cables cut one by one, the QP's own late: the loss before it is the machine's",
     lambda s: _spine_cut(s, acted_ms=169.2), None,
     "135.4 ms of QP 0x"),
    ("failover-spine/ai-cluster", "its cables cut one by one, the QP's own early: the loss after it is the fabric's",
     lambda s: _spine_cut(s, acted_ms=40.0), False, "loss window 136.0 ms > objective 50 ms"),
    ("failover-spine/ai-cluster", "as a whole super-spine, held to hard_ms",
     lambda s: replace(s, case="superspine", rehashed=True), True, "superspine failure of be-s1"),
    ("failover-spine/ai-cluster", "as a whole super-spine, a QP losing 60 ms",
     lambda s: replace(_gap(s, True, 10, 60), case="superspine", rehashed=True), False,
     "loss window 60.0 ms > objective 50 ms"),
    ("failover-remote/ai-cluster", "as recorded", lambda s: s, True, "within objectives: remote failure"),
    ("failover-remote/ai-cluster", "a QP on the element loses 150 ms more, the rerouting daemons waited 70 ms "
     "for a CPU", lambda s: replace(_gap(s, True, 10, 150), cpu_waited_ms=(("be-g1-r0/zebra", 30.0),
                                                                          ("be-s1/bgpd", 40.0))), None,
     "NOT MEASURABLE: the daemons that reroute a remote failure waited 70.0 ms for a CPU between the failure and "
     "be-g1-r0's reroute (be-g1-r0/zebra 30 ms, be-s1/bgpd 40 ms"),
    ("failover-remote/ai-cluster", "a QP on the element loses 150 ms more, the daemons waited only 10 ms",
     lambda s: replace(_gap(s, True, 10, 150), cpu_waited_ms=(("be-s1/bgpd", 10.0), ("be-s1/zebra", 0.0))), False,
     "loss window 283.0 ms > objective 250 ms"),
    ("failover-remote/ai-cluster", "the daemons waited 70 ms, the window within the objective anyway",
     lambda s: replace(s, cpu_waited_ms=(("be-s1/bgpd", 70.0),)), True, "within objectives: remote failure"),
    ("failover-gray/ai-cluster", "as recorded", lambda s: s, True, "within objectives: gray failure"),
    ("failover-gray/ai-cluster", "BFD found nothing", lambda s: replace(s, detected_ms=None), False,
     "nothing detected it (is BFD on for this link?)"),
    ("failover-local/carrier-blind", "as recorded", lambda s: s, False, "loss window 1006.7 ms > objective 50 ms"),
    ("failover-remote/slow-fib", "as recorded", lambda s: s, False, "> objective 250 ms"),
    ("failover-remote/slow-fib", "the daemons waited 70 ms too: a held FIB is no wait for a CPU",
     lambda s: replace(s, cpu_waited_ms=(("be-g1-r0/zebra", 70.0),)), False, "> objective 250 ms"),
    ("failover-remote/restore-blackhole", "as recorded", lambda s: s, False, "lost after the restore > objective 10 ms"),
    ("failover-gray/slow-bfd", "as recorded", lambda s: s, False, "> objective 1000 ms"),
    ("failover-gray/bfd-off", "as recorded", lambda s: s, False, "is BFD on for this link?"),
    ("failover-spine/carrier-blind", "as recorded", lambda s: s, False, "loss window 983.0 ms > objective 50 ms"),
]


@pytest.mark.parametrize("name, what, change, passed, words", CHANGED, ids=[f"{c[0]}: {c[1]}" for c in CHANGED])
def test_the_judge_on_a_recorded_observation(name, what, change, passed, words):
    recorded = tables.recorded(name)
    outcome = judge(recorded, change(recorded.observation))
    assert outcome.passed is passed, outcome.reason
    assert words in outcome.reason


def test_the_figures_come_from_the_observation():
    recorded = tables.recorded("failover-local/ai-cluster")
    outcome = judge(recorded)
    assert (outcome.qps, outcome.qps_on_element, outcome.min_on_element) == (12, 8, 4)
    assert outcome.worst_window_ms == 6.0 and outcome.lost_elsewhere == 0 and outcome.lost_before == 0
    assert (outcome.detected_ms, outcome.restored_ms) == (recorded.observation.detected_ms, recorded.observation.restored_ms)
    lanes = outcome.timeline["lanes"]
    assert len(lanes) == 12 and [lane["on_element"] for lane in lanes] == [True] * 8 + [False] * 4
    assert sum(outcome.timeline["received"]) == sum(recorded.observation.received_on + recorded.observation.received_off)


@pytest.mark.parametrize("name, objectives, passed, words", [
    ("failover-local/ai-cluster", Objectives(hard_ms=5), False, "loss window 6.0 ms > objective 5 ms"),
    ("failover-local/ai-cluster", Objectives(hard_ms=20), True, "(objective 20 ms)"),
    ("failover-gray/slow-bfd", Objectives(gray_ms=3000), True, "(objective 3000 ms)"),
    ("failover-remote/restore-blackhole", Objectives(restore_ms=2000), True, "(objective 2000 ms); other QPs lost 0"),
])
def test_the_objectives_are_the_plans(name, objectives, passed, words):
    """The verdict is held to what the cluster declares: the same observation on a plan that
    declares other objectives is judged against those (and nothing measured changes)."""
    recorded = tables.recorded(name)
    outcome = judge_failover(with_objectives(tables.plan(name), objectives), recorded.observation)
    assert outcome.passed is passed, outcome.reason
    assert words in outcome.reason
