"""The mystery without a lab: a seed always chooses the same answer and seed 1 fails a check
lesson 13 runs; no fault status gives away is drawn; the hints narrow (symptom and check, then
plane and tier, then how to find it), never say "run every check" and never name the fault's
node; an answer is judged right, right but elsewhere, or wrong without being told. (On a
running lab, every candidate: tests/integration/test_mystery_lab.py.)"""
from __future__ import annotations

import json
import random
import re
from types import SimpleNamespace

import pytest

from harness.cli.learn import lessons
from harness.core.codec import to_plain
from harness.core.errors import InputError
from harness.core.model import build
from harness.core.plan import make_plan
from harness.faults import BY_NAME, check_of, mystery
from topologies import BUILTINS


@pytest.fixture(scope="module")
def ai():
    return make_plan(build(BUILTINS["ai-cluster"]()))


def _lab(plan, tmp_path, m: mystery.Mystery | None = None):
    lab = SimpleNamespace(name="x", plan=plan, run_dir=tmp_path)
    if m is not None:
        (tmp_path / mystery.STORE).write_text(json.dumps(to_plain(m)))
    return lab


def _hidden(plan, name: str | None) -> mystery.Mystery:
    """The mystery `start` records for `name` on its default target (None: nothing wrong)."""
    if name is None:
        return mystery.Mystery(0, None, None, "nothing")
    return mystery.Mystery(0, name, str(BY_NAME[name].default(plan)), "hidden")


def test_a_seed_always_chooses_the_same_and_none_is_an_answer(ai):
    lab = SimpleNamespace(plan=ai)
    choices = mystery.candidates(lab)
    assert None in choices and len(choices) == len(mystery.DRAWN) + mystery.NONE_WEIGHT
    picked = [random.Random(seed).choice(choices) for seed in range(40)]
    assert picked == [random.Random(seed).choice(mystery.candidates(lab)) for seed in range(40)]
    assert None in picked and len({p.name for p in picked if p}) > 5


def test_seed_1_fails_a_check_the_mystery_lesson_runs(ai):
    (lesson,) = [x for x in lessons() if "fablab mystery mylab --seed 1" in x.commands]
    (line,) = [c for c in lesson.commands if c.startswith("fablab check") and re.search(r"#\s*exit 3", c)]
    runs = re.search(r"--only (\S+)", line).group(1).split(",")
    seed1 = random.Random(1).choice(mystery.candidates(SimpleNamespace(plan=ai)))
    assert seed1 is not None and check_of(seed1.caught_by) in runs


def test_no_fault_that_status_gives_away_is_drawn():
    assert set(mystery.DRAWN) <= set(BY_NAME) and set(mystery.GIVEN_AWAY) <= set(BY_NAME)
    assert not set(mystery.DRAWN) & set(mystery.GIVEN_AWAY)
    assert len(set(mystery.DRAWN)) == len(mystery.DRAWN)


def test_every_drawn_fault_has_a_clue_and_its_check_a_symptom():
    assert set(mystery.CLUES) == set(mystery.DRAWN)
    assert {check_of(BY_NAME[n].caught_by) for n in mystery.DRAWN} <= set(mystery.SYMPTOMS)


@pytest.mark.parametrize("name", [*mystery.DRAWN, None])
def test_the_hints_narrow_and_never_name_the_place(ai, tmp_path, name):
    m = _hidden(ai, name)
    lab = _lab(ai, tmp_path, m)
    given = [mystery.hint(lab) for _ in range(4)]
    assert [g.split(":", 1)[0] for g in given] == ["hint 1/3", "hint 2/3", "hint 3/3", "hint 3/3"]
    first, second, third = (g.split(": ", 1)[1] for g in given[:3])
    assert first.startswith("the symptom") and second.startswith("where") and third.startswith("to find it")
    assert "every check" not in first and "fablab check x\n" not in first
    if name is not None:
        assert first.endswith(f"fablab check x --only {check_of(BY_NAME[name].caught_by)}")
        nodes = BY_NAME[name].default(ai).nodes()
        for text in (first, second, third):
            assert name not in text and not [n for n in nodes if re.search(rf"\b{re.escape(n)}\b", text)], text
        assert "FE" in second or "BE" in second


def test_the_first_hint_is_the_symptom_class_shared_by_every_fault_of_its_check(ai, tmp_path):
    firsts: dict[str, set[str]] = {}
    for name in mystery.DRAWN:
        firsts.setdefault(check_of(BY_NAME[name].caught_by), set()).add(mystery.hints("x", _hidden(ai, name))[0])
    assert all(len(texts) == 1 for texts in firsts.values()), firsts


def test_an_answer_is_judged_without_being_given(ai, tmp_path):
    lab = _lab(ai, tmp_path, mystery.Mystery(0, "rogue-cable", "fe-l1,be-g1-r0", "hidden"))
    V = mystery.Verdict
    assert mystery.answer(lab, "rogue-cable", "be-g1-r0,fe-l1").verdict is V.RIGHT  # ends in any order
    assert mystery.answer(lab, "rogue-cable", "fe-l1:Ethernet56,be-g1-r0:Ethernet16").verdict is V.RIGHT
    assert mystery.answer(lab, "rogue-cable").verdict is V.RIGHT_FAULT
    assert mystery.answer(lab, "rogue-cable", "fe-l2,be-g1-r0").verdict is V.WRONG_PLACE
    assert mystery.answer(lab, "stray-cable", "fe-l1,be-g1-r0").verdict is V.WRONG
    assert mystery.answer(lab, mystery.NONE).verdict is V.WRONG
    assert not mystery.answer(lab, mystery.NONE).solved and mystery.answer(lab, "rogue-cable").solved
    with pytest.raises(InputError, match="unknown fault"):
        mystery.answer(lab, "no-such-fault")
    with pytest.raises(InputError, match="two ends"):
        mystery.answer(lab, "rogue-cable", "fe-l1")  # a target in the wrong form is bad input, not wrong


def test_none_is_right_only_when_nothing_is_wrong(ai, tmp_path):
    lab = _lab(ai, tmp_path, mystery.Mystery(0, None, None, "nothing"))
    assert mystery.answer(lab, mystery.NONE).verdict is mystery.Verdict.RIGHT
    assert mystery.answer(lab, "l3-hashing").verdict is mystery.Verdict.WRONG


def test_ports_of_one_node_match_in_any_order(ai, tmp_path):
    lab = _lab(ai, tmp_path, mystery.Mystery(0, "swapped-cables", "gpu01:rail0,gpu01:rail1", "hidden"))
    assert mystery.answer(lab, "swapped-cables", "gpu01:rail1,gpu01:rail0").verdict is mystery.Verdict.RIGHT
    assert mystery.answer(lab, "swapped-cables", "gpu01:rail1,gpu01:rail2").verdict is mystery.Verdict.WRONG_PLACE


def test_no_mystery_is_bad_input(ai, tmp_path):
    with pytest.raises(InputError, match="no mystery"):
        mystery.answer(_lab(ai, tmp_path), "l3-hashing")


def test_status_lists_a_mystery_that_hides_nothing_as_one_that_hides_a_fault(ai, tmp_path):
    from harness.faults import store

    none_dir, fault_dir = tmp_path / "none", tmp_path / "fault"
    none_dir.mkdir(), fault_dir.mkdir()
    nothing = _lab(ai, none_dir, mystery.Mystery(0, None, None, "nothing"))
    something = _lab(ai, fault_dir, _hidden(ai, "l3-hashing"))
    (fault_dir / store.STORE).write_text(json.dumps([to_plain(store.Entry(
        "l3-hashing", str(BY_NAME["l3-hashing"].default(ai)), "hidden", {}, 0.0, hidden=True))]))
    assert store.shown(nothing) == store.shown(something) == [
        {"fault": "mystery", "on": "?", "description": "a hidden fault (or none)"}]
    (none_dir / mystery.STORE).unlink()  # `fix --all` ends it: nothing listed
    assert store.shown(nothing) == []
