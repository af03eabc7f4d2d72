"""What a BE port's lossless program is, read from the config that runs there: the switch's
CONFIG_DB for a switch port (whatever its maps and profiles are called), the declared
contract for a GPU NIC. The netns runtime's lossless data plane (harness/dataplane) acts on
exactly this, as SONiC's orchagent programs an ASIC from CONFIG_DB: a field changed by hand
changes what the port does.

Buffers follow SONiC's model of a lossless priority group:
- the pause threshold is the PG's share of its pool: `static_th` bytes, or with `dynamic_th`
  (alpha = 2^dynamic_th) alpha/(1+alpha) of the pool, where one congested PG settles;
- `xoff` is the headroom above it, which absorbs what is still in flight after the pause;
- XON below the threshold minus `xon_offset` (Broadcom's profiles), or minus `xon` where there is
  no offset (Mellanox's, whose PG reserves xon + xoff): a narrow hysteresis, so a congested
  port toggles XOFF/XON as often as it drains that much, and a pause lasts as long as that (a
  pause held without a break is a storm to the watchdog);
- a lossy packet (a priority without PFC, or arriving by a port without PFC on it) is dropped
  at the pause threshold, where a lossless one is paused.
Bytes are never scaled; times and rates are (`Lossless.time_scale`).
"""
from __future__ import annotations

from dataclasses import dataclass

from harness.core.meaning.configdb_qos import ECN_MARKS_GREEN, PortQos, Queue, buffers, port_qoses, queues
from harness.core.model import Lossless

QUEUES = 8
# SONiC's defaults where a config names no buffer for a lossless PG (its ingress_lossless_pool
# of a Tomahawk-class part, dynamic_th 0, Mellanox's default headroom).
DEFAULT_POOL = 12766208
DEFAULT_HEADROOM = 165888
DEFAULT_XON = 18432
PAUSE_QUANTA = 0xFFFF  # what a port asks for in a pause frame (SONiC's default on every ASIC)
# How long a port may go on sending after a pause reaches it, in pause quanta (512 bit times),
# by speed in Gbit/s: IEEE 802.3 Annex 31B's response delays, the figures SONiC's dynamic
# headroom calculation starts from. Faster ports: in proportion to 400G's.
PAUSE_RESPONSE_QUANTA = {10: 67, 25: 80, 40: 118, 50: 147, 100: 394, 200: 453, 400: 905}


def least_headroom(speed_gbps: float, frame_bytes: int) -> int:
    """The headroom below which no real fabric stays lossless at this speed, whatever its
    cables: what the peer may still send after a pause reaches it (its response delay) plus
    a frame it had begun and the pause frame's own wait behind one."""
    known = sorted(PAUSE_RESPONSE_QUANTA)
    at = next((s for s in known if s >= speed_gbps), None)
    quanta = PAUSE_RESPONSE_QUANTA[at] if at is not None else PAUSE_RESPONSE_QUANTA[400] * speed_gbps / 400
    return int(quanta * 512 / 8) + 2 * frame_bytes


@dataclass(frozen=True)
class Wred:
    min_bytes: int
    max_bytes: int
    probability_pct: int  # at max; linear from 0 at min


@dataclass(frozen=True)
class Watchdog:
    """SONiC's PFC_WD on a port: a queue paused this long without a break is a storm."""

    priorities: frozenset[int]
    detect_ms: int
    restore_ms: int
    action: str  # drop, forward or alert


@dataclass(frozen=True)
class PortProgram:
    port: str
    dscp_tc: tuple[int, ...]  # 64 entries: the traffic class of each DSCP
    tc_queue: tuple[int, ...]  # 8 entries
    pfc: frozenset[int]  # priorities this port pauses and honours pause for
    ecn_queues: frozenset[int]  # queues that mark CE by `wred`
    wred: Wred | None
    xoff_bytes: int  # a lossless queue past this pauses its feeders
    xon_bytes: int  # and releases them below this
    headroom_bytes: int  # above xoff, what a lossless packet may still use
    strict_queues: frozenset[int] = frozenset()
    watchdog: Watchdog | None = None
    host: bool = False  # a GPU NIC: sends CNPs, never drops what its own host sends
    cnp_interval_ns: int = 0  # a NIC's least time between two CNPs of one QP (scaled)
    cnp_dscp: int = 48

    @property
    def lossless_limit(self) -> int:
        return self.xoff_bytes + self.headroom_bytes

    @property
    def lossy_limit(self) -> int:
        return self.xoff_bytes

    def queue_of(self, dscp: int) -> int:
        return self.tc_queue[self.dscp_tc[dscp]]


def _int(value: str | None, default: int) -> int:
    try:
        return int(str(value).strip()) if value is not None else default
    except ValueError:
        return default


def _thresholds(settings: dict[str, str]) -> tuple[int, int, int]:
    """(pause threshold, XON level, headroom) of a lossless PG's buffer profile."""
    pool = _int(settings.get("pool size"), DEFAULT_POOL)
    if settings.get("static_th") is not None:
        xoff = _int(settings.get("static_th"), pool)
    else:
        alpha = 2.0 ** _int(settings.get("dynamic_th"), 0)
        xoff = int(pool * alpha / (1 + alpha))
    headroom = _int(settings.get("xoff"), DEFAULT_HEADROOM)
    offset = _int(settings.get("xon_offset"), 0)
    xon = xoff - (offset if offset > 0 else _int(settings.get("xon"), DEFAULT_XON))
    return xoff, max(0, min(xon, xoff)), max(0, headroom)


def _wred(queue: Queue | None) -> Wred | None:
    w = queue.wred if queue is not None else None
    if w is None or w.get("ecn") not in ECN_MARKS_GREEN:
        return None
    lo, hi = _int(w.get("green_min_threshold"), 0), _int(w.get("green_max_threshold"), 0)
    if hi <= 0:
        return None
    return Wred(lo, max(lo, hi), _int(w.get("green_drop_probability"), 100))


def _watchdog(db: dict, port: str, qos: PortQos | None) -> Watchdog | None:
    rows = db.get("PFC_WD", {})
    row = rows.get(port) or next((r for k, r in rows.items() if port in [p.strip() for p in k.split(",")]), None)
    if row is None or qos is None or not qos.pfcwd:
        return None
    return Watchdog(frozenset(qos.pfcwd), _int(row.get("detection_time"), 200), _int(row.get("restoration_time"), 200),
                    str(row.get("action", "drop")))


def switch_programs(db: dict, ports: list[str] | tuple[str, ...]) -> dict[str, PortProgram]:
    """Each of `ports`' program as `db` (a switch's CONFIG_DB) sets it. A port without a
    PORT_QOS_MAP row classifies everything as TC 0 and pauses nothing (SAI's defaults)."""
    qoses = port_qoses(db)
    qs = queues(db)
    pgs = buffers(db, "BUFFER_PG")
    out = {}
    for port in ports:
        qos = qoses.get(port)
        chain = qos.chain if qos is not None else tuple((0, 0, 0) for _ in range(64))
        dscp_tc = tuple(tc for tc, _, _ in chain)
        to_queue = qos.map("tc_to_queue_map").lookup if qos is not None else {}
        tc_queue = tuple(to_queue.get(tc, tc) % QUEUES for tc in range(QUEUES))
        pfc = frozenset(p for p in (qos.pfc if qos is not None else ()) if 0 <= p < QUEUES)
        pg_of = qos.map("tc_to_pg_map").lookup if qos is not None else {}
        lossless_pg = next((pg_of.get(p, p) for p in sorted(pfc)), None)
        buf = pgs.get((port, lossless_pg)) if lossless_pg is not None else None
        xoff, xon, headroom = _thresholds(dict(buf.settings) if buf is not None and buf.defined else {})
        ecn, wred = set(), None
        strict = set()
        for q in range(QUEUES):
            queue = qs.get((port, q))
            w = _wred(queue)
            if w is not None:
                ecn.add(q)
                wred = wred or w
            if queue is not None and queue.scheduler is not None and queue.scheduler.type == "STRICT":
                strict.add(q)
        out[port] = PortProgram(port, dscp_tc, tc_queue, pfc, frozenset(ecn), wred, xoff, xon, headroom,
                                frozenset(strict), _watchdog(db, port, qos))
    return out


def nic_program(port: str, q: Lossless) -> PortProgram:
    """A GPU NIC as the contract sets it (trust DSCP, PFC on the RoCE priority, CNPs on their
    strict priority): it pauses nothing of its own, honours pause, and answers CE with CNPs."""
    dscp_tc = [0] * 64
    dscp_tc[q.roce_dscp] = q.roce_priority
    dscp_tc[q.cnp_dscp] = q.cnp_priority
    xoff, xon, headroom = _thresholds({})
    return PortProgram(port, tuple(dscp_tc), tuple(range(QUEUES)), frozenset({q.roce_priority}), frozenset(), None,
                       xoff, xon, headroom, frozenset({q.cnp_priority}), None, host=True,
                       cnp_interval_ns=int(q.dcqcn.cnp_interval_us * 1000 * q.time_scale), cnp_dscp=q.cnp_dscp)
