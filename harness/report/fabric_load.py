"""What `fablab view` shows of the BE's load, from two reads of the lab a refresh apart: per BE
link its scaled rate, what it carried since the read before, its drops, the depth of its queues
and whether either end is paused by its peer or keeps its peer paused (the lossless data
plane's counters); per uplink of each switch the packets it carried since the read before, so
the ECMP spread over a switch's uplinks shows as it happens (interface counters, any runtime).

Pure: `Reading`s in, figures out; `harness.report.live` takes the reads.
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from harness.core.lossless_counters import LosslessCounters, PortCounters
from harness.core.model import Plane
from harness.core.plan import CableRow, Plan


@dataclass(frozen=True)
class EndReading:
    """One cable end's interface counters at one read."""

    node: str
    port: str
    rx_packets: int
    tx_packets: int


@dataclass(frozen=True)
class Reading:
    at_s: float  # time.monotonic() of the read
    ends: tuple[EndReading, ...]
    lossless: LosslessCounters | None  # None: the lab has no lossless data plane

    def end(self, node: str, port: str) -> EndReading | None:
        return next((e for e in self.ends if e.node == node and e.port == port), None)


class PauseState(Enum):
    NONE = ""
    PAUSED = "paused"  # an end's queue is paused by its peer now: it sends nothing on that priority
    HOLDING = "holding"  # an end keeps its peer paused now (its own queue past xoff)
    WAS_PAUSED = "was paused"  # neither now, but pauses went over it since the read before


@dataclass(frozen=True)
class LinkLoad:
    """One BE link, both ends' lossless ports together."""

    a: str  # node:port
    b: str
    rate_bps: int  # the link's scaled rate (speed / time_scale)
    a_to_b_bps: float | None  # what a's port sent since the read before; None on the first read
    b_to_a_bps: float | None
    drops: int  # packets both ends' queues dropped since the data plane started (watchdog's too)
    new_drops: int  # of those, since the read before
    depth_bytes: int  # the deeper end's queues now
    peak_bytes: int  # the deeper end's watermark
    paused: tuple[str, ...]  # ends (node:port) paused by their peer now
    holding: tuple[str, ...]  # ends keeping their peer paused now
    # Since the read before: a pause lasts milliseconds and a look comes every few seconds, so
    # "now" alone would miss most of them.
    paused_ms_new: float = 0.0  # both ends' queues held by pauses (scaled time)
    pfc_new: int = 0  # PFC frames both ends sent

    @property
    def pause(self) -> PauseState:
        return PauseState.PAUSED if self.paused else PauseState.HOLDING if self.holding else \
            PauseState.WAS_PAUSED if self.paused_ms_new or self.pfc_new else PauseState.NONE

    @property
    def load_pct(self) -> float | None:
        """The busier direction's share of the scaled rate."""
        loads = [x for x in (self.a_to_b_bps, self.b_to_a_bps) if x is not None]
        return round(100 * max(loads) / self.rate_bps, 1) if loads and self.rate_bps else None

    @property
    def label(self) -> str:
        """The few characters drawn beside the link: load, queue, pause, drops; "" when idle."""
        parts = []
        if self.load_pct is not None and self.load_pct >= 0.5:  # idle links stay bare
            parts.append(f"{self.load_pct:.0f}%")
        if self.depth_bytes:
            parts.append(f"q{_kb(self.depth_bytes)}")
        if self.pause is not PauseState.NONE:
            parts.append("‖")  # a pause sign every font has (⏸ is missing from many)
        if self.drops:
            parts.append(f"✕{self.drops}")
        return " ".join(parts)

    @property
    def alert(self) -> bool:
        return bool(self.drops) or self.pause is not PauseState.NONE


@dataclass(frozen=True)
class UplinkShare:
    """One uplink of a switch (towards a spine or super-spine) since the read before."""

    switch: str
    port: str
    peer: str  # node:port
    up_packets: int | None  # the switch sent up it; None on the first read
    down_packets: int | None  # it received down it
    share_pct: float | None  # of what the switch sent up all its uplinks, this one's


def _kb(n: int) -> str:
    return f"{n / 1000:.0f}k" if n >= 1000 else f"{n}B"


def _sent_bytes(p: PortCounters) -> int:
    # Bytes in minus bytes still queued: what the port's queues sent (drops are never enqueued).
    return sum(max(q.enq_bytes - q.depth_bytes, 0) for q in p.queues)


def _drops(p: PortCounters) -> int:
    return sum(q.drop_pkts + q.wd_drops for q in p.queues)


def _paused_ms(p: PortCounters | None) -> float:
    return sum(q.paused_ms for q in p.queues) if p is not None else 0.0


def _pfc_tx(p: PortCounters | None) -> int:
    return sum(x.pfc_tx for x in p.priorities) if p is not None else 0


def _be_cables(plan: Plan) -> list[CableRow]:
    return [c for c in plan.cables if c.plane is Plane.BE]


def link_loads(plan: Plan, now: Reading, before: Reading | None) -> tuple[LinkLoad, ...]:
    """Every BE link the data plane counts, in the plan's order; () without the data plane."""
    if now.lossless is None:
        return ()
    seconds = (now.at_s - before.at_s) if before is not None and before.lossless is not None else 0.0
    out = []
    for c in _be_cables(plan):
        pa, pb = now.lossless.port(c.a_node, c.a_port), now.lossless.port(c.b_node, c.b_port)
        if pa is None or pb is None:
            continue
        ba = before.lossless.port(c.a_node, c.a_port) if seconds > 0 else None  # type: ignore[union-attr]
        bb = before.lossless.port(c.b_node, c.b_port) if seconds > 0 else None  # type: ignore[union-attr]

        def bps(p: PortCounters, b: PortCounters | None) -> float | None:
            return None if b is None else max(_sent_bytes(p) - _sent_bytes(b), 0) * 8 / seconds

        deeper = max(pa, pb, key=lambda p: sum(q.depth_bytes for q in p.queues))
        drops = _drops(pa) + _drops(pb)
        old = (_drops(ba) if ba else 0) + (_drops(bb) if bb else 0) if ba or bb else drops
        out.append(LinkLoad(
            f"{c.a_node}:{c.a_port}", f"{c.b_node}:{c.b_port}", min(pa.rate_bps, pb.rate_bps),
            bps(pa, ba), bps(pb, bb), drops, drops - old, sum(q.depth_bytes for q in deeper.queues),
            max(max((q.peak_bytes for q in p.queues), default=0) for p in (pa, pb)),
            tuple(p.name for p in (pa, pb) if any(q.paused for q in p.queues)),
            tuple(p.name for p in (pa, pb) if any(x.holding_peer for x in p.priorities)),
            round(_paused_ms(pa) + _paused_ms(pb) - _paused_ms(ba) - _paused_ms(bb), 1) if seconds > 0 else 0.0,
            _pfc_tx(pa) + _pfc_tx(pb) - _pfc_tx(ba) - _pfc_tx(bb) if seconds > 0 else 0))
    return tuple(out)


def uplink_spread(plan: Plan, now: Reading, before: Reading | None) -> tuple[UplinkShare, ...]:
    """Each BE switch's uplinks (the cables whose upper end is another switch) with the packets
    each carried since `before`, and its share of what the switch sent up: ECMP's spread."""
    switches = {s.name for s in plan.switches}
    ups: dict[str, list[CableRow]] = {}
    for c in _be_cables(plan):
        if c.a_node in switches and c.b_node in switches:  # a_node is the lower end (harness.lab.LinkHandle)
            ups.setdefault(c.a_node, []).append(c)
    out = []
    for switch, cables in ups.items():
        deltas = []
        for c in cables:
            e, b = now.end(c.a_node, c.a_port), before.end(c.a_node, c.a_port) if before is not None else None
            up = max(e.tx_packets - b.tx_packets, 0) if e and b else None
            down = max(e.rx_packets - b.rx_packets, 0) if e and b else None
            deltas.append((c, up, down))
        total = sum(up or 0 for _, up, _ in deltas)
        out += [UplinkShare(switch, c.a_port, f"{c.b_node}:{c.b_port}", up, down,
                            round(100 * up / total, 1) if up is not None and total else None)
                for c, up, down in deltas]
    return tuple(out)
