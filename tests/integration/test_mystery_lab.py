"""Ten mystery seeds on a running lab: the answer `--reveal` gives is the fault the checks
point at, or none where they pass, and `fablab fix --all` in another process clears it. After
`fix --all` undoes four faults at once, the lab passes its checks again. (The fault table's
negative controls are test_faults_lab.py, on a lab of their own.)"""
from __future__ import annotations

import os

import pytest

from harness.checks.registry import case, run_case
from harness.cli.main import main
from harness.faults import BY_NAME, mystery
from harness.faults.store import in_place
from harness.lab import Lab
from topologies import BUILTINS

from .conftest import fablab, leftovers_of

TOPOLOGY = "ai-cluster"
SLOW = ("failover-",)  # cases a mystery's "nothing is wrong" does not wait for


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


@pytest.mark.parametrize("seed", range(10))
def test_a_mystery_reveals_what_the_checks_point_at(lab, seed, capsys):
    assert main(["mystery", lab.name, "--seed", str(seed)]) == 0
    answer = mystery.reveal(lab)
    try:
        f = BY_NAME.get(answer.fault) if answer.fault else None
        if f is None:  # nothing wrong: the cases a fault would fail all pass
            cases = {BY_NAME[n].caught_by for n in mystery.DRAWN}
            for name in sorted(c for c in cases if not c.startswith(SLOW)):
                assert run_case(case(name), lab).passed is not False, name
        else:
            assert run_case(case(f.caught_by), lab).passed is False, answer
        assert main(["mystery", lab.name, "--reveal"]) == 0
        assert (answer.fault or "none") in capsys.readouterr().out
    finally:
        fix_elsewhere(lab, "--all")
    assert in_place(lab) == [] and not (lab.run_dir / mystery.STORE).exists()


def test_after_fix_all_the_lab_passes_its_checks_again(lab):
    for name in ("swapped-cables", "l3-hashing", "dscp-map", "acl-flip"):
        assert main(["break", lab.name, name]) == 0
    fix_elsewhere(lab, "--all")
    for name in ("cabling", "isolation", "tenants", "lossless-audit", "ecmp"):
        assert run_case(case(name), lab).passed is not False, name
