"""Results of checks as files: one directory per run, with one JSON per check, PNG plots,
and a summary, each carrying the run's provenance (harness.provenance).

Layout under the parent the user names (`--results DIR`, `--results-dir DIR`)::

    DIR/20260314T101502Z-ai-cluster-3f9a1c/   one run, created exclusively (never shared)
        summary.json     {"provenance": {...}, "written": ..., "checks": {name: verdict, json, plots}}
        <check>.json     the check's result, with the run's "provenance" as known when it was written
        <check>.png      its plot, where it has one
    DIR/latest -> 20260314T101502Z-ai-cluster-3f9a1c   the newest run (relative symlink)

summary.json is rewritten after every check and once more when the run ends, with the end time;
a summary whose provenance has `"ended": null` is a run that is still going or was interrupted.
Every file is written whole (a temporary file, then rename), so a reader never sees half of one.
"""
from __future__ import annotations

import dataclasses
import json
import os
import re
import secrets
import time
from pathlib import Path

from harness.provenance import Provenance


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


def write_atomic(path: Path, text: str) -> Path:
    """Write the whole file or nothing: a reader sees the old content or the new, never a part."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(3)}.tmp")
    try:
        tmp.write_text(text)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return path


def run_dir_name(label: str) -> str:
    """<UTC timestamp>-<label>-<random>: sorts by time, says what ran, and two runs in the
    same second still differ. A topology given as a path is labelled by its file's stem."""
    stem = Path(label).stem if label.endswith(".py") else label
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", stem).strip("._-") or "run"
    return f"{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}-{safe[:40]}-{secrets.token_hex(3)}"


def new_run_dir(parent: Path, label: str) -> Path:
    """A directory for one run under `parent`, created exclusively: if the name is taken, take
    another; never write into one another run made."""
    parent.mkdir(parents=True, exist_ok=True)
    for _ in range(16):
        directory = parent / run_dir_name(label)
        try:
            directory.mkdir()
        except FileExistsError:
            continue
        return directory
    raise FileExistsError(f"no free run directory under {parent}")


def point_latest(parent: Path, directory: Path) -> Path | None:
    """Make `parent/latest` point at `directory`, atomically (a new symlink renamed over the old),
    so a reader of latest/ sees one run or the next, never a missing link. None where the
    filesystem cannot (no symlinks, or a real `latest` directory in the way)."""
    link = parent / "latest"
    tmp = parent / f".latest.{os.getpid()}.{secrets.token_hex(3)}"
    try:
        os.symlink(directory.name, tmp)
        os.replace(tmp, link)
    except OSError:
        try:
            tmp.unlink()
        except OSError:
            pass
        return None
    return link


class Results:
    """One run's results directory, made under `parent` (see the module doc). `record(name,
    result)` writes <name>.json and keeps the summary; `finish()` writes the end time."""

    def __init__(self, parent: Path, label: str = "run", provenance: Provenance | None = None) -> None:
        self.parent = Path(parent)
        self.directory = new_run_dir(self.parent, label)
        self.provenance = provenance
        self.entries: dict[str, dict] = {}
        self.write_summary()
        self.latest = point_latest(self.parent, self.directory)

    def path(self, filename: str) -> Path:
        return self.directory / filename

    def _provenance(self) -> dict | None:
        return None if self.provenance is None else self.provenance.as_dict()

    def record(self, name: str, result: object, plots: tuple[Path, ...] = ()) -> Path:
        data = to_data(result)
        if not isinstance(data, dict) or "provenance" in data:
            data = {"result": data}
        data["provenance"] = self._provenance()
        path = write_atomic(self.directory / f"{name}.json", json.dumps(data, indent=2))
        self.entries[name] = {"passed": getattr(result, "passed", None), "reason": getattr(result, "reason", ""),
                              "json": str(path), "plots": [str(p) for p in plots]}
        self.write_summary()
        return path

    def amend(self, **changes: object) -> None:
        """Fields of the provenance learnt during the run (e.g. the FRR the booted lab runs)."""
        if self.provenance is not None:
            self.provenance = dataclasses.replace(self.provenance, **changes)
            self.write_summary()

    def finish(self) -> Path:
        """The run has ended: the summary gets its end time."""
        if self.provenance is not None:
            self.provenance = self.provenance.ending()
        return self.write_summary()

    def write_summary(self) -> Path:
        written = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        return write_atomic(self.directory / "summary.json", json.dumps(
            {"provenance": self._provenance(), "written": written, "checks": self.entries}, indent=2))


def verdict_data(v) -> dict:
    """One check's verdict with its full result, as plain data (dataclasses as dicts)."""
    return {"check": v.check, "passed": v.passed, "reason": v.reason, "seconds": v.seconds,
            "problems": list(v.problems), "plots": list(v.plots), "result": to_data(v.result)}


def check_document(verdicts, provenance: Provenance | None = None, **about: object) -> dict:
    """The JSON document of one `fablab check` or `fablab validate` run."""
    failed = [v.check for v in verdicts if v.passed is False]
    extra = {} if provenance is None else {"provenance": provenance.as_dict()}
    return {**about, **extra, "passed": not failed, "failed": failed,
            "seconds": round(sum(v.seconds for v in verdicts), 2),
            "checks": [verdict_data(v) for v in verdicts]}


def junit_xml(verdicts, suite: str, provenance: Provenance | None = None) -> str:
    """JUnit XML as CI tools read it: one testcase per check; a failure element carries the
    check's problems, a skipped element a check that does not apply. The run's provenance is
    the testsuite's <properties> (one <property name= value=/> per field)."""
    from xml.etree import ElementTree as ET

    failures = sum(1 for v in verdicts if v.passed is False)
    skipped = sum(1 for v in verdicts if v.passed is None)
    total = round(sum(v.seconds for v in verdicts), 3)
    counts = {"tests": str(len(verdicts)), "failures": str(failures), "errors": "0", "skipped": str(skipped),
              "time": f"{total:.3f}"}
    root = ET.Element("testsuites", name="fablab", **counts)
    stamp = provenance.started[:19] if provenance else time.strftime("%Y-%m-%dT%H:%M:%S")
    ts = ET.SubElement(root, "testsuite", name=suite, timestamp=stamp, **counts)
    if provenance is not None:
        props = ET.SubElement(ts, "properties")
        for key, value in provenance.properties():
            ET.SubElement(props, "property", name=key, value=value)
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
