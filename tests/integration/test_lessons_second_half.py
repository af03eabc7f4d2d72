"""The second half of the course, on labs of its own: test_lessons.py says how each lesson
is run and held to what it says."""
from __future__ import annotations

import pytest

from harness.cli.learn import lessons

from .test_lessons import HALF, _lesson_id, run_lesson, shared_labs

LESSONS = lessons()[HALF:]


@pytest.fixture(scope="module")
def shared(tmp_path_factory):
    yield from shared_labs(tmp_path_factory, "b")


@pytest.mark.parametrize("lesson", LESSONS, ids=_lesson_id)
def test_every_command_of_a_lesson_runs_as_it_says(lesson, shared):
    run_lesson(lesson, shared, LESSONS)
