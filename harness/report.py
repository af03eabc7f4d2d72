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


def verdict_data(v) -> dict:
    """One check's verdict with its full result, as plain data (dataclasses as dicts)."""
    return {"check": v.check, "passed": v.passed, "reason": v.reason, "seconds": v.seconds,
            "problems": list(v.problems), "plots": list(v.plots), "result": to_data(v.result)}


def check_document(verdicts, **about: object) -> dict:
    """The JSON document of one `fablab check` or `fablab validate` run."""
    failed = [v.check for v in verdicts if v.passed is False]
    return {**about, "passed": not failed, "failed": failed,
            "seconds": round(sum(v.seconds for v in verdicts), 2),
            "checks": [verdict_data(v) for v in verdicts]}


def junit_xml(verdicts, suite: str) -> str:
    """JUnit XML as CI tools read it: one testcase per check; a failure element carries the
    check's problems, a skipped element a check that does not apply."""
    from xml.etree import ElementTree as ET

    failures = sum(1 for v in verdicts if v.passed is False)
    skipped = sum(1 for v in verdicts if v.passed is None)
    total = round(sum(v.seconds for v in verdicts), 3)
    counts = {"tests": str(len(verdicts)), "failures": str(failures), "errors": "0", "skipped": str(skipped),
              "time": f"{total:.3f}"}
    root = ET.Element("testsuites", name="fablab", **counts)
    ts = ET.SubElement(root, "testsuite", name=suite, timestamp=time.strftime("%Y-%m-%dT%H:%M:%S"), **counts)
    for v in verdicts:
        case = ET.SubElement(ts, "testcase", classname=suite.replace(" ", "."), name=v.check, time=f"{v.seconds:.3f}")
        if v.passed is False:
            failure = ET.SubElement(case, "failure", message=v.reason[:1000], type="CheckFailed")
            failure.text = "\n".join(v.problems) or v.reason
        elif v.passed is None:
            ET.SubElement(case, "skipped", message=v.reason)
        ET.SubElement(case, "system-out").text = v.reason
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")  # files only, no display
    import matplotlib.pyplot as plt

    return plt


def _save(plt, fig, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return Path(path)


def plot_ecmp(result, path: Path) -> Path:
    """QPs per uplink (measured) against the expected count and the band a fair hash keeps to."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(max(6, 0.5 * len(result.paths) + 2), 3.5))
    names = [p.uplink for p in result.paths]
    counts = [p.qps for p in result.paths]
    colors = ["#1f77b4" if p.within else "#d62728" for p in result.paths]
    ax.bar(names, counts, color=colors, label="QPs measured")
    ax.axhline(result.expected_per_path, color="black", linewidth=1, label=f"expected {result.expected_per_path:.0f}")
    ax.axhspan(result.low, result.high, color="green", alpha=0.12,
               label=f"fair band {result.low}..{result.high} ({result.false_fail:.1%} false-fail)")
    ax.set_ylim(0, max(max(counts), result.high) * 1.15)
    ax.set_title(f"ECMP on {result.leaf}: {result.qps} RoCEv2 QPs, {result.split_qps} split"
                 + ("" if result.passed else " — FAIL"), fontsize=10)
    ax.set_ylabel("QPs per uplink (nftables, per QP)")
    ax.tick_params(axis="x", labelrotation=45 if len(names) > 4 else 0, labelsize=8)
    ax.legend(loc="upper right", fontsize=7)
    return _save(plt, fig, path)


def plot_rdma_spread(result, path: Path) -> Path:
    """rxe QPs per uplink of the source leaf against the fair band, and their source ports."""
    plt = _pyplot()
    fig, (ax, ports) = plt.subplots(1, 2, figsize=(10, 3.5), gridspec_kw={"width_ratios": [1, 2]})
    names = list(result.per_uplink)
    counts = [result.per_uplink[n] for n in names]
    ax.bar(names, counts, color=["#1f77b4" if result.low <= c <= result.high else "#d62728" for c in counts])
    ax.axhspan(result.low, result.high, color="green", alpha=0.12,
               label=f"fair band {result.low}..{result.high} ({result.false_fail:.1%} false-fail)")
    ax.set_ylabel("rxe QPs per uplink (nftables)")
    ax.set_title(f"{len(result.rows)} rdma_rxe QPs on {result.leaf}" + ("" if result.passed else " — FAIL"),
                 fontsize=10)
    ax.legend(loc="lower right", fontsize=7)
    for i, name in enumerate(names):
        rows = [r for r in result.rows if r.uplinks == (name,)]
        ports.scatter([r.qpn for r in rows], [r.formula_sport for r in rows], s=8, label=name)
    ports.set_xlabel("QPN (perftest)")
    ports.set_ylabel("UDP source port seen (= roce_sport)")
    ports.legend(fontsize=7, title="left by", title_fontsize=7)
    return _save(plt, fig, path)


def plot_rdma_gray(result, path: Path) -> Path:
    """Packets delivered to the RDMA responder over time, the gray failure and the route change marked."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(8, 3.2))
    xs = [t / 1000 for t, _ in result.timeline]
    ax.plot(xs, [n for _, n in result.timeline], linewidth=1, color="#1f77b4" if result.passed else "#d62728",
            label="delivered to the responder (leaf port tx)")
    ax.axvline(0, color="#d62728", label="gray failure")
    if result.detected_ms == result.detected_ms:
        ax.axvline(result.detected_ms / 1000, color="#ff7f0e", linestyle="--",
                   label=f"route moved ({result.detected_ms:.0f} ms)")
    ax.set_xlabel("seconds from the failure")
    ax.set_ylabel("packets")
    t = result.transfer
    ax.set_title(f"rping -V over {result.element}: stall {result.stall_ms:.0f} ms, "
                 f"{t.retransmissions} RC retransmissions" + ("" if result.passed else " — FAIL"), fontsize=10)
    ax.legend(loc="upper left", fontsize=7)
    return _save(plt, fig, path)


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
    return _save(plt, fig, path)
