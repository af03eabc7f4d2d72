"""The faults `fablab break` puts in, without a lab: names, where each goes by default, what
catches it, the CLI's refusals, and mystery seeds that always choose the same."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from harness.checks import mystery
from harness.checks.faults import BY_NAME, FAULTS, fault
from harness.checks.registry import NAMES
from harness.core.errors import InputError
from harness.core.model import build
from harness.core.plan import make_plan
from topologies import BUILTINS

ROOT = Path(__file__).resolve().parents[1]
REQUIRED = {"cabling", "isolation", "ecmp", "failover", "lossless", "tenants"}  # what the faults must teach


def fablab(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "harness.cli", *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=120)


def test_every_fault_is_caught_by_a_check_fablab_has():
    assert len(BY_NAME) == len(FAULTS)
    assert all(f.caught_by in NAMES for f in FAULTS)
    assert REQUIRED <= {f.teaches for f in FAULTS}
    groups = [f.teaches for f in FAULTS]
    assert all(groups.index(g) == i or groups[i - 1] == g for i, g in enumerate(groups))  # grouped, for listings
    assert {"route-leak", "small-mtu", "pfc-priority", "dscp-map", "acl-flip", "gray-link"} <= set(BY_NAME)


@pytest.mark.parametrize("topology", sorted(BUILTINS))
def test_each_fault_has_a_default_place_or_says_there_is_none(topology):
    plan = make_plan(build(BUILTINS[topology]()))
    nodes = {n.name for n in plan.fabric.nodes}
    for f in FAULTS:
        element = f.default(plan)
        if element is not None:
            named = {part.split(":")[0] for part in element.split(",")}
            assert named <= nodes, (f.name, element)
    placed = {f.name for f in FAULTS if f.default(plan) is not None}
    assert {"l3-hashing", "small-mtu", "dscp-map"} <= placed  # every BE has them


def test_faults_json_names_what_each_teaches_and_what_catches_it():
    run = fablab("faults", "--json")
    assert run.returncode == 0, run.stderr
    rows = json.loads(run.stdout)
    assert [r["name"] for r in rows] == [f.name for f in FAULTS]
    assert all({"name", "teaches", "caught_by", "what", "on"} <= set(r) for r in rows)


def test_an_unknown_fault_is_refused_naming_the_faults_before_the_lab_is_looked_at():
    run = fablab("break", "no-such-lab", "cable-chewed")
    assert run.returncode == 2
    assert "unknown fault 'cable-chewed'" in run.stderr and "swapped-cables" in run.stderr
    with pytest.raises(InputError, match="fablab faults"):
        fault("cable-chewed")


def test_fix_wants_a_fault_or_all():
    run = fablab("fix", "no-such-lab")
    assert run.returncode == 2 and "--all" in run.stderr


def test_a_mystery_seed_always_chooses_the_same_and_none_is_an_answer():
    import random

    lab = SimpleNamespace(plan=make_plan(build(BUILTINS["ai-cluster"]())))
    choices = mystery.candidates(lab)
    assert None in choices and len(choices) == len(FAULTS) + mystery.NONE_WEIGHT
    picked = [random.Random(seed).choice(choices) for seed in range(40)]
    assert picked == [random.Random(seed).choice(mystery.candidates(lab)) for seed in range(40)]
    assert None in picked and len({p.name for p in picked if p}) > 5
