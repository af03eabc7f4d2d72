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

from .conftest import fablab as _fablab, up_with_configs


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


@pytest.fixture(scope="module")
def sonic_samples(tmp_path_factory):
    """The SONiC style with what SONiC's samples write out at its default: `link-detect`, the RA
    interval in milliseconds, PORT pfc_asym/tpid, each address row's family and scope."""
    plan = make_plan(build(BUILTINS["ai-cluster"]()))
    ours = tmp_path_factory.mktemp("ours")
    write_artifacts(artifacts(plan), ours)
    theirs = tmp_path_factory.mktemp("theirs") / "sonic-samples"
    rewrite("sonic-samples", ours, theirs)
    leaf = theirs / "configs" / "be-g1-r0"
    assert "  link-detect\n" in (leaf / "frr.conf").read_text()
    assert "ipv6 nd ra-interval msec 10000" in (leaf / "frr.conf").read_text()
    db = json.loads((leaf / "config_db.json").read_text())
    assert all(p.get("pfc_asym") == "off" and p.get("tpid") == "0x8100" for p in db["PORT"].values())
    assert any(r.get("family") == "IPv4" and r.get("scope") == "global" for r in db["INTERFACE"].values())
    return theirs


@pytest.fixture(scope="module")
def samples_lab(sonic_samples):
    with up_with_configs("ai-cluster", "ssl", sonic_samples) as name:
        yield name


def test_the_sonic_samples_style_diffs_as_the_declaration_on_disk_and_booted(sonic_samples, samples_lab):
    """`fablab diff DIR` and `fablab diff LAB` agree: no difference either way."""
    on_disk = _fablab("diff", "ai-cluster", str(sonic_samples), "--json")
    running = _fablab("diff", "ai-cluster", samples_lab, "--json")
    assert (on_disk.returncode, json.loads(on_disk.stdout)["differences"]) == (0, []), on_disk.stdout[-3000:]
    assert (running.returncode, json.loads(running.stdout)["differences"]) == (0, []), running.stdout[-3000:]
