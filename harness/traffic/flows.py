"""What a traffic run is asked to do: flows, and the specs of senders, receivers and TCP ends;
and the JSON form specs and results (`results`) take between processes.

Specs and results are frozen dataclasses everywhere in the library; JSON exists only at
the process boundary, where a sender or receiver runs inside a lab's namespace.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal, TypeVar, Union

from harness.core.codec import CodecError, from_plain, to_plain
from harness.core.errors import HarnessError

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


@dataclass(frozen=True)
class SendSpec:
    """What one sender process sends.

    As fast as possible (rate_pps None): `packets` per flow, round-robin across flows.
    Constant rate: rate_pps per flow, for `packets` per flow or `duration_s`.
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

    def __post_init__(self) -> None:
        problems: list[str] = []
        if not self.flows:
            problems.append("no flows")
        if len({f.flow_id for f in self.flows}) != len(self.flows):
            problems.append("flow ids must be unique")
        if self.rate_pps is None and self.packets is None:
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
