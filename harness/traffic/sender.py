"""Send RoCEv2 and UDP flows from the network namespace this process runs in.

RoCEv2 goes out of one raw IPv4 socket (IP_HDRINCL): the kernel routes each packet, so
the egress NIC, ECMP choice and neighbour resolution are the fabric's own, while the
bytes stay exactly ours. UDP flows use one kernel UDP socket each.

    nsenter --net=/run/netns/NS -- python -m harness.traffic.sender [--group] [--spec FILE|-]

With --group the spec is a SendGroupSpec: one process sends for senders in many
namespaces (a collective's 128 GPUs), opening each one's sockets in its namespace.
"""
from __future__ import annotations

import dataclasses
import os
import socket
import threading
import time
from collections.abc import Callable, Sequence

from harness.plumbing import wait
from harness.plumbing.namespaces import entered
from harness.plumbing.priority import SENDER
from harness.traffic import sender_dcqcn
from harness.traffic.dcqcn import ECT_0
from harness.traffic.emitters import (_MAX_LAG_SPANS, SenderError, _bind_device, _Counters, _Emitter, _RoceEmitter,
                                      _tighten_timer_slack, _UdpEmitter, opcodes_of, resolve_source, send_order)
from harness.traffic.flows import RoceFlow, SendGroupSpec, SendSpec, TrafficError, from_json
from harness.traffic.neighwatch import NeighbourWatch
from harness.traffic.process import say, serve
from harness.traffic.results import SendGroupResult, SendResult

__all__ = ["SENDING", "SenderError", "main", "opcodes_of", "send", "send_many", "send_order"]


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
    """Until the wall-clock moment every sender of a run starts at (a schedule, not a wait),
    read on the wall clock itself: turned into a monotonic deadline once, a sender started
    178 us early, the two clocks 178 us apart after the 1.5 s wait (make test, 2026-12-05)."""
    while (left := start_at_ns - time.time_ns()) > 0:
        wait.pause_until(time.monotonic() + min(left / 1e9, 0.1))


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
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(SENDER))
    except (OSError, AttributeError):
        return False
    return True


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
        self.cnp: socket.socket | None = None  # dcqcn: the CNPs coming back
        self.cnps_unmatched = 0
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
                # DCQCN: data a switch may CE-mark (ECT(0)), unless the flow asks for other ECN bits
                ecn = (flow.ecn or ECT_0) if spec.dcqcn is not None else None
                self.emitters.append(_RoceEmitter(flow, src, spec.ttl, self.raw, self.counters, ecn))
            else:
                self.emitters.append(_UdpEmitter(flow, src, spec.ttl, spec.device, self.counters))
        self.port: sender_dcqcn._Port | None = None
        if spec.dcqcn is not None:
            self.cnp = sender_dcqcn.open_cnp_socket(spec.device)
            self.port = sender_dcqcn._Port(spec.dcqcn)

    def close(self) -> None:
        for e in self.emitters:
            e.close()
        for sock in (self.raw, self.watch, self.cnp):
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
        # DCQCN by duration alone has no last packet: its flows count on until the time is up.
        count = lead.packets_per_flow if lead.dcqcn is None or lead.packets is not None else 0
        orders = [send_order(count, e.flow.omit, e.flow.late) for e in emitters]
        emits = [e.emit for e in emitters]
        paced = []
        if lead.dcqcn is not None:
            paced = sender_dcqcn._paced(opened, orders if lead.packets is not None else None)
        realtime = lead.realtime and _go_realtime()
        if lead.start_at_ns is not None:
            _wait_until_wall(lead.start_at_ns)
        start_ns = time.time_ns()
        if on_start is not None:
            on_start()
        max_lag, lag_spans = 0, ()
        if paced:
            max_lag, lag_spans = sender_dcqcn._run_dcqcn(opened, paced, lead.duration_s, stop)
        elif lead.rate_pps is None:
            _run_fast(emits, orders, count)
        else:
            max_lag, lag_spans = _run_paced(emits, orders, count, lead.rate_pps, stop, lead.per_slot)
        end_ns = time.time_ns()
        results = []
        for k, m in enumerate(opened):
            flows = tuple(e.result() for e in m.emitters)
            if paced:
                flows = tuple(dataclasses.replace(sent, dcqcn=f.outcome()) for sent, f in zip(flows, paced[k]))
            results.append(SendResult(flows, start_ns, end_ns, max_lag, m.counters.retries, primed, realtime,
                                      lag_spans, m.cnps_unmatched))
        return results
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
