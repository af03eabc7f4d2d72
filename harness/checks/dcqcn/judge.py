"""The dcqcn verdict, a pure function of the plan and what was seen: under an incast whose
senders run DCQCN, the congested queue's WRED marked CE and the receiver's NIC sent CNPs (ECN
and DCQCN acted); in the steady state the queue never reached the pause
threshold (DCQCN, not PFC, held the incast: pauses at the start, while every QP still runs at
line rate, are expected and reported), and the incast kept the port busy; the senders converged
to a fair share (Jain's index over their steady-state rates); the victim kept its rate alone
(nothing paused its NIC); nothing dropped.

The thresholds it holds the depth to are the declaration's (the congested switch's CONFIG_DB as
the plan renders it), never the running one a fault may have changed."""
from __future__ import annotations

from dataclasses import dataclass

from harness.checks.base import Outcome
from harness.checks.dcqcn.measure import DcqcnSeen
from harness.checks.pfc.judge import why_dropped
from harness.checks.pfc.measure import FlowSeen
from harness.core.asic import Wred, switch_programs
from harness.core.plan import Plan
from harness.render.sonic import config_db
from harness.traffic.dcqcn import jain

FAIR = 0.9  # Jain's index over the senders' steady-state rates must reach this
# In the steady state, what arrived of the incast must fill this share of the port: DCQCN that
# cut the senders and left them there (Zhu's 40G steps at 400G: 22-60 %) fails; the climb back
# after the first cuts, still under way on a 3->1 (rail-only: 82 %), does not.
BUSY = 0.7
VICTIM_KEPT = 0.9  # beside the incast, the victim must keep this share of its rate alone
VICTIM_ALONE = 0.9  # alone, it must keep this share of the rate it offers (else not measurable)


@dataclass(frozen=True, kw_only=True)
class DcqcnResult(Outcome):
    port: str
    port_mbit: float
    time_scale: int
    senders: int
    marks: int  # CE marks on the congested queue
    marks_steady: int  # of them, in the steady state (DCQCN still regulating there)
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
    not_measurable: str = ""

    held = "ECN and DCQCN hold the incast"

    @property
    def passed(self) -> bool | None:
        return False if self.problems else None if self.not_measurable else True

    def why_undecided(self) -> str:
        return self.not_measurable

    def sentence(self) -> str:
        return (f"{self.senders}→1 into {self.port} at {self.port_mbit:g} Mbit/s (its speed / {self.time_scale}): "
                f"{self.marks} CE marks there ({self.marks_steady} in the steady state), {self.cnps} CNPs; steady-state queue "
                f"{self.depth_avg_bytes / 1e3:.0f} kB "
                f"average, {self.depth_peak_bytes / 1e3:.0f} kB peak (WRED {self.wred_min_bytes / 1e3:.0f}-"
                f"{self.wred_max_bytes / 1e3:.0f} kB, pause at {self.pause_bytes / 1e3:.0f} kB); Jain "
                f"{self.jain:.3f} over {', '.join(f'{r:.1f}' for r in self.steady_mbit)} Mbit/s (fair "
                f"{self.fair_mbit:.1f}; arrived: Jain {self.jain_arrived:.3f}, "
                f"{sum(self.arrived_mbit):.0f} Mbit/s in all); PFC {self.pfc_frames} frames from the leaf, "
                f"{self.pfc_frames_steady} in the "
                f"steady state; victim {self.victim_mbit:.1f} Mbit/s beside it, {self.victim_alone_mbit:.1f} alone")


def _mbit(f: FlowSeen, wire: int) -> float:
    if not f.received or f.first_ns is None or f.last_ns is None or f.last_ns <= f.first_ns:
        return 0.0
    return (f.received - 1) * wire * 8 / ((f.last_ns - f.first_ns) / 1e9) / 1e6


def _nic_time(seen: DcqcnSeen) -> str:
    """The run in the NICs' own time: DCQCN's timers are scaled, so a run of seconds here is
    milliseconds of what a NIC would do."""
    return (f" ({seen.duration_s:g} s here, {seen.duration_s * 1000 / seen.time_scale:g} ms of NIC time at time_scale "
            f"{seen.time_scale})")


def declared(plan: Plan, port: str) -> tuple[Wred | None, int]:
    """(WRED profile, pause threshold) of a switch port as the declaration renders its CONFIG_DB."""
    node, _, name = port.partition(":")
    sw = next(s for s in plan.switches if s.name == node)
    program = switch_programs(config_db(plan, sw), [name])[name]
    return program.wred, program.xoff_bytes


def judge_dcqcn(plan: Plan, seen: DcqcnSeen) -> DcqcnResult:
    roce, wire = seen.roce_priority, seen.packet_bytes
    wred, pause = declared(plan, seen.port)
    leaf = seen.port.split(":")[0]
    marks = sum(c.value for c in seen.marked if c.port == seen.port and c.index == roce)
    elsewhere = sum(c.value for c in seen.marked) - marks
    cnps = sum(c.value for c in seen.cnp_tx)
    acted = sum(s.cnps for s in seen.senders)
    steady = [d for d in seen.depth if d.t_ms >= seen.steady_from_ms and d.t_ms <= seen.duration_s * 1000]
    avg = int(sum(d.depth_bytes for d in steady) / len(steady)) if steady else 0
    peak = max((d.depth_bytes for d in steady), default=0)
    run = [d for d in seen.depth if d.t_ms <= seen.duration_s * 1000 + 500]
    pfc = sum(c.value for c in seen.pfc_tx if c.port.split(":")[0] == leaf and c.index == roce)
    pfc_steady = (run[-1].pfc_tx - steady[0].pfc_tx) if steady and run else 0
    marks_steady = (run[-1].marked - steady[0].marked) if steady and run else 0
    rates = [s.steady_bps / 1e6 for s in seen.senders]
    fairness = jain(rates) if rates else 0.0
    fair = seen.port_bps / 1e6 / len(rates) if rates else 0.0
    window_s = seen.duration_s - seen.steady_from_ms / 1000
    arrived = [s.steady_packets * wire * 8 / window_s / 1e6 if window_s > 0 else 0.0 for s in seen.senders]
    alone, beside = _mbit(seen.victim_alone, wire), _mbit(seen.victim, wire)
    victim_rate = seen.victim_pps * wire * 8 / 1e6
    received = sum(s.flow.received for s in seen.senders)
    sent = sum(s.flow.sent for s in seen.senders)
    problems: list[str] = []
    undecided = ""
    if received == 0:
        problems.append(f"the receiver {seen.receiver} saw none of {sent} packets: not measured")
    if seen.drops or seen.in_drops:
        why = why_dropped(seen.drops, seen.in_drops, seen.pfc_on, roce)
        problems.append(f"priority {roce} is not lossless: " + "; ".join(why))
    elif received < sent:
        problems.append(f"the incast lost {sent - received} of {sent} packets though no queue of the lossless data "
                        "plane dropped any: the senders' NICs refused them")
    if not marks:
        ecn = (f"queues {', '.join(map(str, seen.port_ecn_queues))}" if seen.port_ecn_queues else "no queue")
        problems.append(f"no CE mark on {seen.port} queue {roce}, the congested queue (peak {peak / 1e3:.0f} kB in the "
                        f"steady state, WRED from {wred.min_bytes / 1e3 if wred else 0:.0f} kB): ECN did not act there "
                        f"(its running config marks ECN on {ecn})")
    if not cnps or not acted:
        problems.append(f"{cnps} CNPs sent, {acted} acted on by the senders: DCQCN did not slow the incast")
    if not steady:
        problems.append("no depth sample of the congested queue in the steady state: not measured")
    elif pfc_steady:
        problems.append(f"{leaf} sent {pfc_steady} PFC pause frames in the steady state: {seen.port} queue {roce} "
                        f"reached its pause threshold {pause / 1e3:.0f} kB (peak {peak / 1e3:.0f} kB, average "
                        f"{avg / 1e3:.0f} kB), so PFC, not DCQCN, held the incast there")
    busy = sum(arrived)
    if received and busy < BUSY * seen.port_bps / 1e6:
        problems.append(f"the incast kept {seen.port} only {busy:.1f} of its {seen.port_bps / 1e6:g} Mbit/s busy in the "
                        f"steady state (under {BUSY:.0%}): DCQCN cut the senders below the port's rate and did not "
                        "win it back within the run")
    if rates and fairness < FAIR:
        problems.append(f"the senders did not converge to a fair share: Jain {fairness:.3f} < {FAIR:g} over "
                        + ", ".join(f"{s.flow.src} {r:.1f}" for s, r in zip(seen.senders, rates))
                        + f" Mbit/s (fair {fair:.1f}){_nic_time(seen)}")
    if alone < VICTIM_ALONE * victim_rate:
        undecided = (f"the victim {seen.victim.src} -> {seen.victim.dst} kept only {alone:.1f} of its "
                     f"{victim_rate:.1f} Mbit/s alone: the control failed, the victim cannot be judged")
    elif beside < VICTIM_KEPT * alone:
        problems.append(f"the victim {seen.victim.src} -> {seen.victim.dst} kept {beside:.1f} of its {alone:.1f} "
                        f"Mbit/s beside the incast: congestion spread to it ({pfc} pause frames from {leaf})")
    return DcqcnResult(
        port=seen.port, port_mbit=round(seen.port_bps / 1e6, 3), time_scale=seen.time_scale,
        senders=len(seen.senders), marks=marks, marks_steady=marks_steady, marks_elsewhere=elsewhere, cnps=cnps, cnps_at_senders=acted,
        depth_avg_bytes=avg, depth_peak_bytes=peak, wred_min_bytes=wred.min_bytes if wred else 0,
        wred_max_bytes=wred.max_bytes if wred else 0, pause_bytes=pause, pfc_frames=pfc, pfc_frames_steady=pfc_steady,
        jain=round(fairness, 4), steady_mbit=tuple(round(r, 2) for r in rates), fair_mbit=round(fair, 2),
        jain_arrived=round(jain(arrived), 4) if arrived else 0.0, arrived_mbit=tuple(round(r, 2) for r in arrived),
        victim_alone_mbit=round(alone, 2), victim_mbit=round(beside, 2),
        drops=tuple(f"{c.port} queue {c.index}: {c.value}" for c in seen.drops), not_measurable=undecided,
        seconds=seen.seconds, problems=tuple(problems))
