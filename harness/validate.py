"""The main job: boot a topology, run every check of the registry on it, tear down.

`fablab validate` is `fablab up` + `fablab check` + `fablab down` in one process: the same
checks (harness.checks.registry), the same verdicts and exit codes.
"""
from __future__ import annotations

from pathlib import Path

from harness.checks.registry import CHECKS, Check, Verdict, has_spine_tier, run_checks
from harness.lab import Lab
from harness.plan import Plan
from harness.report import Results
from harness.runtime.base import Progress, quiet

__all__ = ["Verdict", "has_spine_tier", "validate"]


def validate(plan: Plan, results_dir: Path, name: str | None = None, runtime: str = "netns",
             progress: Progress = quiet, topology: str | None = None,
             checks: tuple[Check, ...] = CHECKS) -> list[Verdict]:
    results = Results(results_dir)
    with Lab.up(plan, name=name, runtime=runtime, progress=progress, topology=topology) as lab:
        verdicts = run_checks(lab, checks, results, progress)
        progress("teardown", f"removing lab {lab.name}")
    return verdicts
