"""What the dcqcn case sees: the pfc check's incast N -> 1 on the RoCE priority, its senders
under DCQCN, a victim beside it; the congested queue's depth over the run, and what the lossless
data plane and each sender's reaction points counted meanwhile.

The receiver is rail 0's first GPU NIC; the pfc check's senders (up to 7 other GPU NICs of rail
0, from its own leaf first, then from the others) send to it under DCQCN: each QP starts at
its NIC's line rate (7 x the port's rate into it on ai-cluster) and is cut by the CNPs the
receiver's NIC sends back for the CE marks the leaf's WRED puts on the congested queue. The
run lasts until the steady state has been watched for its time (`steady_s`), at most MAX_S. The victim is the pfc check's: a flow at a fixed rate from a
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
from harness.checks.common.drops import Count, PauseTiming, lossless_counts
from harness.checks.pfc.measure import FlowSeen, flows_seen, incast_senders, wire_bytes
from harness.core.asic import Wred, switch_programs
from harness.core.lossless_declaration import Dcqcn
from harness.core.plan import Plan
from harness.plumbing.cpu_wait import CpuWait, cpu_wait_now
from harness.plumbing.labview import LabView
from harness.plumbing.priority import timed_turn
from harness.render.sonic import config_db
from harness.traffic.flows import DcqcnParams, ReceiveSpec, SendSpec
from harness.traffic.patterns import Endpoint, FlowOptions, PlannedFlow, incast, receive_specs, send_specs
from harness.traffic.results import FlowSent, ReceiveResult
from harness.traffic.runner import start_receiver, start_senders

# How long the incast runs is DCQCN's to say. Every QP starts at its NIC's line rate, PFC backs
# the incast up across the leaf and the spines (the start-up backlog), and every QP is cut once
# per CNP interval until that drains: the rates end several times below the fair share, and
# additive increase wins them back one step per increase timer, both scaled (on ai-cluster with
# the built-ins' tuning the queue is empty from about 1.3 s to 8.4 s). The steady state starts
# when the queue is marked again after the backlog drained (the senders back at the port's rate,
# paced by the marks), and is watched for STEADY_PERIODS of DCQCN's slower period; a backlog
# still there at HOLD_S is PFC holding the queue, and the steady state starts there.
MAX_S = 30.0  # the longest run: DCQCN that has not won the port back by then is judged as such
HOLD_S = 5.0  # the backlog drained within 0.4-2.1 s in every run (large: 2.1; docs/checks/dcqcn.md)
# Marked again means new marks at this many reads in a row (200 ms): a burst of two frames
# past the WRED minimum (5 kB in the built-ins) is marked now and then while the senders still
# climb back; the steady state marks at every read.
MARKING_SAMPLES = 4
STEADY_PERIODS = 20
STEADY_MIN_S, STEADY_MAX_S = 2.0, 10.0
CONTROL_S = 1.0  # the victim alone: a fixed rate on an idle path, steady from its first packet
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
    duration_s: float  # how long the incast ran
    steady_from_ms: float | None  # the steady state starts here; None: it never began within the run
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
    backlog_ms: float | None = None  # the congested queue first past the WRED minimum (the start-up backlog)
    drained_ms: float | None = None  # then first back below it (None: PFC still held it at HOLD_S)
    pause_timing: tuple[PauseTiming, ...] = ()  # every port that paused its peer, over the incast
    steady_cpu_wait: CpuWait = CpuWait()  # what the machine withheld from the kernel's packet work in the steady state


class _Watch:
    """Reads the lossless data plane's counters every SAMPLE_S in a thread, keeping the
    congested queue's depth and state and the leaf's PFC frames (the judge wants the depth over
    time, which the counters before and after cannot give), and finds the steady state as it
    comes: `done` is set once it has lasted `steady_s`."""

    def __init__(self, lab: LabView, leaf: str, port: str, queue: int, start_ns: int, wred_min: int,
                 steady_s: float) -> None:
        self.lab, self.leaf, self.port, self.queue, self.start_ns = lab, leaf, port, queue, start_ns
        self.wred_min, self.steady_ms = wred_min, steady_s * 1000
        self.samples: list[Depth] = []
        self.cpu: list[CpuWait] = []  # at each sample: what the machine had withheld until then
        self.backlog_ms: float | None = None
        self.drained_ms: float | None = None
        self.steady_from_ms: float | None = None
        self.done = threading.Event()
        self._first: tuple[int, int] | None = None
        self._marks_last = 0  # the marks at the last read, once the backlog has drained
        self._marking: list[float] = []  # the reads since which every read has seen new marks
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
        d = Depth(round((t - self.start_ns) / 1e6, 1), q.depth_bytes, q.xoff, q.marked - self._first[0],
                  pfc - self._first[1])
        self.samples.append(d)
        self.cpu.append(cpu_wait_now())
        self._phase(d)

    def _phase(self, d: Depth) -> None:
        if d.t_ms < 0:
            return
        if self.backlog_ms is None:
            if d.depth_bytes >= self.wred_min:
                self.backlog_ms = d.t_ms
        elif self.drained_ms is None and d.depth_bytes < self.wred_min:
            self.drained_ms, self._marks_last = d.t_ms, d.marked
        if self.steady_from_ms is None:
            marking = self.drained_ms is not None and d.marked > self._marks_last
            self._marking = self._marking + [d.t_ms] if marking else []
            self._marks_last = d.marked if self.drained_ms is not None else self._marks_last
            if len(self._marking) >= MARKING_SAMPLES:
                self.steady_from_ms = self._marking[0]  # marked again, read after read: the senders are back
            elif self.drained_ms is None and d.t_ms >= HOLD_S * 1000:
                self.steady_from_ms = d.t_ms  # no backlog yet, or PFC still holding it
        elif d.t_ms >= self.steady_from_ms + self.steady_ms:
            self.done.set()

    def _run(self) -> None:
        while not self._stop.wait(SAMPLE_S):
            self._read()

    def __enter__(self) -> _Watch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def steady_s(dcqcn: Dcqcn, time_scale: int) -> float:
    """How long the steady state is watched: STEADY_PERIODS of the slower of DCQCN's increase
    timer and its CNP interval, scaled (2.2 s for the built-ins' tuning at 2000)."""
    period_s = max(dcqcn.rpg_time_reset_us, dcqcn.cnp_interval_us) * time_scale / 1e6
    return min(STEADY_MAX_S, max(STEADY_MIN_S, STEADY_PERIODS * period_s))


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


@dataclass(frozen=True)
class _Watched:
    """What `_watch` hands the incast run: the congested queue and how to judge its phases."""

    leaf: str
    port: str
    queue: int
    wred_min: int
    steady_s: float


def _run(lab: LabView, incast_flows: tuple[PlannedFlow, ...], victim: tuple[PlannedFlow, ...], victim_pps: float,
         duration_s: float, watched: _Watched | None
         ) -> tuple[dict[int, FlowSeen], dict[int, FlowSent], list[ReceiveResult], int, float, _Watch | None]:
    """The incast under DCQCN (none: the victim alone, for duration_s) and the victim at its
    fixed rate, from one common instant; one receiver per destination. With the incast, the
    congested queue is watched and every sender stopped once the steady state has lasted its
    time (or at duration_s). Flow id -> what arrived, flow id -> what the sender says, the
    receivers' results, the common start (ns), the run's length (ms) and the watch."""
    # time for every sender to start (eight processes under DCQCN; one for the victim alone)
    start_ns = time.time_ns() + int((2.0 if incast_flows else 1.0) * 1e9)
    planned = incast_flows + victim
    victim_packets = max(100, int(victim_pps * duration_s))
    receivers = receive_specs(planned, ReceiveSpec(duration_s=duration_s + 30, quiet_s=0.75))
    q = lab.plan.fabric.cluster.lossless
    with ExitStack() as stack:
        # alone, the victim's receiver stops at its last packet; beside the incast, which is
        # stopped when the steady state has been seen, every receiver runs until quiet
        rx = [stack.enter_context(start_receiver(
                  lab.namespace(dst.node), replace(spec, expect_packets=None if incast_flows else victim_packets),
                  realtime=True))
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
        watch = None
        if watched is not None:
            with _Watch(lab, watched.leaf, watched.port, watched.queue, start_ns, watched.wred_min,
                        watched.steady_s) as watch:
                while not watch.done.wait(0.1) and any(g.proc.poll() is None for g in groups):
                    pass
                for g in groups:
                    g.stop()
                end_ns = time.time_ns()
                sent = {f.flow_id: f for g in groups for r in g.result(60).results for f in r.flows}
        else:
            sent = {f.flow_id: f for g in groups for r in g.result(duration_s + 60).results for f in r.flows}
            end_ns = time.time_ns()
        results = [proc.result(60) for proc in rx]
    got = {f.flow_id: f for r in results for f in r.flows}
    seen = flows_seen(planned, sent, got, start_ns)
    run_ms = round(min(end_ns - start_ns, int(duration_s * 1e9)) / 1e6, 1)
    return {p.flow.flow_id: s for p, s in zip(planned, seen)}, sent, results, start_ns, run_ms, watch


def declared(plan: Plan, port: str) -> tuple[Wred | None, int]:
    """(WRED profile, pause threshold) of a switch port ("leaf:port") as the declaration renders
    its CONFIG_DB: what the case is held to, never the running one a fault may have changed."""
    node, _, name = port.partition(":")
    sw = next(s for s in plan.switches if s.name == node)
    program = switch_programs(config_db(plan, sw), [name])[name]
    return program.wred, program.xoff_bytes


def measure_dcqcn(lab: LabView, rail: int = 0, max_s: float = MAX_S, senders: int = 7) -> DcqcnSeen:
    """The pfc check's incast (at most `senders`, `incast_senders`) under DCQCN until its steady
    state has lasted `steady_s`, at most `max_s`; the victim alone first."""
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
    ecn = switch_programs(lab.running_config_db(leaf), [port])[port].ecn_queues
    wred, _ = declared(lab.plan, f"{leaf}:{port}")
    watched = _Watched(leaf, port, q.roce_priority, wred.min_bytes if wred else 0, steady_s(q.dcqcn, q.time_scale))
    with timed_turn(lab.run_dir):
        alone = _run(lab, (), victim_flow, victim_pps, CONTROL_S, None)[0]
        before = lab.lossless_counters()
        seen, sent, results, start_ns, run_ms, watch = _run(lab, flows, victim_flow, victim_pps, max_s, watched)
        now = lab.lossless_counters()
    onset = watch.steady_from_ms if watch is not None else None
    steady_ms = onset if onset is not None and onset < run_ms else None
    steady_ns = int((steady_ms if steady_ms is not None else run_ms) * 1e6)
    arrived = {k: v for r in results for k, v in _between(r, start_ns + steady_ns, start_ns + int(run_ms * 1e6)).items()}
    delta = now.minus(before)
    counts = lossless_counts(delta, now)
    marked = tuple(Count(p.name, i, x.marked) for p in delta.ports for i, x in enumerate(p.queues) if x.marked)
    cnps = tuple(Count(p.name, q.cnp_priority, p.cnp_tx) for p in delta.ports if p.cnp_tx)
    return DcqcnSeen(
        receiver=f"{receiver.node}:{receiver.nic}", port=f"{leaf}:{port}", port_bps=port_bps,
        time_scale=q.time_scale, roce_priority=q.roce_priority, packet_bytes=wire, duration_s=run_ms / 1000,
        steady_from_ms=steady_ms, port_ecn_queues=tuple(sorted(ecn)), victim_pps=round(victim_pps, 3),
        victim_alone=alone[1000], victim=seen[1000],
        senders=tuple(_sender(seen[p.flow.flow_id], sent.get(p.flow.flow_id), steady_ns,
                             arrived.get(p.flow.flow_id, 0)) for p in flows),
        depth=tuple(watch.samples) if watch else (), marked=marked, cnp_tx=cnps, **counts,
        pfc_on=tuple((p.name, tuple(sorted(p.pfc))) for p in now.ports),
        backlog_ms=_within(watch.backlog_ms if watch else None, run_ms),
        drained_ms=_within(watch.drained_ms if watch else None, run_ms),
        steady_cpu_wait=_cpu_between(watch, steady_ms, run_ms))


def _cpu_between(watch: _Watch | None, from_ms: float | None, to_ms: float) -> CpuWait:
    """What the machine withheld between the watch's reads nearest from_ms and to_ms."""
    if watch is None or from_ms is None:
        return CpuWait()
    reads = [(d.t_ms, c) for d, c in zip(watch.samples, watch.cpu) if from_ms <= d.t_ms <= to_ms]
    return reads[-1][1].minus(reads[0][1]) if len(reads) > 1 else CpuWait()


def _within(t_ms: float | None, run_ms: float) -> float | None:
    """A phase's start, if it came before the senders stopped (the watch reads on a little)."""
    return t_ms if t_ms is not None and t_ms < run_ms else None
