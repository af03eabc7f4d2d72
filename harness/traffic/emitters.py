"""How a sender puts one flow's packets on the wire and keeps its account: a RoCEv2 flow through
the sender's raw IPv4 socket (a template per opcode), a UDP flow through a socket of its own;
a send the kernel refuses for lack of buffers (a NIC paused by PFC) waits, then counts as
refused. Shared by the common paced schedule (harness.traffic.sender) and DCQCN's
(harness.traffic.sender_dcqcn)."""
from __future__ import annotations

import ctypes
import errno
import select
import socket
import struct
import time
from collections.abc import Sequence

from harness.plumbing import wait
from harness.traffic.flows import RoceFlow, TrafficError, UdpFlow
from harness.traffic.results import FlowSent
from harness.traffic.roce import (FABLAB_HEADER, FABLAB_MAGIC, PROBE_MAGIC, RC, RDMA_WRITE_FIRST,
                                  RDMA_WRITE_LAST, RDMA_WRITE_MIDDLE, RDMA_WRITE_ONLY, SEND_FIRST, SEND_LAST,
                                  SEND_MIDDLE, SEND_ONLY, UC, RoceShape, RoceTemplate, roce_sport)

_SEQ_TS = struct.Struct("!QQ")
_SEQ_AT = 8  # seq and timestamp follow magic and flow id in the fablab header
_PR_SET_TIMERSLACK = 29
# A send the kernel refuses for lack of buffers is retried this long before it counts as dropped.
_ENOBUFS_PATIENCE_NS = 20_000_000
_MAX_LAG_SPANS = 10_000



class SenderError(TrafficError):
    """The sender could not set up its sockets or send."""


def opcodes_of(flow: RoceFlow) -> tuple[int, ...]:
    """Opcode of each packet position within a message."""
    transport = RC if flow.transport == "RC" else UC
    if flow.op == "write":
        first, middle, last, only = RDMA_WRITE_FIRST, RDMA_WRITE_MIDDLE, RDMA_WRITE_LAST, RDMA_WRITE_ONLY
    else:
        first, middle, last, only = SEND_FIRST, SEND_MIDDLE, SEND_LAST, SEND_ONLY
    n = flow.message_packets
    ops = (only,) if n == 1 else (first,) + (middle,) * (n - 2) + (last,)
    return tuple(transport + op for op in ops)


def send_order(count: int, omit: Sequence[int], late: Sequence[int]) -> Sequence[int]:
    """Sequence number sent in each slot; -1 leaves the slot empty (an omitted packet)."""
    if not omit and not late:
        return range(count)
    order = list(range(count))
    for seq in late:
        if seq + 1 < count:
            order[seq], order[seq + 1] = order[seq + 1], order[seq]
    dropped = set(omit)
    return [-1 if s in dropped else s for s in order]


def resolve_source(dst: str, device: str | None) -> str:
    """The source address the kernel would pick towards dst (connecting UDP sends nothing)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        if device:
            _bind_device(probe, device)
        try:
            probe.connect((dst, 9))
        except OSError as exc:
            raise SenderError(f"no route to {dst}{f' via {device}' if device else ''}: {exc}") from exc
        return probe.getsockname()[0]


def _bind_device(sock: socket.socket, device: str) -> None:
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_BINDTODEVICE, device.encode())
    except OSError as exc:
        raise SenderError(f"cannot bind to device {device!r}: {exc}") from exc


class _Counters:
    def __init__(self) -> None:
        self.retries = 0


def _send_hard(sock: socket.socket, buf: bytes | bytearray, addr: tuple[str, int], counters: _Counters) -> bool:
    """The slow path after a failed send: wait out full buffers, give up on unroutable packets.

    A failover can leave the sender itself without a route for a moment; that packet is
    lost like any other and the run goes on.
    """
    sent = False
    start = time.monotonic()
    patience = _ENOBUFS_PATIENCE_NS / 1e9

    def settled() -> bool:  # sent, or unroutable; blocks until the socket is writable between tries
        nonlocal sent
        try:
            sock.sendto(buf, addr)
            sent = True
            return True
        except OSError as exc:
            if exc.errno in (errno.ENETUNREACH, errno.EHOSTUNREACH, errno.ENETDOWN, errno.EPERM):
                return True
            if exc.errno not in (errno.ENOBUFS, errno.EAGAIN):
                raise SenderError(f"send to {addr[0]} failed: {exc}") from exc
        counters.retries += 1
        select.select([], [sock], [], max(0.0, start + patience - time.monotonic()))
        return False

    wait.within(settled, patience, since=start, interval=0)
    return sent


class _Emitter:
    """Sends one flow's packets and keeps its account; subclasses say how a packet is filled."""

    flow: RoceFlow | UdpFlow
    sport: int
    _sock: socket.socket
    _addr: tuple[str, int]
    _probe: bytes

    def _setup(self, sock: socket.socket, addr: tuple[str, int], counters: _Counters) -> None:
        self._sock, self._addr, self._counters = sock, addr, counters
        self.sent = 0
        self.refused = 0
        self.last_seq = -1
        self.first_ns = 0
        self.last_ns = 0

    def fill(self, seq: int, ts_ns: int) -> bytes | bytearray:
        raise NotImplementedError

    def emit(self, seq: int, ts_ns: int) -> None:
        buf = self.fill(seq, ts_ns)
        try:
            self._sock.sendto(buf, self._addr)
        except OSError:
            if not _send_hard(self._sock, buf, self._addr, self._counters):
                self.refused += 1
                return
        if not self.sent:
            self.first_ns = ts_ns
        self.sent += 1
        self.last_seq = seq
        self.last_ns = ts_ns

    def probe(self) -> None:
        _send_hard(self._sock, self._probe, self._addr, self._counters)

    def close(self) -> None:
        """Only per-flow sockets are closed here; the shared raw socket is the sender's."""

    def result(self) -> FlowSent:
        dst_qp = self.flow.dst_qp if isinstance(self.flow, RoceFlow) else None
        return FlowSent(self.flow.flow_id, dst_qp, self.sport, self.sent, self.last_seq,
                        self.first_ns, self.last_ns, self.refused)


class _RoceEmitter(_Emitter):
    """One RoCEv2 flow: a template per opcode of its message, sent through the shared raw socket."""

    def __init__(self, flow: RoceFlow, src: str, ttl: int, sock: socket.socket, counters: _Counters,
                 ecn: int | None = None) -> None:
        self.flow = flow
        self.sport = flow.sport if flow.sport is not None else roce_sport(flow.src_qp, flow.dst_qp)
        templates: dict[int, RoceTemplate] = {}
        for op in opcodes_of(flow):
            if op not in templates:
                templates[op] = RoceTemplate(RoceShape(
                    src=src, dst=flow.dst, dst_qp=flow.dst_qp, opcode=op, sport=self.sport,
                    payload_len=flow.payload_len, flow_id=flow.flow_id, ip_id=(flow.flow_id & 0xFFFF) or 1,
                    ttl=ttl, dscp=flow.dscp, ecn=flow.ecn if ecn is None else ecn,
                    dma_len=flow.payload_len * flow.message_packets))
        self._fills = [templates[op].fill for op in opcodes_of(flow)]
        self.lengths = [len(templates[op]) for op in opcodes_of(flow)]  # IP bytes of each position
        self._probe = next(iter(templates.values())).probe()
        self._start_psn = flow.start_psn
        self._setup(sock, (flow.dst, 0), counters)

    def fill(self, seq: int, ts_ns: int) -> bytearray:
        fills = self._fills
        return fills[seq % len(fills)](self._start_psn + seq, seq, ts_ns)


class _UdpEmitter(_Emitter):
    """One UDP flow on its own kernel socket (its own source port)."""

    def __init__(self, flow: UdpFlow, src: str, ttl: int, device: str | None, counters: _Counters) -> None:
        self.flow = flow
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        if device:
            _bind_device(sock, device)
        sock.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, flow.dscp << 2)
        sock.setsockopt(socket.IPPROTO_IP, socket.IP_TTL, ttl)
        try:
            sock.bind((src, flow.sport))
        except OSError as exc:
            sock.close()
            raise SenderError(f"UDP flow {flow.flow_id}: cannot bind {src}:{flow.sport}: {exc}") from exc
        self.sport = sock.getsockname()[1]
        self._buf = bytearray(FABLAB_HEADER.pack(FABLAB_MAGIC, flow.flow_id, 0, 0).ljust(flow.payload_len, b"\0"))
        self._probe = FABLAB_HEADER.pack(PROBE_MAGIC, flow.flow_id, 0, 0).ljust(flow.payload_len, b"\0")
        self._setup(sock, (flow.dst, flow.dport), counters)

    def fill(self, seq: int, ts_ns: int) -> bytearray:
        _SEQ_TS.pack_into(self._buf, _SEQ_AT, seq, ts_ns)
        return self._buf

    def close(self) -> None:
        self._sock.close()



def _tighten_timer_slack() -> None:
    """Ask for 1 us timer slack (Linux prctl PR_SET_TIMERSLACK): with the default 50 us every
    short sleep between slots overshoots by about that much."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_TIMERSLACK, 1000, 0, 0, 0)
    except (OSError, AttributeError):
        pass  # pacing still holds the average rate, with more jitter
