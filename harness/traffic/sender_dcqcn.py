"""The DCQCN sender: each RoCEv2 flow paced at its own reaction point's rate (harness.traffic.dcqcn),
the CNPs sent to this namespace read while sending (SendSpec.dcqcn). harness.traffic.sender runs
it in place of its common paced schedule when a spec asks for DCQCN."""
from __future__ import annotations

import ctypes
import heapq
import select
import socket
import struct
import threading
import time
from collections.abc import Callable, Sequence
from typing import Protocol

from harness.traffic.dcqcn import CNP_OPCODE, RateTrace, ReactionPoint, parse_cnp
from harness.traffic.flows import ROCE_PORT, DcqcnParams, RoceFlow
from harness.traffic.results import FlowDcqcn
from harness.traffic.emitters import _MAX_LAG_SPANS, SenderError, _bind_device, _Emitter, _RoceEmitter, _tighten_timer_slack


class _Member(Protocol):
    """What this loop needs of a sender's member (harness.traffic.sender._Member)."""

    emitters: list[_Emitter]
    port: _Port | None
    cnp: socket.socket | None
    cnps_unmatched: int

# Bytes a port's shaper counts beyond the IP packet: the Ethernet header (the lab's htb shapers
# count skb->len at egress, which has no preamble, FCS or gap). DCQCN's rates are of these frames.
_ETH_HEADER = 14
# How often the loop looks for CNPs, the stop request, the end of the run and the reaction
# points' timers while it is busy sending (an idle loop waits on the CNP sockets instead).
# 0.5 ms: a CNP is acted on within that, a sliver of the scaled CNP interval (8 ms at 2000).
_POLL_NS = 500_000
# Waits longer than this block on the CNP sockets (epoll, millisecond timeouts), shorter ones sleep;
# none is longer than the cap, so that a stop request is seen.
_LONG_WAIT_NS = 2_000_000
_LONG_WAIT_CAP_NS = 50_000_000
_TRACE_SAMPLES = 200
_SO_ATTACH_FILTER = 26
# Classic BPF over an IPv4 packet (what a raw IPv4 socket's filter sees): accept a first (or
# only) fragment of UDP to port 4791 whose BTH opcode is a CNP's, drop everything else. The
# socket is IPPROTO_UDP already; its kernel filter keeps the RoCE data and every other UDP
# packet delivered here out of this process.
_CNP_FILTER = (
    (0x28, 0, 0, 6),  # ldh [6]: flags and fragment offset
    (0x45, 6, 0, 0x1FFF),  # jset #0x1fff -> drop: a later fragment has no UDP header
    (0xB1, 0, 0, 0),  # ldxb 4*([0]&0xf): X = IP header length
    (0x48, 0, 0, 2),  # ldh [x+2]: UDP destination port
    (0x15, 0, 3, ROCE_PORT),  # jeq #4791, else drop
    (0x50, 0, 0, 8),  # ldb [x+8]: BTH opcode
    (0x15, 0, 1, CNP_OPCODE),  # jeq #0x81, else drop
    (0x06, 0, 0, 0xFFFF),  # ret: accept
    (0x06, 0, 0, 0),  # ret: drop
)


def open_cnp_socket(device: str | None = None) -> socket.socket:
    """A non-blocking socket that receives the CNPs sent to this namespace (to `device` only, if
    given). A raw IPv4 socket for UDP gets a copy of each UDP packet delivered here, before UDP
    takes it: the RoCE receiver's socket bound to 4791 in the same namespace (a collective's
    GPU both sends and receives) still gets every packet, CNPs included, as it did. Forwarded
    and outgoing packets never reach it."""
    try:
        sock = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_UDP)
    except PermissionError as exc:
        raise SenderError("receiving CNPs needs CAP_NET_RAW (run as root)") from exc
    try:
        code = b"".join(struct.pack("HBBI", *insn) for insn in _CNP_FILTER)
        program = ctypes.create_string_buffer(code, len(code))
        fprog = struct.pack("HL", len(_CNP_FILTER), ctypes.addressof(program))  # struct sock_fprog
        sock.setsockopt(socket.SOL_SOCKET, _SO_ATTACH_FILTER, fprog)
        if device:
            _bind_device(sock, device)
        sock.setblocking(False)
        while True:  # what came before the filter was attached
            try:
                sock.recv(65535)
            except BlockingIOError:
                break
    except OSError as exc:
        sock.close()
        raise SenderError(f"cannot open the CNP socket: {exc}") from exc
    except BaseException:
        sock.close()
        raise
    return sock


class _Port:
    """A NIC's port: its QPs share its line rate, one frame after another, as a NIC's scheduler
    arbitrates between its QPs' rate limiters."""

    __slots__ = ("params", "free_at")

    def __init__(self, params: DcqcnParams) -> None:
        self.params = params
        self.free_at = 0

    def sent(self, nbytes: int, now: int) -> None:
        interval = nbytes * 8e9 / self.params.line_rate_bps
        # No credit for idle time beyond one frame: a port that waited does not burst after.
        self.free_at = int(max(self.free_at, now - interval) + interval)


class _PacedFlow:
    """One RoCE flow under DCQCN: its reaction point, its schedule (each flow its own next-due
    time) and its rate trace."""

    __slots__ = ("emitter", "port", "order", "index", "lengths", "rp", "trace", "due", "base", "last_bits",
                 "version", "key", "slot", "trace_end")

    def __init__(self, emitter: _Emitter, port: _Port | None, order: Sequence[int] | None) -> None:
        assert isinstance(emitter, _RoceEmitter) and port is not None
        flow = emitter.flow
        assert isinstance(flow, RoceFlow)
        self.emitter, self.port, self.order, self.index = emitter, port, order, 0
        self.lengths = [n + _ETH_HEADER for n in emitter.lengths]
        self.rp = ReactionPoint(port.params)
        self.trace = RateTrace(_TRACE_SAMPLES)
        self.due = 0  # when its next packet may go (the pacing clock, ns)
        self.base = 0  # when its last packet counted as sent, for a rate change to move `due`
        self.last_bits = 0
        self.version = 0  # heap entries of an older version are stale
        self.key = (socket.inet_aton(flow.dst), flow.dst_qp)  # what a CNP for it names
        self.slot = 0  # its index in the run's flows
        self.trace_end = 0  # ns from the run's start to its end

    def more(self) -> bool:
        return self.order is None or self.index < len(self.order)

    def send(self, now: int, clock: Callable[[], int]) -> int:
        """Send its next packet (or leave its slot empty: an omitted one); returns when it left."""
        i = self.index
        self.index += 1
        seq = self.order[i] if self.order is not None else i
        lengths = self.lengths
        nbytes = lengths[(seq if seq >= 0 else i) % len(lengths)]
        if seq >= 0:
            self.emitter.emit(seq, time.time_ns())
            sent = clock()  # later than now if the socket pushed back (a paused NIC)
            self.rp.on_sent(nbytes, sent)
            self.port.sent(nbytes, sent)
        else:
            sent = now
        bits = nbytes * 8
        interval = bits * 1e9 / self.rp.rate_bps
        # As the port: a flow that fell behind (pushed back, or a late wake-up) catches up by at
        # most one packet, not with a burst at line rate.
        self.base = int(max(self.due, sent - interval))
        self.last_bits = bits
        self.due = int(self.base + interval)
        return sent

    def rescheduled(self) -> bool:
        """After its rate changed between packets: move its next packet to the new rate (a cut
        delays it, a recovery brings it forward). True if the due time moved."""
        if not self.last_bits:
            return False  # nothing sent yet: it starts on time
        due = int(self.base + self.last_bits * 1e9 / self.rp.rate_bps)
        if due == self.due:
            return False
        self.due = due
        self.version += 1
        return True

    def outcome(self) -> FlowDcqcn:
        rp = self.rp
        return FlowDcqcn(rp.cnps, rp.rate_bps, rp.lowest_bps, rp.p.line_rate_bps, rp.p.time_scale,
                         self.trace.close(self.trace_end, rp.rate_bps))


class _Lag:
    """Spans (wall clock, due..sent) where a packet left more than one of its flow's intervals
    late, merged, as `_run_paced` reports them."""

    def __init__(self, wall_offset: int) -> None:
        self.wall_offset = wall_offset
        self.max = 0
        self.spans: list[list[int]] = []

    def note(self, due: int, now: int, interval: float) -> None:
        lag = now - due
        if lag > self.max:
            self.max = lag
        if lag > interval:
            a, b = due + self.wall_offset, now + self.wall_offset
            if self.spans and a <= self.spans[-1][1]:
                self.spans[-1][1] = b
            elif len(self.spans) < _MAX_LAG_SPANS:
                self.spans.append([a, b])


def _paced(members: Sequence[_Member], orders: Sequence[Sequence[int]] | None) -> list[list[_PacedFlow]]:
    """Each member's flows under DCQCN, on its NIC's port; `orders` None: a run by duration,
    sequence numbers counting on."""
    paced: list[list[_PacedFlow]] = []
    at = 0
    for m in members:
        paced.append([_PacedFlow(e, m.port, orders[at + j] if orders is not None else None)
                      for j, e in enumerate(m.emitters)])
        at += len(m.emitters)
    return paced


def _run_dcqcn(members: Sequence[_Member], paced: Sequence[Sequence[_PacedFlow]], duration_s: float | None,
               stop: threading.Event | None) -> tuple[int, tuple[tuple[int, int], ...]]:
    """Each flow goes when its own next packet is due at its reaction point's rate, and its port
    is free; CNPs are read between packets and cut their flow's rate at once. Ends when every
    flow has sent its packets, at duration_s, or when `stop` is set. Returns the worst lateness
    and the lag spans, as `_run_paced` does."""
    _tighten_timer_slack()
    clock = time.perf_counter_ns
    flows = [f for member in paced for f in member]
    by_key = [{f.key: f for f in member} for member in paced]
    by_fd = {m.cnp.fileno(): (k, m) for k, m in enumerate(members) if m.cnp is not None}
    start = clock()
    end = start + int(duration_s * 1e9) if duration_s is not None else 1 << 62
    if duration_s is not None:
        for f in flows:
            f.trace.step_ns = max(1, int(duration_s * 1e9) // (_TRACE_SAMPLES - 2))
    lag = _Lag(time.time_ns() - start)
    stopping = stop.is_set if stop is not None else (lambda: False)
    buf = bytearray(2048)
    heap: list[tuple[int, int, int]] = []  # (due, flow, version): a min-heap of next-due times
    for i, f in enumerate(flows):
        f.slot, f.due = i, start
        if f.more():
            heap.append((start, i, 0))
    heapq.heapify(heap)

    def moved(f: _PacedFlow) -> None:
        if f.rescheduled() and f.more():
            heapq.heappush(heap, (f.due, f.slot, f.version))

    def drain(ready: list[tuple[int, int]], now: int) -> None:
        for fd, _ in ready:
            k, m = by_fd[fd]
            assert m.cnp is not None
            keys = by_key[k]
            while True:
                try:
                    n = m.cnp.recv_into(buf)
                except BlockingIOError:
                    break
                cnp = parse_cnp(buf, n)
                f = keys.get(cnp) if cnp is not None else None
                if f is None:
                    m.cnps_unmatched += 1
                    continue
                f.rp.on_cnp(now)
                f.trace.add(now - start, f.rp.rate_bps)
                moved(f)

    with select.epoll() as poller:
        for fd in by_fd:
            poller.register(fd, select.EPOLLIN)
        next_poll = start
        while heap:
            now = clock()
            if now >= next_poll:
                if now >= end or stopping():
                    break
                drain(poller.poll(0), now)
                for f in flows:  # the rate-increase timers, between packets (alpha updates lazily)
                    if f.rp.next_increase_ns <= now:
                        f.rp.advance(now)
                        moved(f)
                    f.trace.add(now - start, f.rp.rate_bps)  # a flow that sends seldom is traced too
                next_poll = now + _POLL_NS
                continue  # the heap may have changed
            due, i, version = heap[0]
            f = flows[i]
            if version != f.version:
                heapq.heappop(heap)
                continue
            at = max(due, f.port.free_at)
            if now < at:
                wake = min(at, end, now + _LONG_WAIT_CAP_NS)
                if wake - now > _LONG_WAIT_NS:
                    # Slow flows: block on the CNP sockets (waking on one) until the next packet,
                    # the next rate increase or the end, and look at everything on waking.
                    wake = min(wake, min(g.rp.next_increase_ns for g in flows))
                    if wake - now > _LONG_WAIT_NS:
                        poller.poll((wake - now - 1_000_000) / 1e9)
                        next_poll = 0
                        continue
                time.sleep(max(0, min(wake, next_poll) - now) / 1e9)  # the pacing schedule, not a wait
                continue
            heapq.heappop(heap)
            sent = f.send(now, clock)
            lag.note(at, sent, f.last_bits * 1e9 / f.rp.rate_bps)
            f.trace.add(sent - start, f.rp.rate_bps)
            if f.more():
                heapq.heappush(heap, (f.due, i, f.version))
    finished = clock()
    for f in flows:
        f.rp.advance(finished)
        f.trace_end = finished - start
    return lag.max, tuple((a, b) for a, b in lag.spans)


