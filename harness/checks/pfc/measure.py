"""What the pfc case sees: an incast N -> 1 on the RoCE priority beyond the receiver's port,
with a victim flow beside it, and what the lossless data plane counted meanwhile.

The receiver is rail 0's first GPU NIC; every other GPU NIC of rail 0 sends to it at 2/3 of
the port's rate, so the port is offered N x 2/3 of what it forwards. The victim is a flow
from a sender's NIC on the receiver's leaf (it shares that NIC, an upstream port of the
incast) to another GPU of that leaf (not the receiver): PFC pauses a whole priority on a port, so
under PFC alone the victim waits behind the incast though its own destination is idle. It
runs once alone (its rate with nothing in the way: the control) and once beside the incast.
"""
from __future__ import annotations

import threading
import time
from contextlib import ExitStack
from dataclasses import dataclass, replace

from harness.checks.base import NotMeasurable, Observation
from harness.checks.collectives.delivery import rail_members
from harness.checks.common.drops import Count, PauseTiming, lossless_counts
from harness.plumbing.cpu_wait import CpuWait, cpu_wait_now
from harness.plumbing.labview import LabView
from harness.plumbing.priority import timed_turn
from harness.traffic.flows import ReceiveSpec
from harness.traffic.patterns import Endpoint, FlowOptions, PlannedFlow, incast, receive_specs, send_specs
from harness.traffic.roce import BTH_LEN, ICRC_LEN, IP_LEN, RETH_LEN, UDP_LEN
from harness.traffic.runner import start_receiver, start_senders

_ETH = 14
INCAST_SHARE = 2 / 3  # each incast sender offers this share of the receiver's port
VICTIM_SHARE = 0.9  # the victim offers this share of its own (idle) destination's port


@dataclass(frozen=True)
class FlowSeen:
    src: str  # node:nic
    dst: str
    sent: int
    received: int
    first_ns: int | None  # its first and last packet's arrival, from the common start (None: none arrived)
    last_ns: int | None


@dataclass(frozen=True, kw_only=True)
class PfcSeen(Observation):
    receiver: str  # node:nic
    port: str  # the congested port: the receiver's leaf's, "leaf:port"
    port_bps: int  # its rate (scaled)
    time_scale: int
    roce_priority: int
    packet_bytes: int  # on the wire
    incast_pps: float  # each sender's
    packets: int  # each sender's
    victim_pps: float
    victim_alone: FlowSeen
    victim: FlowSeen
    incast: tuple[FlowSeen, ...]
    pfc_tx: tuple[Count, ...]  # frames sent per port and priority, over the incast (non-zero only)
    pfc_rx: tuple[Count, ...]
    drops: tuple[Count, ...]  # packets dropped per port and queue (watchdog drops included)
    in_drops: tuple[Count, ...]  # per port and priority: dropped packets that came in there
    storms: tuple[Count, ...]  # per port and queue: PFC storms the watchdog saw (over the incast, or now)
    pfc_on: tuple[tuple[str, tuple[int, ...]], ...]  # each BE port: the priorities PFC is on for there
    senders_leaves: tuple[str, ...] = ()  # the switches the senders hang off
    cpu_wait: CpuWait = CpuWait()  # what the machine withheld from the kernel's packet work over the incast
    pause_timing: tuple[PauseTiming, ...] = ()  # every port that paused its peer, over the incast


def wire_bytes(payload: int) -> int:
    return _ETH + IP_LEN + UDP_LEN + BTH_LEN + RETH_LEN + payload + ICRC_LEN


def flows_seen(planned: tuple[PlannedFlow, ...], sent: dict, got: dict, start_ns: int) -> tuple[FlowSeen, ...]:
    out = []
    for p in planned:
        s = sent.get(p.flow.flow_id)
        r = got.get(p.flow.flow_id)
        out.append(FlowSeen(f"{p.src.node}:{p.src.nic}", f"{p.dst.node}:{p.dst.nic}", s.packets if s else 0,
                            r.unique if r else 0, r.first_ns - start_ns if r else None,
                            r.last_ns - start_ns if r else None))
    return tuple(out)


def _run(lab: LabView, groups: list[tuple[tuple[PlannedFlow, ...], int, float]]
         ) -> tuple[dict[int, FlowSeen], CpuWait]:
    """Each group (flows, packets per flow, rate per sender) starts at one common instant; one
    receiver per destination. Flow id -> what was seen, and what the machine withheld from the
    kernel's packet work from that instant until the last sender was done."""
    start_ns = time.time_ns() + int(2.0e9)
    at_start: list[CpuWait] = []
    planned_all = tuple(p for flows, _, _ in groups for p in flows)
    by_dst: dict[Endpoint, int] = {}
    for flows, packets, _ in groups:
        for p in flows:
            by_dst[p.dst] = by_dst.get(p.dst, 0) + packets
    receivers = receive_specs(planned_all, ReceiveSpec(duration_s=60, quiet_s=1.5))
    with ExitStack() as stack:
        mark = threading.Timer(max(0.0, (start_ns - time.time_ns()) / 1e9), lambda: at_start.append(cpu_wait_now()))
        mark.start()
        stack.callback(mark.cancel)
        rx = {dst: stack.enter_context(start_receiver(lab.namespace(dst.node),
                                                      replace(spec, expect_packets=by_dst[dst]), realtime=True))
              for dst, spec in receivers.items()}
        # one sender process per group: a NIC in two groups sends each at its own rate
        results = []
        for flows, packets, rate in groups:
            mine = [(lab.namespace(ep.node), replace(spec, start_at_ns=start_ns, realtime=True))
                    for ep, spec in send_specs(flows, packets=packets, rate_pps=rate).items()]
            results.append(stack.enter_context(start_senders(mine)))
        sent = {f.flow_id: f for group in results for r in group.result(120).results for f in r.flows}
        waited = cpu_wait_now().minus(at_start[0]) if at_start else CpuWait()
        got = {f.flow_id: f for proc in rx.values() for f in proc.result(60).flows}
    return {p.flow.flow_id: s for p, s in zip(planned_all, flows_seen(planned_all, sent, got, start_ns))}, waited


def incast_senders(lab: LabView, members: list[Endpoint], senders: int) -> list[Endpoint]:
    """The incast's senders to members[0]: at most `senders`, from the receiver's leaf first (up
    to half) and then from the others, so that pauses cross the spines."""
    leaf = lab.plan.host(members[0].node).nic(members[0].nic).peer
    near = [m for m in members[1:] if lab.plan.host(m.node).nic(m.nic).peer == leaf]
    far = [m for m in members[1:] if m not in near]
    take = max(2, senders)
    mine = near[:max(1, take // 2)] if far else near[:take]
    return mine + far[:take - len(mine)]


def measure_pfc(lab: LabView, rail: int = 0, packets: int = 600, senders: int = 7) -> PfcSeen:
    """`senders`: at most this many (`incast_senders`); more would only load the machine's
    senders."""
    members = rail_members(lab, rail)
    if len(members) < 3:
        raise NotMeasurable(f"rail {rail} has {len(members)} GPU NICs: an incast with a victim needs 3")
    receiver = members[0]
    nic = lab.plan.host(receiver.node).nic(receiver.nic)
    leaf, port = nic.peer, nic.peer_port
    others = incast_senders(lab, members, senders)
    q = lab.plan.fabric.cluster.lossless
    speed = next(p.speed for s in lab.plan.switches if s.name == leaf for p in s.ports if p.name == port)
    port_bps = int(speed * 1e9 / q.time_scale)
    wire = wire_bytes(q.roce_mtu)
    incast_pps = port_bps * INCAST_SHARE / (wire * 8)
    victim_pps = port_bps * VICTIM_SHARE / (wire * 8)
    leaf_of = {m: lab.plan.host(m.node).nic(m.nic).peer for m in members}
    # The victim leaves by an incast sender's NIC, which the congested leaf pauses itself when it
    # can (a sender on its own leaf), to another GPU of that leaf: only its source is shared.
    source = next((m for m in others if leaf_of[m] == leaf), others[-1])
    target = next((m for m in members[1:] if m != source and leaf_of[m] == leaf),
                  next(m for m in members[1:] if m != source))
    options = FlowOptions(payload_len=q.roce_mtu)
    flows = incast(others, receiver, replace(options, first_qp=0x3000, first_flow_id=1))
    victim_flow = incast([source], target, replace(options, first_qp=0x3800, first_flow_id=1000))
    duration = len(others) * packets / (port_bps / (wire * 8))  # what the port needs for the incast
    victim_packets = max(100, int(victim_pps * duration))
    with timed_turn(lab.run_dir):
        alone = _run(lab, [(victim_flow, victim_packets, victim_pps)])[0][1000]
        before = lab.lossless_counters()
        seen, waited = _run(lab, [(flows, packets, incast_pps), (victim_flow, victim_packets, victim_pps)])
        now = lab.lossless_counters()
    counts = lossless_counts(now.minus(before), now)
    leaves = tuple(dict.fromkeys(lab.plan.host(m.node).nic(m.nic).peer for m in others))
    return PfcSeen(
        receiver=f"{receiver.node}:{receiver.nic}", port=f"{leaf}:{port}", port_bps=port_bps,
        time_scale=q.time_scale, roce_priority=q.roce_priority, packet_bytes=wire, incast_pps=round(incast_pps, 3),
        packets=packets, victim_pps=round(victim_pps, 3), victim_alone=alone, victim=seen[1000],
        incast=tuple(seen[p.flow.flow_id] for p in flows), **counts,
        pfc_on=tuple((p.name, tuple(sorted(p.pfc))) for p in now.ports), senders_leaves=leaves,
        cpu_wait=waited)
