"""The fabric fails over, and heals, within the loss windows the user declared.

Constant-rate RoCEv2 QPs cross the spine tier from one GPU NIC to the same rail in another
group. One element then fails and comes back; each case is one kind of failure:

- local: a leaf–spine link loses its carrier (the spine end goes down): the leaf repairs it
  by itself, at once.
- remote: a spine loses the link to the far leaf: the spine cannot reroute (the other
  spines share its ASN), so the source leaf must learn it by a BGP withdrawal.
- gray: a leaf–spine link stays up and drops everything both ways: only BFD can tell.
- spine: every link of one spine loses its carrier.
- superspine-link, superspine (a 5-stage BE only; the QPs then cross to another pod): a
  spine's link to a super-spine, or every link of a super-spine, loses its carrier; the
  spines above the source leaf reroute by themselves over their other super-spine links.

Every case ends with the element restored, and the loss that costs is judged too.

The objectives are absolute and declared with the cluster (`Cluster.objectives`: hard_ms
for local, spine and the super-spine cases, remote_ms, gray_ms, restore_ms), never derived
from the configuration under test: the judge reads them from the plan. A QP's loss window is measured on the sender's clock: for each gap in its
sequence numbers, the send time of the first packet after the gap minus that of the last
before it (all namespaces share one clock). If the sender itself fell more than one packet
slot behind its schedule within a measured interval, the window says as much about the
sender as about the fabric: the case is then "not measurable" (passed None), unless the
window minus the lag still exceeds the objective (the fabric fails whatever the lag), or
the window plus all that a stalled sender could have hidden is still within it
(failover_windows.judge).

QPs are picked by the path they take: a burst of candidate QPs is counted per QP and per
egress port (nftables counters on the source leaf, and on the spines towards the far leaf),
the failed element is the one that carries the most, and at least `k` QPs on it (plus
controls elsewhere, which must lose nothing) are chosen, whatever the uplink count.

This module measures (`measure_failover`: a FailoverSeen); the judge, on the plan's
objectives, and the plot are in harness/checks/failover_result.py, the loss-window arithmetic in
harness/checks/failover_windows.py.
"""
from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from functools import partial

from harness.checks.base import Case, Check, needs_spine_tier, needs_superspine_tier, needs_two_groups_in_a_pod
from harness.checks.converged import wait_routed
from harness.checks.ecmp import _far_peer, first_gpu_nic
from harness.checks.failover_elements import SUPERSPINE_CASES, Failure, element_of, observation_points, pick
from harness.checks.failover_result import FailoverCase, FailoverSeen, judge_failover, plot_failover
from harness.checks.failover_run import Run, Setup, Timing, run, windows
from harness.checks.failover_windows import seen as qps_seen
from harness.core.errors import HarnessError
from harness.core.model import Objectives
from harness.core.plan import Plan
from harness.observe.flowcount import FlowCounters
from harness.plumbing.labview import LabView
from harness.traffic.flows import RoceFlow, SendSpec
from harness.traffic.roce import roce_sport
from harness.traffic.runner import start_sender

__all__ = ["CASES", "CHECK", "HARD_CASES", "FailoverCase", "FailoverSeen", "Failure", "judge_failover",
           "measure_failover", "plot_failover", "with_objectives"]

CASES = tuple(Failure)
HARD_CASES = tuple(f for f in Failure if f is not Failure.GRAY)  # the carrier goes: no BFD needed to see it
_PROBE_PACKETS = 3  # per candidate QP when learning paths (plus the sender's priming probe)


# ---------------------------------------------------------------------------- one case


def measure_failover(lab: LabView, case: Failure | str, *, src: tuple[str, str] | None = None,
                     element: tuple[str, str] | None = None, k: int = 4, controls: int | None = None,
                     rate_pps: float = 1000.0, before_s: float = 1.5, failed_s: float = 2.5,
                     after_s: float | None = None, settle_s: float = 1.0, detect_s: float | None = None,
                     first_qp: int = 0x300,
                     max_candidates: int = 1024, converge_s: float = 90.0,
                     while_failed: Callable[[], object] | None = None) -> FailoverSeen:
    """One failure and its restore. element: (switch, port) to fail instead of the busiest one
    (a leaf uplink; for `remote` a spine's port to the far leaf; for `spine` any uplink to it).
    failed_s: how long the element stays failed at least. detect_s: how long the source leaf's
    route may take to drop the element; the element stays failed until it has. Restoring an
    element the control plane has not yet seen fail tests a flap, not a restore: the kernel
    revives a dead next hop with its carrier, before zebra has removed it and re-learned its
    neighbour (xlarge: zebra took over 2.5 s to rewrite 1,100 routes, the QPs moved back lost
    1 s each). after_s: how long the element may take to carry traffic again after the
    restore; traffic then runs settle_s more. detect_s and after_s None: by the fabric's size
    (failover_run.windows). while_failed runs right after the failure, before the restore:
    what else goes wrong while the element is down (a negative control of the restore). The
    objectives are the judge's, from the plan: none is measured here."""
    case = Failure.named(case)
    if rate_pps < 1000:
        raise HarnessError(f"rate_pps {rate_pps:g}: use >= 1000 per QP, or one packet slot hides more than 1 ms")
    if k < 1:
        raise HarnessError(f"k {k}: at least one QP must cross the failed element")
    t0 = time.monotonic()
    setup = _setup(lab, case, src, element, k, controls, rate_pps, first_qp, max_candidates, converge_s)
    by_size = windows(len(lab.plan.switches))
    detect_s, after_s = (by_size[0] if detect_s is None else detect_s), (by_size[1] if after_s is None else after_s)
    timing = Timing(before_s, failed_s, max(failed_s, detect_s), after_s, settle_s)
    done = run(lab, setup, timing, while_failed)
    return _observed(setup, done, timing, k, round(time.monotonic() - t0, 2))


def _setup(lab: LabView, case: Failure, src: tuple[str, str] | None, element: tuple[str, str] | None, k: int,
           controls: int | None, rate_pps: float, first_qp: int, max_candidates: int, converge_s: float) -> Setup:
    """The pair of GPU NICs, the element and the QPs: at least k of them cross the element
    (learned by sending), and `controls` others spread over the other paths."""
    plan = lab.plan
    src = src or first_gpu_nic(plan)
    src_nic = plan.host(src[0]).nic(src[1])
    leaf = src_nic.peer
    # remote: a spine's link to the far leaf fails, so the far leaf sits under the same spines
    dst = _far_peer(plan, src[0], src_nic, "pod" if case in SUPERSPINE_CASES else "group", same_pod=case is Failure.REMOTE)
    dst_nic = plan.host(dst[0]).nic(dst[1])
    far_leaf = dst_nic.peer
    addrs = (str(src_nic.address.ip), str(dst_nic.address.ip))
    uplinks = [p.name for p in plan.switch(leaf).fabric_ports]
    if not uplinks:
        raise HarnessError(f"{leaf} has no uplinks: there is nothing to fail over to")
    controls = max(k, len(uplinks) - 1) if controls is None else controls
    wait_routed(lab, converge_s, "the fabric to converge before the failure")
    points = observation_points(lab, case, leaf, far_leaf)
    batch = max(16, 4 * k * len(uplinks))
    seen, choice, on = _learn(lab, case, leaf, src, addrs, points, element, k, first_qp, batch, max_candidates)
    if len(on) < k:
        raise HarnessError(f"only {len(on)} of {len(seen)} candidate QPs crossed {choice[0]}:{choice[1]}; "
                           f"{k} are needed: is the element on the path from {src[0]}:{src[1]} to {dst[0]}:{dst[1]}?")
    el = element_of(lab, case, leaf, far_leaf, choice)
    on_set = set(el.counted_at)
    off = [qp for qp in sorted(seen) if seen[qp] and not seen[qp] & on_set]
    chosen = sorted(on)[:2 * k] + _spread(off, seen, leaf, controls)
    flows = tuple(RoceFlow(flow_id=i + 1, dst=addrs[1], dst_qp=qp, src_qp=qp, src=addrs[0])
                  for i, qp in enumerate(chosen))
    sports = {f.flow_id: roce_sport(f.src_qp, f.dst_qp) for f in flows}
    return Setup(case, el, leaf, src, dst, flows, sports, points, rate_pps, len(seen))


def _learn(lab: LabView, case: Failure, leaf: str, src: tuple[str, str], addrs: tuple[str, str],
           points: dict[str, list[str]], element: tuple[str, str] | None, k: int, first_qp: int, batch: int,
           max_candidates: int) -> tuple[dict[int, set[tuple[str, str]]], tuple[str, str], list[int]]:
    """Candidate QPs' paths, a batch at a time until the element carries k of them: (each
    QP's (switch, port)s, the element's (switch, port), the QPs on it)."""
    seen: dict[int, set[tuple[str, str]]] = {}
    qp, sports_used = first_qp, set()
    while True:
        new = []
        while len(new) < batch:  # QPs whose source ports collide could not be told apart by the counters
            if roce_sport(qp, qp) not in sports_used:
                sports_used.add(roce_sport(qp, qp))
                new.append(qp)
            qp += 1
        seen.update(_learn_paths(lab, src, addrs, points, new))
        choice, on = pick(case, leaf, seen, element)
        if len(on) >= k or len(seen) >= max_candidates:
            return seen, choice, on


def _learn_paths(lab: LabView, src: tuple[str, str], addrs: tuple[str, str], points: dict[str, list[str]],
                 qps: list[int]) -> dict[int, set[tuple[str, str]]]:
    """Send a few packets on each candidate QP and read, per QP, which (switch, port) carried it."""
    sports = {qp: roce_sport(qp, qp) for qp in qps}
    flows = tuple(RoceFlow(flow_id=i + 1, dst=addrs[1], dst_qp=qp, src_qp=qp, src=addrs[0])
                  for i, qp in enumerate(qps))
    counters = [FlowCounters(lab, node, ports, sorted(set(sports.values()))) for node, ports in points.items()]
    seen: dict[int, set[tuple[str, str]]] = {qp: set() for qp in qps}
    installed: list[FlowCounters] = []
    try:
        for c in counters:
            installed.append(c.install())
        start_sender(lab.namespace(src[0]), SendSpec(flows=flows, packets=_PROBE_PACKETS, device=src[1])).result(60)
        for c in counters:
            counts = c.read()
            for qp, sport in sports.items():
                for port in c.ports:
                    if counts.get(f"{port}/{sport}", 0):
                        seen[qp].add((c.node, port))
    finally:
        for c in installed:
            try:
                c.remove()
            except HarnessError:
                pass  # the lab is going away, or the table is gone already: nothing left to count
    return seen


def _spread(off: list[int], seen: dict[int, set[tuple[str, str]]], leaf: str, n: int) -> list[int]:
    """n control QPs, round-robin over the leaf uplinks they use, so every other path carries some."""
    by_port: dict[str, list[int]] = {}
    for qp in off:
        port = next((p for node, p in sorted(seen[qp]) if node == leaf), "?")
        by_port.setdefault(port, []).append(qp)
    picked: list[int] = []
    while len(picked) < n and any(by_port.values()):
        for port in sorted(by_port):
            if by_port[port] and len(picked) < n:
                picked.append(by_port[port].pop(0))
    return picked


def _observed(setup: Setup, done: Run, timing: Timing, k: int, seconds: float) -> FailoverSeen:
    """What the run showed, as plain data: each QP's path before the failure (where the
    counters saw it), its gaps and its ends, times from the receiver's origin."""
    el, received = setup.element, done.received
    origin = received.origin_ns
    on_points = {f"{n}:{p}" for n, p in el.counted_at}
    path_of = {}
    for fid, sport in setup.sports.items():
        where = [f"{n}:{p}" for n, ports in setup.points.items() for p in ports
                 if done.before.get(f"{n}:{p}/{sport}", 0)]
        on = [w for w in where if w in on_points]
        path_of[fid] = on[0] if on else next((w for w in where if w.startswith(setup.leaf + ":")), "?")
    qps = qps_seen(setup.flows, setup.sports, path_of, on_points, done.sent, received, origin)
    on_ids = {q.flow_id for q in qps if q.on_element}
    width = max((len(f.buckets) for f in received.flows), default=0)
    on_buckets, off_buckets = [0] * width, [0] * width
    for f in received.flows:
        totals = on_buckets if f.flow_id in on_ids else off_buckets
        for i, n in enumerate(f.buckets):
            totals[i] += n
    return FailoverSeen(
        case=setup.case, element=el.name, watch=el.watch, rehashed=el.rehashed, min_on_element=k,
        candidates=setup.candidates, rate_pps=float(setup.rate_pps), qps=qps,
        lag_spans=tuple((a - origin, b - origin) for a, b in done.sent.lag_spans),
        sender_realtime=done.sent.realtime, failure_ns=done.events.fail_ns - origin,
        restore_ns=done.events.restore_ns - origin, detect_s=timing.detect_s, after_s=timing.after_s,
        detected_ms=done.events.detected_ms, restored_ms=done.events.restored_ms, returned_packets=done.returned,
        sessions_dropped_elsewhere=done.dropped, element_sessions=done.element_sessions,
        sessions_not_back=done.not_back,
        failed_in_ms=done.events.failed_in_ms, carrier_lost_ms=done.events.carrier_lost_ms,
        cpu_waited_ms=done.events.cpu_waited_ms, bucket_ms=received.bucket_ns / 1e6, received_on=tuple(on_buckets),
        received_off=tuple(off_buckets), seconds=seconds)


def with_objectives(plan: Plan, objectives: Objectives) -> Plan:
    """The plan, as if its cluster had declared these objectives."""
    cluster = dataclasses.replace(plan.fabric.cluster, objectives=objectives)
    return dataclasses.replace(plan, fabric=dataclasses.replace(plan.fabric, cluster=cluster))


CHECK = Check("failover", "loss windows of a local, remote, gray and whole-spine failure and of each restore, "
              "against the cluster's objectives",
              tuple(Case(f"failover-{c}", partial(measure_failover, case=c), judge_failover, plot_failover,
                         needs_superspine_tier if c in SUPERSPINE_CASES else
                         needs_two_groups_in_a_pod if c is Failure.REMOTE else None) for c in CASES),
              needs_spine_tier)
