"""fe-ecmp: N TCP connections between two routed FE hosts in different racks, each from its own
source port, counted per (egress port, source port) on each source leaf (and on a dual-homed
source host's NICs); the judge holds every connection to one uplink and the count per uplink
(per NIC) to the band a fair 5-tuple hash keeps to, computed from the connections sent.
"""
from __future__ import annotations

import time
from contextlib import ExitStack
from dataclasses import dataclass, field

from harness.checks.base import Observation, Outcome
from harness.checks.ecmp import PortsSeen, ports_seen
from harness.checks.common.bounds import FALSE_FAIL, bound, qps_for
from harness.checks.fe_tcp.paths import fe_address, fe_pair, source_leaves, source_nics
from harness.core.errors import HarnessError
from harness.core.plan import Plan
from harness.observe.flowcount import FlowCounters
from harness.plumbing.labview import LabView
from harness.traffic.flows import TCP_PORT, TcpClientSpec, TcpServerSpec
from harness.traffic.runner import run_tcp_client, start_tcp_server

FIRST_SPORT = 21000  # the connections' source ports, from here up


@dataclass(frozen=True)
class FeEcmpSeen(Observation):
    """TCP connections between two FE hosts of different racks, where each was counted."""

    source: str  # "host:nic"
    destination: str  # "host:nic" ...
    destination_address: str  # ... reached at this address
    first_sport: int  # the connections left from first_sport up, one source port each
    connections: int
    leaves: tuple[PortsSeen, ...]  # each source leaf's uplinks, with the connections counted on each
    nics: PortsSeen | None  # a dual-homed source's NICs, with the connections it sent on each (None: one NIC)
    false_fail: float  # the fair hash's false-fail rate the connection count was chosen for


@dataclass(frozen=True)
class FeEcmpResult(Outcome):
    source: str
    destination: str
    leaf: str  # the source leaf, or leaves ("fe-l1, fe-l2")
    connections: int
    per_uplink: dict[str, int]  # "leaf:port" -> connections
    low: int
    high: int
    split: int
    unseen: int
    per_nic: dict[str, int] = field(default_factory=dict)  # a dual-homed source's NIC -> connections
    nic_low: int = 0
    nic_high: int = 0

    held, broken = "spread", "NOT spread"

    def sentence(self) -> str:
        spread = ", ".join(f"{u} {k}" for u, k in self.per_uplink.items())
        nics = (f"over {self.source.split(':')[0]}'s NICs " + ", ".join(f"{n} {k}" for n, k in self.per_nic.items())
                + f" (fair band {self.nic_low}..{self.nic_high}), then " if self.per_nic else "over ")
        return (f"{self.connections} TCP connections {_node(self.source)} -> {_node(self.destination)} {nics}"
                f"the uplinks {spread} (fair band {self.low}..{self.high}), {self.split} split, "
                f"{self.unseen} unseen")


def _node(end: str) -> str:
    """The node of "node:nic" (or "node:nic (address)")."""
    return end.split(":", 1)[0]


def measure_fe_ecmp(lab: LabView, connections: int | None = None, false_fail: float = FALSE_FAIL) -> FeEcmpSeen:
    t0 = time.monotonic()
    plan: Plan = lab.plan
    src, dst = fe_pair(plan)
    leaves = source_leaves(plan, src)
    nics = source_nics(plan, src)
    uplinks = sum(len(p.ports) for p in leaves)
    n = connections or qps_for(uplinks, false_fail)
    if n < uplinks:
        raise HarnessError(f"connections={n}: fewer than the {uplinks} uplinks; send at least {uplinks}")
    dst_addr = fe_address(plan, dst)
    sports = list(range(FIRST_SPORT, FIRST_SPORT + n))
    points = leaves + ([nics] if nics else [])
    with ExitStack() as stack:
        counters = [stack.enter_context(FlowCounters(lab, p.node, list(p.ports), sports, dport=TCP_PORT,
                                                     protocol="tcp", sent=p.sent)) for p in points]
        with start_tcp_server(lab.namespace(dst[0]), TcpServerSpec(streams=n, timeout_s=120)) as server:
            run_tcp_client(lab.namespace(src[0]), TcpClientSpec(dst_addr, streams=n, bytes_per_stream=16 * 1024,
                                                                sport=FIRST_SPORT, timeout_s=60), timeout_s=180)
            server.result(60)
        seen = [ports_seen(p.node, p.ports, c.read_flows()) for p, c in zip(points, counters)]
    return FeEcmpSeen(f"{src[0]}:{src[1]}", f"{dst[0]}:{dst[1]}", dst_addr, FIRST_SPORT, n, tuple(seen[:len(leaves)]),
                      seen[-1] if nics else None, false_fail, seconds=round(time.monotonic() - t0, 2))


def judge_fe_ecmp(plan: Plan, seen: FeEcmpSeen) -> FeEcmpResult:
    n = seen.connections
    sports = range(seen.first_sport, seen.first_sport + n)
    uplinks = [f"{p.node}:{port}" for p in seen.leaves for port in p.flows]
    b = bound(n, len(uplinks), seen.false_fail)
    on: dict[int, set[str]] = {}
    for p in seen.leaves:
        for s, ports in p.on().items():
            on.setdefault(s, set()).update(f"{p.node}:{port}" for port in ports)
    per = {u: sum(1 for ports in on.values() if u in ports) for u in uplinks}
    split = sum(1 for s in sports if len(on.get(s, ())) > 1)
    unseen = sum(1 for s in sports if s not in on)
    where = ", ".join(p.node for p in seen.leaves)
    problems = [f"{u} carried {k} connections, outside a fair hash's {b.low}..{b.high}"
                for u, k in per.items() if not b.low <= k <= b.high]
    needed = qps_for(len(uplinks), seen.false_fail)
    if n < needed:
        problems.append(f"{n} connections over {len(uplinks)} uplinks: a verdict needs >= {needed} to catch an "
                        f"uplink at twice the weight of the others")
    if split:
        problems.append(f"{split} connections split over two uplinks (a TCP flow must keep one path)")
    if unseen:
        problems.append(f"{unseen} connections seen on no uplink of {where}")
    per_nic: dict[str, int] = {}
    nic_low = nic_high = 0
    if seen.nics is not None:
        nics = seen.nics
        nb = bound(n, len(nics.flows), seen.false_fail)
        nic_low, nic_high = nb.low, nb.high
        per_nic = {nic: nics.count(nic) for nic in nics.flows}
        problems += [f"{nics.node}:{nic} sent {k} connections, outside a fair hash's {nb.low}..{nb.high}"
                     for nic, k in per_nic.items() if not nb.low <= k <= nb.high]
        if any(len(ports) > 1 for ports in nics.on().values()):
            problems.append(f"connections split over {nics.node}'s NICs (a TCP flow must keep one path)")
    return FeEcmpResult(seen.source, f"{seen.destination} ({seen.destination_address})", where, n, per, b.low,
                        b.high, split, unseen, per_nic, nic_low, nic_high, seconds=seen.seconds,
                        problems=tuple(problems))

