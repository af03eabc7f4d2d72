"""ai-cluster's render rewritten as SONiC's bgpcfgd templates and sample config_db.json write
it (tests/corpus/styles.py: peer group PEER_V4, filters through route maps, `address-family
ipv4`, no `exit`, the datacenter defaults written out, AZURE maps, RULE_n, INGRESS, the
default MTU left out) diffs as the same. The same style booted with `fablab up --configs`, the
running lab diffing as the same and passing the checks, on the example cabling plan (with its
storage tenant): tests/integration/test_your_plan.py."""
from __future__ import annotations

import json

import pytest

from corpus.styles import rewrite
from harness.core.model import build
from harness.core.plan import make_plan
from harness.render import artifacts, write_artifacts
from topologies import BUILTINS

from .conftest import fablab as _fablab


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


def test_the_sonic_style_directory_diffs_as_the_declaration(sonic_style):
    run = _fablab("diff", "ai-cluster", str(sonic_style), "--json")
    assert (run.returncode, json.loads(run.stdout)["differences"]) == (0, [])
