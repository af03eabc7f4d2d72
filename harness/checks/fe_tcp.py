"""The frontend carries TCP: ECMP spreads connections over every FE uplink, and a failed
uplink costs a connection no more than TCP's first retransmission.

Between two routed FE hosts in different racks (tenant members are L2 and have no route to
each other's leaves: harness/checks/tenants.py covers them). A dual-homed host
(`Frontend(dual_homed=True)`) is reached at its own /32 and sends over both its NICs, so ECMP is
counted at two stages (its NICs, then the uplinks of both its leaves), and two more failures
apply: a host uplink and a whole leaf (harness/checks/fe_failover.py):

ECMP. N TCP connections, each from its own source port; the source leaf (each source leaf,
and a dual-homed host itself) counts packets per (egress port, source port) in nftables. Every connection must stay on one uplink, and the count
per uplink must fall in the band a fair 5-tuple hash keeps to (the same exact binomial band
as the BE's ECMP check, N chosen so that an uplink at twice the weight of the others falls
outside it with probability >= 99.9 %).

Failover. Paced TCP streams for a few seconds; the uplink (host uplink, leaf) carrying the most
of them loses its carrier (the spine end, as a pulled cable) for `down_s`, then comes back while the streams
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
from contextlib import ExitStack
from dataclasses import dataclass, field

from harness.checks.base import Case, Check, Outcome
from harness.checks.ecmp_bound import FALSE_FAIL, bound, qps_for
from harness.checks.fe_failover import (FIRST_SPORT, TCP_RTO_MIN_MS, FeFailoverResult, check_fe_failover,
                                        check_fe_host_failover, check_fe_leaf_failover)
from harness.checks.fe_paths import (dual_homing_missing, fe_address, fe_pair, fe_pair_missing, source_leaves,
                                     source_nics)
from harness.core.plan import Plan
from harness.observe.flowcount import FlowCounters, paths_of
from harness.plumbing.labview import LabView
from harness.traffic.flows import TCP_PORT, TcpClientSpec, TcpServerSpec
from harness.traffic.runner import run_tcp_client, start_tcp_server

__all__ = ["CHECK", "FeEcmpResult", "FeFailoverResult", "TCP_RTO_MIN_MS", "check_fe_ecmp", "check_fe_failover",
           "check_fe_host_failover", "check_fe_leaf_failover", "fe_pair"]


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


def check_fe_ecmp(lab: LabView, connections: int | None = None, false_fail: float = FALSE_FAIL) -> FeEcmpResult:
    t0 = time.monotonic()
    plan: Plan = lab.plan
    src, dst = fe_pair(plan)
    leaves = source_leaves(plan, src)
    nics = source_nics(plan, src)
    uplinks = [(p.node, port) for p in leaves for port in p.ports]
    n = connections or qps_for(len(uplinks), false_fail)
    b = bound(n, len(uplinks), false_fail)
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
        counted = [paths_of(c.read_flows()) for c in counters]
    on: dict[int, set[str]] = {}
    for p, paths in zip(leaves, counted):
        for s, ports in paths.items():
            on.setdefault(s, set()).update(f"{p.node}:{port}" for port in ports)
    per = {f"{node}:{u}": sum(1 for ports in on.values() if f"{node}:{u}" in ports) for node, u in uplinks}
    split = sum(1 for s in sports if len(on.get(s, ())) > 1)
    unseen = sum(1 for s in sports if s not in on)
    where = ", ".join(p.node for p in leaves)
    problems = [f"{u} carried {k} connections, outside a fair hash's {b.low}..{b.high}"
                for u, k in per.items() if not b.low <= k <= b.high]
    if split:
        problems.append(f"{split} connections split over two uplinks (a TCP flow must keep one path)")
    if unseen:
        problems.append(f"{unseen} connections seen on no uplink of {where}")
    per_nic: dict[str, int] = {}
    nb = None
    if nics:
        sent_on = counted[-1]
        nb = bound(n, len(nics.ports), false_fail)
        per_nic = {nic: sum(1 for ports in sent_on.values() if nic in ports) for nic in nics.ports}
        problems += [f"{nics.node}:{nic} sent {k} connections, outside a fair hash's {nb.low}..{nb.high}"
                     for nic, k in per_nic.items() if not nb.low <= k <= nb.high]
        if any(len(ports) > 1 for ports in sent_on.values()):
            problems.append(f"connections split over {nics.node}'s NICs (a TCP flow must keep one path)")
    return FeEcmpResult(f"{src[0]}:{src[1]}", f"{dst[0]}:{dst[1]} ({dst_addr})", where, n, per, b.low, b.high, split,
                        unseen, per_nic, nb.low if nb else 0, nb.high if nb else 0,
                        seconds=round(time.monotonic() - t0, 2), problems=tuple(problems))


CHECK = Check("fe-tcp", "TCP on the frontend: connections spread over every FE uplink (fair-hash band; over both "
              "NICs of a dual-homed host first), and a failed uplink, host uplink or leaf, and its restore, cost a "
              "stream no more than TCP's first retransmission after the objective",
              (Case("fe-ecmp", check_fe_ecmp), Case("fe-failover", check_fe_failover),
               Case("fe-host-failover", check_fe_host_failover, applies=dual_homing_missing),
               Case("fe-leaf-failover", check_fe_leaf_failover, applies=dual_homing_missing)), fe_pair_missing)
