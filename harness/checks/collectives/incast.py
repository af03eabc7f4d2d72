"""An incast beyond a port's rate: N senders -> one receiver on a rail, as a port is when N GPUs
send to one at line rate. `measure_incast` runs each fan-in and keeps, per sender, what it
sent, what arrived and when; `judge_incast` turns that into loss, completion time and queueing
delay per fan-in. On the lab's lossless data plane (the netns runtime) the port is the leaf's
own at its scaled rate, PFC on: nothing may be lost, and the data plane's counters say where
pauses went. Without one (SONiC-VS) the port is shaped by tbf and lossy: what it drops a real
RoCEv2 NIC resends go-back-N, and the judge says whether that measurement is sound.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, replace

from harness.checks.base import MeasuredOutcome, Observation
from harness.checks.collectives.delivery import rail_members
from harness.checks.common.drops import Count, PauseTiming, late_pause_drops, lossless_counts, why_dropped
from harness.core.asic import switch_programs
from harness.core.capabilities import Feature
from harness.core.errors import HarnessError
from harness.core.lossless_counters import LosslessCounters
from harness.core.plan import Plan
from harness.plumbing.cpu_wait import CpuWait, cpu_wait_now
from harness.plumbing.labview import LabView
from harness.plumbing.priority import timed_turn
from harness.traffic.flows import ReceiveSpec
from harness.traffic.patterns import Endpoint, FlowOptions, incast, receive_specs, send_specs
from harness.traffic.roce import BTH_LEN, ICRC_LEN, IP_LEN, RETH_LEN, UDP_LEN
from harness.traffic.runner import start_receiver, start_senders

_ETH_LEN = 14


@dataclass(frozen=True)
class SenderSeen:
    sender: str  # node:nic
    sent: int
    received: int  # distinct packets
    last_arrival_ns: int | None  # from the common start to its last packet's arrival (None: none arrived)
    latency_avg_ns: int  # one-way: receive time minus the sender's timestamp (one clock)
    latency_max_ns: int
    gaps: int  # PSN gaps the responder saw: each one a go-back-N retransmission in real RoCEv2
    max_lag_ns: int = 0  # the sender's worst lateness against its slot (it then sends the late ones at once)


@dataclass(frozen=True)
class FanInSeen:
    senders: int
    per_sender: tuple[SenderSeen, ...]
    # the lossless data plane's counters over the fan-in (all 0 on a lossy port)
    drops: int = 0  # packets any BE queue dropped
    drop_places: tuple[str, ...] = ()  # "switch:port queue q: n" for each queue that dropped
    pauses_sent: int = 0  # PFC frames the receiver's leaf sent
    pauses_received: int = 0  # PFC frames the senders' NICs received
    # what a drop is judged on (as the pfc check's): where it dropped and came in, where PFC is
    # on, and how late each port's pauses reached its peer
    drop_counts: tuple[Count, ...] = ()
    in_drops: tuple[Count, ...] = ()
    pfc_on: tuple[tuple[str, tuple[int, ...]], ...] = ()
    pause_timing: tuple[PauseTiming, ...] = ()
    # what the machine kept from the kernel's packet work over the fan-in: a shaper's packets
    # leave when ksoftirqd runs, so a queue may be the machine's, not the port's
    cpu_wait: CpuWait = CpuWait()


@dataclass(frozen=True, kw_only=True)
class IncastSeen(Observation):
    receiver: str  # node:nic
    port: str  # the shaped leaf port, "leaf:port"
    shaper: str  # the tc command applied
    shaped_bps: int  # the port's rate
    rate_pps: float  # each sender's
    packets: int  # each sender's
    packet_bytes: int  # on the wire, with the Ethernet header
    base_delay_ns: int  # one-way delay with one slow sender, under the same shaper
    fan_ins: tuple[FanInSeen, ...]
    queue_bytes: int = 0  # the shaper's queue (tbf limit); 0: not recorded
    lossless: bool = False  # the port is the lossless data plane's (PFC), not a lossy shaper
    pause_bytes: int = 0  # the port's queue pauses its feeders past this (its running config's)


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
    drops: int = 0
    drop_places: tuple[str, ...] = ()
    pauses_sent: int = 0
    pauses_received: int = 0
    cpu_withheld_ms: float = 0.0  # the longest one CPU's packet work waited over the fan-in (CpuWait)


@dataclass(frozen=True)
class IncastResult(MeasuredOutcome):
    receiver: str
    port: str  # the shaped leaf port, "leaf:port"
    shaper: str  # the tc command applied
    shaped_mbit: float
    per_sender_mbit: float
    packet_bytes: int  # on the wire, with the Ethernet header
    base_delay_ms: float  # one-way delay with one sender, below the shaped rate
    fan_ins: tuple[FanIn, ...]
    pfc_enforced: bool  # False: the emulation drops instead of pausing
    # not_measurable: why a fan-in's figures cannot be trusted (a sender the machine held up)

    held = "measured"

    def sentence(self) -> str:
        pauses = (lambda f: f", PFC {f.pauses_sent} sent/{f.pauses_received} at the senders") if self.pfc_enforced \
            else (lambda f: "")
        figures = "; ".join(f"{f.senders}→1 {f.offered_mbit:.0f}/{f.shaped_mbit:.0f} Mbit/s: loss {f.loss_pct:.1f} %"
                            f"{pauses(f)}, done {f.completion_ms:.0f} ms (ideal {f.ideal_ms:.0f}), queue "
                            f"{f.queue_avg_ms:.1f}/{f.queue_max_ms:.1f} ms avg/max" for f in self.fan_ins)
        how = f"at {self.shaped_mbit:g} Mbit/s ({self.shaper})" if self.pfc_enforced \
            else f"shaped to {self.shaped_mbit:g} Mbit/s"
        return f"incast into {self.port} {how}: " + figures


def default_fan_ins(lab: LabView, rail: int = 0) -> tuple[int, ...]:
    """1 (within capacity), 2 and 4 (beyond it), and every other GPU of the rail at once."""
    senders = len(rail_members(lab, rail)) - 1
    return tuple(sorted({n for n in (1, 2, 4, senders) if 1 <= n <= senders}))


def _wire_bytes(payload_len: int) -> int:
    return _ETH_LEN + IP_LEN + UDP_LEN + BTH_LEN + RETH_LEN + payload_len + ICRC_LEN


def measure_incast(lab: LabView, fan_ins: tuple[int, ...] | None = None, rail: int = 0, rate_pps: float | None = None,
                   payload_len: int | None = None, capacity: float = 1.5, packets: int | None = None,
                   queue_ms: float = 20.0) -> IncastSeen:
    """N senders -> one receiver on a rail, all starting together, each offering `capacity`'s
    share of the receiver's port: the port holds 1.5 senders' worth by default.

    On the lossless data plane the port is the receiver's leaf port itself, at its scaled rate,
    PFC on: each sender offers port rate / capacity in RoCE-MTU frames (`packets` of them,
    default 600), and the data plane's counters say what was paused and dropped where. On a
    lossy runtime the port is shaped (tbf) to `capacity` senders of `rate_pps` (default 2000)
    `payload_len`-byte (1024) RDMA WRITEs, with a queue of `queue_ms` at that rate."""
    if capacity <= 0 or (rate_pps is not None and rate_pps <= 0) or (packets is not None and packets < 100):
        raise HarnessError(f"incast: capacity {capacity:g} and rate_pps {rate_pps} must be > 0, "
                           f"packets {packets} >= 100")
    members = rail_members(lab, rail)
    if len(members) < 2:
        raise HarnessError(f"rail {rail} has {len(members)} GPU NIC(s): an incast needs a receiver and a sender")
    fan_ins = default_fan_ins(lab, rail) if fan_ins is None else fan_ins
    receiver, senders = members[0], members[1:]
    bad = [n for n in fan_ins if not 1 <= n <= len(senders)]
    if bad:
        raise HarnessError(f"fan_ins {bad}: rail {rail} has {len(senders)} possible senders (1..{len(senders)})")
    lossless = lab.lacks(Feature.LOSSLESS_DATA_PATH) is None
    q = lab.plan.fabric.cluster.lossless
    payload_len = payload_len or (q.roce_mtu if lossless else 1024)
    packets = packets or (600 if lossless else 2000)
    nic = lab.plan.host(receiver.node).nic(receiver.nic)
    leaf, port = nic.peer, nic.peer_port
    wire = _wire_bytes(payload_len)
    if lossless:
        speed = next(p.speed for s in lab.plan.switches if s.name == leaf for p in s.ports if p.name == port)
        shaped_bit = int(speed * 1e9 / q.time_scale)
        rate_pps = rate_pps or shaped_bit / (capacity * wire * 8)
        shaper = f"{speed}G / time_scale {q.time_scale}, PFC on priority {q.roce_priority}"
        limit = 0
        pause_bytes = switch_programs(lab.running_config_db(leaf), [port])[port].xoff_bytes
    else:
        rate_pps = rate_pps or 2000.0
        shaped_bit = int(capacity * rate_pps * wire * 8)
        limit = max(int(shaped_bit / 8 * queue_ms / 1000), 2 * wire)
        burst = max(2 * wire, int(shaped_bit / 8 / 1000))  # about 1 ms of tokens
        tc = ["tc", "qdisc", "replace", "dev", port, "root", "tbf", "rate", f"{shaped_bit}bit",
              "burst", str(burst), "limit", str(limit)]
        shaper = " ".join(tc)
        pause_bytes = 0
    seen: list[FanInSeen] = []
    if not lossless:
        lab.ns_exec(leaf, tc, check=True)
    try:
        # The unloaded path's one-way delay, measured under the same shaper with one slow sender.
        base_delay = _base_delay(lab, receiver, senders[0], payload_len)
        for n in fan_ins:
            before = lab.lossless_counters() if lossless else None
            fan = _fan_in(lab, receiver, senders[:n], rate_pps, payload_len, packets)
            if before is not None:
                now = lab.lossless_counters()
                fan = _with_counters(fan, now.minus(before), now, leaf, senders[:n])
            seen.append(fan)
    finally:
        if not lossless:
            lab.ns_exec(leaf, ["tc", "qdisc", "del", "dev", port, "root"])  # undo, whatever happened
    return IncastSeen(receiver=f"{receiver.node}:{receiver.nic}", port=f"{leaf}:{port}", shaper=shaper,
                      shaped_bps=shaped_bit, rate_pps=float(rate_pps), packets=packets, packet_bytes=wire,
                      base_delay_ns=base_delay, fan_ins=tuple(seen), queue_bytes=limit, lossless=lossless,
                      pause_bytes=pause_bytes)


def _with_counters(fan: FanInSeen, delta: LosslessCounters, now: LosslessCounters, leaf: str,
                   senders: list[Endpoint]) -> FanInSeen:
    places = tuple(f"{p.name} queue {i}: {qc.drop_pkts + qc.wd_drops}" for p in delta.ports
                   for i, qc in enumerate(p.queues) if qc.drop_pkts or qc.wd_drops)
    drops = sum(qc.drop_pkts + qc.wd_drops for p in delta.ports for qc in p.queues)
    sent = sum(pr.pfc_tx for p in delta.of(leaf) for pr in p.priorities)
    nics = {(ep.node, ep.nic) for ep in senders}
    received = sum(pr.pfc_rx for p in delta.ports if (p.node, p.port) in nics for pr in p.priorities)
    counts = lossless_counts(delta, now)
    return replace(fan, drops=drops, drop_places=places, pauses_sent=sent, pauses_received=received,
                   drop_counts=counts["drops"], in_drops=counts["in_drops"], pause_timing=counts["pause_timing"],
                   pfc_on=tuple((p.name, tuple(sorted(p.pfc))) for p in now.ports))


def _run_incast(lab: LabView, receiver: Endpoint, senders: list[Endpoint], rate_pps: float, payload_len: int,
                packets: int, first_qp: int) -> tuple[dict, object, int]:
    # Labs side by side take turns at a fan-in (priority.timed_turn): its loss is the port's only
    # where its senders keep to their schedule.
    with timed_turn(lab.run_dir):
        return _fan_in_traffic(lab, receiver, senders, rate_pps, payload_len, packets, first_qp)


def _fan_in_traffic(lab: LabView, receiver: Endpoint, senders: list[Endpoint], rate_pps: float, payload_len: int,
                    packets: int, first_qp: int) -> tuple[dict, object, int]:
    planned = incast(senders, receiver, FlowOptions(qps_per_pair=1, first_qp=first_qp, payload_len=payload_len))
    (spec,) = receive_specs(planned, ReceiveSpec(duration_s=60, quiet_s=1.0), packets_per_flow=packets).values()
    # The senders' process starts and primes every path, then all send from the same instant.
    start_ns = time.time_ns() + int((1.5 + 0.02 * len(senders)) * 1e9)
    # Both ends under SCHED_FIFO, as failover's: a sender the machine delays catches up in a
    # burst the shaper drops (measured: 1->1 done in 1,259 ms, not 1,000, and 8.7 % lost within
    # the port's rate), which is the sender's loss, not the port's.
    sends = {ep: replace(send, start_at_ns=start_ns, realtime=True)
             for ep, send in send_specs(planned, packets=packets, rate_pps=rate_pps).items()}
    with start_receiver(lab.namespace(receiver.node), spec, realtime=True) as rx:
        with start_senders([(lab.namespace(ep.node), send) for ep, send in sends.items()]) as group:
            sent = dict(zip(sends, group.result(120).results))
        got = rx.result(60)
    return sent, got, start_ns


def _base_delay(lab: LabView, receiver: Endpoint, sender: Endpoint, payload_len: int) -> int:
    _, got, _ = _run_incast(lab, receiver, [sender], 200.0, payload_len, 100, 0x1800)
    return min((f.latency_min_ns for f in got.flows), default=0)


def _fan_in(lab: LabView, receiver: Endpoint, senders: list[Endpoint], rate_pps: float, payload_len: int,
            packets: int) -> FanInSeen:
    before = cpu_wait_now()
    sent, got, start_ns = _run_incast(lab, receiver, senders, rate_pps, payload_len, packets, 0x2000)
    waited = cpu_wait_now().minus(before)
    by_flow = {f.flow_id: f for f in got.flows}
    per = []
    for ep, result in sent.items():
        for fs in result.flows:
            f = by_flow.get(fs.flow_id)
            per.append(SenderSeen(f"{ep.node}:{ep.nic}", fs.packets, f.unique if f else 0,
                                  f.last_ns - start_ns if f else None, f.latency_avg_ns if f else 0,
                                  f.latency_max_ns if f else 0, f.psn_gaps if f else 0, result.max_lag_ns))
    return FanInSeen(len(senders), tuple(per), cpu_wait=waited)


def judge_incast(plan: Plan, seen: IncastSeen) -> IncastResult:
    """Each fan-in's figures, and whether the measurement is sound: a fan-in within capacity
    loses nothing (the path is clean), and one well beyond it does lose (the port really is
    congested; otherwise this proves nothing). The figures are the lesson, not a verdict on
    the fabric: every port here is lossy."""
    fan_ins = tuple(_figures(seen, f) for f in seen.fan_ins)
    if seen.lossless:
        return _judge_lossless(plan, seen, fan_ins)
    problems: list[str] = []
    undecided: list[str] = []
    for fan, f in zip(seen.fan_ins, fan_ins):
        if f.received == 0:
            # A shaped port drops some, never all: the measurement failed, not the fabric.
            problems.append(f"{f.senders}→1: the receiver saw none of {f.sent} packets: not measured")
            continue
        if f.offered_mbit <= f.shaped_mbit and f.loss_pct > 0:
            late = _late_burst(seen, fan)
            if late:  # the sender's own catch-up, not the path: no verdict either way
                undecided.append(f"{f.senders}→1 lost {f.loss_pct:.1f} % within the port's {f.shaped_mbit:.1f} Mbit/s, "
                                 f"but {late}")
            else:
                problems.append(f"{f.senders}→1 offered {f.offered_mbit:.1f} Mbit/s, within the port's "
                                f"{f.shaped_mbit:.1f}, yet lost {f.loss_pct:.1f} %: the path is not clean")
        if f.offered_mbit > 1.2 * f.shaped_mbit and f.loss_pct == 0:
            problems.append(f"{f.senders}→1 offered {f.offered_mbit:.1f} Mbit/s into {f.shaped_mbit:.1f} and lost "
                            f"nothing: the port was not congested (is the shaper on {seen.port}?)")
    return IncastResult(
        receiver=seen.receiver, port=seen.port, shaper=seen.shaper, shaped_mbit=round(seen.shaped_bps / 1e6, 3),
        per_sender_mbit=round(seen.rate_pps * seen.packet_bytes * 8 / 1e6, 3), packet_bytes=seen.packet_bytes,
        base_delay_ms=round(seen.base_delay_ns / 1e6, 3), fan_ins=fan_ins, pfc_enforced=False,
        not_measurable="; ".join(undecided), seconds=seen.seconds, problems=tuple(problems))


def _judge_lossless(plan: Plan, seen: IncastSeen, fan_ins: tuple[FanIn, ...]) -> IncastResult:
    """On the lossless data plane an incast loses nothing at any fan-in: PFC pauses the senders
    instead; a fan-in beyond the port's rate must have made its leaf send pause frames. A drop
    behind pauses the data plane timed late is the machine's (pfc.judge.late_pause_drops)."""
    problems: list[str] = []
    undecided: list[str] = []
    roce = plan.fabric.cluster.lossless.roce_priority
    for fan, f in zip(seen.fan_ins, fan_ins):
        if f.received == 0:
            problems.append(f"{f.senders}→1: the receiver saw none of {f.sent} packets: not measured")
            continue
        late = late_pause_drops(plan, fan.drop_counts, fan.in_drops, fan.pfc_on, fan.pause_timing, roce,
                                seen.packet_bytes) if f.loss_pct > 0 else ""
        if late:
            undecided.append(f"{f.senders}→1 lost {f.loss_pct:.1f} % on a lossless port: {late}")
        elif f.loss_pct > 0:
            why = why_dropped(fan.drop_counts, fan.in_drops, fan.pfc_on, roce, fan.pause_timing)
            where = ("; ".join(why) if why and fan.drop_counts else
                     f"dropped at {', '.join(f.drop_places[:4])}" if f.drop_places
                     else "no queue dropped any: the senders' NICs refused them")
            problems.append(f"{f.senders}→1 lost {f.loss_pct:.1f} % on a lossless port: {where}")
        # what the port could not forward at once, which its queue holds: past the pause threshold, PFC must act
        excess = f.sent * seen.packet_bytes * max(0.0, 1 - f.shaped_mbit / f.offered_mbit) if f.offered_mbit else 0
        if excess > 1.5 * seen.pause_bytes and f.pauses_sent == 0:
            problems.append(f"{f.senders}→1 offered {f.offered_mbit:.1f} Mbit/s into {f.shaped_mbit:.1f}, "
                            f"{excess / 1e6:.2f} MB more than it forwards, past its {seen.pause_bytes / 1e6:.2f} MB pause "
                            "threshold, and its leaf sent no pause frame: PFC did not act")
    return IncastResult(
        receiver=seen.receiver, port=seen.port, shaper=seen.shaper, shaped_mbit=round(seen.shaped_bps / 1e6, 3),
        per_sender_mbit=round(seen.rate_pps * seen.packet_bytes * 8 / 1e6, 3), packet_bytes=seen.packet_bytes,
        base_delay_ms=round(seen.base_delay_ns / 1e6, 3), fan_ins=fan_ins, pfc_enforced=True,
        not_measurable="; ".join(undecided), seconds=seen.seconds, problems=tuple(problems))


def _late_burst(seen: IncastSeen, fan: FanInSeen) -> str:
    """Why a fan-in's loss may be its senders' own, or "": a sender the machine held up sends
    its late packets at once, and that burst overflows the port's queue where the same packets
    on time would not (measured: 1->1 lost 8.7 % within the port's rate, its sender late)."""
    if not seen.queue_bytes:
        return ""
    burst = sum(s.max_lag_ns / 1e9 * seen.rate_pps for s in fan.per_sender) * seen.packet_bytes
    if burst <= seen.queue_bytes:
        return ""
    worst = max(fan.per_sender, key=lambda s: s.max_lag_ns)
    return (f"{worst.sender} sent up to {worst.max_lag_ns / 1e6:.0f} ms late: the senders' catch-up "
            f"({burst / 1000:.0f} kB at once) overflows the port's {seen.queue_bytes / 1000:.0f} kB queue, "
            "a loss of the machine, not of the path")


def _figures(seen: IncastSeen, fan: FanInSeen) -> FanIn:
    base_ms, packets, wire = seen.base_delay_ns / 1e6, seen.packets, seen.packet_bytes
    per = tuple(SenderFigures(
        sender=s.sender, sent=s.sent, received=s.received,
        loss_pct=round(100 * (packets - s.received) / packets, 2),  # of the planned packets
        completion_ms=round(s.last_arrival_ns / 1e6, 1) if s.last_arrival_ns is not None else 0.0,
        queue_avg_ms=round(max(0.0, s.latency_avg_ns / 1e6 - base_ms), 3) if s.last_arrival_ns is not None else 0.0,
        queue_max_ms=round(max(0.0, s.latency_max_ns / 1e6 - base_ms), 3) if s.last_arrival_ns is not None else 0.0,
        gaps=s.gaps) for s in fan.per_sender)
    total_sent = sum(p.sent for p in per)
    total_got = sum(p.received for p in per)
    planned_total = packets * len(per)
    last = max((s.last_arrival_ns for s in fan.per_sender if s.last_arrival_ns is not None), default=0)
    span_s = max(last / 1e9, 1e-9)
    counts = [p.received for p in per]
    return FanIn(
        senders=fan.senders, offered_mbit=round(fan.senders * seen.rate_pps * wire * 8 / 1e6, 3),
        shaped_mbit=round(seen.shaped_bps / 1e6, 3), sent=total_sent, received=total_got,
        loss_pct=round(100 * (planned_total - total_got) / planned_total, 2) if planned_total else 0.0,
        delivered_mbit=round(total_got * wire * 8 / span_s / 1e6, 3),
        completion_ms=max((p.completion_ms for p in per), default=0.0),
        ideal_ms=round(max(total_sent * wire * 8 / seen.shaped_bps, packets / seen.rate_pps) * 1000, 1),
        queue_avg_ms=round(sum(p.queue_avg_ms * p.received for p in per) / total_got, 3) if total_got else 0.0,
        queue_max_ms=max((p.queue_max_ms for p in per), default=0.0),
        gaps=sum(p.gaps for p in per),
        jain=round(sum(counts) ** 2 / (len(counts) * sum(c * c for c in counts)), 3) if any(counts) else 0.0,
        per_sender=per, drops=fan.drops, drop_places=fan.drop_places, pauses_sent=fan.pauses_sent,
        pauses_received=fan.pauses_received, cpu_withheld_ms=fan.cpu_wait.withheld_ms)
