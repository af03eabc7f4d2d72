"""TCP across a failure on the frontend, measured: what fails, where the streams are counted,
whose route must show it avoided (failover_judge.py gives the verdict; harness/checks/fe_tcp
says what the check claims).

Three elements, one method:
- `uplink`: the source leaf's uplink carrying the most streams (of either leaf, dual-homed);
  that leaf reroutes.
- `host-uplink` (dual-homed): the source host's NIC carrying the most streams loses its cable;
  the host reroutes over its other NIC, its leaf withdraws the host's /32.
- `leaf` (dual-homed): the source host's leaf carrying the most streams loses every cable, as
  when it loses power; the host reroutes over its other NIC, the spines around the leaf.
Each is one failure at the data's end (`hard_ms`: a carrier drops) and one at the ACKs' end
(`remote_ms`: a withdrawal travels), so each has the same budget.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass

from harness.checks.failover_elements import link_for, link_of
from harness.checks.fe_tcp.failover_judge import FeFailoverSeen, StreamSeen
from harness.checks.fe_tcp.paths import Point, fe_address, fe_pair, fe_prefix, source_leaves, source_nics
from harness.checks.fe_tcp.spread import FIRST_SPORT
from harness.core.model import Plane
from harness.core.plan import Plan
from harness.observe.flowcount import FlowCounters, paths_of
from harness.observe.route_watch import route_change_ms
from harness.plumbing.labview import LabView
from harness.plumbing.priority import timed_turn
from harness.plumbing.wait import pause_until, within
from harness.traffic.flows import TCP_PORT, TcpClientSpec, TcpServerSpec
from harness.traffic.results import TcpResult, TcpStream
from harness.traffic.runner import TrafficProcess, start_tcp_server

TAIL_S = 0.5  # after the last paced write: the streams' last bytes are in by then, on a fabric that held
STREAMS_LATE_S = 2.0  # a stream not counted this long after the failure was due is left out
LEAF_DURATION_S = 10.0  # the streams of fe-leaf-failover: 6.5 s after the restore to see the leaf back


@dataclass(frozen=True)
class _Element:
    name: str
    fail: Callable[[], None]
    restore: Callable[[], None]
    watch: str  # the node whose route to the destination must leave `port`
    port: str


def _counting_points(plan: Plan, src, element: str) -> list[Point]:
    if element == "uplink":
        return source_leaves(plan, src)
    nics = source_nics(plan, src)
    assert nics is not None, "host-uplink and leaf need a dual-homed source"
    return [nics]


def _element(lab: LabView, element: str, at: Point, busiest: str) -> _Element:
    if element in ("uplink", "host-uplink"):  # the watching node is where the streams were counted
        handle = link_of(lab, at.node, busiest)
        return _Element(str(handle), handle.down, handle.up, at.node, busiest)
    leaf = lab.plan.host(at.node).nic(busiest).peer
    handles = [link_for(lab, c) for c in lab.all_cables() if leaf in (c.a_node, c.b_node) and c.plane is Plane.FE]
    return _Element(leaf, lambda: lab.set_carriers(handles, up=False), lambda: lab.set_carriers(handles, up=True),
                    at.node, busiest)


def measure_fe_failover(lab: LabView, streams: int = 8, rate_mbps: float = 20.0, duration_s: float = 7.0,
                        fail_at_s: float = 1.5, down_s: float = 1.0,
                        while_failed: Callable[[str, str], object] | None = None,
                        element: str = "uplink") -> FeFailoverSeen:
    """while_failed(node, port) runs right after the failure, with the node that must reroute
    and its port to the failed element (a negative control's sabotage goes there)."""
    t0 = time.monotonic()
    plan: Plan = lab.plan
    src, dst = fe_pair(plan)
    points = _counting_points(plan, src, element)
    dst_addr, prefix = fe_address(plan, dst), fe_prefix(plan, dst)
    sports = list(range(FIRST_SPORT, FIRST_SPORT + streams))
    spec = TcpClientSpec(dst_addr, streams=streams, duration_s=duration_s, rate_mbps=rate_mbps, sport=FIRST_SPORT,
                         timeout_s=duration_s + 30)
    moved_ms = back_ms = None
    with ExitStack() as stack:
        stack.enter_context(timed_turn(lab.run_dir))  # labs side by side take turns (priority.timed_turn)
        counters = [stack.enter_context(FlowCounters(lab, p.node, list(p.ports), sports, dport=TCP_PORT,
                                                     protocol="tcp", sent=p.sent)) for p in points]
        # Both ends under SCHED_FIFO, as the RoCEv2 failover's: with three labs on two cores an
        # ordinary receiver went unscheduled for 100-600 ms at a time, every stream stalling at
        # once with nothing lost, and a restore's budget is 210 ms. The route polls stay ordinary:
        # a process forked every 10 ms under SCHED_FIFO kept bgpd and zebra from the CPU that
        # brings the uplink back (it rejoined after the streams' last second, alone on the machine).
        server = stack.enter_context(start_tcp_server(lab.namespace(dst[0]), TcpServerSpec(
            streams=streams, timeout_s=duration_s + 60), realtime=True))
        client = stack.enter_context(TrafficProcess(lab.namespace(src[0]), "harness.traffic.tcp", spec, TcpResult,
                                                    realtime=True))
        start = time.monotonic()
        pause_until(start + fail_at_s)
        seen = _counted(points, counters, set(sports))
        at_node, busiest = max(seen, key=lambda k: len(seen[k]))
        chosen = _element(lab, element, next(p for p in points if p.node == at_node), busiest)
        failed_at, failed_ns = time.monotonic(), time.time_ns()
        chosen.fail()
        try:
            if while_failed is not None:
                while_failed(chosen.watch, chosen.port)
            moved_ms = route_change_ms(lab, chosen.watch, prefix, chosen.port, present=False, since=failed_at,
                                       deadline=failed_at + down_s, interval=0.005)
            pause_until(failed_at + down_s)
        finally:
            chosen.restore()
        restored_at, restored_ns = time.monotonic(), time.time_ns()
        # the streams must still run a second on the restored element for its stalls to count
        back_ms = route_change_ms(lab, chosen.watch, prefix, chosen.port, present=True, since=restored_at,
                                  deadline=start + duration_s - 1.0, interval=0.01)
        pause_until(start + duration_s + TAIL_S)
        sent = client.result(60)
        received = server.result(60)
    late = time.monotonic()
    rejoined = back_ms is not None or route_change_ms(lab, chosen.watch, prefix, chosen.port, present=True,
                                                      since=late, deadline=late + 60, interval=0.01) is not None
    return FeFailoverSeen(
        element=element, failed=chosen.name, source=f"{src[0]}:{src[1]}", destination=f"{dst[0]}:{dst[1]}",
        destination_address=dst_addr, prefix=str(prefix), node=chosen.watch, port=chosen.port, streams=streams,
        down_s=down_s, on_failed=tuple(sorted(seen[(at_node, busiest)])),
        restored_ms=_ms(restored_ns - failed_ns), route_moved_ms=moved_ms, back_ms=back_ms, rejoined=rejoined,
        bytes_sent=sent.bytes, bytes_received=received.bytes,
        received=tuple(stream_seen(s, sent.streams, failed_ns) for s in received.streams),
        seconds=round(time.monotonic() - t0, 2))


def measure_fe_host_failover(lab: LabView, **kw) -> FeFailoverSeen:
    return measure_fe_failover(lab, element="host-uplink", **kw)


def measure_fe_leaf_failover(lab: LabView, **kw) -> FeFailoverSeen:
    # A leaf that comes back must bring up all its sessions (its unnumbered uplinks wait for a
    # router advertisement) before the host routes over it again: 1.5-2.2 s on a quiet machine,
    # over 3.5 s once under `make test`. The streams run long enough for the restore to be judged.
    kw.setdefault("duration_s", LEAF_DURATION_S)
    return measure_fe_failover(lab, element="leaf", **kw)


def _counted(points: list[Point], counters: list[FlowCounters], sports: set[int]) -> dict[tuple[str, str], set[int]]:
    """(node, port) -> the streams counted there. A loaded machine can start the sender late:
    this waits until every stream was counted somewhere (at most STREAMS_LATE_S), so that the
    busiest port is known before it fails."""
    seen: dict[tuple[str, str], set[int]] = {}

    def every_stream() -> bool:
        seen.clear()
        seen.update({(p.node, port): on for p, c in zip(points, counters) for port, on in _streams_per_port(c, p).items()})
        return set().union(*seen.values()) >= sports

    within(every_stream, STREAMS_LATE_S, interval=0.05)
    return seen


def _streams_per_port(counters: FlowCounters, point: Point) -> dict[str, set[int]]:
    on = paths_of(counters.read_flows())
    return {port: {s for s, ports in on.items() if port in ports} for port in point.ports}


def _ms(ns: int) -> float:
    return round(ns / 1e6, 3)


def stream_seen(stream: TcpStream, sent: tuple[TcpStream, ...], failed_ns: int) -> StreamSeen:
    """The receiver's view of a stream, its stalls timed from the failure, with the
    retransmission timeout its sender had armed (a timeout that fired and doubled is not one)."""
    sport = int(stream.remote.rsplit(":", 1)[1])
    sender = next((s for s in sent if s.local.rsplit(":", 1)[1] == str(sport)), None)
    armed = tuple((_ms(at - failed_ns), rto_us / 1000) for at, rto_us, backoff in (sender.rto if sender else ())
                  if backoff == 0)
    return StreamSeen(sport, stream.bytes, tuple((_ms(begin - failed_ns), _ms(length)) for begin, length in stream.stalls),
                      armed)
