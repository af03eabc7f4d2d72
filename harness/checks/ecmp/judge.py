"""ECMP's verdict on what was measured (observation.py), with no lab:

- every QP on exactly one uplink (a QP on two is split: named with its uplinks);
- QPs per uplink inside the band a fair hash keeps to, computed here from the QPs sent and
  the uplinks counted (common/bounds.py: bound), and enough QPs sent for that band to catch one
  uplink at twice the weight of the others (common/bounds.py: qps_for);
- no packet lost, none reordered at the receiver;
- where the spread is wrong, the leaf's hash policy and route weights say why.
"""
from __future__ import annotations

from dataclasses import dataclass

from harness.checks.base import Outcome
from harness.checks.ecmp.observation import EcmpSeen
from harness.checks.common.bounds import SKEW_WEIGHT, bound, qps_for
from harness.core.plan import Plan


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


def judge_ecmp(plan: Plan, seen: EcmpSeen) -> EcmpResult:
    leaf, n = seen.leaf.node, len(seen.qpns)
    b = bound(n, len(seen.leaf.flows), seen.false_fail)
    paths = tuple(PathCount(p, seen.leaf.count(p), seen.leaf.packets.get(p, 0), b.expected, b.low, b.high)
                  for p in seen.leaf.flows)
    on = seen.leaf.on()
    split = [(qpn, s, on[s]) for qpn, s in zip(seen.qpns, seen.sports) if len(on.get(s, ())) > 1]
    unseen = [qpn for qpn, s in zip(seen.qpns, seen.sports) if s not in on]
    # against what was sent on every QP, not what the source's kernel accepted
    lost = sum(max(0, seen.packets_per_qp - got) for got in seen.received)
    problems = _spread_problems(leaf, paths, n, seen)
    for qpn, sport, ports in split[:10]:
        problems.append(f"QP {qpn:#x} (UDP sport {sport}) split over " + " and ".join(f"{leaf}:{p}" for p in ports))
    if len(split) > 10:
        problems.append(f"... {len(split)} QPs split in all")
    if unseen:
        problems.append(f"{len(unseen)} QPs seen on no uplink of {leaf} (first: QP {unseen[0]:#x})")
    if lost:
        problems.append(f"{lost} packets lost")
    if seen.reordered:
        problems.append(f"{seen.reordered} packets reordered")
    counts = [p.qps for p in paths]
    return EcmpResult(
        source=seen.source, destination=f"{seen.destination} ({seen.destination_address})", leaf=leaf, qps=n,
        packets_per_qp=seen.packets_per_qp, paths=paths, expected_per_path=b.expected, low=b.low, high=b.high,
        false_fail=seen.false_fail, skew_weight=b.skew_weight, skew_power=round(b.skew_power, 5),
        split_qps=len(split), unseen_qps=len(unseen), max_over_mean=round(max(counts) / b.expected, 3),
        chi2_pvalue=chi2_uniform_pvalue(counts), reordered=seen.reordered, lost=lost, hash_policy=seen.hash_policy,
        nexthop_weights=dict(seen.nexthop_weights), seconds=seen.seconds, problems=tuple(problems))


def _spread_problems(leaf: str, paths: tuple[PathCount, ...], n: int, seen: EcmpSeen) -> list[str]:
    """The band per uplink, the QP count it needs, and what explains a spread out of it."""
    problems = []
    for p in paths:
        if not p.within:
            side = "fewer" if p.qps < p.low else "more"
            problems.append(f"{leaf}:{p.uplink} carried {p.qps} QPs, {side} than a fair hash gives "
                            f"({p.low}..{p.high}, expected {p.expected:.0f})")
    needed = qps_for(len(paths), seen.false_fail)
    if n < needed:
        problems.append(f"{n} QPs over {len(paths)} uplinks: a verdict needs >= {needed} to catch an uplink at "
                        f"weight {SKEW_WEIGHT} at {seen.false_fail:.1%} false-fail")
    if any(p.qps == n for p in paths):
        problems.append(f"all {n} QPs on one uplink: the hash ignores the UDP source port")
    spread_wrong = any(not p.within for p in paths)
    if spread_wrong and seen.hash_policy == 0:
        problems.append(f"{leaf} hashes on addresses only (fib_multipath_hash_policy=0): every QP between "
                        "two GPUs has the same addresses, so all take one path; hash on L4 (policy 1)")
    if spread_wrong and len(set(seen.nexthop_weights.values())) > 1:
        problems.append(f"{leaf}'s route to {seen.prefix} has unequal next-hop weights: "
                        + ", ".join(f"{p} {w}" for p, w in seen.nexthop_weights.items()))
    return problems


def chi2_uniform_pvalue(counts: list[int]) -> float:
    from scipy.stats import chisquare

    if sum(counts) == 0 or len(counts) < 2:
        return 0.0
    return round(float(chisquare(counts).pvalue), 6)
