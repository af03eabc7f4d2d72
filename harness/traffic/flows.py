"""What a traffic run is asked to do: flows, and the specs of senders, receivers and TCP ends;
and the JSON form specs and results (`results`) take between processes.

Specs and results are frozen dataclasses everywhere in the library; JSON exists only at
the process boundary, where a sender or receiver runs inside a lab's namespace.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypeVar, Union

from harness.core.codec import CodecError, from_plain, to_plain
from harness.core.errors import HarnessError

if TYPE_CHECKING:  # only for DcqcnParams.of: a sender process must not import the declarations
    from harness.core.declarations import Dcqcn

ROCE_PORT = 4791
UDP_PORT = 9000
TCP_PORT = 5201
PSN_SPACE = 1 << 24


class TrafficError(HarnessError):
    """Traffic could not be generated, received or accounted."""


class SpecError(TrafficError):
    """A traffic spec is invalid (caught before anything is sent)."""


def _check(problems: list[str], where: str) -> None:
    if problems:
        raise SpecError(f"{where}: " + "; ".join(problems))


def _check_faults(omit: tuple[int, ...], late: tuple[int, ...], problems: list[str]) -> None:
    if any(s < 0 for s in omit + late):
        problems.append("omit/late sequence numbers must be >= 0")
    if set(omit) & set(late):
        problems.append("a sequence number cannot be both omitted and late")


# ---------------------------------------------------------------------------- flows


@dataclass(frozen=True)
class RoceFlow:
    """One RoCEv2 QP's stream of RDMA WRITE (or SEND) packets to a destination QP.

    Sequence number s carries PSN start_psn + s. Faults for tests: `omit` lists sequence
    numbers never sent (a PSN gap at the receiver), `late` lists sequence numbers sent
    right after their successor (reordering).
    """

    flow_id: int
    dst: str
    dst_qp: int
    src_qp: int
    src: str | None = None  # None: the address the kernel's route to dst would use
    sport: int | None = None  # None: derived from src_qp as Linux rxe does
    transport: Literal["RC", "UC"] = "RC"
    op: Literal["write", "send"] = "write"
    message_packets: int = 1  # packets per message: 1 -> *_ONLY, else FIRST, MIDDLE.., LAST
    start_psn: int = 0
    payload_len: int = 64  # bytes after BTH/RETH, before ICRC; multiple of 4, >= 24
    dscp: int = 26
    ecn: int = 0
    omit: tuple[int, ...] = ()
    late: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        problems: list[str] = []
        if not 0 <= self.flow_id < 1 << 32:
            problems.append(f"flow_id {self.flow_id} does not fit in 32 bits")
        for name in ("dst_qp", "src_qp", "start_psn"):
            if not 0 <= getattr(self, name) < PSN_SPACE:
                problems.append(f"{name} {getattr(self, name)} does not fit in 24 bits")
        if self.sport is not None and not 0 < self.sport < 1 << 16:
            problems.append(f"sport {self.sport} is not a UDP port")
        if self.transport not in ("RC", "UC"):
            problems.append(f"transport {self.transport!r} is not RC or UC")
        if self.op not in ("write", "send"):
            problems.append(f"op {self.op!r} is not 'write' or 'send'")
        if self.message_packets < 1:
            problems.append("message_packets must be >= 1")
        if self.payload_len % 4 or not 24 <= self.payload_len <= 4096:
            problems.append(f"payload_len {self.payload_len} must be a multiple of 4 in 24..4096")
        if not 0 <= self.dscp < 64 or not 0 <= self.ecn < 4:
            problems.append(f"dscp {self.dscp} / ecn {self.ecn} out of range")
        _check_faults(self.omit, self.late, problems)
        _check(problems, f"RoceFlow {self.flow_id}")


@dataclass(frozen=True)
class UdpFlow:
    """Plain UDP datagrams carrying the same fablab header, through a kernel UDP socket."""

    flow_id: int
    dst: str
    dport: int = UDP_PORT
    sport: int = 0  # 0: the kernel picks an ephemeral port
    src: str | None = None
    payload_len: int = 64
    dscp: int = 0
    omit: tuple[int, ...] = ()
    late: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        problems: list[str] = []
        if not 0 <= self.flow_id < 1 << 32:
            problems.append(f"flow_id {self.flow_id} does not fit in 32 bits")
        if not 0 < self.dport < 1 << 16 or not 0 <= self.sport < 1 << 16:
            problems.append(f"ports {self.sport}->{self.dport} out of range")
        if not 24 <= self.payload_len <= 65000:
            problems.append(f"payload_len {self.payload_len} must be in 24..65000")
        if not 0 <= self.dscp < 64:
            problems.append(f"dscp {self.dscp} out of range")
        _check_faults(self.omit, self.late, problems)
        _check(problems, f"UdpFlow {self.flow_id}")


Flow = Union[RoceFlow, UdpFlow]


# ---------------------------------------------------------------------------- DCQCN


@dataclass(frozen=True)
class DcqcnParams:
    """DCQCN's reaction point (harness.traffic.dcqcn) as one sender's NIC runs it, already scaled
    to the lab: rates in bit/s divided by the time scale, times in ns multiplied by it, bytes as
    they are (`of` does the scaling from the declaration's `Dcqcn`). Rates are of Ethernet frames
    (IP packet + 14 bytes of Ethernet header, what the lab's port shapers count).

    It lives here, beside the other specs, because a SendSpec carries it to the sender process."""

    line_rate_bps: float  # the NIC's (scaled) rate: where every QP starts and what it never exceeds
    min_rate_bps: float  # rpg_min_rate
    ai_rate_bps: float  # rpg_ai_rate: additive increase
    hai_rate_bps: float  # rpg_hai_rate: hyper increase
    time_reset_ns: int  # rpg_time_reset: the rate-increase timer
    byte_reset: int  # rpg_byte_reset: the rate-increase byte counter
    threshold: int  # rpg_threshold: fast-recovery steps before additive increase
    min_dec_fac_pct: int  # rpg_min_dec_fac: a CNP leaves at least this share of the rate
    alpha_g: float  # dce_tcp_g as a fraction: the share alpha keeps at each update
    alpha_update_ns: int  # dce_tcp_rtt: how often alpha is updated
    initial_alpha: float  # initial_alpha_value as a fraction: alpha at a QP's first CNP
    time_scale: int = 1  # what the figures above were scaled by (stated with the results)

    def __post_init__(self) -> None:
        problems: list[str] = []
        for name in ("line_rate_bps", "min_rate_bps", "ai_rate_bps", "hai_rate_bps", "time_reset_ns",
                     "byte_reset", "alpha_update_ns", "time_scale"):
            if not getattr(self, name) > 0:
                problems.append(f"{name} must be > 0")
        if self.min_rate_bps > self.line_rate_bps:
            problems.append(f"min_rate_bps {self.min_rate_bps:g} is above line_rate_bps {self.line_rate_bps:g}")
        if self.threshold < 1:
            problems.append("threshold must be >= 1")
        if not 1 <= self.min_dec_fac_pct <= 100:
            problems.append(f"min_dec_fac_pct {self.min_dec_fac_pct} must be in 1..100")
        if not 0 < self.alpha_g < 1 or not 0 <= self.initial_alpha <= 1:
            problems.append(f"alpha_g {self.alpha_g:g} must be in (0, 1), initial_alpha {self.initial_alpha:g} "
                            "in [0, 1]")
        _check(problems, "DcqcnParams")

    @classmethod
    def of(cls, dcqcn: Dcqcn, time_scale: int, line_rate_bps: float) -> DcqcnParams:
        """The reaction point of a NIC whose scaled rate is `line_rate_bps` (its speed / time_scale),
        from the declared `Dcqcn` (mlx5's roce_rp units: Mbit/s, us, bytes, percent) and the lab's
        `Lossless.time_scale`. A declaration with DCQCN disabled has no reaction point: send
        without `dcqcn` then."""
        if not dcqcn.enabled:
            raise SpecError("DcqcnParams.of: DCQCN is disabled in the declaration (send with dcqcn=None)")
        if time_scale < 1:
            raise SpecError(f"DcqcnParams.of: time_scale {time_scale} must be >= 1")
        mbps = 1e6 / time_scale
        us = 1000 * time_scale
        return cls(line_rate_bps=float(line_rate_bps),
                   min_rate_bps=min(dcqcn.rpg_min_rate_mbps * mbps, float(line_rate_bps)),
                   ai_rate_bps=dcqcn.rpg_ai_rate_mbps * mbps, hai_rate_bps=dcqcn.rpg_hai_rate_mbps * mbps,
                   time_reset_ns=max(1, round(dcqcn.rpg_time_reset_us * us)), byte_reset=dcqcn.rpg_byte_reset,
                   threshold=dcqcn.rpg_threshold, min_dec_fac_pct=dcqcn.rpg_min_dec_fac_pct,
                   alpha_g=dcqcn.alpha_g, alpha_update_ns=max(1, round(dcqcn.alpha_update_us * us)),
                   initial_alpha=dcqcn.initial_alpha, time_scale=time_scale)


@dataclass(frozen=True)
class SendSpec:
    """What one sender process sends.

    As fast as possible (rate_pps None): `packets` per flow, round-robin across flows.
    Constant rate: rate_pps per flow, for `packets` per flow or `duration_s`.
    DCQCN (`dcqcn` set, RoCE flows only, no rate_pps): each flow paced at its own reaction
    point's rate (starting at the NIC's line rate, cut by the CNPs that come back for it), its
    packets sent ECT(0), until it has sent `packets` or `duration_s` has passed, the first of
    the two given; the flows share the NIC's line rate.
    """

    flows: tuple[Flow, ...]
    packets: int | None = None
    rate_pps: float | None = None
    duration_s: float | None = None
    device: str | None = None  # SO_BINDTODEVICE: force the egress NIC
    ttl: int = 64
    start_at_ns: int | None = None  # CLOCK_REALTIME: lines several senders up
    prime: bool = True  # probe each 5-tuple and wait for next-hop neighbours before sending
    prime_timeout_s: float = 3.0
    # SCHED_FIFO for the sending loop, so that a busy machine delays it less (a measurement of
    # loss windows wants the schedule kept); silently ordinary where not permitted
    realtime: bool = False
    # At a constant rate, every flow's packet of one slot leaves back to back: one wake-up per
    # slot instead of one per packet (23,000 a second for failover's 23 QPs at 1000 pps, which
    # under SCHED_FIFO left a loaded machine's routing daemons no CPU). Each flow keeps its rate.
    per_slot: bool = False
    dcqcn: DcqcnParams | None = None  # None: no congestion control (the modes above)

    def __post_init__(self) -> None:
        problems: list[str] = []
        if not self.flows:
            problems.append("no flows")
        if len({f.flow_id for f in self.flows}) != len(self.flows):
            problems.append("flow ids must be unique")
        if self.dcqcn is not None:
            _check_dcqcn(self, problems)
        elif self.rate_pps is None and self.packets is None:
            problems.append("as-fast-as-possible mode needs packets")
        if self.rate_pps is not None and self.rate_pps <= 0:
            problems.append("rate_pps must be > 0")
        if self.rate_pps is not None and self.packets is None and self.duration_s is None:
            problems.append("constant-rate mode needs packets or duration_s")
        if self.packets is not None and self.packets < 1:
            problems.append("packets must be >= 1")
        if self.duration_s is not None and self.duration_s <= 0:
            problems.append("duration_s must be > 0")
        if not 1 <= self.ttl <= 255:
            problems.append(f"ttl {self.ttl} out of range")
        _check(problems, "SendSpec")

    @property
    def packets_per_flow(self) -> int:
        if self.packets is not None:
            return self.packets
        assert self.rate_pps is not None and self.duration_s is not None
        return max(1, round(self.rate_pps * self.duration_s))


def _check_dcqcn(spec: SendSpec, problems: list[str]) -> None:
    if spec.rate_pps is not None:
        problems.append("dcqcn paces each flow at its own rate: give no rate_pps")
    if spec.packets is None and spec.duration_s is None:
        problems.append("dcqcn needs packets or duration_s")
    udp = [f.flow_id for f in spec.flows if not isinstance(f, RoceFlow)]
    if udp:
        problems.append(f"dcqcn paces RoCEv2 flows only: flows {udp} are UDP")
    if spec.packets is None and any(f.omit or f.late for f in spec.flows):
        problems.append("omit/late need packets (a dcqcn run by duration has no last sequence number)")
    # A CNP names its flow by the data receiver's address and QP: two flows to one QP would be one.
    keys = [(f.dst, f.dst_qp) for f in spec.flows if isinstance(f, RoceFlow)]
    if len(set(keys)) != len(keys):
        problems.append("with dcqcn, flows need distinct (dst, dst_qp): a CNP names its flow by them")


# ---------------------------------------------------------------------------- receiving


@dataclass(frozen=True)
class ReceiveSpec:
    """One receiver: a UDP socket on `port`; flows keyed by destination QP (RoCEv2) or flow id (UDP).

    It stops at the first of: duration_s after it is ready, quiet_s without data once data
    has arrived, expect_packets data packets received, or linger_s without any packet after
    SIGTERM/SIGINT (what is still crossing the lab then arrives).
    """

    protocol: Literal["roce", "udp"] = "roce"
    port: int = ROCE_PORT
    bind: str = "0.0.0.0"
    device: str | None = None
    duration_s: float = 30.0
    quiet_s: float | None = None
    expect_packets: int | None = None
    linger_s: float = 0.2
    bucket_ms: float = 10.0
    # Each flow's packets per bucket_ms, from the receiver's start to the flow's last packet: at
    # 97,280 QPs 30 s in, 290 million numbers (the receiver took minutes and 2.3 GB to make
    # them). False where nothing reads them: the flow's `buckets` is then empty.
    buckets: bool = True
    rcvbuf: int = 32 << 20
    capture: int = 0  # keep the first N raw IPv4 packets to the port (hex), for format checks
    detail: bool = False  # include every (sequence, receive time) pair, base64-packed
    # Wait this long after each drain, so packets are taken in batches, not one wake-up each;
    # receive times (latency) then carry up to this much delay. For loss measured from the
    # senders' timestamps (failover), where wake-ups per packet cost a loaded machine dearly.
    coalesce_ms: float = 0.0

    def __post_init__(self) -> None:
        problems: list[str] = []
        if self.protocol not in ("roce", "udp"):
            problems.append(f"protocol {self.protocol!r} is not 'roce' or 'udp'")
        if not 0 < self.port < 1 << 16:
            problems.append(f"port {self.port} out of range")
        if self.duration_s <= 0 or (self.quiet_s is not None and self.quiet_s <= 0) or self.linger_s <= 0:
            problems.append("duration_s, quiet_s and linger_s must be > 0")
        if self.bucket_ms <= 0:
            problems.append("bucket_ms must be > 0")
        if not 0 <= self.coalesce_ms <= 100:
            problems.append(f"coalesce_ms {self.coalesce_ms:g} out of range (0-100)")
        if self.capture < 0:
            problems.append("capture must be >= 0")
        _check(problems, "ReceiveSpec")


# ---------------------------------------------------------------------------- many namespaces, one process

# What every member of a send group shares: one interleaved schedule paces all their flows.
_SCHEDULE = ("packets", "rate_pps", "duration_s", "start_at_ns", "prime", "prime_timeout_s", "realtime",
             "per_slot")


def _check_group(netns: tuple[str, ...], specs: tuple[Any, ...], problems: list[str]) -> None:
    if not specs:
        problems.append("no members")
    if len(netns) != len(specs):
        problems.append(f"{len(netns)} namespaces for {len(specs)} specs")


@dataclass(frozen=True)
class SendGroupSpec:
    """Senders in many network namespaces (specs[i] in netns[i]), one process, one schedule."""

    netns: tuple[str, ...]
    specs: tuple[SendSpec, ...]

    def __post_init__(self) -> None:
        problems: list[str] = []
        _check_group(self.netns, self.specs, problems)
        for name in _SCHEDULE:
            values = {getattr(s, name) for s in self.specs}
            if len(values) > 1:
                problems.append(f"members must share {name} (one schedule paces them all), "
                                f"got {sorted(map(str, values))}")
        ids = [f.flow_id for s in self.specs for f in s.flows]
        if len(set(ids)) != len(ids):
            problems.append("flow ids must be unique across the members")
        # Each member's NIC has its own reaction points (its own line rate); the schedule is shared.
        if len({s.dcqcn is None for s in self.specs}) > 1:
            problems.append("members must all use dcqcn or none (one schedule paces them all)")
        _check(problems, "SendGroupSpec")


@dataclass(frozen=True)
class ReceiveGroupSpec:
    """Receivers in many network namespaces (specs[i] in netns[i]), one process."""

    netns: tuple[str, ...]
    specs: tuple[ReceiveSpec, ...]

    def __post_init__(self) -> None:
        problems: list[str] = []
        _check_group(self.netns, self.specs, problems)
        _check(problems, "ReceiveGroupSpec")


# ---------------------------------------------------------------------------- TCP


@dataclass(frozen=True)
class TcpServerSpec:
    """Accept `streams` connections and read each to EOF."""

    port: int = TCP_PORT
    bind: str = "0.0.0.0"
    streams: int = 1
    timeout_s: float = 60.0

    def __post_init__(self) -> None:
        _check([] if self.streams >= 1 and self.timeout_s > 0 else ["streams >= 1, timeout_s > 0"],
               "TcpServerSpec")


@dataclass(frozen=True)
class TcpClientSpec:
    """Send to dst:port over `streams` parallel connections: bytes_per_stream each, or for duration_s."""

    dst: str
    port: int = TCP_PORT
    streams: int = 1
    bytes_per_stream: int | None = None
    duration_s: float | None = None
    device: str | None = None
    sport: int = 0  # first source port (stream i uses sport + i); 0: ephemeral
    timeout_s: float = 60.0
    rate_mbps: float | None = None  # per stream, paced in 16 KiB writes; None: as fast as TCP goes

    def __post_init__(self) -> None:
        problems: list[str] = []
        if self.streams < 1:
            problems.append("streams must be >= 1")
        if self.rate_mbps is not None and not self.rate_mbps > 0:
            problems.append("rate_mbps must be > 0")
        if self.rate_mbps is not None and self.duration_s is None:
            problems.append("rate_mbps paces a duration_s transfer: give duration_s")
        if (self.bytes_per_stream is None) == (self.duration_s is None):
            problems.append("give exactly one of bytes_per_stream and duration_s")
        _check(problems, "TcpClientSpec")


# ---------------------------------------------------------------------------- JSON (harness.core.codec)

_KINDS: dict[str, type] = {"roce": RoceFlow, "udp": UdpFlow}
_KIND_OF = {cls: kind for kind, cls in _KINDS.items()}
T = TypeVar("T")


def to_dict(obj: Any) -> Any:
    """JSON-ready form of a spec or result; flows carry a "kind" tag."""
    return to_plain(obj, tags=_KIND_OF)


def to_json(obj: Any) -> str:
    return json.dumps(to_dict(obj), separators=(",", ":"))


def from_json(cls: type[T], text: str) -> T:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SpecError(f"{cls.__name__}: not JSON: {exc}") from exc
    return from_dict(cls, data)


def from_dict(cls: type[T], data: Any) -> T:
    try:
        return from_plain(cls, data, tags=_KINDS)
    except CodecError as exc:
        raise SpecError(str(exc)) from exc
