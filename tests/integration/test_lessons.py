"""Every command a lesson of docs/learn/ shows, run in order with the exit status the lesson
says (`# exit 3` where a check must fail; 0 otherwise): the lessons cannot rot. The lab's
name `mylab` is replaced by one of the test's own.

The lessons that boot the same topology share one lab, as a learner who skips `fablab down`
between lessons would: the first lesson's `fablab up` boots it, the others' find it running,
and the `fablab down` the lessons end with runs once, after the last of them. So each lesson
must leave the lab as it found it (every fault it broke fixed, every cable up): the test
holds it to that, and to `fablab down` leaving nothing.

The course runs in two halves by the checks its lessons run, each on labs of its own (this
module and test_lessons_second_half.py), so that the two run side by side."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time

import pytest

from harness.cli.learn import lessons

from .conftest import leftovers_of

NOTE = re.compile(r"\s+#\s*exit (\d+)\s*$")
UP = re.compile(r"^fablab up (\S+) --name mylab$")
DOWN = re.compile(r"^fablab down mylab$")


def _half(course) -> int:
    """Where the course halves by the checks its lessons run (a check, not a command, is
    what takes a lesson's time)."""
    checks = [sum(1 for c in x.commands if c.startswith("fablab check")) for x in course]
    run = 0
    for i, k in enumerate(checks):
        run += k
        if 2 * run >= sum(checks):
            return i + 1
    return len(course)


HALF = _half(lessons())
LESSONS = lessons()[:HALF]  # the second half: test_lessons_second_half.py


class Shared:
    """The labs the lessons boot, by topology, and the fablab command they call."""

    def __init__(self, tmp_path_factory, part: str) -> None:
        self.part = part
        self.up: dict[str, str] = {}  # topology -> lab name, while it runs
        bin_dir = tmp_path_factory.mktemp("bin")
        (bin_dir / "fablab").write_text(f'#!/bin/sh\nexec {sys.executable} -m harness.cli "$@"\n')
        (bin_dir / "fablab").chmod(0o755)
        self.cwd = tmp_path_factory.mktemp("lessons")
        self.env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "NO_COLOR": "1", "COLUMNS": "200"}

    def name(self, topology: str) -> str:
        return f"l{os.getpid() % 10000}{self.part}{sorted({x.lab for x in lessons()}).index(topology)}"

    def run(self, command: str) -> subprocess.CompletedProcess:
        return subprocess.run(["bash", "-c", command], cwd=self.cwd, env=self.env, capture_output=True, text=True,
                              timeout=900)

    def as_found(self, lab: str, timeout: float = 60.0) -> dict | None:
        """`fablab status` once no fault is in place and every session, BFD peer and route is
        back (polled: a cable a lesson brought up may still be converging); None at the deadline."""
        deadline = time.monotonic() + timeout
        while True:
            run = self.run(f"fablab status {lab} --json")
            seen = json.loads(run.stdout) if run.returncode == 0 else {}
            if seen and not seen["faults"] and all(
                    s["sessions_up"] == s["sessions_expected"] and s["bfd_up"] == s["bfd_expected"]
                    and not s["missing_routes"] for s in seen["switches"]):
                return seen
            if time.monotonic() > deadline:
                return None
            time.sleep(1)

    def down(self, topology: str) -> subprocess.CompletedProcess:
        name = self.up.pop(topology)
        run = self.run(f"fablab down {name}")
        assert leftovers_of(name) == []
        return run


def shared_labs(tmp_path_factory, part: str):
    """The labs of one part of the course (a fixture's body): every lab still up is downed
    at the end, and must leave nothing."""
    labs = Shared(tmp_path_factory, part)
    try:
        yield labs
    finally:
        for topology in list(labs.up):
            name = labs.name(topology)
            run = labs.down(topology)
            assert run.returncode == 0, f"`fablab down {name}` exited {run.returncode}\n{run.stderr[-2000:]}"


@pytest.fixture(scope="module")
def shared(tmp_path_factory):
    yield from shared_labs(tmp_path_factory, "a")


def _lesson_id(x) -> str:
    return f"{x.number:02d}-{x.path.stem[3:]}"


def run_lesson(lesson, shared, course) -> None:
    """Every command of `lesson`, on the labs of `shared`; `course`: the lessons sharing them."""
    name = shared.name(lesson.lab)
    last = lesson is [x for x in course if x.lab == lesson.lab][-1]
    try:
        for line in lesson.commands:
            found = NOTE.search(line)
            expected = int(found.group(1)) if found else 0
            command = NOTE.sub("", line)
            up = UP.match(command)
            assert not up or up.group(1) == lesson.lab, f"{lesson.path.name} boots {up.group(1)}, says Lab: {lesson.lab}"
            if up and lesson.lab in shared.up:
                command = "fablab status mylab"  # booted by an earlier lesson: it must be running
            elif DOWN.match(command) and not last:
                continue  # the next lesson of this topology goes on on the same lab
            if up:
                shared.up.setdefault(lesson.lab, name)
            run = shared.down(lesson.lab) if DOWN.match(command) else shared.run(command.replace("mylab", name))
            assert run.returncode == expected, (f"{lesson.path.name}: `{line}` exited {run.returncode}, the lesson "
                                                f"says {expected}\n{run.stdout[-2000:]}\n{run.stderr[-2000:]}")
        if lesson.lab in shared.up:
            assert shared.as_found(name), f"{lesson.path.name} left {name} otherwise than it found it"
    except BaseException:
        if lesson.lab in shared.up:  # the next lesson boots afresh rather than inherit what went wrong
            shared.down(lesson.lab)
        raise


@pytest.mark.parametrize("lesson", LESSONS, ids=_lesson_id)
def test_every_command_of_a_lesson_runs_as_it_says(lesson, shared):
    run_lesson(lesson, shared, LESSONS)
