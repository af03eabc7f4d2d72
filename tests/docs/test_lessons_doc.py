"""The lesson track in docs/learn/: at least ten numbered lessons, each with every part a
lesson needs, on a built-in lab, listed by `fablab learn` and in the track's index."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from harness.faults import BY_NAME
from harness.cli.learn import LESSONS, lessons
from topologies import BUILTINS

ROOT = Path(__file__).resolve().parents[2]
PARTS = ("**Goal.**", "**Predict.**", "**What to look at.**", "**Why.**", "**Self-check.**")


def test_at_least_ten_lessons_numbered_in_order():
    found = lessons()
    assert len(found) >= 10
    assert [x.number for x in found] == list(range(1, len(found) + 1))


def test_every_lesson_has_its_parts_a_lab_and_commands_that_boot_and_tear_down():
    for x in lessons():
        text = x.path.read_text()
        assert all(part in text for part in PARTS), (x.path.name, [p for p in PARTS if p not in text])
        assert x.lab in BUILTINS, x.path.name
        assert x.commands[0] == f"fablab up {x.lab} --name mylab" or any(
            c.startswith(f"fablab up {x.lab} ") for c in x.commands), x.path.name
        assert x.commands[-1] == "fablab down mylab", x.path.name


def test_every_lesson_injects_a_fault_fablab_has():
    for x in lessons():
        broken = [c.split()[3] for c in x.commands if c.startswith("fablab break mylab ")]
        mystery = any(c.startswith("fablab mystery mylab") for c in x.commands)
        assert broken or mystery, x.path.name
        assert all(f in BY_NAME for f in broken), x.path.name


def test_the_track_runs_from_rails_to_pfc_and_has_qp_scaling():
    titles = [x.title.lower() for x in lessons()]
    assert "rail" in titles[0]
    assert any("pfc" in t for t in titles) and any("gray failure" in t for t in titles)
    assert any("fablab spread" in " ".join(x.commands) for x in lessons())  # QPs per GPU pair, measured


def test_the_index_lists_every_lesson():
    index = (LESSONS / "README.md").read_text()
    assert all(f"]({x.path.name})" in index for x in lessons())


def test_fablab_learn_lists_them_with_their_lab():
    run = subprocess.run([sys.executable, "-m", "harness.cli", "learn", "--json"], capture_output=True, text=True,
                         cwd=ROOT, timeout=60)
    assert run.returncode == 0, run.stderr
    rows = json.loads(run.stdout)
    assert [(r["number"], r["lab"]) for r in rows] == [(x.number, x.lab) for x in lessons()]
