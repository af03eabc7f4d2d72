"""The pfc verdict, a pure function of the plan and what was seen: the RoCE priority lost
nothing under an incast beyond its port's rate; its leaf paused its feeders and the pauses
reached the senders' NICs; the port ran full (the incast done within MARGIN of all its bytes at
the port's rate); a victim that shares an upstream port slowed (PFC pauses a whole priority:
congestion spreads), against its own rate alone, the control; no PFC storm. A drop is named
by the queue that dropped and by the port it came in by, with the priorities PFC is on there."""
from __future__ import annotations

from dataclasses import dataclass

from harness.checks.base import MeasuredOutcome
from harness.checks.pfc.measure import Count, FlowSeen, PauseTiming, PfcSeen
from harness.core.asic import least_headroom, switch_programs
from harness.core.plan import Plan
from harness.render.sonic import config_db

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


def why_dropped(drops: tuple[Count, ...], in_drops: tuple[Count, ...],
                pfc_on_ports: tuple[tuple[str, tuple[int, ...]], ...], roce: int) -> list[str]:
    """Each queue that dropped, and the ports what it dropped came in by, with why they could not
    pause their peers (shared with the dcqcn check, whose incast must be as lossless)."""
    pfc_on = dict(pfc_on_ports)
    out = []
    ingress = [c for c in in_drops if c.index == roce]
    for c in sorted(drops, key=lambda c: (-c.value, c.port, c.index)):
        on = pfc_on.get(c.port, ())
        itself = "" if roce in on else (f" (PFC there is on {'priorities ' + ', '.join(map(str, on)) if on else 'no priority'}"
                                         f", not {roce}: its queue never pauses what feeds it)")
        out.append(f"{c.port} queue {c.index} dropped {c.value} packets{itself}")
    dropping = {c.port for c in drops if roce not in pfc_on.get(c.port, ())}
    for c in sorted(ingress, key=lambda c: (-c.value, c.port)):
        if dropping and roce in pfc_on.get(c.port, ()):
            continue  # the queue's own port has PFC off: these came in by ports that did their part
        on = pfc_on.get(c.port, ())
        why = (f"PFC there is on priorit{'y' if len(on) == 1 else 'ies'} {', '.join(map(str, on))}, not {roce}"
               if roce not in on else "it had no headroom left")
        out.append(f"{c.value} of them came in by {c.port}, which could not pause its peer: {why}")
    return out


def _headroom(plan: Plan, name: str) -> tuple[int, float] | None:
    """(declared headroom in bytes, speed in Gbit/s) of a switch port "node:port"."""
    node, _, port = name.partition(":")
    sw = next((s for s in plan.switches if s.name == node), None)
    speed = next((p.speed for p in sw.ports if p.name == port), None) if sw is not None else None
    if sw is None or speed is None:
        return None
    return switch_programs(config_db(plan, sw), [port])[port].headroom_bytes, speed


def late_pause_drops(plan: Plan, drops: tuple[Count, ...], in_drops: tuple[Count, ...],
                     pfc_on_ports: tuple[tuple[str, tuple[int, ...]], ...], timing: tuple[PauseTiming, ...],
                     roce: int, frame_bytes: int) -> str:
    """Why drops are the machine's, not the fabric's, or "" where any of them is the fabric's.
    They are the machine's when every packet dropped came in by a port with PFC on whose pauses
    reached its peer later than its headroom lasts at the peer's rate (the emulation's PFC loop,
    a frame from one namespace to the next and the peer's queue stopped, waited for a CPU), and
    whose declared headroom holds what a real peer may still send after a pause
    (asic.least_headroom): below that, no fabric stays lossless and the drop is the config's.
    Shared with the dcqcn check."""
    pfc_on = dict(pfc_on_ports)
    if not in_drops or any(roce not in pfc_on.get(c.port, ()) for c in drops):
        return ""
    late = {(t.port, t.index): t for t in timing if t.late}
    why = []
    for c in in_drops:
        t = late.get((c.port, c.index))
        room = _headroom(plan, c.port)
        if c.index != roce or roce not in pfc_on.get(c.port, ()) or t is None or room is None:
            return ""
        headroom, speed = room
        least = least_headroom(speed, frame_bytes)
        if headroom < least:
            return ""
        why.append(f"{c.value} came in by {c.port}, {t.late} of whose {t.timed} pauses reached its peer later than its "
                   f"{headroom / 1e3:.0f} kB headroom lasts (mean {t.lag_ms:.1f} ms, worst {t.worst_ms:.1f} ms; a real "
                   f"{speed:g}G peer needs {least / 1e3:.0f} kB of it)")
    return ("; ".join(why) + ": the emulation's pause, a frame into the next namespace and the peer's queue stopped, "
            "waited for a CPU, so whether the headroom holds cannot be judged on this machine now")


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
        undecided.append(f"priority {roce} dropped {sum(c.value for c in seen.drops)} packets at "
                         + ", ".join(f"{c.port} queue {c.index}" for c in seen.drops) + f": {late}")
    elif seen.drops or seen.in_drops:
        why = why_dropped(seen.drops, seen.in_drops, seen.pfc_on, roce)
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
