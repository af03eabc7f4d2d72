"""What a lossless incast's drops are judged on, shared by the checks that run one (pfc, dcqcn,
collectives-incast-congested): the lossless data plane's counters over the incast as counts per
place, each port's pause timing, and the two readings of a drop: which queue dropped and why
the ports it came in by could not pause their peers, or why the drop is the machine's."""
from __future__ import annotations

from dataclasses import dataclass

from harness.core.asic import least_headroom, switch_programs
from harness.core.lossless_counters import LosslessCounters
from harness.core.plan import Plan
from harness.render.sonic import config_db


@dataclass(frozen=True)
class Count:
    """One counter of one place over the incast: `port` is "node:port", `index` a queue or priority."""

    port: str
    index: int
    value: int


@dataclass(frozen=True)
class PauseTiming:
    """The pauses one port ("node:port") sent for one priority over the incast, each timed from the
    XOFF that began it to its peer's queue paused (see lossless_counters.PriorityCounters)."""

    port: str
    index: int
    timed: int
    late: int  # longer than the port's headroom lasts at its peer's rate (expired ones included)
    lag_ms: float  # their mean
    worst_ms: float  # the worst since the data plane started
    expired: int = 0  # ran out at the peer while the port still held it: the refresh came late


def lossless_counts(delta: LosslessCounters, now: LosslessCounters) -> dict[str, tuple]:
    out: dict[str, list] = {k: [] for k in ("pfc_tx", "pfc_rx", "drops", "in_drops", "storms", "pause_timing")}
    active = {(p.name, i) for p in now.ports for i, q in enumerate(p.queues) if q.storm}
    worst = {(p.name, i): pr.pause_lag_max_ms for p in now.ports for i, pr in enumerate(p.priorities)}
    for p in delta.ports:
        for i, pr in enumerate(p.priorities):
            for key, value in (("pfc_tx", pr.pfc_tx), ("pfc_rx", pr.pfc_rx), ("in_drops", pr.in_drops)):
                if value:
                    out[key].append(Count(p.name, i, value))
            if pr.pauses_timed > 0 or pr.pauses_late > 0:
                out["pause_timing"].append(PauseTiming(p.name, i, pr.pauses_timed, pr.pauses_late,
                                                       round(pr.pause_lag_ms / max(pr.pauses_timed, 1), 3),
                                                       worst.get((p.name, i), 0.0), pr.pauses_expired))
        for i, q in enumerate(p.queues):
            if q.drop_pkts or q.wd_drops:
                out["drops"].append(Count(p.name, i, q.drop_pkts + q.wd_drops))
            if q.storms or (p.name, i) in active:
                out["storms"].append(Count(p.name, i, max(q.storms, 1)))
    return {k: tuple(v) for k, v in out.items()}


def _timing_words(t: PauseTiming | None) -> str:
    if t is None:
        return "no pause of its took effect at its peer"
    ran_out = f" ({t.expired} ran out before their refresh)" if t.expired else ""
    late = f"{t.late} late{ran_out}" if t.late else "none late"
    return f"{t.timed} pauses timed, {late}: mean {t.lag_ms:.1f} ms, worst {t.worst_ms:.1f} ms"


def why_dropped(drops: tuple[Count, ...], in_drops: tuple[Count, ...],
                pfc_on_ports: tuple[tuple[str, tuple[int, ...]], ...], roce: int,
                timing: tuple[PauseTiming, ...]) -> list[str]:
    """Each queue that dropped, and the ports what it dropped came in by, with why they could not
    pause their peers (and, where PFC was on, how their pauses were timed: the evidence a next
    look starts from)."""
    pfc_on = dict(pfc_on_ports)
    timed = {(t.port, t.index): t for t in timing}
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
               if roce not in on else "it had no headroom left"
               + (f" ({_timing_words(timed.get((c.port, c.index)))})" if timing else ""))
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
    (asic.least_headroom): below that, no fabric stays lossless and the drop is the config's."""
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
        ran_out = (f", {t.expired} ran out there before {'its' if t.expired == 1 else 'their'} refresh came"
                   if t.expired else "")
        why.append(f"{c.value} came in by {c.port}, {t.late} of whose {t.timed} pauses reached its peer later than "
                   f"its {headroom / 1e3:.0f} kB headroom lasts{ran_out} (mean {t.lag_ms:.1f} ms, worst "
                   f"{t.worst_ms:.1f} ms; a real {speed:g}G peer needs {least / 1e3:.0f} kB of it)")
    where = ", ".join(f"{c.port} queue {c.index}" for c in drops)
    return (f"dropped {sum(c.value for c in drops)} packets at {where}: " + "; ".join(why)
            + ": the emulation's pause, a frame into the next namespace and the peer's queue stopped, waited for a "
            "CPU, so whether the headroom holds cannot be judged on this machine now")
