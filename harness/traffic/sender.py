"""Send RoCEv2 and UDP flows from the network namespace this process runs in.

RoCEv2 goes out of one raw IPv4 socket (IP_HDRINCL): the kernel routes each packet, so
the egress NIC, ECMP choice and neighbour resolution are the fabric's own, while the
bytes stay exactly ours. UDP flows use one kernel UDP socket each.

    nsenter --net=/run/netns/NS -- python -m harness.traffic.sender [--group] [--spec FILE|-]

With --group the spec is a SendGroupSpec: one process sends for senders in many
namespaces (a collective's 128 GPUs), opening each one's sockets in its namespace.
"""
from __future__ import annotations

import ctypes
import errno
import os
import select
import socket
import struct
import threading
import time
from collections.abc import Callable, Sequence

from harness.plumbing import wait
from harness.plumbing.namespaces import entered
from harness.plumbing.priority import TRAFFIC
from harness.traffic.flows import RoceFlow, SendGroupSpec, SendSpec, TrafficError, UdpFlow, from_json
from harness.traffic.neighwatch import NeighbourWatch
from harness.traffic.process import say, serve
from harness.traffic.results import FlowSent, SendGroupResult, SendResult
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

    def __init__(self, flow: RoceFlow, src: str, ttl: int, sock: socket.socket, counters: _Counters) -> None:
        self.flow = flow
        self.sport = flow.sport if flow.sport is not None else roce_sport(flow.src_qp, flow.dst_qp)
        templates: dict[int, RoceTemplate] = {}
        for op in opcodes_of(flow):
            if op not in templates:
                templates[op] = RoceTemplate(RoceShape(
                    src=src, dst=flow.dst, dst_qp=flow.dst_qp, opcode=op, sport=self.sport,
                    payload_len=flow.payload_len, flow_id=flow.flow_id, ip_id=(flow.flow_id & 0xFFFF) or 1,
                    ttl=ttl, dscp=flow.dscp, ecn=flow.ecn, dma_len=flow.payload_len * flow.message_packets))
        self._fills = [templates[op].fill for op in opcodes_of(flow)]
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


def _prime(emitters: Sequence[_Emitter], watches: Sequence[NeighbourWatch], timeout_s: float) -> bool:
    """Send a probe on every 5-tuple and wait until no next hop is still being resolved.

    Packets the kernel queues for an unresolved neighbour beyond its small queue are
    dropped, which would show up as loss on the first packets of a fast run.
    """
    resend = 0.0

    def resolved() -> bool:
        nonlocal resend
        if time.monotonic() >= resend:  # the probes again every 50 ms while a next hop is unresolved
            for emitter in emitters:
                emitter.probe()
            resend = time.monotonic() + 0.05
        return not any(w.resolving() for w in watches)

    return wait.within(resolved, timeout_s, interval=0.001) is not None


def _wait_until_wall(start_at_ns: int) -> None:
    """Until the wall-clock moment every sender of a run starts at (a schedule, not a wait)."""
    wait.pause_until(time.monotonic() + (start_at_ns - time.time_ns()) / 1e9)


def _run_fast(emits: Sequence[Callable[[int, int], None]], orders: Sequence[Sequence[int]], count: int) -> None:
    time_ns = time.time_ns
    pairs = list(zip(emits, orders))
    for i in range(count):
        for emit, order in pairs:
            seq = order[i]
            if seq >= 0:
                emit(seq, time_ns())


def _go_realtime() -> bool:
    """SCHED_FIFO at a modest priority: the loop sleeps between slots, so it leaves the CPU to
    others, but wakes on time when it is due."""
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(TRAFFIC))
    except (OSError, AttributeError):
        return False
    return True


def _tighten_timer_slack() -> None:
    """Ask for 1 us timer slack (Linux prctl PR_SET_TIMERSLACK): with the default 50 us every
    short sleep between slots overshoots by about that much."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_TIMERSLACK, 1000, 0, 0, 0)
    except (OSError, AttributeError):
        pass  # pacing still holds the average rate, with more jitter


def _run_paced(emits: Sequence[Callable[[int, int], None]], orders: Sequence[Sequence[int]], count: int,
               rate_pps: float, stop: threading.Event | None = None,
               per_slot: bool = False) -> tuple[int, tuple[tuple[int, int], ...]]:
    """Slot k of all flows' interleaved packets is due at start + k * step, from one fixed origin
    so that sleep overshoot never accumulates: a late packet goes out at once and the
    next ones are back on schedule. Returns the worst lateness in ns, and the spans (wall
    clock, due..sent) where a packet went out more than one of its flow's slots late: a loss
    window measured across such a span says as much about the sender as about the fabric."""
    _tighten_timer_slack()
    time_ns, clock, sleep = time.time_ns, time.perf_counter_ns, time.sleep
    flows = len(emits)
    slot_ns = 1e9 / rate_pps
    step_ns = 1e9 / (rate_pps * flows)
    max_lag = 0
    spans: list[list[int]] = []
    start = clock()
    wall_offset = time_ns() - start  # perf_counter -> CLOCK_REALTIME, for the spans
    stopping = stop.is_set if stop is not None else (lambda: False)
    for k in range(count * flows):
        i, j = divmod(k, flows)
        if j == 0 and stopping():  # a whole round at a time: every flow ends on the same slot
            break
        seq = orders[j][i]
        if seq < 0:
            continue
        due = start + int(i * slot_ns if per_slot else k * step_ns)
        now = clock()
        if now < due:
            sleep((due - now) / 1e9)  # the sender's pacing schedule in ns, not a wait
        else:
            lag = now - due
            if lag > max_lag:
                max_lag = lag
            if lag > slot_ns:
                if spans and due + wall_offset <= spans[-1][1]:
                    spans[-1][1] = now + wall_offset
                elif len(spans) < _MAX_LAG_SPANS:
                    spans.append([due + wall_offset, now + wall_offset])
        emits[j](seq, time_ns())
    return max_lag, tuple((a, b) for a, b in spans)


SENDING = "SENDING"  # on stderr when the first packet is due: what a timed experiment waits for


def send(spec: SendSpec, stop: threading.Event | None = None,
         on_start: Callable[[], None] | None = None) -> SendResult:
    """Send `spec` from the current network namespace; blocks until done, or until `stop` is
    set (a paced sender then ends after its current round, and reports what it sent).
    on_start runs when the sending loop begins, after priming and the start time."""
    return send_many([(None, spec)], stop, on_start)[0]


class _Member:
    """One member's sockets and flows, opened in its namespace."""

    def __init__(self, spec: SendSpec) -> None:
        self.spec = spec
        self.counters = _Counters()
        self.emitters: list[_Emitter] = []
        self.raw: socket.socket | None = None
        self.watch: NeighbourWatch | None = None
        try:
            self._open()
        except BaseException:
            self.close()
            raise

    def _open(self) -> None:
        spec = self.spec
        if any(isinstance(f, RoceFlow) for f in spec.flows):
            try:
                self.raw = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)
            except PermissionError as exc:
                raise SenderError("raw sockets need CAP_NET_RAW (run as root)") from exc
            if spec.device:
                _bind_device(self.raw, spec.device)
        if spec.prime:
            self.watch = NeighbourWatch()
        sources: dict[str, str] = {}
        for flow in spec.flows:
            if not flow.src and flow.dst not in sources:
                sources[flow.dst] = resolve_source(flow.dst, spec.device)
            src = flow.src or sources[flow.dst]
            if isinstance(flow, RoceFlow):
                assert self.raw is not None
                self.emitters.append(_RoceEmitter(flow, src, spec.ttl, self.raw, self.counters))
            else:
                self.emitters.append(_UdpEmitter(flow, src, spec.ttl, spec.device, self.counters))

    def close(self) -> None:
        for e in self.emitters:
            e.close()
        for sock in (self.raw, self.watch):
            if sock is not None:
                sock.close()


def send_many(members: Sequence[tuple[str | None, SendSpec]], stop: threading.Event | None = None,
              on_start: Callable[[], None] | None = None) -> list[SendResult]:
    """Send each member's flows from its network namespace (None: the current one), all in one
    interleaved schedule: the members share packets, rate, duration, start time and priming
    (SendGroupSpec checks it). One result per member, in order."""
    opened: list[_Member] = []
    try:
        for ns, spec in members:
            with entered(ns):
                try:
                    opened.append(_Member(spec))
                except TrafficError as exc:
                    raise SenderError(f"in netns {ns}: {exc}" if ns else str(exc)) from exc
        lead = opened[0].spec
        emitters = [e for m in opened for e in m.emitters]
        watches = [m.watch for m in opened if m.watch is not None]
        primed = _prime(emitters, watches, lead.prime_timeout_s) if lead.prime else True
        count = lead.packets_per_flow
        orders = [send_order(count, e.flow.omit, e.flow.late) for e in emitters]
        emits = [e.emit for e in emitters]
        realtime = lead.realtime and _go_realtime()
        if lead.start_at_ns is not None:
            _wait_until_wall(lead.start_at_ns)
        start_ns = time.time_ns()
        if on_start is not None:
            on_start()
        max_lag, lag_spans = 0, ()
        if lead.rate_pps is None:
            _run_fast(emits, orders, count)
        else:
            max_lag, lag_spans = _run_paced(emits, orders, count, lead.rate_pps, stop, lead.per_slot)
        end_ns = time.time_ns()
        return [SendResult(tuple(e.result() for e in m.emitters), start_ns, end_ns, max_lag, m.counters.retries,
                           primed, realtime, lag_spans) for m in opened]
    finally:
        for m in opened:
            m.close()


def _run(spec: SendSpec | SendGroupSpec, stop: threading.Event) -> SendResult | SendGroupResult:
    if isinstance(spec, SendGroupSpec):
        return SendGroupResult(tuple(send_many(list(zip(spec.netns, spec.specs)), stop, lambda: say(SENDING))))
    return send(spec, stop, lambda: say(SENDING))


def main(argv: Sequence[str] | None = None) -> int:
    return serve("harness.traffic.sender", __doc__,
                 lambda text, group: from_json(SendGroupSpec if group else SendSpec, text), _run, argv, group=True)


if __name__ == "__main__":
    raise SystemExit(main())
