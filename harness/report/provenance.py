"""Where a run's results came from: fablab's version and commit, the declaration checked,
the runtime, kernel and FRR, the command line, when it started and ended.

`collect()` builds one `Provenance` per run. Everything it asks of the system (git, FRR) is
optional: a missing tool, a tree that is no git checkout or a lab that does not answer gives
None for that field, never an error. The run's results (harness.report.results.Results) carry it in
summary.json, in every per-check JSON, in the JUnit XML and in the HTML report.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import platform
import re
import subprocess
import sys
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

_VERSION = re.compile(r"\b(\d+\.\d+(?:\.\d+)?[\w.+~-]*)")
_HARNESS = Path(__file__).resolve().parents[1]  # the harness package (this module is in harness/report/)


@dataclass(frozen=True)
class Provenance:
    fablab_version: str | None
    commit: str | None  # of the checkout fablab runs from; None: not a git checkout, or no git
    dirty: bool | None  # tracked files differ from `commit` (untracked files do not count)
    topology: str | None  # as the user gave it: a built-in name or a .py path
    cluster: str | None  # the declaration's own name
    declaration_sha256: str | None  # see declaration_sha256()
    runtime: str | None
    lab: str | None
    kernel: str
    python: str
    frr_version: str | None  # what the lab's switches run when it could be asked, else the local FRR
    command: tuple[str, ...]
    started: str  # UTC, ISO 8601
    ended: str | None = None  # None until the run ends: a summary with no end is an interrupted run
    # the switch configs judged, when not fablab's render (`up --configs`): their directory and sha256
    configs: str | None = None

    def as_dict(self) -> dict:
        data = dataclasses.asdict(self)
        data["command"] = list(self.command)
        return data

    def properties(self) -> list[tuple[str, str]]:
        """(name, value) pairs as text, for JUnit <property> elements (None: empty)."""
        def text(value: object) -> str:
            if value is None:
                return ""
            if isinstance(value, bool):
                return str(value).lower()
            if isinstance(value, (list, tuple)):
                return " ".join(value)
            return str(value)

        return [(k, text(v)) for k, v in self.as_dict().items()]

    def ending(self) -> Provenance:
        return dataclasses.replace(self, ended=now())


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


_LOSSLESS_DATAPLANE = ("time_scale", "emulate", "dcqcn", "ecn")  # fields added after hashes were recorded


def declaration_sha256(cluster) -> str:
    """sha256 of the canonical declaration: `harness.core.model.cluster_to_dict(cluster)` as JSON
    with sorted keys and compact separators. Equal declarations give equal hashes, whatever
    file or built-in they came from; any change to any field gives another. `cluster` is a
    Cluster, or the plain data of one (a running lab's state)."""
    from harness.core.codec import to_plain
    from harness.core.errors import InputError
    from harness.core.model import Cabling, Lossless, cluster_from_dict, cluster_to_dict

    data = cluster if isinstance(cluster, dict) else cluster_to_dict(cluster)
    try:  # by meaning: Dcqcn(cnp_interval_us=50) and its state file's 50.0 are one declaration
        data = cluster_to_dict(cluster_from_dict(data))
    except (InputError, ValueError):
        pass  # not a whole declaration: hashed as given
    if data.get("cabling") == to_plain(Cabling()):  # no cabling plan: the hash it had before Cabling was
        data = {k: v for k, v in data.items() if k != "cabling"}
    lossless = data.get("lossless")
    if isinstance(lossless, dict):  # the lossless data plane's settings at their defaults: the hash from before them
        defaults = to_plain(Lossless())
        kept = {k: v for k, v in lossless.items() if k not in _LOSSLESS_DATAPLANE or v != defaults.get(k)}
        data = {**data, "lossless": kept}
    text = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


def fablab_version() -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("fablab")
    except PackageNotFoundError:
        import harness

        return getattr(harness, "__version__", None)


def _git(*args: str) -> str | None:
    try:
        run = subprocess.run(["git", "-C", str(_HARNESS), *args], capture_output=True, text=True, timeout=10,
                             env={**os.environ, "GIT_OPTIONAL_LOCKS": "0"})  # a status must not take the index lock
    except (OSError, subprocess.SubprocessError):
        return None
    return run.stdout if run.returncode == 0 else None


def git_commit() -> tuple[str | None, bool | None]:
    """The commit of the checkout the harness package is in, and whether tracked files differ
    from it. (None, None) when there is no git or the package is not tracked by one (an
    installed copy inside some other repository must not borrow that repository's commit)."""
    if _git("ls-files", "--error-unmatch", "__init__.py") is None:
        return None, None
    head = _git("rev-parse", "HEAD")
    if not head:
        return None, None
    status = _git("status", "--porcelain", "--untracked-files=no")
    return head.strip(), None if status is None else bool(status.strip())


def parse_frr_version(text: str) -> str | None:
    """'FRRouting 8.4.4 (sw) on Linux(6.1.0)', 'zebra version 8.4.4' → '8.4.4'."""
    for line in text.splitlines():
        if "version" in line.lower() or "frrouting" in line.lower():
            found = _VERSION.search(line)
            if found:
                return found.group(1)
    return None


def local_frr_version() -> str | None:
    """The FRR installed here (`zebra --version`; this vtysh has no --version), or None."""
    for argv in (["/usr/lib/frr/zebra", "--version"], ["zebra", "--version"]):
        try:
            run = subprocess.run(argv, capture_output=True, text=True, timeout=10)
        except (OSError, subprocess.SubprocessError):
            continue
        version = parse_frr_version(run.stdout + run.stderr)
        if version:
            return version
    return None


def lab_frr_version(lab) -> str | None:
    """The FRR one of the lab's switches runs (`show version` in its vtysh), or None."""
    from harness.core.errors import HarnessError

    switches = getattr(lab.plan, "switches", ())
    if not switches:
        return None
    try:
        return parse_frr_version(lab.vtysh(switches[0].name, "show version"))
    except (HarnessError, OSError, subprocess.SubprocessError, ValueError):
        return None


def collect(cluster=None, topology: str | None = None, runtime: str | None = None, lab: str | None = None,
            command: list[str] | tuple[str, ...] | None = None, frr_version: str | None = None,
            configs: str | None = None) -> Provenance:
    """The provenance of a run starting now. `cluster`: the declaration checked (a Cluster or its
    plain data); `command`: the command line (default sys.argv); `frr_version`: when known
    (e.g. from the running lab), else the local FRR's."""
    commit, dirty = git_commit()
    name = None
    if cluster is not None:
        name = cluster.get("name") if isinstance(cluster, dict) else cluster.name
    return Provenance(
        fablab_version=fablab_version(), commit=commit, dirty=dirty, topology=topology, cluster=name,
        declaration_sha256=None if cluster is None else declaration_sha256(cluster), runtime=runtime, lab=lab,
        kernel=platform.release(), python=platform.python_version(),
        frr_version=frr_version or local_frr_version(),
        command=tuple(str(a) for a in (sys.argv if command is None else command)), started=now(),
        configs=configs or None)
