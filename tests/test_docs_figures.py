"""A figure the code or a measurement knows is written in one place: wall-clock times of runs
live in docs/performance.md's tables (each with the command that made it), and every other page
links there instead of restating a number that would drift. Lists the code knows are held to
it: the lab-name limit."""
from __future__ import annotations

import re
from pathlib import Path

from harness.core.declarations import LAB_NAME_MAX

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted([ROOT / "README.md", *(ROOT / "docs").rglob("*.md")])
RUN_TIME = re.compile(r"\d+(?:\.\d+)?\s*[–-]\s*\d+(?:\.\d+)?\s*s per run")


def test_run_times_are_given_only_by_the_performance_page():
    restated = [f"{p.relative_to(ROOT)}: {m.group(0)}" for p in PAGES if p.name != "performance.md"
                for m in RUN_TIME.finditer(p.read_text())]
    assert restated == []
    assert RUN_TIME.search("at 79–80 s per run")  # the control: the pattern sees a restated figure


def test_the_lab_name_limit_is_the_codes():
    concepts = (ROOT / "docs" / "concepts.md").read_text()
    assert f"at most {LAB_NAME_MAX} characters" in concepts
