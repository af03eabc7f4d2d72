"""ECMP spreads RoCEv2 QPs over every uplink of a leaf.

N queue pairs between two GPUs in different groups (same rail), each QP with its own UDP
source port as an RDMA NIC derives it from the QP number. The unit is the QP, not the
packet: every packet of a QP follows one path. The source leaf counts packets per (uplink,
QP) in the kernel (one nftables dynamic set with a counter per element), which gives each
QP's path directly:

- every QP on exactly one uplink (a QP on two is split: named with its uplinks);
- QPs per uplink inside the band a fair hash keeps to with probability 1 - 0.1 %
  (exact binomial quantiles, Bonferroni over the uplinks: harness/checks/ecmp_bound.py),
  with N chosen from the uplink count so that one uplink at twice the weight of the
  others, or L3-only hashing, falls outside it with probability >= 99.9 %;
- no packet lost, none reordered at the receiver.

A few packets per QP suffice to see its path, so the check stays cheap.
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path

from harness.checks.base import Case, Check, Outcome, caption, needs_spine_tier, pyplot, save
from harness.checks.ecmp_bound import FALSE_FAIL, SKEW_WEIGHT, bound, qps_for
from harness.core.errors import HarnessError
from harness.plumbing.labview import LabView
from harness.observe.flowcount import FlowCounters, paths_of
from harness.traffic.flows import ReceiveSpec, RoceFlow, SendSpec
from harness.traffic.roce import roce_sport
from harness.traffic.runner import start_receiver, start_sender

PACKETS_PER_QP = 3  # >= 2 so the receiver can see reordering; the sender's probe adds one more


@dataclass(frozen=True)
class PathCount:
    """One uplink: predicted (expected QPs and the accepted band) against measured."""

    uplink: str
    qps: int
    packets: int
    expected: float
    low: int
    high: int

    @property
    def within(self) -> bool:
        return self.low <= self.qps <= self.high


@dataclass(frozen=True)
class EcmpResult(Outcome):
    source: str
    destination: str
    leaf: str
    qps: int
    packets_per_qp: int
    paths: tuple[PathCount, ...]
    expected_per_path: float
    low: int  # band of QPs per path a fair hash keeps to
    high: int
    false_fail: float  # designed P(a fair hash fails)
    skew_weight: int  # the weighting the band is sized to catch ...
    skew_power: float  # ... with this probability
    split_qps: int  # QPs seen on more than one uplink
    unseen_qps: int  # QPs seen on no uplink
    max_over_mean: float  # of QPs per path
    chi2_pvalue: float  # of QPs per path against uniform
    reordered: int
    lost: int
    hash_policy: int
    nexthop_weights: dict  # uplink -> weight of the route to the destination in the leaf's FIB

    held, broken = "spread", "NOT spread"

    @property
    def per_path(self) -> dict[str, int]:
        """Uplink -> QPs."""
        return {p.uplink: p.qps for p in self.paths}

    def sentence(self) -> str:
        return (f"{self.qps} QPs over {len(self.paths)} uplinks of {self.leaf}, fair band "
                f"{self.low}..{self.high} (expected {self.expected_per_path:.0f}, "
                f"{self.false_fail:.1%} false-fail): "
                + ", ".join(f"{p.uplink} {p.qps}" for p in self.paths)
                + f"; {self.split_qps} split, {self.lost} lost, {self.reordered} reordered")

    def figures(self) -> dict[str, object]:
        return {**super().figures(), "per_path": self.per_path}


def check_ecmp(lab: LabView, src: tuple[str, str] | None = None, dst: tuple[str, str] | None = None,
               flows: int | None = None, packets_per_flow: int = PACKETS_PER_QP, first_qp: int = 0x100,
               false_fail: float = FALSE_FAIL, measure_only: bool = False) -> EcmpResult:
    """`flows` None: as many QPs as the uplink count needs (ecmp_bound.qps_for); fewer than
    that is refused, since the verdict could then miss a 2:1 weighting, unless `measure_only`
    (`fablab spread`: how a few QPs land is the lesson, not a verdict)."""
    t0 = time.monotonic()
    plan = lab.plan
    src = src or first_gpu_nic(plan)
    src_nic = plan.host(src[0]).nic(src[1])
    leaf = plan.switch(src_nic.peer)
    uplinks = [p.name for p in leaf.fabric_ports]
    if len(uplinks) < 2:
        raise HarnessError(f"{leaf.name} has {len(uplinks)} uplink(s): nothing to spread over")
    needed = qps_for(len(uplinks), false_fail)
    n = needed if flows is None else flows
    if n < needed and not measure_only:
        raise HarnessError(f"flows={flows}: over {len(uplinks)} uplinks the verdict needs >= {needed} QPs to catch "
                           f"an uplink at weight {SKEW_WEIGHT} at {false_fail:.1%} false-fail; "
                           "pass flows=None to have it chosen")
    if n < 1:
        raise HarnessError(f"flows={flows}: send at least one QP")
    if packets_per_flow < 1:
        raise HarnessError(f"packets_per_flow={packets_per_flow}: must be >= 1 (2 or more to see reordering)")
    b = bound(n, len(uplinks), false_fail)
    dst = dst or _far_peer(plan, src[0], src_nic)
    dst_nic = plan.host(dst[0]).nic(dst[1])
    dst_addr = str(dst_nic.address.ip)
    qps = [RoceFlow(flow_id=i + 1, dst=dst_addr, dst_qp=qpn, src_qp=qpn, src=str(src_nic.address.ip))
           for i, qpn in enumerate(distinct_sport_qpns(n, first_qp))]
    sport_of = {q.flow_id: roce_sport(q.src_qp, q.dst_qp) for q in qps}
    with FlowCounters(lab, leaf.name, uplinks, sorted(sport_of.values())) as counters:
        received = send_qps(lab, src, dst[0], qps, packets_per_flow)
        counted = counters.read_flows()

    on = paths_of(counted)
    paths = tuple(PathCount(p, sum(1 for ports in on.values() if p in ports),
                            sum(v for (port, _), v in counted.items() if port == p), b.expected, b.low, b.high)
                  for p in uplinks)
    split = {fid: on[s] for fid, s in sport_of.items() if len(on.get(s, ())) > 1}
    unseen = [fid for fid, s in sport_of.items() if s not in on]
    # Against the plan (packets_per_flow on every QP), not what the source's kernel accepted.
    got = {f.flow_id: f.unique for f in received.flows}
    lost = sum(max(0, packets_per_flow - got.get(q.flow_id, 0)) for q in qps)
    reordered = sum(f.reordered for f in received.flows)
    hash_policy = int(lab.sysctl(leaf.name, "net.ipv4.fib_multipath_hash_policy"))
    dst_prefix = lab.plan.route_prefix(dst_nic)  # its /31, or its leaf's summary
    weights = nexthop_weights(lab, leaf.name, str(dst_prefix))

    problems = []
    for p in paths:
        if not p.within:
            side = "fewer" if p.qps < p.low else "more"
            problems.append(f"{leaf.name}:{p.uplink} carried {p.qps} QPs, {side} than a fair hash gives "
                            f"({p.low}..{p.high}, expected {p.expected:.0f})")
    if any(p.qps == n for p in paths):
        problems.append(f"all {n} QPs on one uplink: the hash ignores the UDP source port")
    for fid, ports in sorted(split.items())[:10]:
        problems.append(f"QP {qps[fid - 1].src_qp:#x} (UDP sport {sport_of[fid]}) split over "
                        + " and ".join(f"{leaf.name}:{p}" for p in ports))
    if len(split) > 10:
        problems.append(f"... {len(split)} QPs split in all")
    if unseen:
        problems.append(f"{len(unseen)} QPs seen on no uplink of {leaf.name} "
                        f"(first: QP {qps[unseen[0] - 1].src_qp:#x})")
    if lost:
        problems.append(f"{lost} packets lost")
    if reordered:
        problems.append(f"{reordered} packets reordered")
    spread_wrong = any(not p.within for p in paths)
    if spread_wrong and hash_policy == 0:
        problems.append(f"{leaf.name} hashes on addresses only (fib_multipath_hash_policy=0): every QP between "
                        "two GPUs has the same addresses, so all take one path; hash on L4 (policy 1)")
    if spread_wrong and len(set(weights.values())) > 1:
        problems.append(f"{leaf.name}'s route to {dst_prefix} has unequal next-hop weights: "
                        + ", ".join(f"{p} {w}" for p, w in weights.items()))
    counts = [p.qps for p in paths]
    return EcmpResult(
        source=f"{src[0]}:{src[1]}", destination=f"{dst[0]}:{dst[1]} ({dst_addr})", leaf=leaf.name, qps=n,
        packets_per_qp=packets_per_flow, paths=paths, expected_per_path=b.expected, low=b.low, high=b.high,
        false_fail=false_fail, skew_weight=b.skew_weight, skew_power=round(b.skew_power, 5), split_qps=len(split),
        unseen_qps=len(unseen), max_over_mean=round(max(counts) / b.expected, 3),
        chi2_pvalue=chi2_uniform_pvalue(counts), reordered=reordered, lost=lost, hash_policy=hash_policy,
        nexthop_weights=weights, seconds=round(time.monotonic() - t0, 2), problems=tuple(problems))


def send_qps(lab: LabView, src: tuple[str, str], dst_node: str, qps: list[RoceFlow], packets: int):
    """Every QP's packets from src, received at dst_node; the receiver's result.

    No deadline of its own: on a machine the lab keeps busy the sender may take a minute to
    start and prime 1,300 QPs. It ends when every packet is in, 1 s after the last one, or
    (none came) once the sender is done and nothing more arrives."""
    receiver = start_receiver(lab.namespace(dst_node), ReceiveSpec(expect_packets=len(qps) * packets,
                                                                 quiet_s=1.0, duration_s=600.0))
    with receiver:
        start_sender(lab.namespace(src[0]), SendSpec(flows=tuple(qps), packets=packets, device=src[1])).result(300)
        receiver.stop()
        return receiver.result(60)


def distinct_sport_qpns(count: int, first_qp: int = 0x100) -> list[int]:
    """`count` QP numbers from first_qp up whose UDP source ports differ: two QPs with one
    source port are one 5-tuple, so one sample of the hash, not two."""
    qpns, seen, qpn = [], set(), first_qp
    while len(qpns) < count:
        if qpn >= 1 << 24:
            raise HarnessError(f"fewer than {count} distinct UDP source ports from QP {first_qp:#x} up")
        sport = roce_sport(qpn, qpn)  # the flows pair QP n with QP n, as two fresh rxe endpoints do
        if sport not in seen:
            seen.add(sport)
            qpns.append(qpn)
        qpn += 1
    return qpns


def nexthop_weights(lab: LabView, leaf: str, prefix: str) -> dict[str, int]:
    """Uplink -> weight of each next hop of the leaf's kernel route to prefix ({} if none)."""
    run = lab.ns_exec(leaf, ["ip", "-j", "route", "show", "exact", prefix])
    routes = json.loads(run.stdout or "[]") if run.returncode == 0 else []
    if not routes:
        return {}
    route = routes[0]
    hops = route.get("nexthops") or [route]
    return {h["dev"]: int(h.get("weight", 1)) for h in hops if "dev" in h}


def chi2_uniform_pvalue(counts: list[int]) -> float:
    from scipy.stats import chisquare

    if sum(counts) == 0 or len(counts) < 2:
        return 0.0
    return round(float(chisquare(counts).pvalue), 6)


def default_pair(plan) -> tuple[tuple[str, str], tuple[str, str]]:
    """The (host, NIC) pair check_ecmp uses when given none: the first GPU NIC and the same
    rail in the other group."""
    src = first_gpu_nic(plan)
    return src, _far_peer(plan, src[0], plan.host(src[0]).nic(src[1]))


def first_gpu_nic(plan) -> tuple[str, str]:
    for h in plan.hosts:
        for n in h.nics:
            if n.rail is not None:
                return h.name, n.name
    raise HarnessError("the cluster has no GPU node with a BE NIC")


def _far_peer(plan, host: str, nic, across: str = "group", same_pod: bool = False) -> tuple[str, str]:
    """The same rail on a GPU node of another group (so traffic crosses the spine tier), or
    with across="pod" of another pod (so it crosses the super-spine tier too); `same_pod`: of
    another group of the host's own pod (its leaf under the same spines)."""
    me = plan.host(host)
    mine = getattr(me, across)
    for h in plan.hosts:
        theirs = getattr(h, across)
        if same_pod and h.pod != me.pod:
            continue
        if h.name != host and theirs is not None and theirs != mine:
            for n in h.nics:
                if n.rail == nic.rail:
                    return h.name, n.name
    tier = "spines" if across == "group" else "super-spines"
    raise HarnessError(f"no GPU node outside {across} {mine} on rail {nic.rail}: ECMP needs traffic across {tier}")


def plot_ecmp(result: EcmpResult, path: Path, sabotage: str | None = None) -> Path:
    """QPs per uplink (measured, each bar labelled) against the expected count and the band a
    fair hash keeps to; `sabotage`: a negative control's fault, named on the plot."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(max(6, 0.5 * len(result.paths) + 2), 3.5))
    names = [p.uplink for p in result.paths]
    counts = [p.qps for p in result.paths]
    colors = ["#1f77b4" if p.within else "#d62728" for p in result.paths]
    bars = ax.bar(names, counts, color=colors, label="QPs measured")
    ax.bar_label(bars, fontsize=8)
    ax.axhline(result.expected_per_path, color="black", linewidth=1, label=f"expected {result.expected_per_path:.0f}")
    ax.axhspan(result.low, result.high, color="green", alpha=0.12,
               label=f"fair band {result.low}..{result.high} ({result.false_fail:.1%} false-fail)")
    ax.set_ylim(0, max(max(counts), result.high) * 1.15)
    caption(ax, f"ECMP on {result.leaf}: {result.qps} RoCEv2 QPs from {result.source} to {result.destination}, "
                f"{result.split_qps} split, hash policy {result.hash_policy}" + (" — PASS" if result.passed else " — FAIL"),
            sabotage, width=80)
    ax.set_ylabel("QPs per uplink (nftables, per QP)")
    ax.tick_params(axis="x", labelrotation=45 if len(names) > 4 else 0, labelsize=8)
    ax.legend(loc="upper right", fontsize=7)
    return save(fig, path)


CHECK = Check("ecmp", "RoCEv2 QPs spread over every uplink of a leaf", (Case("ecmp", check_ecmp, plot_ecmp),),
              needs_spine_tier)
