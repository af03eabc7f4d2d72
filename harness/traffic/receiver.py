"""Receive RoCEv2 or UDP flows in the network namespace this process runs in, and account them.

The receive loop only records (sequence, PSN, receive time, send time) per flow; loss,
reordering, gaps and rate buckets are computed once at the end.

    nsenter --net=/run/netns/NS -- python -m harness.traffic.receiver [--group] [--spec FILE|-]

prints `READY <port>` on stderr once bound, and the ReceiveResult as JSON on stdout. With
--group the spec is a ReceiveGroupSpec: one process receives for many namespaces (a
collective's 128 GPUs) in one loop, each socket opened in its own namespace; it prints
`READY <members>` once all are bound.
"""
from __future__ import annotations

import select
import signal
import socket
import struct
import threading
import time
from array import array
from collections.abc import Callable, Sequence

import numpy as np

from harness.plumbing.namespaces import entered
from harness.traffic.flows import ReceiveGroupSpec, ReceiveSpec, TrafficError, from_json
from harness.traffic.process import say, serve
from harness.traffic.results import FlowReceived, Gap, ReceiveGroupResult, ReceiveResult, pack_int64
from harness.traffic.roce import BTH_LEN, FABLAB_HEADER, FABLAB_MAGIC, ICRC_LEN, PROBE_MAGIC, PSN_MASK, payload_offset

READY = "READY"
_POLL_S = 0.05  # how often a receiver looks at its deadlines and stop request
_LINGER_POLL_S = 0.01  # and once stopping, so that it ends close to its linger
_BATCH = 1024  # packets drained from one socket before the others get a turn
_SO_RCVBUFFORCE = getattr(socket, "SO_RCVBUFFORCE", 33)  # Linux value; Python does not export it


class ReceiverError(TrafficError):
    """The receiver could not bind or capture."""


def _roce_layouts() -> list[struct.Struct]:
    """Per BTH opcode: one struct reading dest QP word, PSN word and fablab header at once."""
    layouts = []
    for opcode in range(256):
        skip = payload_offset(opcode) - BTH_LEN
        layouts.append(struct.Struct(f"!4xII{skip}x4sIQQ" if skip else "!4xII4sIQQ"))
    return layouts


class _Arrivals:
    """What arrived on one flow, in arrival order."""

    __slots__ = ("flow_id", "seq", "psn", "rx", "tx")

    def __init__(self, flow_id: int) -> None:
        self.flow_id = flow_id
        self.seq, self.psn, self.rx, self.tx = array("q"), array("q"), array("q"), array("q")


class _Capture(threading.Thread):
    """Keeps the first `count` raw IPv4 packets to the port: the only view that includes the IP header."""

    def __init__(self, port: int, count: int, device: str | None, stop: threading.Event) -> None:
        super().__init__(name="capture", daemon=True)
        try:
            self._sock = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_UDP)
        except PermissionError as exc:
            raise ReceiverError("capturing needs CAP_NET_RAW (run as root)") from exc
        if device:
            self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_BINDTODEVICE, device.encode())
        self._sock.settimeout(_POLL_S)
        self._port, self._count, self._halt = port, count, stop
        self.packets: list[bytes] = []

    def run(self) -> None:
        with self._sock:
            while len(self.packets) < self._count and not self._halt.is_set():
                try:
                    data = self._sock.recv(65535)
                except TimeoutError:
                    continue
                ihl = (data[0] & 0x0F) * 4
                if len(data) >= ihl + 8 and int.from_bytes(data[ihl + 2:ihl + 4], "big") == self._port:
                    self.packets.append(data)

    def discard(self) -> None:
        """Close the socket of a capture that never started (a started one closes its own)."""
        if self.ident is None:
            self._sock.close()


def _open(spec: ReceiveSpec) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        # RCVBUFFORCE goes past net.core.rmem_max, so bursts wait in the kernel instead of dropping.
        sock.setsockopt(socket.SOL_SOCKET, _SO_RCVBUFFORCE, spec.rcvbuf)
    except PermissionError:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, spec.rcvbuf)
    try:
        if spec.device:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_BINDTODEVICE, spec.device.encode())
        sock.bind((spec.bind, spec.port))
    except OSError as exc:
        sock.close()
        raise ReceiverError(f"cannot bind {spec.bind}:{spec.port}: {exc}") from exc
    sock.setblocking(False)
    return sock


class _Member:
    """One receiver: its socket (and capture), what arrived on it, and why it stopped."""

    def __init__(self, spec: ReceiveSpec, halt: threading.Event) -> None:
        self.spec = spec
        self.sock = _open(spec)
        try:
            self.capture = _Capture(spec.port, spec.capture, spec.device, halt) if spec.capture else None
        except BaseException:
            self.sock.close()
            raise
        self.flows: dict[int, _Arrivals] = {}
        self.probes = self.malformed = self.total = 0
        self.expect = spec.expect_packets or -1
        self.quiet_ns = int(spec.quiet_s * 1e9) if spec.quiet_s else 0
        self.linger_ns = int(spec.linger_s * 1e9)
        self.deadline = 0
        self.last_data = 0  # monotonic time of the last data packet, for quiet_s
        self.last_packet = 0  # of any packet, for the linger
        self.reason = ""
        self.end_ns = 0

    def close(self) -> None:
        self.sock.close()
        if self.capture is not None:
            self.capture.discard()


def receive(spec: ReceiveSpec, on_ready: Callable[[], None] | None = None,
            stop: threading.Event | None = None) -> ReceiveResult:
    """Receive until a stop condition of `spec` or `stop` is set; `on_ready` runs once bound."""
    return receive_many([(None, spec)], on_ready, stop)[0]


def receive_many(members: Sequence[tuple[str | None, ReceiveSpec]], on_ready: Callable[[], None] | None = None,
                 stop: threading.Event | None = None) -> list[ReceiveResult]:
    """Receive for every member in its network namespace (None: the current one), in one loop;
    `on_ready` runs once all are bound. Each stops on its own conditions; one result each."""
    stop = stop or threading.Event()
    halt = threading.Event()  # ends the capture threads
    opened: list[_Member] = []
    try:
        for ns, spec in members:
            with entered(ns):
                try:
                    opened.append(_Member(spec, halt))
                except TrafficError as exc:
                    raise ReceiverError(f"in netns {ns}: {exc}" if ns else str(exc)) from exc
        captures = [m.capture for m in opened if m.capture is not None]
        for capture in captures:
            capture.start()
        origin_ns = time.time_ns()
        if on_ready is not None:
            on_ready()
        _serve(opened, stop)
        # The packets are queued on the capture sockets already; under load their threads
        # may lag the main loop: let them drain before stopping them.
        for capture in captures:
            capture.join(timeout=1.0)
    finally:
        halt.set()
        for m in opened:
            m.close()
    bucket_ns = 0
    results = []
    for m in opened:
        captured: tuple[str, ...] = ()
        if m.capture is not None:
            m.capture.join(timeout=1.0)
            captured = tuple(p.hex() for p in m.capture.packets)
        bucket_ns = int(m.spec.bucket_ms * 1_000_000)
        flows = tuple(_summarise(key, arr, m.spec, origin_ns, bucket_ns) for key, arr in sorted(m.flows.items()))
        results.append(ReceiveResult(m.spec.protocol, m.spec.port, origin_ns, m.end_ns, bucket_ns, m.reason, flows,
                                     m.probes, m.malformed, captured))
    return results


def _serve(members: Sequence[_Member], stop: threading.Event) -> None:
    """Drain every member's socket as packets come, until each has met a stop condition."""
    by_fd = {m.sock.fileno(): m for m in members}
    layouts = _roce_layouts()
    buf = bytearray(65536)
    poll_ns = int(_POLL_S * 1e9)
    start = time.monotonic_ns()
    for m in members:
        m.deadline = start + int(m.spec.duration_s * 1e9)
    stopping_since = 0
    next_sweep = 0
    with select.epoll() as poller:
        for fd in by_fd:
            poller.register(fd, select.EPOLLIN)
        active = len(members)

        def finish(m: _Member, reason: str) -> None:
            nonlocal active
            m.reason, m.end_ns = reason, time.time_ns()
            poller.unregister(m.sock.fileno())
            active -= 1

        coalesce_s = max(m.spec.coalesce_ms for m in members) / 1000
        # The receive loop, not wait.until: epoll's timeout bounds each wait, and each member ends on its own
        # (its deadline, quiet or linger) while the others go on.
        while active:
            events = poller.poll(_LINGER_POLL_S if stopping_since else _POLL_S)
            for fd, _ in events:
                m = by_fd[fd]
                if not m.reason and _drain(m, buf, layouts):
                    finish(m, "expected")
            if events and coalesce_s:
                time.sleep(coalesce_s)  # batches wake-ups (coalesce_ms): lets packets gather, waits for nothing
            now = time.monotonic_ns()
            if events and now < next_sweep:
                continue
            next_sweep = now + poll_ns
            if stop.is_set() and not stopping_since:
                # Packets still crossing the lab's hops when the senders are done arrive within
                # the linger: a member stops once nothing has come to it for that long.
                stopping_since = now
            for m in members:
                if m.reason:
                    continue
                if now >= m.deadline:
                    finish(m, "deadline")
                elif m.quiet_ns and m.last_data and now - m.last_data >= m.quiet_ns:
                    finish(m, "quiet")
                elif stopping_since and now - max(stopping_since, m.last_packet) >= m.linger_ns:
                    finish(m, "stopped")


def _drain(m: _Member, buf: bytearray, layouts: list[struct.Struct]) -> bool:
    """Account what is queued on m's socket (at most _BATCH packets, so that no member starves
    the others); True once m has all the packets it expects."""
    roce = m.spec.protocol == "roce"
    udp_layout = FABLAB_HEADER
    recv_into, time_ns = m.sock.recv_into, time.time_ns
    flows, expect = m.flows, m.expect
    done = False
    data = 0
    for _ in range(_BATCH):
        try:
            n = recv_into(buf)
        except BlockingIOError:
            break
        rx = time_ns()
        if roce:
            layout = layouts[buf[0]]
            if n < layout.size + ICRC_LEN:
                m.malformed += 1
                continue
            qp_word, psn_word, magic, flow_id, seq, tx = layout.unpack_from(buf)
            key = qp_word & PSN_MASK
        else:
            if n < udp_layout.size:
                m.malformed += 1
                continue
            magic, flow_id, seq, tx = udp_layout.unpack_from(buf)
            key, psn_word = flow_id, 0
        if magic != FABLAB_MAGIC:
            if magic == PROBE_MAGIC:
                m.probes += 1
            else:
                m.malformed += 1
            continue
        arrivals = flows.get(key)
        if arrivals is None:
            arrivals = flows[key] = _Arrivals(flow_id)
        arrivals.seq.append(seq)
        arrivals.psn.append(psn_word & PSN_MASK)
        arrivals.rx.append(rx)
        arrivals.tx.append(tx)
        data += 1
        if m.total + data == expect:
            done = True
            break
    now = time.monotonic_ns()
    m.last_packet = now
    if data:
        m.total += data
        # Only data arms the quiet timer: senders' priming probes arrive long before a
        # synchronised start, and must not end the receive before the data comes.
        m.last_data = now
    return done


def psn_gaps(psns: Sequence[int]) -> tuple[int, int]:
    """(gap events, PSNs jumped over) as a responder sees them: a PSN ahead of the expected one
    is a gap; one behind it (in 24-bit serial arithmetic) is a late packet and moves nothing."""
    gaps = missing = 0
    expected = None
    for psn in psns:
        if expected is not None:
            ahead = (psn - expected) & PSN_MASK
            if ahead >= 1 << 23:
                continue
            if ahead:
                gaps += 1
                missing += ahead
        expected = (psn + 1) & PSN_MASK
    return gaps, missing


def _summarise(key: int, arr: _Arrivals, spec: ReceiveSpec, origin_ns: int, bucket_ns: int) -> FlowReceived:
    seq = np.frombuffer(arr.seq, dtype=np.int64)
    rx = np.frombuffer(arr.rx, dtype=np.int64)
    tx = np.frombuffer(arr.tx, dtype=np.int64)
    unique, first = np.unique(seq, return_index=True)
    # Reordered: a first arrival lower than some sequence number that arrived before it.
    is_first = np.zeros(len(seq), dtype=bool)
    is_first[first] = True
    running_max = np.maximum.accumulate(seq)
    reordered = int(np.count_nonzero(is_first[1:] & (seq[1:] < running_max[:-1])))
    breaks = np.flatnonzero(np.diff(unique) > 1)
    run_starts = unique[np.r_[0, breaks + 1]]
    run_ends = unique[np.r_[breaks, len(unique) - 1]]
    before, after = first[breaks], first[breaks + 1]
    gaps = tuple(Gap(int(unique[b]), int(unique[b + 1]), int(tx[i]), int(tx[j]), int(rx[i]), int(rx[j]))
                 for b, i, j in zip(breaks, before, after))
    buckets = np.bincount(np.maximum(rx - origin_ns, 0) // bucket_ns) if spec.buckets else ()
    latency = rx - tx
    roce = spec.protocol == "roce"
    gap_events, psn_missing = psn_gaps(arr.psn) if roce else (0, 0)
    return FlowReceived(
        key=key, flow_id=arr.flow_id, dst_qp=key if roce else None, received=len(seq), unique=len(unique),
        duplicates=len(seq) - len(unique), reordered=reordered, lost=int(unique[-1]) + 1 - len(unique),
        psn_gaps=gap_events, psn_missing=psn_missing, first_seq=int(unique[0]), max_seq=int(unique[-1]),
        first_ns=int(rx[0]), last_ns=int(rx[-1]), latency_min_ns=int(latency.min()),
        latency_avg_ns=int(latency.mean()), latency_max_ns=int(latency.max()),
        seq_runs=tuple((int(a), int(b)) for a, b in zip(run_starts, run_ends)), gaps=gaps,
        buckets=tuple(int(c) for c in buckets),
        detail_seq=pack_int64(arr.seq) if spec.detail else "",
        detail_rx_ns=pack_int64(arr.rx) if spec.detail else "")


def _run(spec: ReceiveSpec | ReceiveGroupSpec, stop: threading.Event) -> ReceiveResult | ReceiveGroupResult:
    if isinstance(spec, ReceiveGroupSpec):
        ready = f"{READY} {len(spec.specs)}"
        return ReceiveGroupResult(tuple(receive_many(list(zip(spec.netns, spec.specs)), on_ready=lambda: say(ready),
                                                     stop=stop)))
    return receive(spec, on_ready=lambda: say(f"{READY} {spec.port}"), stop=stop)


def main(argv: Sequence[str] | None = None) -> int:
    return serve("harness.traffic.receiver", __doc__,
                 lambda text, group: from_json(ReceiveGroupSpec if group else ReceiveSpec, text), _run,
                 argv, group=True, stop_signals=(signal.SIGTERM, signal.SIGINT))


if __name__ == "__main__":
    raise SystemExit(main())
