"""Your fabric as it is cabled (issue 33): docs/examples/plan, a sonic-mgmt connection graph
with its own names (gpu-a01, rtsw-g1-r0, ctsw-01, fetor-1), ports (uplinks on Ethernet256/264,
spines listing group 2 first, NICs enp12s0np0, storage NICs ens9f1) and 7060X6 HwSKUs, booted
with configs written for it in SONiC's own style (tests/corpus/styles.py: peer group PEER_V4,
`address-family ipv4`, no `exit`, AZURE maps, its storage tenant's VXLAN tables): the directory
and the running lab diff as the plan, `fablab check` passes, its results naming the plan's
switches; `break`/`fix` and the cabling check speak its ports. One lab for every assertion.
The RoCEv2 failovers and the RDMA checks are left to labs/test_failover.py and labs/test_rdma.py
(timed, they take turns with every other lab's; the microVMs are a third of a check's cost
here); the whole `fablab check` of this plan is in docs/bring-your-fabric.md."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from corpus.styles import rewrite
from harness.lab import Lab

from .conftest import fablab as _fablab, up_with_configs

PLAN = Path(__file__).resolve().parents[2] / "docs" / "examples" / "plan" / "sonic_lab_links.csv"
# every check but the RoCEv2 failovers and RDMA: timed experiments other labs of `make test` run
# (labs/test_failover.py, labs/test_rdma.py) and that take turns on the machine with them
ONLY = "cabling,isolation,tenants,fe-tcp,lossless,ecmp,collectives"


@pytest.fixture(scope="module")
def their_configs(tmp_path_factory):
    ours = tmp_path_factory.mktemp("ours") / "render"
    run = _fablab("render", str(PLAN), "-o", str(ours))
    assert run.returncode == 0, run.stderr[-2000:]
    theirs = tmp_path_factory.mktemp("theirs") / "sonic"
    rewrite("sonic", ours, theirs)
    leaf = (theirs / "configs" / "rtsw-g1-r0" / "frr.conf").read_text()
    assert "PEER_V4" in leaf and "address-family ipv4\n" in leaf and "\nexit\n" not in leaf
    assert "interface Ethernet256" in leaf and "hostname rtsw-g1-r0" in leaf
    return theirs


def test_their_configs_diff_as_the_plan(their_configs):
    run = _fablab("diff", str(PLAN), str(their_configs), "--json")
    assert (run.returncode, json.loads(run.stdout)["differences"]) == (0, [])


@pytest.fixture(scope="module")
def lab(their_configs):
    with up_with_configs(PLAN, "yp", their_configs) as name:
        yield name


def test_the_running_lab_diffs_as_the_plan(lab):
    assert Lab.attach(lab).shortfalls() == []
    assert _fablab("diff", str(PLAN), lab).returncode == 0  # what FRR and CONFIG_DB hold now


def test_the_checks_pass_naming_the_plans_switches(lab):
    run = _fablab("check", lab, "--only", ONLY, "--json")
    doc = json.loads(run.stdout)
    assert run.returncode == 0 and doc["passed"] and doc["failed"] == [], run.stdout[-3000:]
    text = json.dumps(doc)
    assert "rtsw-g1-r0" in text and "ctsw-0" in text and "be-g1-r0" not in text


def test_a_swap_is_found_and_named_in_the_plans_ports(lab):
    assert _fablab("check", lab, "--only", "cabling").returncode == 0  # the control
    run = _fablab("break", lab, "swapped-cables", "--on", "gpu-a01:enp12s0np0,gpu-a01:enp13s0np0")
    assert run.returncode == 0, run.stderr[-2000:]
    try:
        found = _fablab("check", lab, "--only", "cabling")
        assert found.returncode != 0
        assert "gpu-a01:enp12s0np0 expected rtsw-g1-r0:Ethernet0" in " ".join(found.stdout.split())
    finally:
        assert _fablab("fix", lab, "--all").returncode == 0
    assert _fablab("check", lab, "--only", "cabling").returncode == 0
