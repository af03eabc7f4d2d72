"""What a failover case measured, and how it reads: its verdict and its plot.

harness/checks/failover.py runs the cases; this holds their results (`FailoverCase`, one
case; `FailoverResult`, every case on one lab) so the figures read in one sitting.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from harness.checks.base import Outcome, pyplot, save
from harness.checks.failover_windows import QpLoss
from harness.core.model import Objectives


@dataclass(frozen=True)
class FailoverCase(Outcome):
    case: str  # local | remote | gray | spine
    element: str
    objective_ms: float  # the declared one for this kind of failure
    restore_objective_ms: float
    qps: int
    qps_on_element: int
    min_on_element: int
    candidates: int  # QPs probed to find them
    rate_pps: float
    worst_window_ms: float  # over QPs on the element, failure
    worst_restore_ms: float  # over all QPs, restore
    lost_elsewhere: int  # by QPs not on the element, during the failure
    lost_before: int  # before the failure (baseline)
    detected_ms: float | None  # failure -> the source leaf's route dropped the element
    restored_ms: float | None  # restore -> the route has it again
    returned_packets: int  # carried by the element after the restore
    sender_lag_ms: float  # worst, within the measured intervals
    not_measurable: str  # why the windows cannot be judged, or ""
    per_qp: tuple[QpLoss, ...]
    timeline: dict  # for plots
    sender_realtime: bool = False  # the sender's loop ran under SCHED_FIFO

    held = "within objectives"

    @property
    def passed(self) -> bool | None:
        if self.problems:
            return False
        return None if self.not_measurable else True

    def why_undecided(self) -> str:
        return self.not_measurable

    def sentence(self) -> str:
        return (f"{self.case} failure of {self.element}: worst window {self.worst_window_ms:.1f} ms "
                f"(objective {self.objective_ms:g} ms) over {self.qps_on_element}/{self.qps} QPs on it; "
                f"restore {self.worst_restore_ms:.1f} ms (objective {self.restore_objective_ms:g} ms); "
                f"other QPs lost {self.lost_elsewhere}")


@dataclass(frozen=True)
class FailoverResult(Outcome):
    """Every failover case on one lab. passed is None when a case could not be measured (and
    none failed), or when nothing can fail over (rail-only)."""

    cases: tuple[FailoverCase, ...]
    objectives: Objectives
    not_applicable: str = ""

    held = "within objectives"

    @property
    def undecided(self) -> str:
        return "not applicable" if self.not_applicable else "NOT MEASURABLE"

    @property
    def passed(self) -> bool | None:
        if self.problems:
            return False
        if self.not_applicable or any(c.passed is None for c in self.cases):
            return None
        return True

    def why_undecided(self) -> str:
        return self.not_applicable or "; ".join(f"{c.case}: {c.not_measurable}" for c in self.cases
                                                if c.not_measurable)

    def sentence(self) -> str:
        return ", ".join(f"{c.case} {c.worst_window_ms:.1f}/{c.objective_ms:g} ms "
                         f"(restore {c.worst_restore_ms:.1f}/{c.restore_objective_ms:g})" for c in self.cases)


def plot_failover(result: FailoverCase | FailoverResult, path: Path) -> Path:
    """Received rate over time per failover case, failure and restore marked, with the worst
    loss window against its declared objective."""
    plt = pyplot()
    cases = list(result.cases) if isinstance(result, FailoverResult) else [result]
    fig, axes = plt.subplots(len(cases), 1, figsize=(8, 2.6 * len(cases)), squeeze=False)
    for ax, case in zip(axes[:, 0], cases):
        t = case.timeline
        width_s = t["bucket_ms"] / 1000
        xs = [i * width_s for i in range(len(t["received"]))]
        ys = [n / width_s for n in t["received"]]
        colour = {True: "#1f77b4", False: "#d62728", None: "#ff7f0e"}[case.passed]
        ax.plot(xs, ys, linewidth=1, color=colour, label="received (pps)")
        ax.axhline(t["offered_pps"], color="grey", linestyle=":", label="offered")
        ax.axvline(t["failure_ms"] / 1000, color="#d62728", label="failure")
        ax.axvline(t["restore_ms"] / 1000, color="#2ca02c", label="restore")
        ax.set_ylabel("packets/s")
        ax.set_title(f"{case.case}: {case.element} — window {case.worst_window_ms:.1f} ms "
                     f"(objective {case.objective_ms:g}), restore {case.worst_restore_ms:.1f} ms "
                     f"(objective {case.restore_objective_ms:g})", fontsize=9)
        ax.legend(loc="lower right", fontsize=7)
    axes[-1, 0].set_xlabel("s")
    return save(fig, path)
