"""The pfc verdict, a pure function of the plan and what was seen: the RoCE priority lost
nothing under an incast beyond its port's rate; its leaf paused its feeders and the pauses
reached the senders' NICs; the port ran full (the incast done within MARGIN of all its bytes at
the port's rate); a victim that shares an upstream port slowed (PFC pauses a whole priority:
congestion spreads), against its own rate alone, the control; no PFC storm. A drop is named
by the queue that dropped and by the port it came in by, with the priorities PFC is on there."""
from __future__ import annotations

from dataclasses import dataclass

from harness.checks.base import MeasuredOutcome
from harness.checks.common.drops import late_pause_drops, why_dropped
from harness.checks.pfc.measure import FlowSeen, PfcSeen
from harness.core.plan import Plan

MARGIN = 1.25  # the incast may take this much longer than its bytes at the port's rate
VICTIM_ALONE = 0.9  # alone, the victim must keep at least this share of its rate (else not measurable)
VICTIM_SLOWED = 0.9  # beside the incast, under PFC alone, it must fall below this share of its alone rate


@dataclass(frozen=True, kw_only=True)
class PfcResult(MeasuredOutcome):
    port: str
    port_mbit: float
    time_scale: int
    senders: int
    offered_mbit: float
    loss_pct: float
    completion_ms: float
    ideal_ms: float
    pauses_by_leaf: int  # PFC frames the congested leaf sent
    pauses_upstream: int  # PFC frames sent by every other switch
    pauses_at_senders: int  # received by the senders' NICs
    victim_alone_mbit: float
    victim_mbit: float
    drops: tuple[str, ...]  # "port queue q: n", every queue that dropped
    storms: tuple[str, ...]
    cpu_withheld_ms: float = 0.0  # the longest one CPU's packet work waited over the incast (CpuWait.withheld_ms)

    held = "lossless"

    def sentence(self) -> str:
        return (f"{self.senders}→1 into {self.port} at {self.port_mbit:g} Mbit/s (its speed / {self.time_scale}), "
                f"{self.offered_mbit:.0f} Mbit/s offered: loss {self.loss_pct:.2f} %, done {self.completion_ms:.0f} ms "
                f"(ideal {self.ideal_ms:.0f}); PFC {self.pauses_by_leaf} sent by the leaf, {self.pauses_upstream} "
                f"upstream, {self.pauses_at_senders} at the senders; victim {self.victim_mbit:.1f} Mbit/s beside "
                f"it, {self.victim_alone_mbit:.1f} alone"
                + (f"; the machine withheld {self.cpu_withheld_ms:.0f} ms of CPU from the kernel's packet work"
                   if self.cpu_withheld_ms else ""))


def flow_mbit(f: FlowSeen, wire: int) -> float:
    """A flow's rate as it arrived (Mbit/s of `wire`-byte frames), first packet to last."""
    if not f.received or f.first_ns is None or f.last_ns is None or f.last_ns <= f.first_ns:
        return 0.0
    return (f.received - 1) * wire * 8 / ((f.last_ns - f.first_ns) / 1e9) / 1e6


def _peer(plan: Plan, name: str) -> str:
    node, _, port = name.partition(":")
    return next((f"{p.peer}:{p.peer_port}" for s in plan.switches if s.name == node for p in s.ports
                 if p.name == port), "")


def judge_pfc(plan: Plan, seen: PfcSeen) -> PfcResult:
    roce = seen.roce_priority
    wire = seen.packet_bytes
    sent = sum(f.sent for f in seen.incast)
    received = sum(f.received for f in seen.incast)
    planned = seen.packets * len(seen.incast)
    loss = 100 * (planned - received) / planned if planned else 0.0
    last = max((f.last_ns for f in seen.incast if f.last_ns is not None), default=0)
    ideal_ms = sent * wire * 8 / seen.port_bps * 1000 if seen.port_bps else 0.0
    leaf = seen.port.split(":")[0]
    by_leaf = sum(c.value for c in seen.pfc_tx if c.port.split(":")[0] == leaf)
    upstream = sum(c.value for c in seen.pfc_tx if c.port.split(":")[0] != leaf
                   and c.port.split(":")[0] not in {f.src.split(":")[0] for f in seen.incast})
    senders = {f.src for f in seen.incast}
    at_senders = sum(c.value for c in seen.pfc_rx if c.port in senders)
    alone, beside = flow_mbit(seen.victim_alone, wire), flow_mbit(seen.victim, wire)
    victim_rate = seen.victim_pps * wire * 8 / 1e6
    problems: list[str] = []
    undecided: list[str] = []
    if received == 0:
        problems.append(f"the receiver {seen.receiver} saw none of {sent} packets: not measured")
    late = late_pause_drops(plan, seen.drops, seen.in_drops, seen.pfc_on, seen.pause_timing, roce, wire)
    if late:
        undecided.append(f"priority {roce} {late}")
    elif seen.drops or seen.in_drops:
        why = why_dropped(seen.drops, seen.in_drops, seen.pfc_on, roce, seen.pause_timing)
        problems.append(f"priority {roce} is not lossless: " + "; ".join(why))
    elif loss > 0:
        problems.append(f"the incast lost {loss:.2f} % ({planned - received} of {planned}) though no queue of the "
                        "lossless data plane dropped any: the senders' NICs refused them")
    if not by_leaf:
        problems.append(f"{leaf} sent no pause frame though {len(seen.incast)} senders offered "
                        f"{len(seen.incast) * seen.incast_pps * wire * 8 / 1e6:.0f} Mbit/s into its "
                        f"{seen.port_bps / 1e6:g} Mbit/s port: PFC did not act")
    elif not at_senders:
        problems.append(f"{leaf} sent {by_leaf} pause frames but none reached the senders' NICs: the pause did not "
                        "propagate hop by hop")
    slow = (f"the incast took {last / 1e6:.0f} ms, more than {MARGIN:g} x the {ideal_ms:.0f} ms its bytes need at "
            "the port's rate")
    withheld = seen.cpu_wait.withheld_ms
    if received and last / 1e6 > MARGIN * ideal_ms:
        if last / 1e6 - withheld <= MARGIN * ideal_ms:
            undecided.append(f"{slow}, but {seen.cpu_wait.words()} over it: a port whose packets wait for a CPU "
                             f"sends nothing, and {withheld:.0f} ms of that explains the excess, so whether the "
                             "port ran full cannot be judged on this machine now")
        else:
            problems.append(f"{slow}: the port did not run full"
                            + (f" ({withheld:.0f} ms of it the machine withheld the CPU from the kernel's packet "
                               "work, too little to explain it)" if withheld else ""))
    for c in seen.storms:
        peer = _peer(plan, c.port)
        problems.append(f"PFC storm on {c.port} queue {c.index}{f', from {peer}' if peer else ''}: paused without a "
                        "break past the watchdog's detection time (a peer that keeps sending pause); the watchdog "
                        "dropped its packets")
    if alone < VICTIM_ALONE * victim_rate:
        undecided.append(f"the victim {seen.victim.src} -> {seen.victim.dst} kept only {alone:.1f} of its "
                         f"{victim_rate:.1f} Mbit/s alone: the control failed, the spreading cannot be judged")
    elif beside >= VICTIM_SLOWED * alone and by_leaf:
        problems.append(f"the victim {seen.victim.src} -> {seen.victim.dst} kept {beside:.1f} of its {alone:.1f} "
                        "Mbit/s beside the incast: a paused port did not hold back its priority")
    return PfcResult(
        port=seen.port, port_mbit=round(seen.port_bps / 1e6, 3), time_scale=seen.time_scale,
        senders=len(seen.incast), offered_mbit=round(len(seen.incast) * seen.incast_pps * wire * 8 / 1e6, 1),
        loss_pct=round(loss, 3), completion_ms=round(last / 1e6, 1), ideal_ms=round(ideal_ms, 1),
        pauses_by_leaf=by_leaf, pauses_upstream=upstream, pauses_at_senders=at_senders,
        victim_alone_mbit=round(alone, 2), victim_mbit=round(beside, 2),
        drops=tuple(f"{c.port} queue {c.index}: {c.value}" for c in seen.drops),
        storms=tuple(f"{c.port} queue {c.index}" for c in seen.storms), cpu_withheld_ms=withheld,
        not_measurable="; ".join(undecided),
        seconds=seen.seconds, problems=tuple(problems))
