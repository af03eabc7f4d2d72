"""ECMP at both stages of a 5-stage BE: QPs to another pod spread over the source leaf's
uplinks, and each spine spreads the QPs it got over its links to the super-spines.

The same method as harness/checks/ecmp.py, one stage higher: every QP has its own UDP source
port; nftables counters on the source leaf's uplinks and on every spine above it give each
QP's path at both stages. Each stage is held to the band a fair hash keeps to (exact binomial
quantiles, ecmp_bound), the false-fail budget split over all the bands (Bonferroni), and QPs
are sent until every spine can expect enough to see a 2:1 weighting of its super-spine links.
A second stage hashing like the first (the same function and seed on leaf and spine) sends
every QP a leaf uplink carries to one super-spine link: the spine's band catches it.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from harness.checks.base import Case, Check, Outcome, needs_superspine_tier, pyplot, save
from harness.checks.ecmp import PACKETS_PER_QP, PathCount, _far_peer, distinct_sport_qpns, first_gpu_nic, send_qps
from harness.checks.ecmp_bound import FALSE_FAIL, bound, qps_for
from harness.core.errors import HarnessError
from harness.core.model import Role
from harness.observe.flowcount import FlowCounters, paths_of
from harness.plumbing.labview import LabView
from harness.traffic.flows import RoceFlow
from harness.traffic.roce import roce_sport


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


def check_ecmp_stages(lab: LabView, src: tuple[str, str] | None = None, false_fail: float = FALSE_FAIL,
                      packets_per_flow: int = PACKETS_PER_QP, first_qp: int = 0x100) -> EcmpStagesResult:
    t0 = time.monotonic()
    plan = lab.plan
    src = src or first_gpu_nic(plan)
    src_nic = plan.host(src[0]).nic(src[1])
    dst = _far_peer(plan, src[0], src_nic, "pod")
    dst_nic = plan.host(dst[0]).nic(dst[1])
    leaf = plan.switch(src_nic.peer)
    uplinks = [p.name for p in leaf.fabric_ports]
    spines = sorted({p.peer for p in leaf.fabric_ports})
    up_of = {s: [p.name for p in plan.switch(s).fabric_ports if plan.switch(p.peer).role is Role.BE_SUPERSPINE]
             for s in spines}
    if len(uplinks) < 2 or any(len(ports) < 2 for ports in up_of.values()):
        raise HarnessError(f"{leaf.name} or a spine above it has fewer than 2 uplinks: nothing to spread over")
    each = false_fail / (1 + len(spines))  # Bonferroni over the bands
    # enough QPs that every spine expects what its own band needs
    n = max(qps_for(len(uplinks), each), len(uplinks) * max(qps_for(len(p), each) for p in up_of.values()))
    qps = [RoceFlow(flow_id=i + 1, dst=str(dst_nic.address.ip), dst_qp=q, src_qp=q, src=str(src_nic.address.ip))
           for i, q in enumerate(distinct_sport_qpns(n, first_qp))]
    sports = sorted(roce_sport(q.src_qp, q.dst_qp) for q in qps)
    counters = [FlowCounters(lab, leaf.name, uplinks, sports)] + [FlowCounters(lab, s, up_of[s], sports)
                                                                  for s in spines]
    installed: list[FlowCounters] = []
    try:
        for c in counters:
            installed.append(c.install())
        received = send_qps(lab, src, dst[0], qps, packets_per_flow)
        seen = [paths_of(c.read_flows()) for c in installed]
    finally:
        for c in installed:
            c.remove()

    problems: list[str] = []
    stages = [_stage(leaf.name, uplinks, seen[0], n, each, problems)]
    peer_of = {p.name: p.peer for p in leaf.fabric_ports}
    for spine, on in zip(spines, seen[1:]):
        reached = sum(1 for ports in seen[0].values() if any(peer_of[p] == spine for p in ports))
        stages.append(_stage(spine, up_of[spine], on, reached, each, problems))
    split = sum(1 for s in seen for ports in s.values() if len(ports) > 1)
    if split:
        problems.append(f"{split} QPs split over two ports of one switch")
    got = {f.flow_id: f.unique for f in received.flows}
    lost = sum(max(0, packets_per_flow - got.get(q.flow_id, 0)) for q in qps)
    if lost:
        problems.append(f"{lost} packets lost")
    return EcmpStagesResult(source=f"{src[0]}:{src[1]}", destination=f"{dst[0]}:{dst[1]}", qps=n, leaf=stages[0],
                            spines=tuple(stages[1:]), false_fail=false_fail, split_qps=split, lost=lost,
                            seconds=round(time.monotonic() - t0, 2), problems=tuple(problems))


def _stage(switch: str, ports: list[str], on: dict[int, tuple[str, ...]], n: int, false_fail: float,
           problems: list[str]) -> Stage:
    if len(on) < n:
        problems.append(f"{n - len(on)} of the {n} QPs {switch} should forward seen on none of its ports")
    b = bound(max(n, 1), len(ports), false_fail)
    paths = tuple(PathCount(p, sum(1 for where in on.values() if p in where), 0, b.expected, b.low, b.high)
                  for p in ports)
    for p in paths:
        if not p.within:
            side = "fewer" if p.qps < p.low else "more"
            problems.append(f"{switch}:{p.uplink} carried {p.qps} of {n} QPs, {side} than a fair hash gives "
                            f"({p.low}..{p.high})")
    return Stage(switch, n, paths)


def plot_ecmp_stages(result: EcmpStagesResult, path: Path) -> Path:
    """QPs per port at each stage, against each stage's fair band."""
    plt = pyplot()
    stages = (result.leaf, *result.spines)
    fig, axes = plt.subplots(1, len(stages), figsize=(3.2 * len(stages), 3.4), squeeze=False)
    for ax, s in zip(axes[0], stages):
        counts = [p.qps for p in s.paths]
        ax.bar([p.uplink for p in s.paths], counts, color=["#1f77b4" if p.within else "#d62728" for p in s.paths])
        ax.axhspan(s.paths[0].low, s.paths[0].high, color="green", alpha=0.12)
        ax.set_title(f"{s.switch}: {s.qps} QPs", fontsize=9)
        ax.tick_params(axis="x", labelrotation=60, labelsize=7)
    fig.suptitle(f"ECMP at both stages, {result.source} -> {result.destination}"
                 + ("" if result.passed else " — FAIL"), fontsize=10)
    return save(fig, path)


CHECK = Check("ecmp-superspine", "RoCEv2 QPs between pods spread at both stages: leaf uplinks, then each spine's "
              "links to the super-spines", (Case("ecmp-superspine", check_ecmp_stages, plot_ecmp_stages),),
              needs_superspine_tier)
