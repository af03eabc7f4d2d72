"""Collective traffic over the BE: ring, all-to-all within a rail, incast (N -> 1).

Every flow is a RoCEv2 QP from one GPU NIC to another on the same rail; every packet must
arrive, in order. This is the traffic the claims are about, driven as a job would.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

from harness.checks.result import Outcome
from harness.errors import HarnessError
from harness.model import Role
from harness.traffic.flows import ReceiveSpec
from harness.traffic.patterns import Endpoint, FlowOptions, all_to_all, incast, receive_specs, ring, send_specs
from harness.traffic.runner import start_receiver, start_sender

PATTERNS = ("ring", "all-to-all", "incast")


@dataclass(frozen=True)
class CollectiveResult(Outcome):
    pattern: str
    rail: int
    members: int
    flows: int
    packets_sent: int
    packets_received: int
    lost: int
    reordered: int
    seconds: float
    problems: tuple[str, ...] = field(default=())

    @property
    def reason(self) -> str:
        figures = (f"{self.pattern} on rail {self.rail}: {self.members} GPUs, {self.flows} QPs, "
                   f"{self.packets_received}/{self.packets_sent} packets, {self.lost} lost, {self.reordered} reordered")
        return ("delivered: " if self.passed else "FAILED: " + "; ".join(self.problems) + " | ") + figures


def rail_members(lab, rail: int) -> list[Endpoint]:
    members = []
    for h in lab.plan.hosts:
        if h.role is Role.GPU:
            for nic in h.nics:
                if nic.rail == rail:
                    members.append(Endpoint(h.name, nic.name, str(nic.address.ip)))
    return members


def check_collective(lab, pattern: str, rail: int = 0, packets: int = 300, qps_per_pair: int = 1,
                     rate_pps: float | None = 1000.0) -> CollectiveResult:
    """rate_pps per QP (None: as fast as the senders go). Paced by default: the claim is that
    routing delivers every QP, not how many packets per second this machine can emulate."""
    if pattern not in PATTERNS:
        raise HarnessError(f"unknown pattern {pattern!r}; valid patterns: {', '.join(PATTERNS)}")
    t0 = time.monotonic()
    members = rail_members(lab, rail)
    options = FlowOptions(qps_per_pair=qps_per_pair, first_qp=0x1000)
    if pattern == "ring":
        planned = ring(members, options)
    elif pattern == "all-to-all":
        planned = all_to_all(members, options)
    else:
        planned = incast(members[1:], members[0], options)
    receivers = {ep: start_receiver(lab.namespace(ep.node), spec)
                 for ep, spec in receive_specs(planned, ReceiveSpec(duration_s=60, quiet_s=2.0),
                                               packets_per_flow=packets).items()}
    try:
        senders = [start_sender(lab.namespace(ep.node), spec)
                   for ep, spec in send_specs(planned, packets=packets, rate_pps=rate_pps).items()]
        sent = [s.result(120) for s in senders]
        received = [r.result(60) for r in receivers.values()]
    finally:
        for r in receivers.values():
            r.kill()
    # Flow ids are unique across the pattern: account per flow, whoever sent or received it.
    sent_by_flow = {f.flow_id: f.packets for s in sent for f in s.flows}
    got_by_flow = {f.flow_id: f.unique for r in received for f in r.flows}
    lost = sum(max(0, n - got_by_flow.get(fid, 0)) for fid, n in sent_by_flow.items())
    total_sent = sum(sent_by_flow.values())
    total_received = sum(got_by_flow.values())
    reordered = sum(f.reordered for r in received for f in r.flows)
    problems = []
    if lost:
        problems.append(f"{lost} packets lost")
    if reordered:
        problems.append(f"{reordered} packets reordered")
    return CollectiveResult(pattern, rail, len(members), len(planned), total_sent, total_received, lost, reordered,
                            round(time.monotonic() - t0, 2), tuple(problems))
