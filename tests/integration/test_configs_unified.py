"""A switch given as config_db.json alone, its BGP in CONFIG_DB as SONiC's unified mode holds it
(issue 67, item 3), boots with `fablab up --configs` and passes the checks: ai-cluster with every
BE switch so given (tests/corpus/unified.py), the FE switches as fablab renders them. The
directory and the booted lab diff as the same, by the same reading (item 4): what FRR itself
makes of the configs, read from files or from the running daemons."""
from __future__ import annotations

import json

import pytest

from corpus.unified import rewrite
from harness.core.model import build
from harness.core.plan import make_plan
from harness.lab import Lab
from harness.render import artifacts, write_artifacts
from topologies import BUILTINS

from .conftest import fablab as _fablab, up_with_configs

BE = ["be-g1-r0", "be-g1-r1", "be-g2-r0", "be-g2-r1", "be-s1", "be-s2"]


@pytest.fixture(scope="module")
def unified(tmp_path_factory):
    ours = tmp_path_factory.mktemp("ours")
    write_artifacts(artifacts(make_plan(build(BUILTINS["ai-cluster"]()))), ours)
    out = tmp_path_factory.mktemp("theirs") / "unified"
    rewrite(ours, out, BE)
    return out


@pytest.fixture(scope="module")
def lab(unified):
    with up_with_configs("ai-cluster", "uni", unified) as name:
        yield name


def test_the_directory_and_the_booted_lab_diff_as_the_same(unified, lab):
    on_disk = _fablab("diff", "ai-cluster", str(unified), "--json")
    running = _fablab("diff", "ai-cluster", lab, "--json")
    assert (on_disk.returncode, json.loads(on_disk.stdout)["differences"]) == (0, []), on_disk.stdout[-3000:]
    assert (running.returncode, json.loads(running.stdout)["differences"]) == (0, []), running.stdout[-3000:]
    # the positive control: the running lab's BE leaves run what the tables said, not fablab's file
    conf = Lab.attach(lab).vtysh("be-g1-r0", "show running-config")
    assert " neighbor fabric timers 3 9" in conf and "bfd profile fabric" in conf


def test_the_checks_pass(lab, tmp_path):
    run = _fablab("check", lab, "--only", "routing,ecmp", "--json", "--results", str(tmp_path))
    doc = json.loads(run.stdout)
    assert run.returncode == 0 and doc["passed"] and doc["failed"] == [], run.stdout[-3000:]
