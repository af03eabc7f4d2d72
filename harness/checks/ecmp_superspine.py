"""ECMP at both stages of a 5-stage BE: QPs to another pod spread over the source leaf's
uplinks, and each spine spreads the QPs it got over its links to the super-spines.

The same method as harness/checks/ecmp/, one stage higher: every QP has its own UDP source
port; nftables counters on the source leaf's uplinks and on every spine above it give each
QP's path at both stages (the observation). The judge holds each stage to the band a fair
hash keeps to (exact binomial quantiles, ecmp_bound), the false-fail budget split over all
the bands (Bonferroni); QPs are sent until every spine can expect enough to see a 2:1
weighting of its super-spine links. A second stage hashing like the first (the same function
and seed on leaf and spine) sends every QP a leaf uplink carries to one super-spine link:
the spine's band catches it.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from harness.checks.base import Case, Check, Observation, Outcome, needs_superspine_tier, pyplot, save
from harness.checks.ecmp import (PACKETS_PER_QP, PathCount, PortsSeen, _far_peer, distinct_sport_qpns,
                                 first_gpu_nic, ports_seen, send_qps)
from harness.checks.ecmp_bound import FALSE_FAIL, bound, qps_for
from harness.core.errors import HarnessError
from harness.core.model import Role
from harness.core.plan import Plan
from harness.observe.flowcount import FlowCounters
from harness.plumbing.labview import LabView
from harness.traffic.flows import RoceFlow
from harness.traffic.roce import roce_sport


@dataclass(frozen=True)
class EcmpStagesSeen(Observation):
    """QPs from a GPU to the same rail in another pod, counted at both stages."""

    source: str  # "host:nic"
    destination: str  # "host:nic"
    sports: tuple[int, ...]  # the QPs sent, by UDP source port
    packets_per_qp: int  # sent on every QP
    received: tuple[int, ...]  # distinct packets the receiver got of each QP (as sports)
    leaf: PortsSeen  # stage 1: the source leaf's uplinks, with the QPs counted on each
    spines: tuple[PortsSeen, ...]  # stage 2: each spine above it, its links to the super-spines
    false_fail: float  # of the whole verdict, over every band


@dataclass(frozen=True)
class Stage:
    """One switch's spread: the QPs it forwarded and how they fell on its ports."""

    switch: str
    qps: int
    paths: tuple[PathCount, ...]


@dataclass(frozen=True)
class EcmpStagesResult(Outcome):
    source: str
    destination: str
    qps: int
    leaf: Stage  # stage 1: the source leaf's uplinks
    spines: tuple[Stage, ...]  # stage 2: each spine's links to the super-spines
    false_fail: float  # of the whole check, over every band
    split_qps: int
    lost: int

    held, broken = "spread at both stages", "NOT spread"

    def sentence(self) -> str:
        def one(s: Stage) -> str:
            return f"{s.switch} {'/'.join(str(p.qps) for p in s.paths)} (band {s.paths[0].low}..{s.paths[0].high})"
        return (f"{self.qps} QPs {self.source} -> {self.destination}: leaf {one(self.leaf)}; spines "
                + "; ".join(one(s) for s in self.spines) + f"; {self.split_qps} split, {self.lost} lost")


def _superspine_links(plan: Plan, spine: str) -> list[str]:
    return [p.name for p in plan.switch(spine).fabric_ports if plan.switch(p.peer).role is Role.BE_SUPERSPINE]


def _qps_needed(uplinks: int, spine_links: list[int], each: float) -> int:
    """Enough QPs that the leaf's band, and every spine's on the share it expects, catch a 2:1 weighting."""
    return max(qps_for(uplinks, each), uplinks * max(qps_for(k, each) for k in spine_links))


def measure_ecmp_stages(lab: LabView, src: tuple[str, str] | None = None, false_fail: float = FALSE_FAIL,
                        packets_per_flow: int = PACKETS_PER_QP, first_qp: int = 0x100) -> EcmpStagesSeen:
    t0 = time.monotonic()
    plan = lab.plan
    src = src or first_gpu_nic(plan)
    src_nic = plan.host(src[0]).nic(src[1])
    dst = _far_peer(plan, src[0], src_nic, "pod")
    dst_nic = plan.host(dst[0]).nic(dst[1])
    leaf = plan.switch(src_nic.peer)
    uplinks = [p.name for p in leaf.fabric_ports]
    spines = sorted({p.peer for p in leaf.fabric_ports})
    up_of = {s: _superspine_links(plan, s) for s in spines}
    if len(uplinks) < 2 or any(len(ports) < 2 for ports in up_of.values()):
        raise HarnessError(f"{leaf.name} or a spine above it has fewer than 2 uplinks: nothing to spread over")
    n = _qps_needed(len(uplinks), [len(p) for p in up_of.values()], false_fail / (1 + len(spines)))
    qps = [RoceFlow(flow_id=i + 1, dst=str(dst_nic.address.ip), dst_qp=q, src_qp=q, src=str(src_nic.address.ip))
           for i, q in enumerate(distinct_sport_qpns(n, first_qp))]
    sports = tuple(roce_sport(q.src_qp, q.dst_qp) for q in qps)
    points = [(leaf.name, uplinks)] + [(s, up_of[s]) for s in spines]
    installed: list[FlowCounters] = []
    try:
        for node, ports in points:
            installed.append(FlowCounters(lab, node, ports, sorted(sports)).install())
        received = send_qps(lab, src, dst[0], qps, packets_per_flow)
        seen = [ports_seen(node, ports, c.read_flows()) for (node, ports), c in zip(points, installed)]
    finally:
        for c in installed:
            c.remove()
    got = {f.flow_id: f.unique for f in received.flows}
    return EcmpStagesSeen(source=f"{src[0]}:{src[1]}", destination=f"{dst[0]}:{dst[1]}", sports=sports,
                          packets_per_qp=packets_per_flow, received=tuple(got.get(q.flow_id, 0) for q in qps),
                          leaf=seen[0], spines=tuple(seen[1:]), false_fail=false_fail,
                          seconds=round(time.monotonic() - t0, 2))


def judge_ecmp_stages(plan: Plan, seen: EcmpStagesSeen) -> EcmpStagesResult:
    n = len(seen.sports)
    each = seen.false_fail / (1 + len(seen.spines))  # Bonferroni over the bands
    problems: list[str] = []
    needed = _qps_needed(len(seen.leaf.flows), [len(s.flows) for s in seen.spines], each)
    if n < needed:
        problems.append(f"{n} QPs sent: every band together needs >= {needed} to catch a 2:1 weighting")
    leaf_on = seen.leaf.on()
    stages = [_stage(seen.leaf, leaf_on, n, each, problems)]
    peer_of = {p.name: p.peer for p in plan.switch(seen.leaf.node).fabric_ports}
    for spine in seen.spines:
        reached = sum(1 for ports in leaf_on.values() if any(peer_of.get(p) == spine.node for p in ports))
        stages.append(_stage(spine, spine.on(), reached, each, problems))
    split = sum(1 for s in (seen.leaf, *seen.spines) for ports in s.on().values() if len(ports) > 1)
    if split:
        problems.append(f"{split} QPs split over two ports of one switch")
    lost = sum(max(0, seen.packets_per_qp - got) for got in seen.received)
    if lost:
        problems.append(f"{lost} packets lost")
    return EcmpStagesResult(source=seen.source, destination=seen.destination, qps=n, leaf=stages[0],
                            spines=tuple(stages[1:]), false_fail=seen.false_fail, split_qps=split, lost=lost,
                            seconds=seen.seconds, problems=tuple(problems))


def _stage(at: PortsSeen, on: dict[int, tuple[str, ...]], n: int, false_fail: float, problems: list[str]) -> Stage:
    if len(on) < n:
        problems.append(f"{n - len(on)} of the {n} QPs {at.node} should forward seen on none of its ports")
    k = len(at.flows)
    if n < k:  # a spine the leaf sent next to no QPs: no band to hold it to (the leaf's band says why)
        expected, low, high = n / k, 0, n
    else:
        b = bound(n, k, false_fail)
        expected, low, high = b.expected, b.low, b.high
    paths = tuple(PathCount(p, at.count(p), 0, expected, low, high) for p in at.flows)
    for p in paths:
        if not p.within:
            side = "fewer" if p.qps < p.low else "more"
            problems.append(f"{at.node}:{p.uplink} carried {p.qps} of {n} QPs, {side} than a fair hash gives "
                            f"({p.low}..{p.high})")
    return Stage(at.node, n, paths)


def plot_ecmp_stages(result: EcmpStagesResult, path: Path, sabotage: str | None = None) -> Path:
    """QPs per port at each stage, against each stage's fair band; `sabotage`: a negative
    control's fault, named in the title."""
    plt = pyplot()
    stages = (result.leaf, *result.spines)
    fig, axes = plt.subplots(1, len(stages), figsize=(3.2 * len(stages), 3.4), squeeze=False)
    for ax, s in zip(axes[0], stages):
        counts = [p.qps for p in s.paths]
        ax.bar([p.uplink for p in s.paths], counts, color=["#1f77b4" if p.within else "#d62728" for p in s.paths])
        ax.axhspan(s.paths[0].low, s.paths[0].high, color="green", alpha=0.12)
        ax.set_title(f"{s.switch}: {s.qps} QPs", fontsize=9)
        ax.tick_params(axis="x", labelrotation=60, labelsize=7)
    title = f"ECMP at both stages, {result.source} -> {result.destination}" + ("" if result.passed else " — FAIL")
    if sabotage:
        title = f"NEGATIVE CONTROL, broken on purpose: {sabotage}\n{title}"
    fig.suptitle(title, fontsize=10, color="#8b0000" if sabotage else "black")
    return save(fig, path)


CHECK = Check("ecmp-superspine", "RoCEv2 QPs between pods spread at both stages: leaf uplinks, then each spine's "
              "links to the super-spines",
              (Case("ecmp-superspine", measure_ecmp_stages, judge_ecmp_stages, plot_ecmp_stages),),
              needs_superspine_tier)
