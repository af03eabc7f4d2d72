"""Typed results of traffic runs: what each sender sent, each receiver received, each TCP end moved.

Frozen dataclasses, as the specs in `flows` are; JSON (`flows.to_json`, `flows.from_json`)
exists only at the process boundary.
"""
from __future__ import annotations

import base64
from array import array
from dataclasses import dataclass
from typing import Literal

from harness.traffic.flows import TrafficError


# ---------------------------------------------------------------------------- sending


@dataclass(frozen=True)
class FlowDcqcn:
    """What DCQCN did to one flow (a sender with SendSpec.dcqcn). Rates in bit/s of Ethernet
    frames, scaled as the lab is (`time_scale`: a 400G NIC at 2000 is 200 Mbit/s here)."""

    cnps: int  # CNPs received for this flow (each one cut its rate)
    rate_end_bps: float  # the reaction point's rate when the sender stopped
    rate_min_bps: float  # the lowest it was cut to
    line_rate_bps: float  # where it started, and its ceiling
    time_scale: int = 1
    # (ns since the sender's start, rate_bps), at most 200 samples evenly over the run, the last
    # one at its end
    trace: tuple[tuple[int, float], ...] = ()

    def mean_rate_bps(self, since_ns: int = 0) -> float:
        """The trace's time-weighted mean rate from `since_ns` on (each sample holds until the next)."""
        points = self.trace
        total = weighted = 0.0
        for (t0, r), (t1, _) in zip(points, points[1:]):
            lo = max(t0, since_ns)
            if t1 > lo:
                weighted += r * (t1 - lo)
                total += t1 - lo
        return weighted / total if total else (points[-1][1] if points else self.rate_end_bps)


@dataclass(frozen=True)
class FlowSent:
    flow_id: int
    dst_qp: int | None  # None for UDP flows
    sport: int
    packets: int
    last_seq: int
    first_ns: int  # CLOCK_REALTIME of the first and last packet
    last_ns: int
    refused: int = 0  # packets our own kernel refused (no route, link down): lost before the fabric
    dcqcn: FlowDcqcn | None = None  # what DCQCN did to it (SendSpec.dcqcn); None without

    @property
    def rate_pps(self) -> float:
        span = self.last_ns - self.first_ns
        return (self.packets - 1) * 1e9 / span if span > 0 else 0.0


@dataclass(frozen=True)
class SendResult:
    flows: tuple[FlowSent, ...]
    start_ns: int
    end_ns: int
    max_lag_ns: int = 0  # constant rate: worst lateness of a packet against its slot
    retries: int = 0  # sends retried after ENOBUFS/EAGAIN
    primed: bool = True  # False: neighbours were still unresolved when priming gave up
    realtime: bool = False  # the loop ran under SCHED_FIFO
    # constant rate: (due, sent) CLOCK_REALTIME spans where packets left more than one of
    # their flow's slots (1 / rate_pps) late; merged, in order
    lag_spans: tuple[tuple[int, int], ...] = ()
    cnps_unmatched: int = 0  # dcqcn: CNPs that named no flow of this sender (address, QP)

    def lagged_during(self, start_ns: int, end_ns: int) -> int:
        """Worst lateness (ns) of the sender within [start_ns, end_ns], beyond one slot; 0 if none."""
        return max((b - a for a, b in self.lag_spans if a <= end_ns and b >= start_ns), default=0)

    @property
    def packets(self) -> int:
        return sum(f.packets for f in self.flows)

    @property
    def pps(self) -> float:
        span = self.end_ns - self.start_ns
        return self.packets * 1e9 / span if span > 0 else 0.0


# ---------------------------------------------------------------------------- receiving


@dataclass(frozen=True)
class Gap:
    """Sequence numbers after_seq+1 .. next_seq-1 never arrived.

    tx_* are the sender's timestamps of the packets either side (so the loss window on the
    sender's timeline), rx_* their receive times.
    """

    after_seq: int
    next_seq: int
    tx_before_ns: int
    tx_after_ns: int
    rx_before_ns: int
    rx_after_ns: int

    @property
    def missing(self) -> int:
        return self.next_seq - self.after_seq - 1

    @property
    def window_ns(self) -> int:
        return self.tx_after_ns - self.tx_before_ns


@dataclass(frozen=True)
class FlowReceived:
    """One flow at the receiver. `lost` counts missing sequence numbers in 0..max_seq: tail
    losses need the sender's count (see `losses`)."""

    key: int
    flow_id: int
    dst_qp: int | None
    received: int
    unique: int
    duplicates: int
    reordered: int  # arrived after a higher sequence number
    lost: int
    psn_gaps: int  # times the PSN jumped ahead of the expected one (RoCEv2 only)
    psn_missing: int  # PSNs jumped over
    first_seq: int
    max_seq: int
    first_ns: int
    last_ns: int
    latency_min_ns: int  # receive time minus the sender's timestamp (same host clock)
    latency_avg_ns: int
    latency_max_ns: int
    seq_runs: tuple[tuple[int, int], ...]  # received sequence numbers as inclusive runs
    gaps: tuple[Gap, ...]
    buckets: tuple[int, ...]  # packets per bucket_ns from the result's origin_ns (empty: not asked, ReceiveSpec.buckets)
    detail_seq: str = ""  # base64 of int64 sequence numbers, in arrival order
    detail_rx_ns: str = ""  # base64 of int64 receive times, in arrival order

    @property
    def rate_pps(self) -> float:
        span = self.last_ns - self.first_ns
        return (self.received - 1) * 1e9 / span if span > 0 else 0.0

    def arrivals(self) -> tuple[tuple[int, int], ...]:
        """(sequence, receive time ns) of every packet, in arrival order (needs spec.detail)."""
        return tuple(zip(unpack_int64(self.detail_seq), unpack_int64(self.detail_rx_ns)))


@dataclass(frozen=True)
class ReceiveResult:
    protocol: str
    port: int
    origin_ns: int  # CLOCK_REALTIME when the receiver became ready; buckets start here
    end_ns: int
    bucket_ns: int
    stop_reason: str
    flows: tuple[FlowReceived, ...]
    probes: int = 0
    malformed: int = 0
    captured: tuple[str, ...] = ()  # hex of raw IPv4 packets

    @property
    def packets(self) -> int:
        return sum(f.received for f in self.flows)

    def flow(self, key: int) -> FlowReceived:
        for f in self.flows:
            if f.key == key:
                return f
        raise TrafficError(f"no flow with key {key} at the receiver (have {[f.key for f in self.flows]})")


def losses(sent: SendResult, received: ReceiveResult) -> dict[int, int]:
    """Packets sent but not received, per flow id (includes tail losses the receiver cannot see;
    excludes packets the sender's kernel refused: see FlowSent.refused)."""
    by_id = {f.flow_id: f for f in received.flows}
    return {s.flow_id: s.packets - (by_id[s.flow_id].unique if s.flow_id in by_id else 0) for s in sent.flows}


# ---------------------------------------------------------------------------- many namespaces, one process


@dataclass(frozen=True)
class SendGroupResult:
    results: tuple[SendResult, ...]  # in the order of the specs


@dataclass(frozen=True)
class ReceiveGroupResult:
    results: tuple[ReceiveResult, ...]  # in the order of the specs


# ---------------------------------------------------------------------------- TCP


@dataclass(frozen=True)
class TcpStream:
    local: str  # "addr:port"
    remote: str
    bytes: int
    start_ns: int
    end_ns: int
    max_gap_ns: int = 0  # the server's longest wait between two reads of this stream (a stall)
    gap_start_ns: int = 0  # when that wait began
    stalls: tuple[tuple[int, int], ...] = ()  # every wait over STALL_RECORD_MS: (start_ns, length_ns)
    # the client's: its kernel's retransmission timeout, at the start and at each change of a step
    # or more (time_ns, rto_us, backoff; backoff > 0: a timeout fired and doubled it) ...
    rto: tuple[tuple[int, int, int], ...] = ()
    retransmits: tuple[int, ...] = ()  # ... and when its retransmission count grew (time_ns)


@dataclass(frozen=True)
class TcpResult:
    role: Literal["server", "client"]
    streams: tuple[TcpStream, ...]
    start_ns: int
    end_ns: int
    tool: str = "fablab"  # or "iperf3"

    @property
    def bytes(self) -> int:
        return sum(s.bytes for s in self.streams)

    @property
    def duration_s(self) -> float:
        return (self.end_ns - self.start_ns) / 1e9

    @property
    def gbps(self) -> float:
        return self.bytes * 8 / 1e9 / self.duration_s if self.end_ns > self.start_ns else 0.0


# ---------------------------------------------------------------------------- the arrivals of a flow, packed for JSON


def pack_int64(values: array) -> str:
    return base64.b64encode(values.tobytes()).decode("ascii")


def unpack_int64(text: str) -> array:
    values = array("q")
    values.frombytes(base64.b64decode(text))
    return values
