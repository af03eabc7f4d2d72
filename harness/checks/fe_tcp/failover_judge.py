"""What a frontend failover under TCP streams showed (FeFailoverSeen), and its verdict.

The budgets come from the plan's objectives, never from the lab: one cable is two failures,
so no stream may stall past one RTO plus the slower of `hard_ms` (the data's end sees its
carrier drop) and `remote_ms` (the ACKs' end hears of it from a withdrawal); after the
restore, past one RTO plus `restore_ms`. The RTO is the one the sender's kernel had armed
when the stall began (TCP_INFO, recorded by the sender), never below Linux's 200 ms floor:
it is srtt plus the floor, and more while the RTT varies (204-236 ms measured around a
failure), so a stream that lost one segment to a restore within `restore_ms` stalls past
200 + `restore_ms` and has still kept the objective. A stall belongs to the event just before it
began: the failure, or the restore (its last read can precede the restore by a packet's
spacing, hence a margin). A stall under way when the failure came counts from the failure:
before it the fabric was whole, and a stream that waited then waited on its own host (seen
with three labs on two cores: 491 ms, ended 8 ms before the failure).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from harness.checks.base import MeasuredOutcome, Observation
from harness.core.plan import Plan

TCP_RTO_MIN_MS = 200.0  # Linux's TCP_RTO_MIN: the soonest a lost segment is sent again without a probe
ATTRIBUTION_MS = 50.0  # a stall that began this long before the restore is the restore's
ELEMENTS = ("uplink", "host-uplink", "leaf")


@dataclass(frozen=True)
class StreamSeen:
    """One TCP stream as the receiver saw it."""

    sport: int  # the client's source port
    bytes: int  # received
    stalls: tuple[tuple[float, float], ...]  # (start, length) ms of every wait over 20 ms between two reads;
    # the start from the failure (negative: before it)
    rto: tuple[tuple[float, float], ...] = ()  # (at, RTO) ms: the sender's armed timeout from `at` on
    # (from the failure, as stalls); empty: not recorded, Linux's floor is assumed


@dataclass(frozen=True)
class FeFailoverSeen(Observation):
    """Paced TCP streams across one failure (an uplink, a host's uplink, a leaf) and its restore."""

    element: str  # which of ELEMENTS failed ...
    failed: str  # ... this cable, or leaf
    source: str  # "host:nic"
    destination: str  # "host:nic" ...
    destination_address: str  # ... reached at this address, in the fabric's ...
    prefix: str  # ... prefix
    node: str  # the node that must reroute (the source's leaf, or the dual-homed source host) ...
    port: str  # ... and its port to the failed element
    streams: int
    down_s: float  # how long the element stayed down
    on_failed: tuple[int, ...]  # source ports of the streams counted on node:port just before the failure
    restored_ms: float  # the restore, from the failure
    route_moved_ms: float | None  # the failure -> port gone from node's route (None: not while it was down)
    back_ms: float | None  # the restore -> port back in that route (None: not a second before the streams ended)
    rejoined: bool  # port back in the route at all: while the streams ran, or within 60 s after
    bytes_sent: int
    bytes_received: int
    received: tuple[StreamSeen, ...]


@dataclass(frozen=True)
class FeFailoverResult(MeasuredOutcome):
    source: str
    destination: str
    failed: str  # the cable, or the leaf
    streams: int
    on_failed: tuple[int, ...]  # source ports of the streams the failed element carried
    stall_ms: dict[int, float]  # source port -> longest stall at the receiver, from the failure to the restore
    stall_at_ms: dict[int, float]  # source port -> when that stall began, from the carrier loss
    budget_ms: float  # at Linux's RTO floor; a stall whose sender had a longer RTO armed has that much more
    route_moved_ms: float | None  # carrier loss -> the element gone from the watching node's route
    bytes_sent: int
    bytes_received: int
    restore_stall_ms: dict[int, float] = field(default_factory=dict)  # source port -> longest stall after the restore
    restore_budget_ms: float = 0.0
    back_ms: float | None = None  # restore -> the element back in the route (None: not while streams ran)
    # not_measurable: why restore_ms could not be judged (a declared objective is never passed unmeasured)
    rto_ms: dict[int, float] = field(default_factory=dict)  # source port -> the longest RTO its sender armed
    leaf: str = ""  # the node that must reroute (the source's leaf, or the dual-homed source host) ...
    uplink: str = ""  # ... and its port to the failed element
    element: str = "uplink"  # which of ELEMENTS failed

    held, broken = "held", "NOT held"

    def sentence(self) -> str:
        worst = max(self.stall_ms.values(), default=0.0)
        moved = f"{self.route_moved_ms:.0f} ms" if self.route_moved_ms is not None else "never"
        longest_rto = max(self.rto_ms.values(), default=TCP_RTO_MIN_MS)
        rto = f"; RTOs armed up to {longest_rto:.0f} ms (a stall's budget is the RTO armed when it began + the " \
            "objective)" if longest_rto > TCP_RTO_MIN_MS else ""
        restore = (f"back in the route after {self.back_ms:.0f} ms, worst stall after it "
                   f"{max(self.restore_stall_ms.values(), default=0.0):.0f} ms (budget {self.restore_budget_ms:.0f})"
                   if self.back_ms is not None else
                   f"restore not measured under traffic: {self.uplink} back in the route only after the streams' "
                   "last second")
        return (f"{self.failed} down under {self.streams} TCP streams ({len(self.on_failed)} on it): worst stall "
                f"{worst:.0f} ms (budget {self.budget_ms:.0f}), {self.leaf}'s route moved off {self.uplink} in "
                f"{moved}; {restore}; {self.bytes_received}/{self.bytes_sent} bytes{rto}")


def _in(stream: StreamSeen, since_ms: float, until_ms: float | None) -> list[tuple[float, float]]:
    """(start, length) of the stream's stalls that began in [since, until)."""
    return [(start, length) for start, length in stream.stalls
            if start >= since_ms and (until_ms is None or start < until_ms)]


def rto_at(stream: StreamSeen, at_ms: float) -> float:
    """The retransmission timeout the stream's sender had armed at `at_ms` (ms), at least
    Linux's floor: the timeout a segment lost then waited before it was sent again."""
    armed = [rto for since, rto in stream.rto if since <= at_ms]
    return max(TCP_RTO_MIN_MS, armed[-1]) if armed else TCP_RTO_MIN_MS


def _judged(stream: StreamSeen, stalls: list[tuple[float, float]], allowance: float) -> tuple[float, float, float]:
    """(length, start, budget) of the stall furthest over its budget (one RTO + allowance), or,
    with none over, of the longest; (0, 0, floor budget) with no stall."""
    budgeted = [(length - rto_at(stream, start) - allowance, length, start, rto_at(stream, start) + allowance)
                for start, length in stalls]
    over = [b for b in budgeted if b[0] > 0]
    pick = max(over) if over else max(budgeted, key=lambda b: b[1], default=(0.0, 0.0, 0.0, TCP_RTO_MIN_MS + allowance))
    return pick[1], pick[2], pick[3]


def _from_failure(stream: StreamSeen) -> StreamSeen:
    """The stream's stalls from the failure on: one under way at the failure counts from it, one
    over before it is dropped (the fabric was whole: the stream waited on its own host)."""
    return StreamSeen(stream.sport, stream.bytes, tuple((max(start, 0.0), start + length - max(start, 0.0))
                                                       for start, length in stream.stalls if start + length > 0),
                      stream.rto)


def judge_fe_failover(plan: Plan, seen: FeFailoverSeen) -> FeFailoverResult:
    objectives = plan.fabric.cluster.objectives
    allowance, restore_allowance = max(objectives.hard_ms, objectives.remote_ms), objectives.restore_ms
    boundary = seen.restored_ms - ATTRIBUTION_MS
    failing = {s.sport: _judged(s, _in(_from_failure(s), 0.0, boundary), allowance) for s in seen.received}
    restoring = {s.sport: _judged(s, _in(s, boundary, None), restore_allowance) for s in seen.received}
    stall = {s: round(length, 1) for s, (length, _, _) in failing.items()}
    stall_at = {s: round(start, 1) if length else 0.0 for s, (length, start, _) in failing.items()}
    where = f"{seen.node}:{seen.port}"
    problems = []
    for s, (length, start, budget) in sorted(failing.items()):
        if length > budget:
            on = "on" if s in seen.on_failed else "not on"
            problems.append(f"stream from port {s} ({on} {where}) stalled {length:.0f} ms from "
                            f"{start:+.0f} ms after the failure, over {budget:.0f} ms (its "
                            f"{budget - allowance:.0f} ms RTO + the slower of hard_ms and remote_ms)")
    if seen.back_ms is not None:
        for s, (length, _, budget) in sorted(restoring.items()):
            if length > budget:
                problems.append(f"stream from port {s} stalled {length:.0f} ms after the restore of {seen.failed}, "
                                f"over {budget:.0f} ms (its {budget - restore_allowance:.0f} ms RTO + restore_ms)")
    if not seen.on_failed:
        problems.append(f"no stream was seen on {where}: the failure tested nothing")
    if not seen.rejoined:
        problems.append(f"{seen.port} was not back in {seen.node}'s route to {seen.prefix} 60 s after "
                        f"{seen.failed} came back")
    if seen.bytes_received != seen.bytes_sent:
        problems.append(f"{seen.bytes_sent - seen.bytes_received} bytes sent were never received")
    if seen.route_moved_ms is None:
        problems.append(f"{seen.node}'s route to {seen.prefix} still used {seen.port} {seen.down_s:.1f} s after "
                        f"{seen.failed} went down")
    restore_budget = TCP_RTO_MIN_MS + restore_allowance
    not_measurable = "" if seen.back_ms is not None or not seen.rejoined else (
        f"restore_ms ({restore_budget:.0f} ms with TCP's RTO) not judged: {seen.port} rejoined "
        f"{seen.node}'s route only after the streams' last second")
    return FeFailoverResult(
        source=seen.source, destination=f"{seen.destination} ({seen.destination_address})", failed=seen.failed,
        streams=seen.streams, on_failed=seen.on_failed, stall_ms=stall, stall_at_ms=stall_at,
        budget_ms=TCP_RTO_MIN_MS + allowance, route_moved_ms=seen.route_moved_ms, bytes_sent=seen.bytes_sent,
        bytes_received=seen.bytes_received,
        restore_stall_ms={s: round(length, 1) for s, (length, _, _) in restoring.items()},
        restore_budget_ms=restore_budget, back_ms=seen.back_ms, not_measurable=not_measurable,
        rto_ms={s.sport: max((r for _, r in s.rto), default=TCP_RTO_MIN_MS) for s in seen.received},
        leaf=seen.node, uplink=seen.port, element=seen.element, seconds=seen.seconds, problems=tuple(problems))
