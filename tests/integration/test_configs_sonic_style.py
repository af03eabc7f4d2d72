"""ai-cluster's render rewritten as SONiC's bgpcfgd templates and sample config_db.json write
it (tests/corpus/styles.py: peer group PEER_V4, filters through route maps, `address-family
ipv4`, no `exit`, the datacenter defaults written out, AZURE maps, RULE_n, INGRESS, the
default MTU left out) diffs as the same, boots with `fablab up --configs`, and the running lab
diffs as the same and holds the checks that only look. One lab for every assertion."""
from __future__ import annotations

import json
import os

import pytest

from corpus.styles import rewrite
from harness.core.model import build
from harness.core.plan import make_plan
from harness.lab import Lab
from harness.render import artifacts, write_artifacts
from topologies import BUILTINS

from .conftest import fablab as _fablab, leftovers_of




@pytest.fixture(scope="module")
def sonic_style(tmp_path_factory):
    plan = make_plan(build(BUILTINS["ai-cluster"]()))
    ours = tmp_path_factory.mktemp("ours")
    write_artifacts(artifacts(plan), ours)
    theirs = tmp_path_factory.mktemp("theirs") / "sonic"
    rewrite("sonic", ours, theirs)
    leaf = (theirs / "configs" / "be-g1-r0" / "frr.conf").read_text()
    assert "PEER_V4" in leaf and "address-family ipv4\n" in leaf and "\nexit\n" not in leaf
    return theirs


@pytest.fixture(scope="module")
def lab(sonic_style):
    name = f"ts{os.getpid() % 100000}"
    run = _fablab("up", "ai-cluster", "--name", name, "--configs", str(sonic_style), "--json")
    try:
        assert run.returncode == 0, run.stderr[-2000:]
        assert json.loads(run.stdout)["sessions_that_cannot_come_up"] == []
        yield Lab.attach(name)
    finally:
        _fablab("down", name)
        assert leftovers_of(name) == []


def test_the_sonic_style_directory_diffs_as_the_declaration(sonic_style):
    run = _fablab("diff", "ai-cluster", str(sonic_style), "--json")
    assert (run.returncode, json.loads(run.stdout)["differences"]) == (0, [])


def test_it_boots_and_runs_as_declared(lab):
    assert lab.shortfalls() == []
    assert _fablab("diff", "ai-cluster", lab.name).returncode == 0  # what FRR and CONFIG_DB hold now


def test_the_checks_that_look_pass_on_it(lab):
    run = _fablab("check", lab.name, "--only", "cabling,isolation,lossless", "--json")
    doc = json.loads(run.stdout)
    assert run.returncode == 0 and doc["passed"] and doc["failed"] == [], run.stdout[-3000:]
