"""The dcqcn verdict, a pure function of the plan and what was seen: under an incast whose
senders run DCQCN, the congested queue's WRED marked CE and the receiver's NIC sent CNPs (ECN
and DCQCN acted); DCQCN won the port back after the start-up backlog (the queue marked again
within the run: the steady state began, and lasted STEADY_MIN_S); in the steady state the
queue never reached the pause threshold (DCQCN, not PFC, held the incast: pauses during the
start-up backlog, while every QP still runs near line rate, are expected and reported), the
incast kept the port busy, and the senders shared it fairly (Jain's index over their
steady-state rates); the victim kept its rate alone (nothing paused its NIC); nothing dropped.

The thresholds it holds the depth to are the declaration's (the congested switch's CONFIG_DB as
the plan renders it), never the running one a fault may have changed."""
from __future__ import annotations

from dataclasses import dataclass

from harness.checks.base import Outcome
from harness.checks.dcqcn.measure import STEADY_MIN_S, DcqcnSeen, Depth, declared
from harness.checks.common.drops import late_pause_drops, why_dropped
from harness.checks.pfc.judge import flow_mbit
from harness.core.lossless_declaration import dcqcn_assumed
from harness.core.plan import Plan
from harness.traffic.dcqcn import jain

FAIR = 0.9  # Jain's index over the senders' steady-state rates must reach this
BUSY = 0.8  # in the steady state, what arrived of the incast must fill this share of the port
VICTIM_KEPT = 0.9  # beside the incast, the victim must keep this share of its rate alone
VICTIM_ALONE = 0.9  # alone, it must keep this share of the rate it offers (else not measurable)


@dataclass(frozen=True, kw_only=True)
class DcqcnResult(Outcome):
    port: str
    port_mbit: float
    time_scale: int
    senders: int
    marks: int  # CE marks on the congested queue
    marks_steady: int  # of them, in the steady state
    steady_from_s: float | None  # the steady state's start (None: it never began), and its length
    steady_s: float
    drained_s: float | None  # when the start-up backlog drained (None: it never did within HOLD_S)
    run_s: float
    marks_elsewhere: int  # on every other queue of the BE
    cnps: int  # CNPs the NICs sent
    cnps_at_senders: int  # CNPs the senders' reaction points acted on
    depth_avg_bytes: int  # the congested queue over the steady state
    depth_peak_bytes: int
    wred_min_bytes: int  # the declared thresholds
    wred_max_bytes: int
    pause_bytes: int
    pfc_frames: int  # sent by the congested leaf over the run
    pfc_frames_steady: int  # of them, in the steady state
    jain: float
    steady_mbit: tuple[float, ...]  # each sender's steady-state rate (its reaction point's)
    jain_arrived: float  # Jain's index over what arrived of each in the steady state (reported, not judged:
    arrived_mbit: tuple[float, ...]  # under pauses it is the fabric's arbitration, not DCQCN's share)
    fair_mbit: float  # the port's rate / senders
    victim_alone_mbit: float
    victim_mbit: float
    drops: tuple[str, ...]
    assumed: str = ""  # what the verdict rests on that nobody declared (the NICs' default DCQCN)
    not_measurable: str = ""

    held = "ECN and DCQCN hold the incast"

    @property
    def passed(self) -> bool | None:
        return False if self.problems else None if self.not_measurable else True

    def why_undecided(self) -> str:
        return self.not_measurable

    def named(self) -> tuple[str, ...]:
        # a failure at the NICs' defaults says which field would change it, after what failed
        return self.problems + ((self.assumed,) if self.assumed else ())

    def sentence(self) -> str:
        when = (f"steady state from {self.steady_from_s:g} s for {self.steady_s:g} s of a {self.run_s:g} s run"
                if self.steady_from_s is not None else f"no steady state in a {self.run_s:g} s run")
        drained = f"start-up backlog drained at {self.drained_s:g} s" if self.drained_s is not None else \
            "start-up backlog not drained"
        return (f"{self.senders}→1 into {self.port} at {self.port_mbit:g} Mbit/s (its speed / {self.time_scale}): "
                f"{drained}, {when}; {self.marks} CE marks there ({self.marks_steady} in the steady state), {self.cnps} CNPs; steady-state queue "
                f"{self.depth_avg_bytes / 1e3:.0f} kB "
                f"average, {self.depth_peak_bytes / 1e3:.0f} kB peak (WRED {self.wred_min_bytes / 1e3:.0f}-"
                f"{self.wred_max_bytes / 1e3:.0f} kB, pause at {self.pause_bytes / 1e3:.0f} kB); Jain "
                f"{self.jain:.3f} over {', '.join(f'{r:.1f}' for r in self.steady_mbit)} Mbit/s (fair "
                f"{self.fair_mbit:.1f}; arrived: Jain {self.jain_arrived:.3f}, "
                f"{sum(self.arrived_mbit):.0f} Mbit/s in all); PFC {self.pfc_frames} frames from the leaf, "
                f"{self.pfc_frames_steady} in the "
                f"steady state; victim {self.victim_mbit:.1f} Mbit/s beside it, {self.victim_alone_mbit:.1f} alone"
                + ("; DCQCN at the NICs' defaults (none declared)" if self.assumed else ""))


def _nic_time(seconds: float, time_scale: int) -> str:
    """A time here in the NICs' own time: DCQCN's timers are scaled, so seconds here are
    milliseconds of what a NIC would do."""
    return f"{seconds:.1f} s here, {seconds * 1000 / time_scale:.2f} ms of NIC time at time_scale {time_scale}"


@dataclass(frozen=True)
class _Steady:
    """The steady state's depth samples, and what the congested queue did in it."""

    samples: tuple[Depth, ...]
    start_ms: float | None
    end_ms: float

    @property
    def seconds(self) -> float:
        return (self.end_ms - self.start_ms) / 1000 if self.start_ms is not None else 0.0

    def grew(self, field: str) -> int:
        return getattr(self.samples[-1], field) - getattr(self.samples[0], field) if len(self.samples) > 1 else 0

    @property
    def avg(self) -> int:
        return int(sum(d.depth_bytes for d in self.samples) / len(self.samples)) if self.samples else 0

    @property
    def peak(self) -> int:
        return max((d.depth_bytes for d in self.samples), default=0)


def _steady(seen: DcqcnSeen) -> _Steady:
    end = seen.duration_s * 1000
    start = seen.steady_from_ms
    return _Steady(tuple(d for d in seen.depth if start is not None and start <= d.t_ms <= end), start, end)


def _loss(plan: Plan, seen: DcqcnSeen) -> tuple[list[str], str]:
    """(problems, why not measurable) of what the incast lost."""
    received = sum(s.flow.received for s in seen.senders)
    sent = sum(s.flow.sent for s in seen.senders)
    if received == 0:
        return [f"the receiver {seen.receiver} saw none of {sent} packets: not measured"], ""
    late = late_pause_drops(plan, seen.drops, seen.in_drops, seen.pfc_on, seen.pause_timing, seen.roce_priority,
                            seen.packet_bytes)
    if late:
        return [], f"priority {seen.roce_priority} {late}"
    return _lost(seen, sent, received), ""


def _lost(seen: DcqcnSeen, sent: int, received: int) -> list[str]:
    if seen.drops or seen.in_drops:
        why = why_dropped(seen.drops, seen.in_drops, seen.pfc_on, seen.roce_priority, seen.pause_timing)
        return [f"priority {seen.roce_priority} is not lossless: " + "; ".join(why)]
    if received < sent:
        return [f"the incast lost {sent - received} of {sent} packets though no queue of the lossless data plane "
                "dropped any: the senders' NICs refused them"]
    return []


def judge_dcqcn(plan: Plan, seen: DcqcnSeen) -> DcqcnResult:
    roce, wire = seen.roce_priority, seen.packet_bytes
    wred, pause = declared(plan, seen.port)
    leaf = seen.port.split(":")[0]
    marks = sum(c.value for c in seen.marked if c.port == seen.port and c.index == roce)
    cnps = sum(c.value for c in seen.cnp_tx)
    acted = sum(s.cnps for s in seen.senders)
    steady = _steady(seen)
    pfc = sum(c.value for c in seen.pfc_tx if c.port.split(":")[0] == leaf and c.index == roce)
    rates = [s.steady_bps / 1e6 for s in seen.senders]
    fairness = jain(rates) if rates else 0.0
    fair = seen.port_bps / 1e6 / len(rates) if rates else 0.0
    arrived = [s.steady_packets * wire * 8 / steady.seconds / 1e6 if steady.seconds > 0 else 0.0
               for s in seen.senders]
    alone, beside = flow_mbit(seen.victim_alone, wire), flow_mbit(seen.victim, wire)
    victim_rate = seen.victim_pps * wire * 8 / 1e6
    problems, undecided = _loss(plan, seen)
    if not marks:
        ecn = (f"queues {', '.join(map(str, seen.port_ecn_queues))}" if seen.port_ecn_queues else "no queue")
        problems.append(f"no CE mark on {seen.port} queue {roce}, the congested queue (peak {steady.peak / 1e3:.0f} kB "
                        f"in the steady state, WRED from {wred.min_bytes / 1e3 if wred else 0:.0f} kB): ECN did not "
                        f"act there (its running config marks ECN on {ecn})")
    if not cnps or not acted:
        problems.append(f"{cnps} CNPs sent, {acted} acted on by the senders: DCQCN did not slow the incast")
    if steady.seconds < STEADY_MIN_S or not steady.samples:
        drained = (f"the start-up backlog drained at {seen.drained_ms / 1000:g} s" if seen.drained_ms is not None
                   else "the start-up backlog never drained")
        problems.append(f"DCQCN did not win the port back within the run: {drained} and the queue was not marked "
                        f"again for {STEADY_MIN_S:g} s before it ended ({_nic_time(seen.duration_s, seen.time_scale)})"
                        "; the senders' rates and share were not judged")
    else:
        if steady.grew("pfc_tx"):
            problems.append(f"{leaf} sent {steady.grew('pfc_tx')} PFC pause frames in the steady state: {seen.port} "
                            f"queue {roce} reached its pause threshold {pause / 1e3:.0f} kB (peak "
                            f"{steady.peak / 1e3:.0f} kB, average {steady.avg / 1e3:.0f} kB), so PFC, not DCQCN, held "
                            "the incast there")
        busy = sum(arrived)
        port_mbit = seen.port_bps / 1e6
        if busy < BUSY * port_mbit:
            idle = f"the incast kept {seen.port} only {busy:.1f} of its {port_mbit:g} Mbit/s busy in the steady state"
            short_ms = (BUSY * port_mbit - busy) / port_mbit * steady.seconds * 1000
            withheld = seen.steady_cpu_wait.withheld_ms
            if withheld >= short_ms:
                undecided = "; ".join(filter(None, (undecided, (
                    f"{idle}, {short_ms:.0f} ms of port time short of {BUSY:.0%}, but {seen.steady_cpu_wait.words()} "
                    f"meanwhile: {withheld:.0f} ms in which the port and the senders' catch-up (a burst the queue "
                    "marks, cutting every rate again) were the machine's, so whether DCQCN keeps the port busy "
                    "cannot be judged on this machine now"))))
            else:
                problems.append(f"{idle} (under {BUSY:.0%}): DCQCN cut the senders below the port's rate")
        if rates and fairness < FAIR:
            problems.append(f"the senders did not converge to a fair share: Jain {fairness:.3f} < {FAIR:g} over "
                            + ", ".join(f"{s.flow.src} {r:.1f}" for s, r in zip(seen.senders, rates))
                            + f" Mbit/s (fair {fair:.1f}; {_nic_time(seen.duration_s, seen.time_scale)})")
    if alone < VICTIM_ALONE * victim_rate:
        undecided = "; ".join(filter(None, (
            undecided, f"the victim {seen.victim.src} -> {seen.victim.dst} kept only {alone:.1f} of its "
                       f"{victim_rate:.1f} Mbit/s alone: the control failed, the victim cannot be judged")))
    elif beside < VICTIM_KEPT * alone:
        problems.append(f"the victim {seen.victim.src} -> {seen.victim.dst} kept {beside:.1f} of its {alone:.1f} "
                        f"Mbit/s beside the incast: congestion spread to it ({pfc} pause frames from {leaf})")
    return DcqcnResult(
        port=seen.port, port_mbit=round(seen.port_bps / 1e6, 3), time_scale=seen.time_scale,
        senders=len(seen.senders), marks=marks, marks_steady=steady.grew("marked"),
        steady_from_s=round(steady.start_ms / 1000, 2) if steady.start_ms is not None else None,
        steady_s=round(steady.seconds, 2), run_s=round(seen.duration_s, 2),
        drained_s=round(seen.drained_ms / 1000, 2) if seen.drained_ms is not None else None,
        marks_elsewhere=sum(c.value for c in seen.marked) - marks, cnps=cnps, cnps_at_senders=acted,
        depth_avg_bytes=steady.avg, depth_peak_bytes=steady.peak, wred_min_bytes=wred.min_bytes if wred else 0,
        wred_max_bytes=wred.max_bytes if wred else 0, pause_bytes=pause, pfc_frames=pfc,
        pfc_frames_steady=steady.grew("pfc_tx"), jain=round(fairness, 4), steady_mbit=tuple(round(r, 2) for r in rates),
        fair_mbit=round(fair, 2), jain_arrived=round(jain(arrived), 4) if arrived else 0.0,
        arrived_mbit=tuple(round(r, 2) for r in arrived), victim_alone_mbit=round(alone, 2),
        victim_mbit=round(beside, 2), drops=tuple(f"{c.port} queue {c.index}: {c.value}" for c in seen.drops),
        assumed=dcqcn_assumed(plan.fabric.cluster.lossless),
        not_measurable=undecided, seconds=seen.seconds, problems=tuple(problems))
