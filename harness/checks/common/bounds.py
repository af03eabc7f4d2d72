"""How many QPs an ECMP verdict needs, and how far a fair hash may stray from the mean.

Every packet of a QP takes the path its 5-tuple hashes to, so the independent unit is the
QP. Under a fair hash over k equal next hops each QP lands on a path with probability 1/k,
independently: the QPs per path are multinomial(N, 1/k, ..., 1/k), each path's count
Binomial(N, 1/k). The acceptance band [low, high] is two exact binomial quantiles, each tail
at alpha / (2k) (Bonferroni over the 2k ways to fail), so a fair hash fails the verdict with
probability at most alpha.

N is then chosen from k so that the band also catches what it must: one uplink weighted
`weight` against 1 for the others (share weight / (weight + k - 1)) exceeds `high` with
probability at least 1 - beta. L3-only hashing (all QPs of a GPU pair on one path) is
caught whenever that holds, since N > high and 0 < low.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from harness.core.errors import HarnessError

FALSE_FAIL = 0.001  # a fair hash fails the verdict at most this often
MISS = 0.001  # a skewed weighting passes at most this often
SKEW_WEIGHT = 2  # the smallest skew the verdict must catch: one uplink at twice the weight of the others


@dataclass(frozen=True)
class Bound:
    uplinks: int
    qps: int
    expected: float  # QPs per path under a fair hash
    low: int  # accepted counts per path: low <= n <= high
    high: int
    false_fail: float  # designed bound on P(fair hash fails)
    skew_weight: int
    skew_share: float  # share of the QPs on the heavy uplink of that weighting
    skew_power: float  # P(the heavy uplink exceeds high) under it

    def accepts(self, count: int) -> bool:
        return self.low <= count <= self.high


@lru_cache(maxsize=None)
def _binom():
    from scipy.stats import binom  # imported late: scipy is slow to load

    return binom


def band(qps: int, uplinks: int, false_fail: float = FALSE_FAIL) -> tuple[int, int]:
    """[low, high] with P(Binomial(qps, 1/uplinks) outside) <= false_fail / uplinks."""
    binom = _binom()
    tail = false_fail / (2 * uplinks)
    p = 1 / uplinks
    low = int(binom.ppf(tail, qps, p))  # smallest x with P(X <= x) >= tail, so P(X < low) < tail
    high = int(binom.ppf(1 - tail, qps, p))  # smallest x with P(X > x) <= tail
    return low, high


def bound(qps: int, uplinks: int, false_fail: float = FALSE_FAIL, skew_weight: int = SKEW_WEIGHT) -> Bound:
    if uplinks < 2:
        raise HarnessError(f"uplinks={uplinks}: ECMP needs at least 2 paths")
    if qps < uplinks:
        raise HarnessError(f"qps={qps}: fewer QPs than the {uplinks} uplinks; use qps >= {uplinks}")
    if not 0 < false_fail < 1:
        raise HarnessError(f"false_fail={false_fail}: a probability in (0, 1), e.g. 0.001")
    low, high = band(qps, uplinks, false_fail)
    share = skew_weight / (skew_weight + uplinks - 1)
    power = float(_binom().sf(high, qps, share))
    return Bound(uplinks, qps, qps / uplinks, low, high, false_fail, skew_weight, share, power)


@lru_cache(maxsize=64)
def qps_for(uplinks: int, false_fail: float = FALSE_FAIL, miss: float = MISS,
            skew_weight: int = SKEW_WEIGHT) -> int:
    """The fewest QPs, a multiple of the uplink count, for which the band both holds a fair
    hash (false_fail) and catches one uplink at `skew_weight` (miss)."""
    if skew_weight < 2:
        raise HarnessError(f"skew_weight={skew_weight}: must be >= 2 (1 is a fair weighting)")
    qps = uplinks * 4
    while True:
        b = bound(qps, uplinks, false_fail, skew_weight)
        if b.low >= 1 and b.skew_power >= 1 - miss:
            return qps
        qps += uplinks
        if qps > 1 << 20:
            raise HarnessError(f"no QP count up to 2^20 separates a fair hash over {uplinks} uplinks from "
                               f"weight {skew_weight}; loosen false_fail or miss")
