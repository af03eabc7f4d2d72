"""The main job: boot a topology, run every check of the registry on it, tear down.

`fablab validate` is `fablab up` + `fablab check` + `fablab down` in one process: the same
checks (harness.checks.registry), the same verdicts and exit codes.
"""
from __future__ import annotations

from pathlib import Path

from harness.checks.registry import Check, Verdict, has_spine_tier, run_checks
from harness.lab import Lab
from harness.core.plan import Plan
from harness.report.provenance import collect, lab_frr_version
from harness.report.results import Results
from harness.runtime.base import Progress, quiet

__all__ = ["Verdict", "has_spine_tier", "validate"]


def validate(plan: Plan, results: Results | Path, name: str | None = None, runtime: str = "netns",
             progress: Progress = quiet, topology: str | None = None,
             checks: tuple[Check, ...] | None = None) -> list[Verdict]:
    """`checks`: those to run (None: every check of the registry). `results`: this run's
    Results, or a parent directory to make a new run's under. Its
    summary gets the FRR the booted switches run, and the end time once the lab is down (an
    interrupted run keeps `ended: null`)."""
    if not isinstance(results, Results):
        results = Results(Path(results), name or topology or plan.name,
                          collect(plan.fabric.cluster, topology or plan.name, runtime, name or plan.name))
    with Lab.up(plan, name=name, runtime=runtime, progress=progress, topology=topology) as lab:
        frr = lab_frr_version(lab)
        if frr:
            results.amend(frr_version=frr)
        verdicts = run_checks(lab, checks, results, progress)
        progress("teardown", f"removing lab {lab.name}")
    results.finish()
    return verdicts
