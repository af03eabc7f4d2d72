"""The frontend carries TCP: ECMP spreads connections over every FE uplink, and a failed
uplink costs a connection no more than TCP's first retransmission.

Between two routed FE hosts behind different FE leaves (tenant members are L2 and have no
route to each other's leaves: harness/checks/tenants.py covers them):

ECMP. N TCP connections, each from its own source port; the source leaf counts packets per
(uplink, source port) in nftables. Every connection must stay on one uplink, and the count
per uplink must fall in the band a fair 5-tuple hash keeps to (the same exact binomial band
as the BE's ECMP check, N chosen so that an uplink at twice the weight of the others falls
outside it with probability >= 99.9 %).

Failover. Paced TCP streams for a few seconds; the uplink carrying the most of them loses
its carrier (the spine end, as a pulled cable) for `down_s`, then comes back while the streams
still run. Every stream must finish with every byte (no reset). No stream may stall (the
receiver's wait between two reads) past the failure's budget: TCP's minimum retransmission
timeout (200 ms, Linux) plus the slower of the fabric's objectives for the two failures one
cable makes: local for the data (`Objectives.hard_ms`: the source leaf sees its carrier drop)
and remote for the ACKs (`Objectives.remote_ms`: the far leaf learns it from a BGP
withdrawal). A stream whose data never used the failed uplink stalls too when its ACKs did: a
lost ACK window stops the sender until its retransmission timer fires. After the restore, no
stream may stall past TCP's RTO plus `Objectives.restore_ms` (a restore must cost a stream at
most one lost segment's retransmission); that is measured only when the uplink is back in the
leaf's route a second before the streams end, and said when it is not. The leaf's FIB is
polled for when the uplink left the route and when it came back, and both are reported.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from harness.checks.base import Case, Check, Outcome
from harness.checks.ecmp_bound import FALSE_FAIL, bound, qps_for
from harness.core.errors import HarnessError
from harness.plumbing.labview import LabView
from harness.observe.flowcount import FlowCounters, paths_of
from harness.observe.route_watch import route_change_ms
from harness.core.model import Plane
from harness.core.plan import Plan
from harness.traffic.flows import TCP_PORT, TcpClientSpec, TcpServerSpec
from harness.traffic.results import TcpResult, TcpStream
from harness.traffic.runner import TrafficProcess, run_tcp_client, start_tcp_server
from harness.plumbing.wait import pause_until

TCP_RTO_MIN_MS = 200.0  # Linux's TCP_RTO_MIN: the soonest a lost segment is sent again without a probe
FIRST_SPORT = 21000
TAIL_S = 0.5  # after the last paced write: the streams' last bytes are in by then, on a fabric that held


@dataclass(frozen=True)
class FeEcmpResult(Outcome):
    source: str
    destination: str
    leaf: str
    connections: int
    per_uplink: dict[str, int]
    low: int
    high: int
    split: int
    unseen: int

    held, broken = "spread", "NOT spread"

    def sentence(self) -> str:
        spread = ", ".join(f"{u} {k}" for u, k in self.per_uplink.items())
        return (f"{self.connections} TCP connections {_node(self.source)} -> {_node(self.destination)} over "
                f"{self.leaf}'s uplinks {spread} (fair band {self.low}..{self.high}), {self.split} split, "
                f"{self.unseen} unseen")


@dataclass(frozen=True)
class FeFailoverResult(Outcome):
    source: str
    destination: str
    failed: str  # the cable
    streams: int
    on_failed: tuple[int, ...]  # source ports of the streams the failed uplink carried
    stall_ms: dict[int, float]  # source port -> longest stall at the receiver, from the failure to the restore
    stall_at_ms: dict[int, float]  # source port -> when that stall began, from the carrier loss
    budget_ms: float
    route_moved_ms: float | None  # carrier loss -> the uplink gone from the leaf's route
    bytes_sent: int
    bytes_received: int
    restore_stall_ms: dict[int, float] = field(default_factory=dict)  # source port -> longest stall after the restore
    restore_budget_ms: float = 0.0
    back_ms: float | None = None  # restore -> the uplink back in the leaf's route (None: not while streams ran)
    not_measurable: str = ""  # why restore_ms could not be judged, or ""
    leaf: str = ""  # the source's leaf ...
    uplink: str = ""  # ... and its uplink that failed

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
                f"{worst:.0f} ms (budget {self.budget_ms:.0f}), route moved in {moved}; {restore}; "
                f"{self.bytes_received}/{self.bytes_sent} bytes")


def _node(end: str) -> str:
    """The node of "node:nic" (or "node:nic (address)")."""
    return end.split(":", 1)[0]


def fe_pair(plan: Plan) -> tuple[tuple[str, str], tuple[str, str]]:
    """Two routed FE host NICs behind different FE leaves (the first of each)."""
    by_leaf: dict[str, tuple[str, str]] = {}
    for h in plan.hosts:
        for n in h.nics:
            if n.plane is Plane.FE and n.tenant is None and n.peer not in by_leaf:
                by_leaf[n.peer] = (h.name, n.name)
    if len(by_leaf) < 2:
        raise HarnessError(f"{plan.name}: routed FE hosts sit behind {len(by_leaf)} FE leaf(s); the FE TCP "
                           "checks need two (hosts outside every tenant, behind different leaves)")
    first, second = list(by_leaf.values())[:2]
    return first, second


def source_uplinks(plan: Plan, src: tuple[str, str]) -> tuple[str, list[str]]:
    leaf = plan.switch(plan.host(src[0]).nic(src[1]).peer)
    uplinks = [p.name for p in leaf.fabric_ports]
    if len(uplinks) < 2:
        raise HarnessError(f"{leaf.name} has {len(uplinks)} uplink(s): nothing to spread over or fail to")
    return leaf.name, uplinks


def check_fe_ecmp(lab: LabView, connections: int | None = None, false_fail: float = FALSE_FAIL) -> FeEcmpResult:
    t0 = time.monotonic()
    plan: Plan = lab.plan
    src, dst = fe_pair(plan)
    leaf, uplinks = source_uplinks(plan, src)
    n = connections or qps_for(len(uplinks), false_fail)
    b = bound(n, len(uplinks), false_fail)
    dst_addr = str(plan.host(dst[0]).nic(dst[1]).address.ip)
    sports = list(range(FIRST_SPORT, FIRST_SPORT + n))
    with FlowCounters(lab, leaf, uplinks, sports, dport=TCP_PORT, protocol="tcp") as counters:
        with start_tcp_server(lab.namespace(dst[0]), TcpServerSpec(streams=n, timeout_s=120)) as server:
            run_tcp_client(lab.namespace(src[0]), TcpClientSpec(dst_addr, streams=n, bytes_per_stream=16 * 1024,
                                                                sport=FIRST_SPORT, timeout_s=60), timeout_s=180)
            server.result(60)
        counted = counters.read_flows()
    on = paths_of(counted)
    per = {u: sum(1 for ports in on.values() if u in ports) for u in uplinks}
    split = sum(1 for s in sports if len(on.get(s, ())) > 1)
    unseen = sum(1 for s in sports if s not in on)
    problems = [f"{leaf}:{u} carried {k} connections, outside a fair hash's {b.low}..{b.high}"
                for u, k in per.items() if not b.low <= k <= b.high]
    if split:
        problems.append(f"{split} connections split over two uplinks (a TCP flow must keep one path)")
    if unseen:
        problems.append(f"{unseen} connections seen on no uplink of {leaf}")
    return FeEcmpResult(f"{src[0]}:{src[1]}", f"{dst[0]}:{dst[1]} ({dst_addr})", leaf, n, per, b.low, b.high, split,
                        unseen, seconds=round(time.monotonic() - t0, 2), problems=tuple(problems))


def check_fe_failover(lab: LabView, streams: int = 8, rate_mbps: float = 20.0, duration_s: float = 7.0,
                      fail_at_s: float = 1.5, down_s: float = 1.0,
                      while_failed: Callable[[str, str], object] | None = None) -> FeFailoverResult:
    """while_failed(leaf, uplink) runs right after the failure (a negative control's sabotage
    goes there)."""
    t0 = time.monotonic()
    plan: Plan = lab.plan
    src, dst = fe_pair(plan)
    leaf, uplinks = source_uplinks(plan, src)
    dst_nic = plan.host(dst[0]).nic(dst[1])
    dst_addr, prefix = str(dst_nic.address.ip), plan.route_prefix(dst_nic)
    objectives = plan.fabric.cluster.objectives
    # one cable, two failures: the data's leaf sees its carrier go (hard_ms); the ACKs' leaf,
    # at the far end, hears of it from a BGP withdrawal (remote_ms)
    budget = TCP_RTO_MIN_MS + max(objectives.hard_ms, objectives.remote_ms)
    restore_budget = TCP_RTO_MIN_MS + objectives.restore_ms
    sports = list(range(FIRST_SPORT, FIRST_SPORT + streams))
    spec = TcpClientSpec(dst_addr, streams=streams, duration_s=duration_s, rate_mbps=rate_mbps, sport=FIRST_SPORT,
                         timeout_s=duration_s + 30)
    moved_ms = back_ms = None
    with FlowCounters(lab, leaf, uplinks, sports, dport=TCP_PORT, protocol="tcp") as counters:
        with start_tcp_server(lab.namespace(dst[0]), TcpServerSpec(streams=streams,
                                                                    timeout_s=duration_s + 60)) as server:
            with TrafficProcess(lab.namespace(src[0]), "harness.traffic.tcp", spec, TcpResult) as client:
                start = time.monotonic()
                pause_until(start + fail_at_s)
                on = paths_of(counters.read_flows())
                busiest = max(uplinks, key=lambda u: sum(1 for ports in on.values() if u in ports))
                on_failed = tuple(s for s, ports in sorted(on.items()) if busiest in ports)
                port = next(p for p in plan.switch(leaf).ports if p.name == busiest)
                link = lab.link(leaf, port.peer, _index(lab, leaf, busiest, port.peer))
                failed_at, failed_ns = time.monotonic(), time.time_ns()
                link.down()
                restored_ns = None
                try:
                    if while_failed is not None:
                        while_failed(leaf, busiest)
                    moved_ms = route_change_ms(lab, leaf, prefix, busiest, present=False, since=failed_at,
                                               deadline=start + fail_at_s + down_s, interval=0.005)
                    pause_until(start + fail_at_s + down_s)
                finally:
                    link.up()
                restored_at, restored_ns = time.monotonic(), time.time_ns()
                # the streams must still run a second on the restored uplink for its stalls to count
                back_ms = route_change_ms(lab, leaf, prefix, busiest, present=True, since=restored_at,
                                          deadline=start + duration_s - 1.0, interval=0.01)
                pause_until(start + duration_s + TAIL_S)
                sent = client.result(60)
                received = server.result(60)
    late = time.monotonic()
    back = back_ms is not None or route_change_ms(lab, leaf, prefix, busiest, present=True, since=late,
                                                  deadline=late + 60, interval=0.01) is not None
    # a stall belongs to the event just before it began (its last read can precede the event
    # by a packet's spacing, hence the margin)
    boundary = restored_ns - _ATTRIBUTION_NS
    failing = {_sport(s.remote): _worst(s, None, boundary) for s in received.streams}
    stall = {s: round(length / 1e6, 1) for s, (length, _) in failing.items()}
    stall_at = {s: round((begin - failed_ns) / 1e6, 1) if length else 0.0 for s, (length, begin) in failing.items()}
    restore_stall = {_sport(s.remote): round(_worst(s, boundary, None)[0] / 1e6, 1) for s in received.streams}
    problems = []
    for s, ms in sorted(stall.items()):
        if ms > budget:
            where = "on" if s in on_failed else "not on"
            problems.append(f"stream from port {s} ({where} {leaf}:{busiest}) stalled {ms:.0f} ms from "
                            f"{stall_at[s]:+.0f} ms after the failure, over {budget:.0f} ms (TCP's "
                            f"{TCP_RTO_MIN_MS:.0f} ms RTO + the slower of hard_ms and remote_ms)")
    if back_ms is not None:
        for s, ms in sorted(restore_stall.items()):
            if ms > restore_budget:
                problems.append(f"stream from port {s} stalled {ms:.0f} ms after the restore of {busiest}, over "
                                f"{restore_budget:.0f} ms (TCP's {TCP_RTO_MIN_MS:.0f} ms RTO + restore_ms)")
    if not on_failed:
        problems.append(f"no stream was seen on {leaf}:{busiest}: the failure tested nothing")
    if not back:
        problems.append(f"{busiest} was not back in {leaf}'s route to {prefix} 60 s after {link} came back")
    if received.bytes != sent.bytes:
        problems.append(f"{sent.bytes - received.bytes} bytes sent were never received")
    if moved_ms is None:
        problems.append(f"{leaf}'s route to {prefix} still used {busiest} {down_s:.1f} s after the carrier loss")
    not_measurable = "" if back_ms is not None or not back else (
        f"restore_ms ({restore_budget:.0f} ms with TCP's RTO) not judged: {busiest} rejoined {leaf}'s route only "
        "after the streams' last second")
    return FeFailoverResult(f"{src[0]}:{src[1]}", f"{dst[0]}:{dst[1]} ({dst_addr})", str(link), streams, on_failed,
                            stall, stall_at, budget, moved_ms, sent.bytes, received.bytes, restore_stall,
                            restore_budget, back_ms, not_measurable, leaf, busiest,
                            seconds=round(time.monotonic() - t0, 2), problems=tuple(problems))


_ATTRIBUTION_NS = 50_000_000


def _worst(stream: TcpStream, since_ns: int | None, until_ns: int | None) -> tuple[int, int]:
    """(length, start) of the longest stall of a stream that began in [since, until), in ns;
    (0, 0) if none did."""
    return max(((length, begin) for begin, length in stream.stalls
                if (since_ns is None or begin >= since_ns) and (until_ns is None or begin < until_ns)), default=(0, 0))


def _index(lab: LabView, leaf: str, port: str, peer: str) -> int:
    cables = lab.cables(leaf, peer)
    return next(i for i, c in enumerate(cables) if (c.a_node, c.a_port) == (leaf, port)
                or (c.b_node, c.b_port) == (leaf, port))


def _sport(addr: str) -> int:
    return int(addr.rsplit(":", 1)[1])


def _fe_pair_missing(plan: Plan) -> str | None:
    try:
        source_uplinks(plan, fe_pair(plan)[0])
    except HarnessError as e:
        return str(e)
    return None


CHECK = Check("fe-tcp", "TCP on the frontend: connections spread over every FE uplink (fair-hash band), and a failed "
              "uplink, and its restore, cost a stream no more than TCP's first retransmission after the objective",
              (Case("fe-ecmp", check_fe_ecmp), Case("fe-failover", check_fe_failover)), _fe_pair_missing)
