"""A figure the code or a measurement knows is written in one place: wall-clock times of runs
live in docs/performance.md's tables (each with the command that made it), and every other page
links there instead of restating a number that would drift. Lists the code knows are held to
it: the lab-name limit."""
from __future__ import annotations

import re
from pathlib import Path

from harness.core.declarations import LAB_NAME_MAX

ROOT = Path(__file__).resolve().parents[2]
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


def test_the_check_order_in_the_docs_is_the_registrys():
    from harness.checks.registry import select

    checks = select(None)
    page = (ROOT / "docs" / "commands" / "check.md").read_text()
    listed = page.split("<!-- checks -->")[1].split("<!-- /checks -->")[0].strip().splitlines()
    assert [re.match(r"\d+\. `([\w-]+)`", line).group(1) for line in listed] == [c.name for c in checks]
    for line, check in zip(listed, checks):
        cases = line.split("(", 1)[1].split(")", 1)[0]
        assert re.findall(r"`([\w-]+)`", cases) == [c.name for c in check.cases], line
    readme = (ROOT / "README.md").read_text()
    steps = readme.split("run every check (`fablab check`), in this order:")[1].split("\n3. ")[0]
    assert re.findall(r"^   - `([\w-]+)`:", steps, re.M) == [c.name for c in checks]


def test_every_page_is_a_page():
    """A page an edit garbled (a replacement of an empty string writes the new text between every
    character: docs/performance.md once grew to 107 MB that way) is caught here, not by a reader."""
    limit = 400_000  # bytes: four times the longest page
    sizes = {p.relative_to(ROOT).as_posix(): p.stat().st_size for p in PAGES}
    assert {p: s for p, s in sizes.items() if s > limit} == {}
    assert max(sizes.values()) > limit // 8  # the control: the longest pages are near the limit's scale
