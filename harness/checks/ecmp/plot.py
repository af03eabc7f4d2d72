"""ECMP's plot: QPs per uplink against the band a fair hash keeps to."""
from __future__ import annotations

from pathlib import Path

from harness.checks.base import caption, pyplot, save
from harness.checks.ecmp.judge import EcmpResult


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
