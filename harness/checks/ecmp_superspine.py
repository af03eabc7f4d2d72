"""ECMP at both stages of a 5-stage BE: QPs to other pods spread over the source leaf's
uplinks, and each spine spreads the QPs it got over its links to the super-spines.

The same method as harness/checks/ecmp/, one stage higher: every QP is its own 5-tuple;
nftables on the source leaf's uplinks and on every spine above it see each QP's path at both
stages (the observation). The judge holds each stage to the band a fair hash keeps to (exact
binomial quantiles, checks/common/bounds.py), the false-fail budget split over all the bands (Bonferroni);
QPs are sent until every spine can expect enough to see a 2:1 weighting of its super-spine
links. A second stage hashing like the first (the same function and seed on leaf and spine)
sends every QP a leaf uplink carries to one super-spine link: the spine's band catches it.

RoCEv2 has 16,384 UDP source ports, and a 4,096-GPU fabric's spines (64 super-spine links
each, 16 above a leaf) need 97,280 QPs: the QPs go to several GPUs of other pods, a source
port used once per destination, so each QP is (destination, source port).
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from harness.checks.base import Case, Check, Observation, Outcome, needs_superspine_tier, pyplot, save
from harness.checks.ecmp import PACKETS_PER_QP, PathCount, PortsSeen, distinct_sport_qpns, first_gpu_nic
from harness.checks.ecmp.measure import send_qps_to
from harness.checks.common.bounds import FALSE_FAIL, bound, qps_for
from harness.core.cabling.apply import natural
from harness.core.errors import HarnessError
from harness.core.model import Role
from harness.core.plan import Plan
from harness.observe.flowcount import FlowPorts
from harness.plumbing.labview import LabView
from harness.traffic.flows import RoceFlow
from harness.traffic.roce import ROCE_SPORTS, roce_sport


@dataclass(frozen=True)
class EcmpStagesSeen(Observation):
    """QPs from a GPU to the same rail in other pods, counted at both stages. QP i goes to
    destinations[to[i]] from UDP source port sports[i]; the ports seen hold QPs by number (i)."""

    source: str  # "host:nic"
    destinations: tuple[str, ...]  # "host:nic", each in another pod than the source
    to: tuple[int, ...]  # each QP's destination, as an index into destinations
    sports: tuple[int, ...]  # each QP's UDP source port
    packets_per_qp: int  # sent on every QP
    received: tuple[int, ...]  # distinct packets the receivers got of each QP
    leaf: PortsSeen  # stage 1: the source leaf's uplinks, with the QPs (numbers) counted on each
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
    destinations: tuple[str, ...]
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
        to = self.destinations[0] if len(self.destinations) == 1 else \
            f"{len(self.destinations)} GPUs ({', '.join(self.destinations)})"
        return (f"{self.qps} QPs {self.source} -> {to}: leaf {one(self.leaf)}; spines "
                + "; ".join(one(s) for s in self.spines) + f"; {self.split_qps} split, {self.lost} lost")


def _superspine_links(plan: Plan, spine: str) -> list[str]:
    return [p.name for p in plan.switch(spine).fabric_ports if plan.switch(p.peer).role is Role.BE_SUPERSPINE]


def _qps_needed(uplinks: int, spine_links: list[int], each: float) -> int:
    """Enough QPs that the leaf's band, and every spine's on the share it expects, catch a 2:1 weighting."""
    return max(qps_for(uplinks, each), uplinks * max(qps_for(k, each) for k in spine_links))


def far_peers(plan: Plan, host: str, nic_name: str, count: int) -> list[tuple[str, str]]:
    """`count` GPUs on the rail of host:nic in other pods, taken from each other pod in turn."""
    me, rail = plan.host(host), plan.host(host).nic(nic_name).rail
    pods: dict[int, list[tuple[str, str]]] = {}
    for h in plan.hosts:
        if h.pod is not None and h.pod != me.pod:
            pods.setdefault(h.pod, []).extend((h.name, n.name) for n in h.nics if n.rail == rail)
    turns = [pods[p] for p in sorted(pods)]
    out = [t[i] for i in range(max(map(len, turns), default=0)) for t in turns if i < len(t)]
    if len(out) < count:
        raise HarnessError(f"{len(out)} GPUs on rail {rail} outside pod {me.pod}: the QPs need {count} "
                           f"destinations of at most {ROCE_SPORTS} source ports each")
    return out[:count]


def measure_ecmp_stages(lab: LabView, src: tuple[str, str] | None = None, false_fail: float = FALSE_FAIL,
                        packets_per_flow: int = PACKETS_PER_QP, first_qp: int = 0x100,
                        per_destination: int = ROCE_SPORTS) -> EcmpStagesSeen:
    """`per_destination`: the most QPs sent to one GPU (each needs a source port of its own
    there); the QPs are shared evenly over as few destinations as that allows."""
    t0 = time.monotonic()
    plan = lab.plan
    src = src or first_gpu_nic(plan)
    src_nic = plan.host(src[0]).nic(src[1])
    leaf = plan.switch(src_nic.peer)
    uplinks = [p.name for p in leaf.fabric_ports]
    spines = sorted({p.peer for p in leaf.fabric_ports}, key=natural)
    up_of = {s: _superspine_links(plan, s) for s in spines}
    if len(uplinks) < 2 or any(len(ports) < 2 for ports in up_of.values()):
        raise HarnessError(f"{leaf.name} or a spine above it has fewer than 2 uplinks: nothing to spread over")
    if not 1 <= per_destination <= ROCE_SPORTS:
        raise HarnessError(f"per_destination={per_destination}: from 1 to {ROCE_SPORTS} (RoCEv2's source ports)")
    n = _qps_needed(len(uplinks), [len(p) for p in up_of.values()], false_fail / (1 + len(spines)))
    dsts = far_peers(plan, src[0], src[1], -(-n // per_destination))
    addresses = [str(plan.host(h).nic(d).address.ip) for h, d in dsts]
    qpns = distinct_sport_qpns(-(-n // len(dsts)), first_qp)
    to = [i % len(dsts) for i in range(n)]  # QP i to destination i mod k, with the (i // k)th QP number
    qps = [RoceFlow(flow_id=i + 1, dst=addresses[d], dst_qp=qpns[i // len(dsts)], src_qp=qpns[i // len(dsts)],
                    src=str(src_nic.address.ip)) for i, d in enumerate(to)]
    sports = tuple(roce_sport(q.src_qp, q.dst_qp) for q in qps)
    number = {(q.dst, s): i for i, (q, s) in enumerate(zip(qps, sports))}
    points = [(leaf.name, uplinks)] + [(s, up_of[s]) for s in spines]
    installed: list[FlowPorts] = []
    try:
        for node, ports in points:
            installed.append(FlowPorts(lab, node, ports, str(src_nic.address.ip), addresses, n).install())
        results = send_qps_to(lab, src, [(h, [q for q, d in zip(qps, to) if d == k]) for k, (h, _) in enumerate(dsts)],
                              packets_per_flow)
        seen = [_ports_seen(node, ports, c.read_paths(), c.read_packets(), number)
                for (node, ports), c in zip(points, installed)]
    finally:
        for c in installed:
            c.remove()
    got = {f.flow_id: f.unique for r in results for f in r.flows}
    return EcmpStagesSeen(source=f"{src[0]}:{src[1]}", destinations=tuple(f"{h}:{d}" for h, d in dsts),
                          to=tuple(to), sports=sports, packets_per_qp=packets_per_flow,
                          received=tuple(got.get(q.flow_id, 0) for q in qps), leaf=seen[0], spines=tuple(seen[1:]),
                          false_fail=false_fail, seconds=round(time.monotonic() - t0, 2))


def _ports_seen(node: str, ports: list[str], paths: dict[tuple[str, int], tuple[str, ...]], packets: dict[str, int],
                number: dict[tuple[str, int], int]) -> PortsSeen:
    """What FlowPorts read on a node as the QPs (by number) each port carried; a flow that is
    not one of the QPs sent is left out."""
    return PortsSeen(node, {p: tuple(sorted(number[f] for f, where in paths.items() if p in where and f in number))
                            for p in ports}, {p: packets.get(p, 0) for p in ports})


def judge_ecmp_stages(plan: Plan, seen: EcmpStagesSeen) -> EcmpStagesResult:
    n = len(seen.sports)
    each = seen.false_fail / (1 + len(seen.spines))  # Bonferroni over the bands
    problems: list[str] = []
    shared = n - len(set(zip(seen.to, seen.sports)))
    if shared:  # two QPs with one 5-tuple are one sample of the hash, not two
        problems.append(f"{shared} QPs share their destination and source port with another QP")
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
    return EcmpStagesResult(source=seen.source, destinations=seen.destinations, qps=n, leaf=stages[0],
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
    cols = min(len(stages), 6)  # 17 switches at 4,096 GPUs: rows of 6, not one row 5,000 pixels wide
    rows = -(-len(stages) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(3.2 * cols, 3.4 * rows), squeeze=False)
    for ax in axes.flat[len(stages):]:
        ax.set_visible(False)
    for ax, s in zip(axes.flat, stages):
        counts = [p.qps for p in s.paths]
        ax.bar([p.uplink for p in s.paths], counts, color=["#1f77b4" if p.within else "#d62728" for p in s.paths])
        ax.axhspan(s.paths[0].low, s.paths[0].high, color="green", alpha=0.12)
        ax.set_title(f"{s.switch}: {s.qps} QPs", fontsize=9)
        if len(s.paths) <= 16:
            ax.tick_params(axis="x", labelrotation=60, labelsize=7)
        else:  # 64 names under 64 bars are a smudge: the first and last say the range
            ax.set_xticks([0, len(s.paths) - 1], [s.paths[0].uplink, s.paths[-1].uplink], fontsize=7)
    to = result.destinations[0] if len(result.destinations) == 1 else f"{len(result.destinations)} GPUs"
    title = f"ECMP at both stages, {result.source} -> {to}" + ("" if result.passed else " — FAIL")
    if sabotage:
        title = f"NEGATIVE CONTROL, broken on purpose: {sabotage}\n{title}"
    fig.suptitle(title, fontsize=10, color="#8b0000" if sabotage else "black")
    return save(fig, path)


CHECK = Check("ecmp-superspine", "RoCEv2 QPs between pods spread at both stages: leaf uplinks, then each spine's "
              "links to the super-spines",
              (Case("ecmp-superspine", measure_ecmp_stages, judge_ecmp_stages, plot_ecmp_stages),),
              needs_superspine_tier)
