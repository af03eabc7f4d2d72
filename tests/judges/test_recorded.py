"""Every observation recorded on a real lab (tests/observations/<case>/*.json) is judged again,
with no lab, and gives the verdict its judge gave on the lab: passed and reason, word for word.
So a change to a judge that would turn a verdict shows here first, and a recorded failure
(a negative control's observation) keeps failing. How to record one: tests/observations/README.md.
"""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from harness.core.codec import from_plain, to_plain
from harness.report.recorded import judge, read

import judge_tables as tables

FILES = sorted(tables.OBSERVATIONS.glob("*/*.json"))


def _id(path: Path) -> str:
    return f"{path.parent.name}/{path.stem}"


def test_observations_are_kept_per_case():
    assert all(read(p).case == p.parent.name for p in FILES), "tests/observations/<case>/<label>.json"


@pytest.mark.parametrize("path", FILES, ids=[_id(p) for p in FILES])
def test_a_recorded_observation_gets_its_verdict_again(path):
    recorded = read(path)
    outcome = judge(recorded)
    assert (outcome.passed, outcome.reason) == (recorded.passed, recorded.reason)


@pytest.mark.parametrize("path", FILES, ids=[_id(p) for p in FILES])
def test_a_recorded_observation_round_trips_the_codec(path):
    recorded = read(path)
    data = json.loads(path.read_text())["observation"]
    assert to_plain(recorded.observation) == data
    assert from_plain(type(recorded.observation), data) == recorded.observation


def test_the_table_has_passes_and_failures():
    verdicts = {read(p).passed for p in FILES}
    if FILES:
        assert {True, False} <= verdicts, "record a negative control's observation beside the passes"


def test_a_changed_observation_is_judged_on_what_it_now_says():
    """The control of the table: the judge reads the observation, not the recorded verdict."""
    recorded = next((read(p) for p in FILES if read(p).passed), None)
    if recorded is None:
        pytest.skip("no passing observation recorded yet")
    assert dataclasses.replace(recorded.observation, seconds=recorded.observation.seconds + 1) != recorded.observation
    assert judge(recorded).passed is True
