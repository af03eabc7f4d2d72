"""Every fault of `fablab break` on a running lab: in place, the check it names fails and names
where; after `fablab fix`, the same check passes. Ten mystery seeds: the answer `--reveal`
gives is the fault the checks point at, or none where they pass. (The lab's `fablab check`
after `fix --all` passing again is the last test.)"""
from __future__ import annotations

import dataclasses
import os

import pytest

from harness.checks.faults import FAULTS, in_place
from harness.checks.registry import run_checks, select
from harness.cli.main import main
from harness.lab import Lab
from topologies import BUILTINS

from .conftest import leftovers_of

QUICK = {"failover": ("failover-gray",)}  # of a slow check, the case a fault is meant to fail


@pytest.fixture(scope="module")
def lab():
    name = f"t{os.getpid() % 100000}f"
    with Lab.up(BUILTINS["ai-cluster"](), name=name) as running:
        yield running
    assert leftovers_of(name) == []


def verdicts(lab, check: str):
    (chosen,) = select(check)
    if check in QUICK:
        chosen = dataclasses.replace(chosen, cases=tuple(c for c in chosen.cases if c.name in QUICK[check]))
    return run_checks(lab, (chosen,))


def places(lab, entry: dict) -> set[str]:
    """The nodes a finding may name for this fault: where it went, and the far ends of its ports."""
    ends = {tuple(part.split(":")) for part in entry["on"].split(",")}
    found = {e[0] for e in ends}
    for c in lab.plan.cables:
        for a, b in (((c.a_node, c.a_port), (c.b_node, c.b_port)), ((c.b_node, c.b_port), (c.a_node, c.a_port))):
            if a in ends:
                found.add(b[0])
    return found | {str(v) for v in entry["data"].values() if isinstance(v, (str, int))}


@pytest.mark.parametrize("name", [f.name for f in FAULTS])
def test_a_fault_is_caught_where_it_is_and_fix_undoes_it(lab, name, capsys):
    f = next(x for x in FAULTS if x.name == name)
    assert main(["break", lab.name, name]) == 0
    (entry,) = in_place(lab)
    try:
        broken = verdicts(lab, f.caught_by)
        failed = [v for v in broken if v.passed is False]
        assert failed, f"{name} in place, {f.caught_by} still passes: {[v.reason for v in broken]}"
        text = " ".join(v.reason + " ".join(v.problems) for v in failed)
        assert any(p in text for p in places(lab, entry)), (places(lab, entry), text[:600])
    finally:
        assert main(["fix", lab.name, name]) == 0
    assert in_place(lab) == []
    fixed = verdicts(lab, f.caught_by)
    assert all(v.passed is not False for v in fixed), [v.reason for v in fixed if v.passed is False]


@pytest.mark.parametrize("seed", range(10))
def test_a_mystery_reveals_what_the_checks_point_at(lab, seed, capsys):
    from harness.checks import mystery

    assert main(["mystery", lab.name, "--seed", str(seed)]) == 0
    answer = mystery.reveal(lab)
    try:
        f = next((x for x in FAULTS if x.name == answer["fault"]), None)
        if f is None:  # nothing wrong: the checks a fault would fail all pass
            for check in sorted({x.caught_by for x in FAULTS} - {"failover"}):
                assert all(v.passed is not False for v in verdicts(lab, check)), check
        else:
            assert any(v.passed is False for v in verdicts(lab, f.caught_by)), answer
        assert main(["mystery", lab.name, "--reveal"]) == 0
        shown = capsys.readouterr().out
        assert (answer["fault"] or "none") in shown
    finally:
        assert main(["fix", lab.name, "--all"]) == 0
    assert in_place(lab) == [] and not (lab.run_dir / mystery.STORE).exists()


def test_after_fix_all_the_lab_passes_its_checks_again(lab):
    for name in ("swapped-cables", "l3-hashing", "dscp-map", "acl-flip"):
        assert main(["break", lab.name, name]) == 0
    assert main(["fix", lab.name, "--all"]) == 0
    for check in ("cabling", "isolation", "tenants", "lossless", "ecmp"):
        assert all(v.passed is not False for v in verdicts(lab, check)), check
