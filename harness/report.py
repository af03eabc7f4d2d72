"""Results of checks as files: one JSON per check, PNG plots, and a summary."""
from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path


def to_data(obj: object) -> object:
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        data = {f.name: to_data(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
        for extra in ("passed", "reason"):
            if hasattr(obj, extra) and extra not in data:
                data[extra] = to_data(getattr(obj, extra))
        return data
    if isinstance(obj, dict):
        return {str(k): to_data(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, set)):
        return [to_data(v) for v in obj]
    if isinstance(obj, (str, int, float, bool)) or obj is None:
        return obj
    return str(obj)


class Results:
    """A results directory: `record(name, result)` writes <name>.json and keeps a summary."""

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.entries: dict[str, dict] = {}

    def path(self, filename: str) -> Path:
        return self.directory / filename

    def record(self, name: str, result: object, plots: tuple[Path, ...] = ()) -> Path:
        data = to_data(result)
        path = self.directory / f"{name}.json"
        path.write_text(json.dumps(data, indent=2))
        self.entries[name] = {"passed": getattr(result, "passed", None), "reason": getattr(result, "reason", ""),
                              "json": str(path), "plots": [str(p) for p in plots]}
        self.write_summary()
        return path

    def write_summary(self) -> Path:
        path = self.directory / "summary.json"
        path.write_text(json.dumps({"written": time.strftime("%Y-%m-%dT%H:%M:%S"), "checks": self.entries}, indent=2))
        return path


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")  # files only, no display
    import matplotlib.pyplot as plt

    return plt


def plot_ecmp(result, path: Path) -> Path:
    """Packets per uplink, with the mean and the ±25 % band."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6, 3.5))
    names = list(result.per_path)
    counts = [result.per_path[n] for n in names]
    ax.bar(names, counts, color=["#1f77b4" if result.passed else "#d62728"] * len(names))
    ax.axhline(result.mean, color="black", linewidth=1, label="mean")
    ax.axhspan(result.mean * 0.75, result.mean * 1.25, color="green", alpha=0.12, label="±25 % of mean")
    ax.set_title(f"ECMP on {result.leaf}: {result.flows} RoCEv2 QPs (Jain {result.jain_index:.3f})")
    ax.set_ylabel("packets (kernel counters)")
    ax.legend(loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return Path(path)


def plot_failover(result, path: Path) -> Path:
    """Received rate over time per failover case, failure and restore marked, with the worst
    loss window against its declared objective. `result`: a FailoverResult or one FailoverCase."""
    plt = _pyplot()
    cases = list(getattr(result, "cases", None) or [result])
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
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return Path(path)
