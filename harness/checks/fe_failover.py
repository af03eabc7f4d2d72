"""TCP across a failure on the frontend: what fails, where the streams are counted, whose route
must show it avoided, and the verdict (harness/checks/fe_tcp.py says what the check claims).

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
from dataclasses import dataclass, field

from harness.checks.base import Outcome
from harness.checks.failover_elements import link_for, link_of
from harness.checks.fe_paths import Point, fe_address, fe_pair, fe_prefix, source_leaves, source_nics
from harness.core.model import Plane
from harness.core.plan import Plan
from harness.observe.flowcount import FlowCounters, paths_of
from harness.observe.route_watch import route_change_ms
from harness.plumbing.labview import LabView
from harness.plumbing.wait import pause_until
from harness.traffic.flows import TCP_PORT, TcpClientSpec, TcpServerSpec
from harness.traffic.results import TcpResult, TcpStream
from harness.traffic.runner import TrafficProcess, start_tcp_server

TCP_RTO_MIN_MS = 200.0  # Linux's TCP_RTO_MIN: the soonest a lost segment is sent again without a probe
FIRST_SPORT = 21000
TAIL_S = 0.5  # after the last paced write: the streams' last bytes are in by then, on a fabric that held
_ATTRIBUTION_NS = 50_000_000
ELEMENTS = ("uplink", "host-uplink", "leaf")
LEAF_DURATION_S = 10.0  # the streams of fe-leaf-failover: 6.5 s after the restore to see the leaf back


@dataclass(frozen=True)
class FeFailoverResult(Outcome):
    source: str
    destination: str
    failed: str  # the cable, or the leaf
    streams: int
    on_failed: tuple[int, ...]  # source ports of the streams the failed element carried
    stall_ms: dict[int, float]  # source port -> longest stall at the receiver, from the failure to the restore
    stall_at_ms: dict[int, float]  # source port -> when that stall began, from the carrier loss
    budget_ms: float
    route_moved_ms: float | None  # carrier loss -> the element gone from the watching node's route
    bytes_sent: int
    bytes_received: int
    restore_stall_ms: dict[int, float] = field(default_factory=dict)  # source port -> longest stall after the restore
    restore_budget_ms: float = 0.0
    back_ms: float | None = None  # restore -> the element back in the route (None: not while streams ran)
    not_measurable: str = ""  # why restore_ms could not be judged, or ""
    leaf: str = ""  # the node that must reroute (the source's leaf, or the dual-homed source host) ...
    uplink: str = ""  # ... and its port to the failed element
    element: str = "uplink"  # which of ELEMENTS failed

    held, broken = "held", "NOT held"

    @property
    def passed(self) -> bool | None:
        """None when nothing failed but the restore objective could not be judged: a declared
        objective is never passed unmeasured."""
        return False if self.problems else None if self.not_measurable else True

    def why_undecided(self) -> str:
        return self.not_measurable

    def sentence(self) -> str:
        worst = max(self.stall_ms.values(), default=0.0)
        moved = f"{self.route_moved_ms:.0f} ms" if self.route_moved_ms is not None else "never"
        restore = (f"back in the route after {self.back_ms:.0f} ms, worst stall after it "
                   f"{max(self.restore_stall_ms.values(), default=0.0):.0f} ms (budget {self.restore_budget_ms:.0f})"
                   if self.back_ms is not None else
                   f"restore not measured under traffic: {self.uplink} back in the route only after the streams' "
                   "last second")
        return (f"{self.failed} down under {self.streams} TCP streams ({len(self.on_failed)} on it): worst stall "
                f"{worst:.0f} ms (budget {self.budget_ms:.0f}), {self.leaf}'s route moved off {self.uplink} in "
                f"{moved}; {restore}; {self.bytes_received}/{self.bytes_sent} bytes")


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


def check_fe_failover(lab: LabView, streams: int = 8, rate_mbps: float = 20.0, duration_s: float = 7.0,
                      fail_at_s: float = 1.5, down_s: float = 1.0,
                      while_failed: Callable[[str, str], object] | None = None,
                      element: str = "uplink") -> FeFailoverResult:
    """while_failed(node, port) runs right after the failure, with the node that must reroute
    and its port to the failed element (a negative control's sabotage goes there)."""
    t0 = time.monotonic()
    plan: Plan = lab.plan
    src, dst = fe_pair(plan)
    points = _counting_points(plan, src, element)
    dst_addr, prefix = fe_address(plan, dst), fe_prefix(plan, dst)
    objectives = plan.fabric.cluster.objectives
    # one cable, two failures: the data's end sees its carrier go (hard_ms); the ACKs' leaf,
    # at the far end, hears of it from a BGP withdrawal (remote_ms)
    budget = TCP_RTO_MIN_MS + max(objectives.hard_ms, objectives.remote_ms)
    restore_budget = TCP_RTO_MIN_MS + objectives.restore_ms
    sports = list(range(FIRST_SPORT, FIRST_SPORT + streams))
    spec = TcpClientSpec(dst_addr, streams=streams, duration_s=duration_s, rate_mbps=rate_mbps, sport=FIRST_SPORT,
                         timeout_s=duration_s + 30)
    moved_ms = back_ms = None
    with ExitStack() as stack:
        counters = [stack.enter_context(FlowCounters(lab, p.node, list(p.ports), sports, dport=TCP_PORT,
                                                     protocol="tcp", sent=p.sent)) for p in points]
        server = stack.enter_context(start_tcp_server(lab.namespace(dst[0]),
                                                      TcpServerSpec(streams=streams, timeout_s=duration_s + 60)))
        client = stack.enter_context(TrafficProcess(lab.namespace(src[0]), "harness.traffic.tcp", spec, TcpResult))
        start = time.monotonic()
        pause_until(start + fail_at_s)
        seen = {(p.node, port): sports_on for p, c in zip(points, counters)
                for port, sports_on in _streams_per_port(c, p).items()}
        at_node, busiest = max(seen, key=lambda k: len(seen[k]))
        on_failed = tuple(sorted(seen[(at_node, busiest)]))
        chosen = _element(lab, element, next(p for p in points if p.node == at_node), busiest)
        failed_at, failed_ns = time.monotonic(), time.time_ns()
        chosen.fail()
        try:
            if while_failed is not None:
                while_failed(chosen.watch, chosen.port)
            moved_ms = route_change_ms(lab, chosen.watch, prefix, chosen.port, present=False, since=failed_at,
                                       deadline=start + fail_at_s + down_s, interval=0.005)
            pause_until(start + fail_at_s + down_s)
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
    back = back_ms is not None or route_change_ms(lab, chosen.watch, prefix, chosen.port, present=True, since=late,
                                                  deadline=late + 60, interval=0.01) is not None
    # a stall belongs to the event just before it began (its last read can precede the event
    # by a packet's spacing, hence the margin)
    boundary = restored_ns - _ATTRIBUTION_NS
    failing = {_sport(s.remote): _worst(s, None, boundary) for s in received.streams}
    stall = {s: round(length / 1e6, 1) for s, (length, _) in failing.items()}
    stall_at = {s: round((begin - failed_ns) / 1e6, 1) if length else 0.0 for s, (length, begin) in failing.items()}
    restore_stall = {_sport(s.remote): round(_worst(s, boundary, None)[0] / 1e6, 1) for s in received.streams}
    where = f"{chosen.watch}:{chosen.port}"
    problems = []
    for s, ms in sorted(stall.items()):
        if ms > budget:
            on = "on" if s in on_failed else "not on"
            problems.append(f"stream from port {s} ({on} {where}) stalled {ms:.0f} ms from "
                            f"{stall_at[s]:+.0f} ms after the failure, over {budget:.0f} ms (TCP's "
                            f"{TCP_RTO_MIN_MS:.0f} ms RTO + the slower of hard_ms and remote_ms)")
    if back_ms is not None:
        for s, ms in sorted(restore_stall.items()):
            if ms > restore_budget:
                problems.append(f"stream from port {s} stalled {ms:.0f} ms after the restore of {chosen.name}, "
                                f"over {restore_budget:.0f} ms (TCP's {TCP_RTO_MIN_MS:.0f} ms RTO + restore_ms)")
    if not on_failed:
        problems.append(f"no stream was seen on {where}: the failure tested nothing")
    if not back:
        problems.append(f"{chosen.port} was not back in {chosen.watch}'s route to {prefix} 60 s after "
                        f"{chosen.name} came back")
    if received.bytes != sent.bytes:
        problems.append(f"{sent.bytes - received.bytes} bytes sent were never received")
    if moved_ms is None:
        problems.append(f"{chosen.watch}'s route to {prefix} still used {chosen.port} {down_s:.1f} s after "
                        f"{chosen.name} went down")
    not_measurable = "" if back_ms is not None or not back else (
        f"restore_ms ({restore_budget:.0f} ms with TCP's RTO) not judged: {chosen.port} rejoined "
        f"{chosen.watch}'s route only after the streams' last second")
    return FeFailoverResult(f"{src[0]}:{src[1]}", f"{dst[0]}:{dst[1]} ({dst_addr})", chosen.name, streams, on_failed,
                            stall, stall_at, budget, moved_ms, sent.bytes, received.bytes, restore_stall,
                            restore_budget, back_ms, not_measurable, chosen.watch, chosen.port, element,
                            seconds=round(time.monotonic() - t0, 2), problems=tuple(problems))


def check_fe_host_failover(lab: LabView, **kw) -> FeFailoverResult:
    return check_fe_failover(lab, element="host-uplink", **kw)


def check_fe_leaf_failover(lab: LabView, **kw) -> FeFailoverResult:
    # A leaf that comes back must bring up all its sessions (its unnumbered uplinks wait for a
    # router advertisement) before the host routes over it again: 1.5-2.2 s on a quiet machine,
    # over 3.5 s once under `make test`. The streams run long enough for the restore to be judged.
    kw.setdefault("duration_s", LEAF_DURATION_S)
    return check_fe_failover(lab, element="leaf", **kw)


def _streams_per_port(counters: FlowCounters, point: Point) -> dict[str, set[int]]:
    on = paths_of(counters.read_flows())
    return {port: {s for s, ports in on.items() if port in ports} for port in point.ports}


def _worst(stream: TcpStream, since_ns: int | None, until_ns: int | None) -> tuple[int, int]:
    """(length, start) of the longest stall of a stream that began in [since, until), in ns;
    (0, 0) if none did."""
    return max(((length, begin) for begin, length in stream.stalls
                if (since_ns is None or begin >= since_ns) and (until_ns is None or begin < until_ns)), default=(0, 0))


def _sport(addr: str) -> int:
    return int(addr.rsplit(":", 1)[1])
