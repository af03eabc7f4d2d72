"""What the dcqcn case sees: the pfc check's incast N -> 1 on the RoCE priority, its senders
under DCQCN, a victim beside it; the congested queue's depth over the run, and what the lossless
data plane and each sender's reaction points counted meanwhile.

The receiver is rail 0's first GPU NIC; the pfc check's senders (up to 7 other GPU NICs of rail
0, from its own leaf first, then from the others) send to it under DCQCN for DURATION_S: each QP starts at its NIC's line rate (7 x the port's rate into it on
ai-cluster) and is cut by the CNPs the receiver's NIC sends back for the CE marks the leaf's
WRED puts on the congested queue. The victim is the pfc check's: a flow at a fixed rate from a
sender's NIC on the receiver's leaf to another GPU of that leaf, alone first (the control),
then beside the incast. It keeps its fixed rate, no DCQCN: it is the bystander, and its
own path never congests, so DCQCN would leave it as it is anyway.
"""
from __future__ import annotations

import threading
import time
from contextlib import ExitStack
from dataclasses import dataclass, replace

from harness.checks.base import NotMeasurable, Observation
from harness.checks.collectives.delivery import rail_members
from harness.checks.pfc.measure import Count, FlowSeen, flows_seen, incast_senders, lossless_counts, wire_bytes
from harness.core.asic import switch_programs
from harness.plumbing.labview import LabView
from harness.plumbing.priority import timed_turn
from harness.traffic.flows import DcqcnParams, ReceiveSpec, SendSpec
from harness.traffic.patterns import Endpoint, FlowOptions, PlannedFlow, incast, receive_specs, send_specs
from harness.traffic.results import FlowSent, ReceiveResult
from harness.traffic.runner import start_receiver, start_senders

# 10 s, 5 ms of NIC time at time_scale 2000. Every QP starts at its NIC's line rate, PFC backs
# the incast up across the leaf and the spines, and every QP is cut once per CNP interval until
# that drains: the rates end several times below the fair share, and additive increase wins them
# back by one step per increase timer, both scaled. With the built-ins' tuning (topologies/roce.py)
# the port is busy again after 4-8 s; 3 s runs judged the climb back (docs/checks/dcqcn.md).
DURATION_S = 10.0
CONTROL_S = 3.0  # the victim alone: a fixed rate on an idle path, steady from its first packet
STEADY_FROM = 0.5  # the steady state: from this share of the run on
SAMPLE_S = 0.05  # the congested queue's depth, read this often
# The victim offers half its NIC's rate: that NIC also carries one incast sender, whose fair
# share is 1/N of the congested port; at 0.9 (the pfc check's) the NIC itself would be over its
# line and slow the victim with no congestion spreading at all.
VICTIM_SHARE = 0.5


@dataclass(frozen=True)
class SenderSeen:
    """One incast QP: what it sent and what arrived, and what DCQCN did to it (rates in bit/s,
    scaled as the lab is)."""

    flow: FlowSeen
    cnps: int  # CNPs it received (each cut its rate)
    line_bps: float  # where it started
    steady_bps: float  # its reaction point's mean rate over the steady state
    steady_packets: int  # what arrived of it in the steady state (the receiver's 10 ms buckets)
    end_bps: float  # when it stopped
    min_bps: float  # the lowest it was cut to


@dataclass(frozen=True)
class Depth:
    """One read of the congested queue, `t_ms` from the common start."""

    t_ms: float
    depth_bytes: int
    xoff: bool  # past the pause threshold now: its feeders are paused
    marked: int  # CE marks on it since the first read
    pfc_tx: int  # PFC frames the congested leaf sent on the RoCE priority since the first read


@dataclass(frozen=True, kw_only=True)
class DcqcnSeen(Observation):
    receiver: str  # node:nic
    port: str  # the congested port: the receiver's leaf's, "leaf:port"
    port_bps: int  # its rate (scaled)
    time_scale: int
    roce_priority: int
    packet_bytes: int  # on the wire
    duration_s: float
    steady_from_ms: float  # the steady state starts here
    port_ecn_queues: tuple[int, ...]  # the queues the congested port's running config marks ECN on
    victim_pps: float
    victim_alone: FlowSeen
    victim: FlowSeen
    senders: tuple[SenderSeen, ...]
    depth: tuple[Depth, ...]
    marked: tuple[Count, ...]  # CE marks per port and queue over the incast (non-zero only)
    cnp_tx: tuple[Count, ...]  # CNPs sent per NIC port (index: the CNP priority)
    pfc_tx: tuple[Count, ...]  # frames sent per port and priority, over the incast (non-zero only)
    pfc_rx: tuple[Count, ...]
    drops: tuple[Count, ...]  # packets dropped per port and queue (watchdog drops included)
    in_drops: tuple[Count, ...]  # per port and priority: dropped packets that came in there
    storms: tuple[Count, ...]
    pfc_on: tuple[tuple[str, tuple[int, ...]], ...]  # each BE port: the priorities PFC is on for there


class _DepthSampler:
    """Reads the lossless data plane's counters every SAMPLE_S in a thread, keeping the
    congested queue's depth and state and the leaf's PFC frames: the judge wants the depth over
    time, which the counters before and after (a peak since boot) cannot give."""

    def __init__(self, lab: LabView, leaf: str, port: str, queue: int, start_ns: int) -> None:
        self.lab, self.leaf, self.port, self.queue, self.start_ns = lab, leaf, port, queue, start_ns
        self.samples: list[Depth] = []
        self._first: tuple[int, int] | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"dcqcn-depth-{leaf}", daemon=True)

    def _read(self) -> None:
        now = self.lab.lossless_counters()
        t = time.time_ns()
        p = now.port(self.leaf, self.port)
        if p is None:
            return
        q = p.queues[self.queue]
        pfc = sum(x.priorities[self.queue].pfc_tx for x in now.of(self.leaf))
        if self._first is None:
            self._first = (q.marked, pfc)
        self.samples.append(Depth(round((t - self.start_ns) / 1e6, 1), q.depth_bytes, q.xoff,
                                  q.marked - self._first[0], pfc - self._first[1]))

    def _run(self) -> None:
        while not self._stop.wait(SAMPLE_S):
            self._read()

    def __enter__(self) -> _DepthSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def _scaled_bps(lab: LabView, node: str, nic: str) -> float:
    """A GPU NIC's rate here: its cable's speed (the leaf port's) / time_scale."""
    n = lab.plan.host(node).nic(nic)
    speed = next(p.speed for s in lab.plan.switches if s.name == n.peer for p in s.ports if p.name == n.peer_port)
    return speed * 1e9 / lab.plan.fabric.cluster.lossless.time_scale


def _sender(seen: FlowSeen, sent: FlowSent | None, steady_ns: int, arrived: int) -> SenderSeen:
    cc = sent.dcqcn if sent is not None else None
    if cc is None:
        return SenderSeen(seen, 0, 0.0, 0.0, arrived, 0.0, 0.0)
    return SenderSeen(seen, cc.cnps, round(cc.line_rate_bps), round(cc.mean_rate_bps(steady_ns)), arrived,
                      round(cc.rate_end_bps), round(cc.rate_min_bps))


def _between(got: ReceiveResult, start_ns: int, end_ns: int) -> dict[int, int]:
    """Flow id -> packets that arrived from start_ns to end_ns, by the receiver's buckets."""
    first = (start_ns - got.origin_ns) // got.bucket_ns
    last = (end_ns - got.origin_ns) // got.bucket_ns
    return {f.flow_id: sum(f.buckets[max(0, first):max(0, last)]) for f in got.flows}


def _run(lab: LabView, incast_flows: tuple[PlannedFlow, ...], victim: tuple[PlannedFlow, ...], victim_pps: float,
         duration_s: float, sample: tuple[str, str, int] | None
         ) -> tuple[dict[int, FlowSeen], dict[int, FlowSent], tuple[Depth, ...], dict[int, int]]:
    """The incast under DCQCN (none: the victim alone) and the victim at its fixed rate, from one
    common instant; one receiver per destination. Flow id -> what arrived, flow id -> what the
    sender says, the depth samples, flow id -> what arrived in the steady state."""
    start_ns = time.time_ns() + int(2.0e9)
    planned = incast_flows + victim
    victim_packets = max(100, int(victim_pps * duration_s))
    receivers = receive_specs(planned, ReceiveSpec(duration_s=duration_s + 30, quiet_s=1.5))
    q = lab.plan.fabric.cluster.lossless
    with ExitStack() as stack:
        # the victim's receiver stops at its last packet; the incast's, run by time, when quiet
        rx = [stack.enter_context(start_receiver(
                  lab.namespace(dst.node), replace(spec, expect_packets=None if any(p.dst == dst for p in incast_flows)
                                                   else victim_packets), realtime=True))
              for dst, spec in receivers.items()]
        groups = []
        if incast_flows:
            by_src: dict[Endpoint, list] = {}
            for p in incast_flows:
                by_src.setdefault(p.src, []).append(p.flow)
            # each NIC's reaction points at its own line rate, by time: a DCQCN run has no rate
            mine = [(lab.namespace(ep.node), SendSpec(
                        flows=tuple(fl), duration_s=duration_s, device=ep.nic, start_at_ns=start_ns, realtime=True,
                        dcqcn=DcqcnParams.of(q.dcqcn, q.time_scale, _scaled_bps(lab, ep.node, ep.nic))))
                    for ep, fl in by_src.items()]
            groups.append(stack.enter_context(start_senders(mine)))
        mine = [(lab.namespace(ep.node), replace(spec, start_at_ns=start_ns, realtime=True))
                for ep, spec in send_specs(victim, packets=victim_packets, rate_pps=victim_pps).items()]
        groups.append(stack.enter_context(start_senders(mine)))
        depth: tuple[Depth, ...] = ()
        if sample is not None:
            with _DepthSampler(lab, *sample, start_ns) as sampler:
                sent = {f.flow_id: f for g in groups for r in g.result(duration_s + 60).results for f in r.flows}
            depth = tuple(sampler.samples)
        else:
            sent = {f.flow_id: f for g in groups for r in g.result(duration_s + 60).results for f in r.flows}
        results = [proc.result(60) for proc in rx]
    got = {f.flow_id: f for r in results for f in r.flows}
    steady_ns = start_ns + int(duration_s * STEADY_FROM * 1e9)
    steady = {k: v for r in results for k, v in _between(r, steady_ns, start_ns + int(duration_s * 1e9)).items()}
    seen = flows_seen(planned, sent, got, start_ns)
    return {p.flow.flow_id: s for p, s in zip(planned, seen)}, sent, depth, steady


def measure_dcqcn(lab: LabView, rail: int = 0, duration_s: float = DURATION_S, senders: int = 7) -> DcqcnSeen:
    """The pfc check's incast (at most `senders`, `incast_senders`) under DCQCN for
    `duration_s`, the victim alone first."""
    members = rail_members(lab, rail)
    if len(members) < 3:
        raise NotMeasurable(f"rail {rail} has {len(members)} GPU NICs: an incast with a victim needs 3")
    receiver, others = members[0], incast_senders(lab, members, senders)
    nic = lab.plan.host(receiver.node).nic(receiver.nic)
    leaf, port = nic.peer, nic.peer_port
    q = lab.plan.fabric.cluster.lossless
    port_bps = int(_scaled_bps(lab, receiver.node, receiver.nic))
    wire = wire_bytes(q.roce_mtu)
    leaf_of = {m: lab.plan.host(m.node).nic(m.nic).peer for m in members}
    # As pfc's: the victim leaves by an incast sender's NIC on the congested leaf, to another GPU
    # of that leaf: only its source is shared with the incast.
    source = next((m for m in others if leaf_of[m] == leaf), others[-1])
    target = next((m for m in members[1:] if m != source and leaf_of[m] == leaf),
                  next(m for m in members[1:] if m != source))
    victim_pps = _scaled_bps(lab, source.node, source.nic) * VICTIM_SHARE / (wire * 8)
    options = FlowOptions(payload_len=q.roce_mtu)
    flows = incast(others, receiver, replace(options, first_qp=0x3000, first_flow_id=1))
    victim_flow = incast([source], target, replace(options, first_qp=0x3800, first_flow_id=1000))
    steady_ns = int(duration_s * STEADY_FROM * 1e9)
    ecn = switch_programs(lab.running_config_db(leaf), [port])[port].ecn_queues
    with timed_turn(lab.run_dir):
        alone, _, _, _ = _run(lab, (), victim_flow, victim_pps, min(duration_s, CONTROL_S), None)
        before = lab.lossless_counters()
        seen, sent, depth, arrived = _run(lab, flows, victim_flow, victim_pps, duration_s,
                                          (leaf, port, q.roce_priority))
        now = lab.lossless_counters()
    delta = now.minus(before)
    counts = lossless_counts(delta, now)
    marked = tuple(Count(p.name, i, x.marked) for p in delta.ports for i, x in enumerate(p.queues) if x.marked)
    cnps = tuple(Count(p.name, q.cnp_priority, p.cnp_tx) for p in delta.ports if p.cnp_tx)
    return DcqcnSeen(
        receiver=f"{receiver.node}:{receiver.nic}", port=f"{leaf}:{port}", port_bps=port_bps,
        time_scale=q.time_scale, roce_priority=q.roce_priority, packet_bytes=wire, duration_s=duration_s,
        steady_from_ms=steady_ns / 1e6, port_ecn_queues=tuple(sorted(ecn)), victim_pps=round(victim_pps, 3),
        victim_alone=alone[1000], victim=seen[1000],
        senders=tuple(_sender(seen[p.flow.flow_id], sent.get(p.flow.flow_id), steady_ns,
                             arrived.get(p.flow.flow_id, 0)) for p in flows),
        depth=depth, marked=marked, cnp_tx=cnps, **counts,
        pfc_on=tuple((p.name, tuple(sorted(p.pfc))) for p in now.ports))
