"""What a failover case measured, and how it reads: its verdict and its plot.

harness/checks/failover.py runs the cases; this holds their results (`FailoverCase`, one
case; `FailoverResult`, every case on one lab) so the figures read in one sitting.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from harness.checks.base import Outcome, caption, pyplot, save
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
    sessions_dropped_elsewhere: tuple[str, ...] = ()  # switch:peer BGP sessions down away from the element

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


def plot_failover(result: FailoverCase | FailoverResult, path: Path, sabotage: str | None = None) -> Path:
    """Per failover case: the received rate split into the QPs that crossed the failed element
    and those that did not (the untouched ones are the plateau that stays), then one lane per
    QP (on the element first), with the failure, the route change, the restore and the route's
    return marked. `sabotage`: a negative control's fault, named on the plot."""
    plt = pyplot()
    cases = list(result.cases) if isinstance(result, FailoverResult) else [result]
    fig, axes = plt.subplots(2 * len(cases), 1, figsize=(11, 5.6 * len(cases)), squeeze=False,
                             gridspec_kw={"height_ratios": [1, 1.4] * len(cases)})
    for k, case in enumerate(cases):
        rate_ax, lane_ax = axes[2 * k, 0], axes[2 * k + 1, 0]
        t = case.timeline
        width_s = t["bucket_ms"] / 1000
        lanes = t.get("lanes", [])
        xs = [i * width_s for i in range(len(t["received"]))]
        on = [lane for lane in lanes if lane["on_element"]]
        on_total = [sum(lane["buckets"][i] if i < len(lane["buckets"]) else 0 for lane in on) / width_s
                    for i in range(len(xs))]
        total = [n / width_s for n in t["received"]]
        colour = {True: "#1f77b4", False: "#d62728", None: "#ff7f0e"}[case.passed]
        rate_ax.plot(xs, total, linewidth=1, color="#7f7f7f", label=f"all {case.qps} QPs (pps)")
        if on:
            rate_ax.plot(xs, on_total, linewidth=1.2, color=colour,
                         label=f"the {case.qps_on_element} QPs on {case.element}")
            rate_ax.plot(xs, [a - b for a, b in zip(total, on_total)], linewidth=0.8, color="#2ca02c",
                         linestyle="--", label=f"the {case.qps - case.qps_on_element} QPs elsewhere (untouched)")
        rate_ax.axhline(t["offered_pps"], color="grey", linestyle=":", linewidth=0.8, label="offered")
        rate_ax.set_ylabel("packets/s")
        events = _events(case)
        _mark(rate_ax, events)
        rate_ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=6.5)
        title = (f"{case.case}: {case.element} — worst window {case.worst_window_ms:.1f} ms (objective "
                 f"{case.objective_ms:g}), restore {case.worst_restore_ms:.1f} ms (objective "
                 f"{case.restore_objective_ms:g}) — {'PASS' if case.passed else 'FAIL' if case.passed is False else 'NOT MEASURABLE'}")
        caption(rate_ax, title, sabotage)
        if lanes:
            # what arrived of what was sent, per bucket; blank before the first and after the last
            # bucket anything arrived in (nothing was being sent, so nothing could be lost)
            busy = [i for i, n in enumerate(t["received"]) if n]
            first, last = (busy[0], busy[-1]) if busy else (0, -1)
            per_bucket = max(1e-9, t["per_qp_pps"] * width_s)
            rows = [[(lane["buckets"][i] if i < len(lane["buckets"]) else 0) / per_bucket if first <= i <= last
                     else float("nan") for i in range(len(xs))] for lane in lanes]
            cmap = plt.get_cmap("RdYlGn").with_extremes(bad="#f4f4f4")
            lane_ax.imshow(rows, aspect="auto", interpolation="nearest", cmap=cmap, vmin=0, vmax=1,
                           extent=(0, len(xs) * width_s, len(lanes), 0))
            lane_ax.set_yticks([i + 0.5 for i in range(len(lanes))])
            lane_ax.set_yticklabels([f"{lane['qp']:#x} {'on' if lane['on_element'] else 'off'} "
                                     f"{lane['window_ms']:.0f} ms" if lane["on_element"] else f"{lane['qp']:#x} off"
                                     for lane in lanes], fontsize=6)
            lane_ax.set_ylabel("one lane per QP\n(green: all sent arrived)", fontsize=7)
        _mark(lane_ax, events, labels=False)
        lane_ax.set_xlabel("s")
    return save(fig, path)


def _events(case: FailoverCase) -> list[tuple[float, str, str, str]]:
    """(seconds, what, colour, style) of each moment the plot marks."""
    t = case.timeline
    fail_s, restore_s = t["failure_ms"] / 1000, t["restore_ms"] / 1000
    out = [(fail_s, "failure", "#d62728", "-")]
    if case.detected_ms is not None:
        out.append((fail_s + case.detected_ms / 1000, f"detected: route changed (+{case.detected_ms:.0f} ms)", "#ff7f0e",
                    "--"))
    out.append((restore_s, "restore", "#2ca02c", "-"))
    if case.restored_ms is not None:
        out.append((restore_s + case.restored_ms / 1000, f"route back (+{case.restored_ms:.0f} ms)", "#17becf", "--"))
    return out


def _mark(ax, events, labels: bool = True) -> None:
    for x, what, colour, style in events:
        ax.axvline(x, color=colour, linestyle=style, linewidth=1, label=what if labels else None)
