"""Collective traffic over the BE: ring, all-to-all within a rail, incast (N -> 1).

Every flow is a RoCEv2 QP from one GPU NIC to another on the same rail. Unloaded, every
packet must arrive, in order (`check_collective`). Loaded (`check_incast`), the incast
receiver's leaf port is shaped below what the senders offer, as a port is when N GPUs send
to one at line rate: per sender and per fan-in we measure loss, completion time and
queueing delay. The port here is lossy, as every port of this emulation is: what it drops
a real RoCEv2 NIC resends go-back-N; PFC would pause the senders instead (SONiC-VS and the
kernel do not act on PFC: it is rendered as configuration only).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, replace
from functools import partial

from harness.checks.base import Case, Check, Outcome
from harness.core.errors import HarnessError
from harness.plumbing.labview import LabView
from harness.core.model import Role
from harness.traffic.flows import ReceiveSpec
from harness.traffic.patterns import Endpoint, FlowOptions, all_to_all, incast, receive_specs, ring, send_specs
from harness.traffic.roce import BTH_LEN, ICRC_LEN, IP_LEN, RETH_LEN, UDP_LEN
from harness.traffic.runner import start_receiver, start_receivers, start_senders

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


# What this machine emulates at once for an unloaded collective, whatever the rail's size: at
# `large` an all-to-all is 4032 QPs, and 300 packets each at 1000 pps would be 4 Mpps.
MAX_PACKETS = 60_000
MAX_PPS = 20_000.0
MIN_PACKETS = 20


def budget(flows: int, packets: int, rate_pps: float | None) -> tuple[int, float | None]:
    """(packets per QP, rate per QP) within MAX_PACKETS and MAX_PPS for `flows` QPs, never
    below MIN_PACKETS per QP: the claim is that every QP is delivered whole and in order."""
    per_qp = max(min(packets, MIN_PACKETS), min(packets, MAX_PACKETS // max(flows, 1)))
    rate = None if rate_pps is None else min(rate_pps, MAX_PPS / max(flows, 1))
    return per_qp, rate


def check_collective(lab: LabView, pattern: str, rail: int = 0, packets: int = 300, qps_per_pair: int = 1,
                     rate_pps: float | None = 1000.0) -> CollectiveResult:
    """rate_pps per QP (None: as fast as the senders go). Paced by default: the claim is that
    routing delivers every QP, not how many packets per second this machine can emulate.
    Large patterns send fewer packets per QP, more slowly (see `budget`)."""
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
    # Loss is counted against the plan (every planned QP, `packets` each), not against what the
    # sources' kernels accepted: a NIC downed or a route deleted at a source refuses packets
    # before they are counted as sent, and must not make them vanish from the books.
    expected = {p.flow.flow_id: packets for p in planned}
    got_by_flow = {f.flow_id: f.unique for r in received for f in r.flows}
    lost = sum(max(0, n - got_by_flow.get(fid, 0)) for fid, n in expected.items())
    refused = sum(f.refused for s in sent for f in s.flows)
    total_sent = sum(f.packets for s in sent for f in s.flows)
    total_received = sum(got_by_flow.values())
    reordered = sum(f.reordered for r in received for f in r.flows)
    problems = []
    if lost:
        problems.append(f"{lost} packets lost" + (f" ({refused} refused by the sources' own kernels)" if refused else ""))
    if reordered:
        problems.append(f"{reordered} packets reordered")
    return CollectiveResult(pattern, rail, len(members), len(planned), total_sent, total_received, lost, reordered,
                            packets, rate_pps and round(rate_pps, 1), seconds=round(time.monotonic() - t0, 2),
                            problems=tuple(problems))


# ---------------------------------------------------------------------------- incast under congestion

_ETH_LEN = 14


@dataclass(frozen=True)
class SenderFigures:
    sender: str  # node:nic
    sent: int
    received: int
    loss_pct: float
    completion_ms: float  # from the common start to its last packet's arrival
    queue_avg_ms: float  # one-way delay above the unloaded path's (send/receive timestamps, one clock)
    queue_max_ms: float
    gaps: int  # PSN gaps the responder saw: each one a go-back-N retransmission in real RoCEv2


@dataclass(frozen=True)
class FanIn:
    senders: int
    offered_mbit: float
    shaped_mbit: float
    sent: int
    received: int
    loss_pct: float
    delivered_mbit: float  # what arrived, over the time from the common start to the last arrival
    completion_ms: float  # the slowest sender's: a collective waits for it
    ideal_ms: float  # all bytes at the shaped rate (a lossless, paused port's best)
    queue_avg_ms: float
    queue_max_ms: float
    gaps: int
    jain: float  # fairness of delivered packets across senders
    per_sender: tuple[SenderFigures, ...]


@dataclass(frozen=True)
class IncastResult(Outcome):
    receiver: str
    port: str  # the shaped leaf port, "leaf:port"
    shaper: str  # the tc command applied
    shaped_mbit: float
    per_sender_mbit: float
    packet_bytes: int  # on the wire, with the Ethernet header
    base_delay_ms: float  # one-way delay with one sender, below the shaped rate
    fan_ins: tuple[FanIn, ...]
    pfc_enforced: bool  # False: the emulation drops instead of pausing

    held = "measured"

    def sentence(self) -> str:
        figures = "; ".join(f"{f.senders}→1 {f.offered_mbit:.0f}/{f.shaped_mbit:.0f} Mbit/s: loss {f.loss_pct:.1f} %, "
                            f"done {f.completion_ms:.0f} ms (ideal {f.ideal_ms:.0f}), queue {f.queue_avg_ms:.1f}/"
                            f"{f.queue_max_ms:.1f} ms avg/max" for f in self.fan_ins)
        return f"incast into {self.port} shaped to {self.shaped_mbit:g} Mbit/s: " + figures


def default_fan_ins(lab: LabView, rail: int = 0) -> tuple[int, ...]:
    """1 (within capacity), 2 and 4 (beyond it), and every other GPU of the rail at once."""
    senders = len(rail_members(lab, rail)) - 1
    return tuple(sorted({n for n in (1, 2, 4, senders) if 1 <= n <= senders}))


def _wire_bytes(payload_len: int) -> int:
    return _ETH_LEN + IP_LEN + UDP_LEN + BTH_LEN + RETH_LEN + payload_len + ICRC_LEN


def check_incast(lab: LabView, fan_ins: tuple[int, ...] | None = None, rail: int = 0, rate_pps: float = 2000.0,
                 payload_len: int = 1024, capacity: float = 1.5, packets: int = 2000,
                 queue_ms: float = 20.0) -> IncastResult:
    """N senders -> one receiver on a rail, the receiver's leaf port shaped (tbf) to `capacity`
    senders' worth of traffic, with a queue of `queue_ms` at that rate. Each sender offers
    rate_pps of payload_len-byte RDMA WRITEs for `packets` packets, all starting together.

    Passes when the measurement is sound: a fan-in within capacity loses nothing (the path
    is clean), and one well beyond it does lose (the port really is congested; otherwise
    this proves nothing). The figures are the lesson, not a verdict on the fabric: every
    port here is lossy."""
    if capacity <= 0 or rate_pps <= 0 or packets < 100:
        raise HarnessError(f"check_incast: capacity {capacity:g} and rate_pps {rate_pps:g} must be > 0, "
                           f"packets {packets} >= 100")
    t0 = time.monotonic()
    members = rail_members(lab, rail)
    if len(members) < 2:
        raise HarnessError(f"rail {rail} has {len(members)} GPU NIC(s): an incast needs a receiver and a sender")
    fan_ins = default_fan_ins(lab, rail) if fan_ins is None else fan_ins
    receiver, senders = members[0], members[1:]
    bad = [n for n in fan_ins if not 1 <= n <= len(senders)]
    if bad:
        raise HarnessError(f"fan_ins {bad}: rail {rail} has {len(senders)} possible senders (1..{len(senders)})")
    nic = lab.plan.host(receiver.node).nic(receiver.nic)
    leaf, port = nic.peer, nic.peer_port
    wire = _wire_bytes(payload_len)
    per_sender_bit = rate_pps * wire * 8
    shaped_bit = capacity * per_sender_bit
    limit = max(int(shaped_bit / 8 * queue_ms / 1000), 2 * wire)
    burst = max(2 * wire, int(shaped_bit / 8 / 1000))  # about 1 ms of tokens
    tc = ["tc", "qdisc", "replace", "dev", port, "root", "tbf", "rate", f"{int(shaped_bit)}bit",
          "burst", str(burst), "limit", str(limit)]
    results: list[FanIn] = []
    problems: list[str] = []
    base_delay = None
    lab.ns_exec(leaf, tc, check=True)
    try:
        # The unloaded path's one-way delay, measured under the same shaper with one slow sender.
        base_delay = _base_delay(lab, receiver, senders[0], payload_len)
        for n in fan_ins:
            results.append(_fan_in(lab, receiver, senders[:n], rate_pps, payload_len, packets, wire, shaped_bit,
                                   base_delay))
    finally:
        lab.ns_exec(leaf, ["tc", "qdisc", "del", "dev", port, "root"])  # undo, whatever happened
    for f in results:
        if f.received == 0:
            # A shaped port drops some, never all: the measurement failed, not the fabric.
            problems.append(f"{f.senders}→1: the receiver saw none of {f.sent} packets: not measured")
            continue
        within = f.offered_mbit <= f.shaped_mbit
        if within and f.loss_pct > 0:
            problems.append(f"{f.senders}→1 offered {f.offered_mbit:.1f} Mbit/s, within the port's "
                            f"{f.shaped_mbit:.1f}, yet lost {f.loss_pct:.1f} %: the path is not clean")
        if f.offered_mbit > 1.2 * f.shaped_mbit and f.loss_pct == 0:
            problems.append(f"{f.senders}→1 offered {f.offered_mbit:.1f} Mbit/s into {f.shaped_mbit:.1f} and lost "
                            f"nothing: the port was not congested (is the shaper on {leaf}:{port}?)")
    return IncastResult(
        receiver=f"{receiver.node}:{receiver.nic}", port=f"{leaf}:{port}", shaper=" ".join(tc),
        shaped_mbit=round(shaped_bit / 1e6, 3), per_sender_mbit=round(per_sender_bit / 1e6, 3), packet_bytes=wire,
        base_delay_ms=round(base_delay or 0.0, 3), fan_ins=tuple(results), pfc_enforced=False,
        seconds=round(time.monotonic() - t0, 2), problems=tuple(problems))


def _run_incast(lab: LabView, receiver: Endpoint, senders: list[Endpoint], rate_pps: float, payload_len: int,
                packets: int, first_qp: int) -> tuple[dict, object, int]:
    planned = incast(senders, receiver, FlowOptions(qps_per_pair=1, first_qp=first_qp, payload_len=payload_len))
    (spec,) = receive_specs(planned, ReceiveSpec(duration_s=60, quiet_s=1.0), packets_per_flow=packets).values()
    # The senders' process starts and primes every path, then all send from the same instant.
    start_ns = time.time_ns() + int((1.5 + 0.02 * len(senders)) * 1e9)
    sends = {ep: replace(send, start_at_ns=start_ns)
             for ep, send in send_specs(planned, packets=packets, rate_pps=rate_pps).items()}
    with start_receiver(lab.namespace(receiver.node), spec) as rx:
        with start_senders([(lab.namespace(ep.node), send) for ep, send in sends.items()]) as senders:
            sent = dict(zip(sends, senders.result(120).results))
        got = rx.result(60)
    return sent, got, start_ns


def _base_delay(lab: LabView, receiver: Endpoint, sender: Endpoint, payload_len: int) -> float:
    sent, got, _ = _run_incast(lab, receiver, [sender], 200.0, payload_len, 100, 0x1800)
    return min((f.latency_min_ns for f in got.flows), default=0) / 1e6


def _fan_in(lab: LabView, receiver, senders, rate_pps, payload_len, packets, wire, shaped_bit, base_delay) -> FanIn:
    sent, got, start_ns = _run_incast(lab, receiver, senders, rate_pps, payload_len, packets, 0x2000)
    by_flow = {f.flow_id: f for f in got.flows}
    per = []
    for ep, result in sent.items():
        for fs in result.flows:
            f = by_flow.get(fs.flow_id)
            received = f.unique if f else 0
            per.append(SenderFigures(
                sender=f"{ep.node}:{ep.nic}", sent=fs.packets, received=received,
                loss_pct=round(100 * (packets - received) / packets, 2),  # of the planned packets
                completion_ms=round((f.last_ns - start_ns) / 1e6, 1) if f else 0.0,
                queue_avg_ms=round(max(0.0, f.latency_avg_ns / 1e6 - base_delay), 3) if f else 0.0,
                queue_max_ms=round(max(0.0, f.latency_max_ns / 1e6 - base_delay), 3) if f else 0.0,
                gaps=f.psn_gaps if f else 0))
    total_sent = sum(p.sent for p in per)
    total_got = sum(p.received for p in per)
    planned_total = packets * len(per)
    last = max((f.last_ns for f in got.flows), default=start_ns)
    span_s = max((last - start_ns) / 1e9, 1e-9)
    counts = [p.received for p in per]
    return FanIn(
        senders=len(senders), offered_mbit=round(len(senders) * rate_pps * wire * 8 / 1e6, 3),
        shaped_mbit=round(shaped_bit / 1e6, 3), sent=total_sent, received=total_got,
        loss_pct=round(100 * (planned_total - total_got) / planned_total, 2) if planned_total else 0.0,
        delivered_mbit=round(total_got * wire * 8 / span_s / 1e6, 3),
        completion_ms=max((p.completion_ms for p in per), default=0.0),
        ideal_ms=round(max(total_sent * wire * 8 / shaped_bit, packets / rate_pps) * 1000, 1),
        queue_avg_ms=round(sum(p.queue_avg_ms * p.received for p in per) / total_got, 3) if total_got else 0.0,
        queue_max_ms=max((p.queue_max_ms for p in per), default=0.0),
        gaps=sum(p.gaps for p in per),
        jain=round(sum(counts) ** 2 / (len(counts) * sum(c * c for c in counts)), 3) if any(counts) else 0.0,
        per_sender=tuple(per))


def _rail0_too_small(plan) -> str | None:
    members = sum(1 for h in plan.hosts for n in h.nics if n.rail == 0)
    return None if members >= 2 else f"rail 0 has {members} GPU NIC(s): a collective needs 2 or more"


CHECK = Check("collectives", "ring, all-to-all and incast on rail 0 as RoCEv2 QPs, then incast into a shaped port",
              tuple(Case(f"collectives-{p}", partial(check_collective, pattern=p)) for p in PATTERNS)
              + (Case("collectives-incast-congested", partial(check_incast, rail=0)),), _rail0_too_small)
