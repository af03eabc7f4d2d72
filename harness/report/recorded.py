"""Observations recorded on real labs, read back and judged again with no lab.

`fablab validate --results DIR`, `fablab check` and `pytest labs/` write each case's
measurement beside its outcome (<name>.observation.json, harness.report.results); copied under
tests/observations/, it is a judge's test table: the same observation on the same plan must
give the same verdict, and a fault's observation must keep failing. The plan is rebuilt from
the declaration the run names; a declaration that has changed since is said, not judged.
"""
from __future__ import annotations

import importlib
import json
from dataclasses import dataclass
from pathlib import Path

from harness.checks.base import Observation, Outcome
from harness.checks.registry import case as case_named
from harness.core.codec import CodecError, from_plain
from harness.core.errors import InputError


@dataclass(frozen=True)
class Recorded:
    """One recorded measurement, and the verdict its judge gave on the lab."""

    path: Path
    case: str
    observation: Observation
    passed: bool | None
    reason: str
    topology: str
    runtime: str
    declaration_sha256: str | None
    cluster: dict | None = None  # the declaration it was measured on, where the file holds it


def read(path: Path) -> Recorded:
    """A <name>.observation.json as the typed observation it records; InputError naming the
    file and field where it does not fit its class any more."""
    data = json.loads(Path(path).read_text())
    module, _, qualname = data["type"].partition(":")
    cls = importlib.import_module(module)
    for part in qualname.split("."):
        cls = getattr(cls, part)
    try:
        observation = from_plain(cls, data["observation"])
    except CodecError as e:
        raise InputError(f"{path}: {e} (record it again: see tests/observations/README.md)") from e
    prov = data.get("provenance") or {}
    return Recorded(Path(path), data["case"], observation, data["passed"], data["reason"],
                    prov.get("topology") or "", prov.get("runtime") or "netns", prov.get("declaration_sha256"),
                    data.get("cluster"))


def plan_of(recorded: Recorded):
    """The plan the observation was measured on, rebuilt from the declaration the file holds
    (or, in a file without one, from the run's topology, which must not have changed since);
    the netns runtime runs the plan as made."""
    from harness.catalog import load_cluster
    from harness.core.model import build, cluster_from_dict
    from harness.core.plan import make_plan
    from harness.report.provenance import declaration_sha256

    if recorded.cluster is not None:
        return make_plan(build(cluster_from_dict(recorded.cluster)))
    cluster = load_cluster(recorded.topology)
    if recorded.declaration_sha256 and declaration_sha256(cluster) != recorded.declaration_sha256:
        raise InputError(f"{recorded.path}: {recorded.topology}'s declaration changed since it was recorded "
                         "(record it again: see tests/observations/README.md)")
    return make_plan(build(cluster))


def judge(recorded: Recorded, observation: Observation | None = None) -> Outcome:
    """The registered case's judge on the recorded plan and observation (or another one, e.g.
    the recorded one with a figure changed)."""
    return case_named(recorded.case).verdict(plan_of(recorded), observation or recorded.observation)
