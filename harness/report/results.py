"""Results of checks as files: one directory per run, with one JSON per check, PNG plots,
and a summary, each carrying the run's provenance (harness.report.provenance).

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
from collections.abc import Sequence
from pathlib import Path

from harness.checks.base import Observation, Outcome, Verdict
from harness.core.codec import to_plain
from harness.report.provenance import Provenance


def to_data(obj: object) -> object:
    """A check's result as JSON-ready data (harness.core.codec), with its verdict (passed, reason)."""
    return to_plain(obj, extras=("passed", "reason"))


def observation_data(case: str, observation: Observation, outcome: Outcome, provenance: dict | None,
                     cluster: dict | None = None) -> dict:
    """A measurement as a file: the case, the observation's class and fields, the verdict its
    judge gave then (which a judge must give again), the declaration of the lab it was measured
    on (a lab may boot a topology of its own, not the run's), and the run's provenance."""
    cls = type(observation)
    data = {"case": case, "type": f"{cls.__module__}:{cls.__qualname__}", "observation": to_plain(observation),
            "passed": outcome.passed, "reason": outcome.reason}
    if cluster is not None:
        data["cluster"] = cluster
    return {**data, "provenance": provenance}


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

    def record(self, name: str, result: Outcome, plots: tuple[Path, ...] = (), observation: Observation | None = None,
               case: str | None = None, cluster: dict | None = None) -> Path:
        """<name>.json, the outcome; and where the case's `observation` is given,
        <name>.observation.json, what was measured, which `harness.checks.recorded` reads back
        and judges again with no lab (tests/observations/ holds such files)."""
        if observation is not None:
            write_atomic(self.directory / f"{name}.observation.json", json.dumps(
                observation_data(case or name, observation, result, self._provenance(), cluster), indent=2))
        data = to_data(result)
        if not isinstance(data, dict) or "provenance" in data:
            data = {"result": data}
        data["provenance"] = self._provenance()
        path = write_atomic(self.directory / f"{name}.json", json.dumps(data, indent=2))
        self.entries[name] = {"passed": result.passed, "reason": result.reason,
                              "json": str(path), "plots": [str(p) for p in plots]}
        self.write_summary()
        return path

    def keep_logs(self, name: str, logs: dict[str, str], note: str = "") -> Path:
        """<name>.logs/: what a case that did not pass kept of the nodes it names (log name ->
        text, harness.runtime.logs), and why any could not be read (`note`)."""
        directory = self.directory / f"{name}.logs"
        for rel, text in logs.items():
            path = directory / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(path, text)
        if note or not logs:
            directory.mkdir(parents=True, exist_ok=True)
            write_atomic(directory / "README", (note or "no log names these nodes") + "\n")
        if name in self.entries:
            self.entries[name]["logs"] = str(directory)
            self.write_summary()
        return directory

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


def verdict_data(v: Verdict) -> dict:
    """One check's verdict with its full result, as plain data (dataclasses as dicts)."""
    return {"check": v.check, "passed": v.passed, "reason": v.reason, "seconds": v.seconds,
            "problems": list(v.problems), "plots": list(v.plots), "result": to_data(v.result)}


def check_document(verdicts: Sequence[Verdict], provenance: Provenance | None = None, **about: object) -> dict:
    """The JSON document of one `fablab check` or `fablab validate` run."""
    failed = [v.check for v in verdicts if v.passed is False]
    extra = {} if provenance is None else {"provenance": provenance.as_dict()}
    return {**about, **extra, "passed": not failed, "failed": failed,
            "seconds": round(sum(v.seconds for v in verdicts), 2),
            "checks": [verdict_data(v) for v in verdicts]}


def junit_xml(verdicts: Sequence[Verdict], suite: str, provenance: Provenance | None = None) -> str:
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
