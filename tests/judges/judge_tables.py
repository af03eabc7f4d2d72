"""What every judge table reads: an observation recorded on a real lab (tests/observations/
<case>/<label>.json, named "<case>/<label>"), the plan it was measured on, and the verdict of
the case it records on that plan, for the recorded observation or one a row changed. One place
for them, so every table names a recording the same way, each file is read once per run, and
`plan` and `verdict` build its plan once (harness.report.recorded.judge builds it per call).

What `recorded` and `plan` return is shared by every test that names the same recording: a row
changes an observation into a new value (dataclasses.replace, a copy), never in place.
"""
from __future__ import annotations

from functools import cache
from pathlib import Path

from harness.checks.base import Observation, Outcome
from harness.checks.registry import case
from harness.report.recorded import Recorded, plan_of, read

OBSERVATIONS = Path(__file__).resolve().parents[1] / "observations"


@cache
def recorded(name: str) -> Recorded:
    """The recording "<case>/<label>", e.g. "ecmp/ai-cluster"."""
    return read(OBSERVATIONS / f"{name}.json")


@cache
def plan(name: str):
    """The plan the recording was measured on (harness.report.recorded.plan_of)."""
    return plan_of(recorded(name))


def verdict(name: str, seen: Observation | None = None) -> Outcome:
    """The recording's registered case judged on its plan and `seen` (by default, what it recorded)."""
    it = recorded(name)
    return case(it.case).verdict(plan(name), it.observation if seen is None else seen)
