"""A collective's QPs, unloaded, delivered whole and in order: ring, all-to-all, incast (N -> 1)
on one rail. `measure_collective` sends the pattern and counts; `judge_collective` says
whether every planned packet arrived, in order."""
from __future__ import annotations

from dataclasses import dataclass

from harness.checks.base import Observation, Outcome
from harness.core.errors import HarnessError
from harness.core.model import Role
from harness.core.plan import Plan
from harness.plumbing.labview import LabView
from harness.traffic.flows import ReceiveSpec
from harness.traffic.patterns import Endpoint, FlowOptions, all_to_all, incast, receive_specs, ring, send_specs
from harness.traffic.runner import start_receivers, start_senders

PATTERNS = ("ring", "all-to-all", "incast")

# What this machine emulates at once for an unloaded collective, whatever the rail's size: at
# `large` an all-to-all is 4032 QPs, and 300 packets each at 1000 pps would be 4 Mpps.
MAX_PACKETS = 60_000
MAX_PPS = 20_000.0
MIN_PACKETS = 20


@dataclass(frozen=True, kw_only=True)
class CollectiveSeen(Observation):
    """What the pattern's receivers got of what was planned."""

    pattern: str  # ring | all-to-all | incast
    rail: int
    members: int  # GPU NICs on the rail
    flows: int  # QPs planned
    packets_per_qp: int
    rate_pps: float | None  # per QP; None: as fast as the senders went
    packets_sent: int  # as the senders counted them
    packets_received: int  # distinct packets, over every planned QP
    missing: int  # of the planned QPs' packets (packets_per_qp each), never received
    refused: int  # by the sources' own kernels (no route, link down): never reached the fabric
    reordered: int  # arrived after a higher sequence number


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
    packets_per_qp: int = 0
    rate_pps: float | None = None  # per QP; None: as fast as the senders went

    held = "delivered"

    def sentence(self) -> str:
        pace = f"{self.rate_pps:g} pps" if self.rate_pps else "unpaced"
        return (f"{self.pattern} on rail {self.rail}: {self.members} GPUs, {self.flows} QPs "
                f"({self.packets_per_qp} packets each, {pace}), "
                f"{self.packets_received}/{self.packets_sent} packets, {self.lost} lost, {self.reordered} reordered")


def rail_members(lab: LabView, rail: int) -> list[Endpoint]:
    members = []
    for h in lab.plan.hosts:
        if h.role is Role.GPU:
            for nic in h.nics:
                if nic.rail == rail:
                    members.append(Endpoint(h.name, nic.name, str(nic.address.ip)))
    return members


def budget(flows: int, packets: int, rate_pps: float | None) -> tuple[int, float | None]:
    """(packets per QP, rate per QP) within MAX_PACKETS and MAX_PPS for `flows` QPs, never
    below MIN_PACKETS per QP: the claim is that every QP is delivered whole and in order."""
    per_qp = max(min(packets, MIN_PACKETS), min(packets, MAX_PACKETS // max(flows, 1)))
    rate = None if rate_pps is None else min(rate_pps, MAX_PPS / max(flows, 1))
    return per_qp, rate


def measure_collective(lab: LabView, pattern: str, rail: int = 0, packets: int = 300, qps_per_pair: int = 1,
                       rate_pps: float | None = 1000.0) -> CollectiveSeen:
    """rate_pps per QP (None: as fast as the senders go). Paced by default: the claim is that
    routing delivers every QP, not how many packets per second this machine can emulate.
    Large patterns send fewer packets per QP, more slowly (see `budget`)."""
    if pattern not in PATTERNS:
        raise HarnessError(f"unknown pattern {pattern!r}; valid patterns: {', '.join(PATTERNS)}")
    members = rail_members(lab, rail)
    options = FlowOptions(qps_per_pair=qps_per_pair, first_qp=0x1000)
    if pattern == "ring":
        planned = ring(members, options)
    elif pattern == "all-to-all":
        planned = all_to_all(members, options)
    else:
        planned = incast(members[1:], members[0], options)
    packets, rate_pps = budget(len(planned), packets, rate_pps)
    # No quiet timer: senders start over several seconds at scale; every receiver stops when
    # all its packets are in, or when told to once every sender is done (see ReceiveSpec).
    # One rate bucket a second: at `large` receivers are ready a minute before the data comes,
    # and 10 ms buckets from then on were 24 million numbers of JSON nobody reads.
    receive = receive_specs(planned, ReceiveSpec(duration_s=600, bucket_ms=1000.0), packets_per_flow=packets)
    with start_receivers([(lab.namespace(ep.node), spec) for ep, spec in receive.items()]) as receivers:
        sends = send_specs(planned, packets=packets, rate_pps=rate_pps)
        with start_senders([(lab.namespace(ep.node), spec) for ep, spec in sends.items()]) as senders:
            sent = senders.result(300).results
        receivers.stop()
        received = receivers.result(60).results
    # Flow ids are unique across the pattern: account per flow, whoever sent or received it.
    # Missing is counted against the plan (every planned QP, `packets` each), not against what
    # the sources' kernels accepted: a NIC downed or a route deleted at a source refuses
    # packets before they are counted as sent, and must not make them vanish from the books.
    got_by_flow = {f.flow_id: f.unique for r in received for f in r.flows}
    return CollectiveSeen(
        pattern=pattern, rail=rail, members=len(members), flows=len(planned), packets_per_qp=packets,
        rate_pps=None if rate_pps is None else round(float(rate_pps), 1),
        packets_sent=sum(f.packets for s in sent for f in s.flows), packets_received=sum(got_by_flow.values()),
        missing=sum(max(0, packets - got_by_flow.get(p.flow.flow_id, 0)) for p in planned),
        refused=sum(f.refused for s in sent for f in s.flows),
        reordered=sum(f.reordered for r in received for f in r.flows))


def judge_collective(plan: Plan, seen: CollectiveSeen) -> CollectiveResult:
    """Every planned packet of every QP arrived, none after a later one."""
    problems = []
    if seen.missing:
        problems.append(f"{seen.missing} packets lost"
                        + (f" ({seen.refused} refused by the sources' own kernels)" if seen.refused else ""))
    if seen.reordered:
        problems.append(f"{seen.reordered} packets reordered")
    return CollectiveResult(seen.pattern, seen.rail, seen.members, seen.flows, seen.packets_sent,
                            seen.packets_received, seen.missing, seen.reordered, seen.packets_per_qp, seen.rate_pps,
                            seconds=seen.seconds, problems=tuple(problems))
