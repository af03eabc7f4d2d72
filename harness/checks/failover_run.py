"""One failover experiment on a lab: constant-rate QPs, one element failed and restored, the
route changes timed, the QPs' packets counted where they cross (harness/checks/failover.py
chooses what to send and what to fail; this runs it and gives back what it saw)."""
from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass

from harness.checks import sessions_back
from harness.checks.failover_elements import Element, Failure
from harness.core.errors import HarnessError
from harness.observe.carrier_watch import CarrierWatch
from harness.observe.flowcount import FlowCounters
from harness.observe.route_watch import route_change_ms
from harness.plumbing import cpu_wait
from harness.plumbing.labview import LabView
from harness.plumbing.priority import realtime, timed_turn
from harness.plumbing.wait import pause_until, within
from harness.traffic.flows import ReceiveSpec, RoceFlow, SendSpec
from harness.traffic.results import ReceiveResult, SendResult
from harness.traffic.runner import start_receiver, start_sender


# Failures whose watching switch learns of them from its own ports' carrier (each at the upper
# end: LinkHandle.down): its kernel's link-state work is the first to act, not FRR.
CARRIER_LOST_AT_WATCH = frozenset({Failure.LOCAL, Failure.SPINE, Failure.SUPERSPINE_LINK, Failure.SUPERSPINE})
# Failures whose reroute is the daemons' work, one after the other: a remote one the spine's
# zebra and bgpd (its withdrawal), then the source leaf's bgpd and zebra; a gray one BFD's
# data plane, then the leaf's bfdd, bgpd and zebra. Their waits for a CPU are the machine's.
REROUTED_BY = {Failure.REMOTE: ("zebra", "bgpd"), Failure.GRAY: ("bfd-dp", "bfdd", "bgpd", "zebra")}


@dataclass(frozen=True)
class Setup:
    """What a case sends, from where to where, over which element, counted where."""

    case: Failure
    element: Element
    leaf: str  # the source leaf
    src: tuple[str, str]  # host, NIC
    dst: tuple[str, str]
    flows: tuple[RoceFlow, ...]
    sports: dict[int, int]  # flow id -> UDP source port
    points: dict[str, list[str]]  # switch -> egress ports counted per QP
    rate_pps: float
    candidates: int  # QPs probed to find these


# How long a case waits for the route to drop the element, and for it to return after the
# restore. Only bounds: a case moves on once the route changed. On one machine every switch's
# daemons share its cores, so the control plane's pace falls with the fabric's size: at
# gpu4096 (366 switches, 2026-12-06) a super-spine's withdrawal reached a spine's routes in
# 18.0 s and a spine was back in the leaf's route 30.9 s after its restore, with no loss; fixed
# 10 s / 15 s bounds stopped both cases early (FAIL), and the restore then met a control plane
# that had not yet seen the failure (a 3.8 s black hole: a flap, not a restore).
DETECT_S, AFTER_S = 10.0, 15.0
DETECT_S_PER_SWITCH, AFTER_S_PER_SWITCH = 0.1, 0.2  # twice what gpu4096 took, per switch


def windows(switches: int) -> tuple[float, float]:
    """(detect_s, after_s) for a fabric of this many switches."""
    return (round(max(DETECT_S, DETECT_S_PER_SWITCH * switches), 1),
            round(max(AFTER_S, AFTER_S_PER_SWITCH * switches), 1))


@dataclass(frozen=True)
class Timing:
    before_s: float  # traffic before the failure
    failed_s: float  # the element stays failed at least this long ...
    detect_s: float  # ... and until its route changed, up to this long (>= failed_s)
    after_s: float  # how long the element may take to carry traffic again after the restore
    settle_s: float  # traffic after that


@dataclass(frozen=True)
class Events:
    fail_ns: int  # CLOCK_REALTIME of the failure and of the restore
    restore_ns: int
    detected_ms: float | None  # failure -> the watched route dropped the element
    restored_ms: float | None  # restore -> it has the element again
    at_restore: dict[str, int]  # the counters when the element was restored
    failed_in_ms: float = 0.0  # how long the failure itself took to be made (netlink, under the rtnl lock)
    # (port, ms after the failure) when `watch`'s kernel acted on each port's carrier loss
    carrier_lost_ms: tuple[tuple[str, float], ...] = ()
    # ("node/daemon", ms it waited for a CPU from the failure until the route changed), of the
    # daemons whose work the reroute is (REROUTED_BY)
    cpu_waited_ms: tuple[tuple[str, float], ...] = ()


@dataclass(frozen=True)
class Run:
    """What one failure and its restore showed."""

    sent: SendResult
    received: ReceiveResult
    events: Events
    before: dict[str, int]  # "switch:port/sport" -> packets counted before the failure
    returned: int  # packets counted on the element after the restore
    dropped: tuple[str, ...]  # switch:peer BGP sessions that went down away from the element
    element_sessions: tuple[str, ...] = ()  # not back: each end's BGP and BFD state then
    not_back: tuple[str, ...] = ()  # the element back in the route, yet some of its own sessions not


def run(lab: LabView, setup: Setup, timing: Timing, while_failed: Callable[[], object] | None = None) -> Run:
    """The QPs from setup.src to setup.dst at setup.rate_pps; the element failed after
    before_s, restored once failed_s passed and its route changed (or detect_s did)."""
    sport_list = sorted(set(setup.sports.values()))
    counters: list[FlowCounters] = []
    drops_before = _session_drops(lab)
    try:
        for node, ports in setup.points.items():
            counters.append(FlowCounters(lab, node, ports, sport_list).install())
        sent, received, events, before = _traffic(lab, setup, timing, counters, while_failed)
        after = _read(counters)
    finally:
        _remove(counters)
    back = events.restored_ms is not None
    return Run(sent, received, events, before, _returned(events.at_restore, setup.element, after),
               tuple(_dropped_elsewhere(lab, drops_before, setup.element)),
               element_sessions=() if back else sessions_back.sessions_of(lab, setup.element.ends),
               not_back=sessions_back.not_back(lab, setup.element.ends, timing.after_s) if back else ())


def _traffic(lab: LabView, setup: Setup, timing: Timing, counters: list[FlowCounters],
             while_failed: Callable[[], object] | None
             ) -> tuple[SendResult, ReceiveResult, Events, dict[str, int]]:
    duration = timing.before_s + timing.detect_s + timing.after_s + timing.settle_s  # at most; stops once back
    # Both ends under SCHED_FIFO: where the lab's daemons keep both cores busy (xlarge) an
    # ordinary sender started seconds late and a receiver fell silent for longer than quiet_s.
    # Both wake once a millisecond, not once a packet: at SCHED_FIFO, 23 QPs' wake-ups
    # took the CPU zebra needed to reroute (xlarge: no route change 10 s after a failure).
    # Windows come from the senders' timestamps, so batched receipt changes none.
    # Labs side by side take turns at this part (priority.timed_turn): other labs' realtime
    # traffic at the same priority held this sender 160 ms behind its schedule. Failovers of
    # other labs may run beside it (each a fifth of a core), an incast or a TCP failover not.
    with timed_turn(lab.run_dir, shared=True), start_receiver(
            lab.namespace(setup.dst[0]), ReceiveSpec(duration_s=duration + 30, quiet_s=1.5, bucket_ms=10.0,
                                                     coalesce_ms=1.0), realtime=True) as receiver:
        start_ns = time.time_ns() + 700_000_000  # the sender primes first, then starts here
        sender = start_sender(lab.namespace(setup.src[0]), SendSpec(
            flows=setup.flows, rate_pps=setup.rate_pps, duration_s=duration, device=setup.src[1],
            start_at_ns=start_ns, realtime=True, per_slot=True))
        with sender, realtime():  # the check's own polls and actions on time too
            # The timeline starts when the sender does, however late that is.
            sender.wait_ready(30.0, marker=b"SENDING")
            pause_until(time.monotonic() + max(0, start_ns - time.time_ns()) / 1e9 + timing.before_s)
            before = _read(counters)
            events = _fail_and_restore(lab, setup, timing, counters, while_failed)
            sender.stop()
            sent = sender.result(duration + 30)
        received = receiver.result(60)
    return sent, received, events, before


def _fail_and_restore(lab: LabView, setup: Setup, timing: Timing, counters: list[FlowCounters],
                      while_failed: Callable[[], object] | None) -> Events:
    el = setup.element
    prefix = lab.plan.route_prefix(lab.plan.host(setup.dst[0]).nic(setup.dst[1]))  # its /31, or its leaf's summary
    at_restore: dict[str, int] = {}
    detected_ms = None
    carrier = CarrierWatch(lab.namespace(el.watch), el.route_ports) if setup.case in CARRIER_LOST_AT_WATCH \
        else nullcontext(None)
    chain = _rerouting_daemons(lab, setup)
    try:
        with carrier as watch:
            waits = cpu_wait.daemons_now(chain)
            fail_at, fail_ns = time.monotonic(), time.time_ns()
            el.fail()
            failed_in_ms = (time.monotonic() - fail_at) * 1000
            if while_failed is not None:
                while_failed()
            detected_ms = route_change_ms(lab, el.watch, prefix, el.route_ports, present=False, since=fail_at,
                                          deadline=time.monotonic() + timing.detect_s)
            waited = cpu_wait.daemons_waited_ms(waits, cpu_wait.daemons_now(chain))
        lost = tuple(sorted((port, round((t - fail_at) * 1000, 1)) for port, t in watch.lost.items())) if watch \
            else ()
        pause_until(fail_at + timing.failed_s)
        at_restore = _read(counters)
    finally:
        restore_at, restore_ns = time.monotonic(), time.time_ns()
        el.restore()
    restored_ms = route_change_ms(lab, el.watch, prefix, el.route_ports, present=True, since=restore_at,
                                  deadline=time.monotonic() + timing.after_s)
    if restored_ms is not None:
        # Traffic moves back onto the element some time after its route returns (at `large`
        # BGP takes seconds to come back over a whole spine): wait for it, then keep sending
        # for settle_s, so any loss the move back costs is seen.
        within(lambda: _returned(at_restore, el, _read(counters)) > 0,
               max(0.0, timing.after_s - (time.monotonic() - restore_at)))
        pause_until(time.monotonic() + timing.settle_s)
    return Events(fail_ns, restore_ns, detected_ms, restored_ms, at_restore, round(failed_in_ms, 1), lost, waited)


def _rerouting_daemons(lab: LabView, setup: Setup) -> dict[str, int]:
    """"node/daemon" -> pid of the daemons whose work the case's reroute is (REROUTED_BY), on the
    switch that learns of the failure first and on the one that must reroute."""
    names = REROUTED_BY.get(setup.case, ())
    if not names:
        return {}
    first = setup.element.counted_at[0][0] if setup.case is Failure.REMOTE else "bfd-dp"
    if first == setup.element.watch:  # a spine with parallel links: its own kernel drops the port at once
        return {}
    pids = lab.daemon_pids({first, setup.element.watch})
    return {label: pid for label, pid in pids.items() if label.partition("/")[2] in names}


def _session_drops(lab: LabView) -> dict[tuple[str, str], int]:
    """(switch, peer) -> times that BGP session went down, over every switch of the lab."""
    return {(sw.name, p.peer): p.drops for sw in lab.plan.switches for p in lab.bgp_peers(sw.name)}


def _dropped_elsewhere(lab: LabView, before: dict[tuple[str, str], int], el: Element) -> list[str]:
    """Sessions that went down since `before` on no cable the element failed: a failure or
    restore must cost only its own sessions (at xlarge with software bfdd, a restore under
    traffic once let hold timers expire fabric-wide)."""
    now = _session_drops(lab)
    own = set(el.ends)
    return [f"{sw}:{peer}" for (sw, peer), n in sorted(now.items())
            if n > before.get((sw, peer), 0) and (sw, peer) not in own]


def _returned(at_restore: dict[str, int], el: Element, now: dict[str, int]) -> int:
    """Packets counted on the element since the restore."""
    on = tuple(f"{n}:{p}/" for n, p in el.counted_at)
    return sum(n - at_restore.get(key, 0) for key, n in now.items() if key.startswith(on))


def _remove(counters: list[FlowCounters]) -> None:
    for c in counters:
        try:
            c.remove()
        except HarnessError:
            pass  # the lab is going away, or the table is gone already: nothing left to count


def _read(counters: list[FlowCounters]) -> dict[str, int]:
    out = {}
    for c in counters:
        out.update({f"{c.node}:{key}": n for key, n in c.read().items()})
    return out
