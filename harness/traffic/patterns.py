"""Collective communication patterns as flow lists: ring, all-to-all, incast.

Endpoints are abstract (node, NIC, address); the lab maps them to namespaces. Every flow
of a pattern gets its own flow id and QP number, so receivers can key on them, and RoCEv2
flows get their UDP source port from the QP number, as rxe would.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal

from harness.traffic.flows import ROCE_PORT, ReceiveSpec, RoceFlow, SendSpec, SpecError, UdpFlow


@dataclass(frozen=True)
class Endpoint:
    """One NIC of one node: where a flow starts or ends."""

    node: str
    nic: str
    address: str


@dataclass(frozen=True)
class PlannedFlow:
    src: Endpoint
    dst: Endpoint
    flow: RoceFlow | UdpFlow


@dataclass(frozen=True)
class FlowOptions:
    """How pattern flows are numbered and shaped."""

    protocol: Literal["roce", "udp"] = "roce"
    qps_per_pair: int = 1  # parallel QPs (or UDP flows) per ordered pair: more entropy for ECMP
    first_flow_id: int = 1
    first_qp: int = 0x100
    first_sport: int = 20000  # UDP only
    payload_len: int = 64

    def __post_init__(self) -> None:
        if self.protocol not in ("roce", "udp") or self.qps_per_pair < 1:
            raise SpecError(f"FlowOptions: protocol {self.protocol!r} must be roce|udp, qps_per_pair >= 1")


def _flows(pairs: Sequence[tuple[Endpoint, Endpoint]], options: FlowOptions) -> tuple[PlannedFlow, ...]:
    planned = []
    for src, dst in pairs:
        for _ in range(options.qps_per_pair):
            k = len(planned)
            flow_id = options.first_flow_id + k
            if options.protocol == "roce":
                qp = options.first_qp + k
                flow: RoceFlow | UdpFlow = RoceFlow(flow_id=flow_id, dst=dst.address, dst_qp=qp, src_qp=qp,
                                                    src=src.address, payload_len=options.payload_len)
            else:
                flow = UdpFlow(flow_id=flow_id, dst=dst.address, sport=options.first_sport + k, src=src.address,
                               payload_len=options.payload_len)
            planned.append(PlannedFlow(src, dst, flow))
    return tuple(planned)


def _distinct(members: Sequence[Endpoint], what: str, minimum: int) -> None:
    if len(set(members)) != len(members):
        raise SpecError(f"{what}: endpoints repeat")
    if len(members) < minimum:
        raise SpecError(f"{what}: needs at least {minimum} endpoints, got {len(members)}")


def ring(members: Sequence[Endpoint], options: FlowOptions = FlowOptions()) -> tuple[PlannedFlow, ...]:
    """Each member sends to the next, the last to the first (one direction of a ring all-reduce)."""
    _distinct(members, "ring", 2)
    return _flows([(members[i], members[(i + 1) % len(members)]) for i in range(len(members))], options)


def all_to_all(members: Sequence[Endpoint], options: FlowOptions = FlowOptions()) -> tuple[PlannedFlow, ...]:
    """Every member sends to every other member."""
    _distinct(members, "all_to_all", 2)
    return _flows([(a, b) for a in members for b in members if a != b], options)


def incast(senders: Sequence[Endpoint], receiver: Endpoint,
           options: FlowOptions = FlowOptions()) -> tuple[PlannedFlow, ...]:
    """All senders send to one receiver at once."""
    _distinct(senders, "incast", 1)
    if receiver in senders:
        raise SpecError("incast: the receiver is also a sender")
    return _flows([(s, receiver) for s in senders], options)


def send_specs(planned: Sequence[PlannedFlow], *, packets: int | None = None, rate_pps: float | None = None,
               duration_s: float | None = None, bind_device: bool = True) -> dict[Endpoint, SendSpec]:
    """One SendSpec per sending endpoint; bind_device forces egress onto the endpoint's NIC."""
    by_src: dict[Endpoint, list[RoceFlow | UdpFlow]] = {}
    for p in planned:
        by_src.setdefault(p.src, []).append(p.flow)
    return {src: SendSpec(flows=tuple(flows), packets=packets, rate_pps=rate_pps, duration_s=duration_s,
                          device=src.nic if bind_device else None)
            for src, flows in by_src.items()}


def receive_specs(planned: Sequence[PlannedFlow], template: ReceiveSpec = ReceiveSpec(),
                  packets_per_flow: int | None = None) -> dict[Endpoint, ReceiveSpec]:
    """One ReceiveSpec per receiving endpoint, bound to its address, other fields from `template`;
    with packets_per_flow it stops as soon as all its flows' packets have arrived."""
    flows_to: dict[Endpoint, list[RoceFlow | UdpFlow]] = {}
    for p in planned:
        flows_to.setdefault(p.dst, []).append(p.flow)
    specs = {}
    for dst, flows in flows_to.items():
        roce = isinstance(flows[0], RoceFlow)
        if any(isinstance(f, RoceFlow) != roce for f in flows):
            raise SpecError(f"receive_specs: {dst.node}/{dst.nic} receives both RoCEv2 and UDP flows")
        specs[dst] = replace(template, protocol="roce" if roce else "udp",
                             port=ROCE_PORT if roce else flows[0].dport,  # type: ignore[union-attr]
                             bind=dst.address,
                             expect_packets=None if packets_per_flow is None else len(flows) * packets_per_flow)
    return specs
