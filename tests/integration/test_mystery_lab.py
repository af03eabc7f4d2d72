"""Every answer a mystery can hide, each by the first seed that chooses it, played on a running
lab as lesson 13 plays it: the first look (`fablab status`, `fablab view`) reads as it did on the
healthy lab and names neither the fault nor its place; the hints come in order, the first naming
the symptom and its check (never "run every check") and none the fault's nodes; the check the
first hint names fails (or, for none, every case a fault would fail passes); `--answer` says
wrong to a wrong answer and right to the right one; `fablab fix --all` in another process clears
it and the check passes again. After `fix --all` undoes four faults at once, the lab passes its
checks again. (The fault table's negative controls are test_faults_lab.py, on a lab of their own.)"""
from __future__ import annotations

import json
import os
import random
import re
from types import SimpleNamespace

import pytest

from harness.checks.registry import case, run_case
from harness.cli.main import main
from harness.core.model import build
from harness.core.plan import make_plan
from harness.faults import BY_NAME, check_of, mystery
from harness.faults.store import in_place
from harness.lab import Lab
from harness.report.live import snapshot
from topologies import BUILTINS

from .conftest import fablab, leftovers_of

TOPOLOGY = "ai-cluster"
SLOW = ("failover-",)  # cases a mystery's "nothing is wrong" does not wait for, nor a fix's re-check


def _seed_of(name: str | None) -> int:
    """The first seed whose mystery is `name` (None: nothing wrong), as a learner would meet it."""
    choices = mystery.candidates(SimpleNamespace(plan=make_plan(build(BUILTINS[TOPOLOGY]()))))
    return next(s for s in range(10_000) if getattr(random.Random(s).choice(choices), "name", None) == name)


@pytest.fixture(scope="module")
def lab():
    name = f"t{os.getpid() % 100000}m"
    with Lab.up(BUILTINS[TOPOLOGY](), name=name) as running:
        yield running
    assert leftovers_of(name) == []


def fix_elsewhere(lab, *args: str) -> None:
    """`fablab fix` as a learner runs it later: another process, with only the lab's run
    directory to go by."""
    run = fablab("fix", lab.name, *args, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]


def first_look(lab, capsys) -> tuple[list, str, tuple, tuple]:
    """What a glance shows: status (JSON and table) and the view's cables and sessions."""
    assert main(["status", lab.name, "--json"]) == 0
    switches = json.loads(capsys.readouterr().out)["switches"]
    assert main(["status", lab.name]) == 0
    table = capsys.readouterr().out
    snap = snapshot(lab, TOPOLOGY, "netns", [])
    return (switches, table, tuple((x.a, x.b, x.state) for x in snap.links),
            tuple((s.switch, s.bgp_up, s.bgp, s.bfd_up, s.bfd, s.down) for s in snap.sessions))


def named(text: str, nodes) -> list[str]:
    return [n for n in nodes if re.search(rf"(?<![\w-]){re.escape(n)}(?![\w-])", text)]


@pytest.mark.parametrize("answer", [*mystery.DRAWN, None], ids=lambda a: a or "none")
def test_a_mystery_is_found_by_reasoning_not_given_away(lab, answer, capsys):
    healthy = first_look(lab, capsys)
    assert main(["mystery", lab.name, "--seed", str(_seed_of(answer))]) == 0
    capsys.readouterr()
    hidden = mystery.reveal(lab)
    try:
        assert hidden.fault == answer
        f = BY_NAME[answer] if answer else None
        nodes = f.target(hidden.on).nodes() if f else ()

        # the first look: as on the healthy lab, the fault and its place unnamed
        switches, table, links, sessions = first_look(lab, capsys)
        assert switches == healthy[0], "fablab status --json differs from the healthy lab's"
        assert (links, sessions) == healthy[2:], "fablab view differs from the healthy lab's"
        # every switch is in the table on a healthy lab too: what must not change is any row
        assert table.splitlines()[:-1] == healthy[1].splitlines(), "fablab status differs from the healthy lab's"
        assert table.splitlines()[-1] == "fault in place: mystery on ?: a hidden fault (or none)"

        # the hints: in order, narrowing, the first no "run every check", none naming a node
        given = []
        for _ in range(3):
            assert main(["mystery", lab.name, "--hint"]) == 0
            given.append(capsys.readouterr().out.replace("\n", " "))
        assert [re.search(r"hint (\d)/3", g).group(1) for g in given] == ["1", "2", "3"]
        assert "every check" not in given[0]
        if f:
            assert f"--only {check_of(f.caught_by)}" in given[0]
            assert not [(g, named(g.split(":", 1)[1], nodes)) for g in given if named(g.split(":", 1)[1], nodes)]
            assert not [g for g in given if answer in g]

        # the measurement the first hint points at
        if f is None:  # nothing wrong: the cases a fault would fail all pass
            cases = {BY_NAME[n].caught_by for n in mystery.DRAWN}
            for name in sorted(c for c in cases if not c.startswith(SLOW)):
                assert run_case(case(name), lab).passed is not False, name
        else:
            assert run_case(case(f.caught_by), lab).passed is False, hidden

        # the answer: judged, not given
        wrong = "none" if f else "l3-hashing"
        assert main(["mystery", lab.name, "--answer", wrong]) == 3
        right = ["--answer", answer, "--on", hidden.on] if f else ["--answer", "none"]
        assert main(["mystery", lab.name, *right]) == 0
        assert main(["mystery", lab.name, "--reveal"]) == 0
        assert (answer or "none") in capsys.readouterr().out
    finally:
        fix_elsewhere(lab, "--all")
    assert in_place(lab) == [] and not (lab.run_dir / mystery.STORE).exists()
    if f is not None and not f.caught_by.startswith(SLOW):  # the fix, verified
        assert run_case(case(f.caught_by), lab).passed is not False, f.caught_by


def test_after_fix_all_the_lab_passes_its_checks_again(lab):
    for name in ("swapped-cables", "l3-hashing", "dscp-map", "acl-flip"):
        assert main(["break", lab.name, name]) == 0
    fix_elsewhere(lab, "--all")
    for name in ("cabling", "isolation", "tenants", "lossless-audit", "ecmp"):
        assert run_case(case(name), lab).passed is not False, name
