"""The RDMA cases' figures: rxe QPs per uplink against the fair band, and the responder's
delivered packets through a gray failure."""
from __future__ import annotations

from pathlib import Path

from harness.checks.base import caption, pyplot, save
from harness.checks.rdma.gray import RdmaGrayResult
from harness.checks.rdma.path import RdmaPathResult


def plot_rdma_path(result: RdmaPathResult, path: Path, sabotage: str | None = None) -> Path:
    """rxe QPs per uplink of the source leaf against the fair band, and their source ports."""
    plt = pyplot()
    fig, (ax, ports) = plt.subplots(1, 2, figsize=(10, 3.5), gridspec_kw={"width_ratios": [1, 2]})
    names = list(result.per_uplink)
    counts = [result.per_uplink[n] for n in names]
    ax.bar(names, counts, color=["#1f77b4" if result.low <= c <= result.high else "#d62728" for c in counts])
    ax.axhspan(result.low, result.high, color="green", alpha=0.12,
               label=f"fair band {result.low}..{result.high} ({result.false_fail:.1%} false-fail)")
    ax.set_ylabel("rxe QPs per uplink (nftables)")
    caption(ax, f"{len(result.rows)} rdma_rxe QPs on {result.source_leaf}" + ("" if result.passed else " — FAIL"),
            sabotage, width=45)
    ax.legend(loc="lower right", fontsize=7)
    for name in names:
        rows = [r for r in result.rows if r.uplinks == (name,)]
        ports.scatter([r.qpn for r in rows], [r.formula_sport for r in rows], s=8, label=name)
    ports.set_xlabel("QPN (perftest)")
    ports.set_ylabel("UDP source port seen (= roce_sport)")
    ports.legend(fontsize=7, title="left by", title_fontsize=7)
    return save(fig, path)


def plot_rdma_gray(result: RdmaGrayResult, path: Path, sabotage: str | None = None) -> Path:
    """Packets delivered to the RDMA responder over time, the gray failure and the route change marked."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(8, 3.2))
    xs = [t / 1000 for t, _ in result.timeline]
    ax.plot(xs, [n for _, n in result.timeline], linewidth=1, color="#1f77b4" if result.passed else "#d62728",
            label="delivered to the responder (leaf port tx)")
    ax.axvline(0, color="#d62728", label="gray failure")
    if result.detected_ms is not None:
        ax.axvline(result.detected_ms / 1000, color="#ff7f0e", linestyle="--",
                   label=f"route moved ({result.detected_ms:.0f} ms)")
    ax.set_xlabel("seconds from the failure")
    ax.set_ylabel("packets")
    t = result.transfer
    caption(ax, f"rping -V over {result.element}: stall {result.stall_ms:.0f} ms, "
            f"{t.retransmissions} RC retransmissions" + ("" if result.passed else " — FAIL"), sabotage, width=90)
    ax.legend(loc="upper left", fontsize=7)
    return save(fig, path)
