"""Your fabric in your numbering (issue 66): docs/examples/plan's cabling with the configs an
engineer's automation writes for it in its own numbering (docs/examples/numbered/numbering.csv:
loopbacks from a /24 a plane, host /31s from a /24 a plane handed out in a shuffled order, 4-byte
ASNs by group and rail; mgmt from the devices file), in SONiC's own style, its plane filters
written for those pools (`permit 10.77.0.0/24 ge 31 le 31`). The plan itself carries no
numbering: `--configs` brings it. The directory diffs as the plan; the lab boots their addresses
(a GPU NIC's is the other end of its leaf port's /31), converges, and the checks pass in it, their
evidence naming those addresses. One lab for every assertion."""
from __future__ import annotations

import json
from ipaddress import IPv4Interface
from pathlib import Path

import pytest

from corpus.styles import rewrite
from harness.lab import Lab

from .conftest import fablab as _fablab, up_with_configs

EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "examples"
PLAN = EXAMPLES / "plan" / "sonic_lab_links.csv"
NUMBERED = EXAMPLES / "numbered" / "sonic_lab_links.csv"
ONLY = "cabling,routing,isolation,ecmp"


def _numbers() -> dict[tuple[str, str], str]:
    rows = (EXAMPLES / "numbered" / "numbering.csv").read_text().splitlines()[1:]
    return {(d, item): value for d, item, value in (r.split(",") for r in rows if r)}


@pytest.fixture(scope="module")
def their_configs(tmp_path_factory):
    ours = tmp_path_factory.mktemp("numbered") / "render"
    run = _fablab("render", str(NUMBERED), "-o", str(ours))
    assert run.returncode == 0, run.stderr[-2000:]
    theirs = tmp_path_factory.mktemp("theirs") / "sonic"
    rewrite("sonic", ours, theirs)
    leaf = (theirs / "configs" / "rtsw-g1-r0" / "frr.conf").read_text()
    assert f"router bgp {_numbers()[('rtsw-g1-r0', 'asn')]}" in leaf and "PEER_V4" in leaf
    return theirs


def test_their_numbering_diffs_as_the_plan_and_a_slip_in_it_is_named(their_configs, tmp_path):
    run = _fablab("diff", str(PLAN), str(their_configs), "--json")
    assert (run.returncode, json.loads(run.stdout)["differences"]) == (0, [])
    # a duplicate loopback in their configs: refused before anything runs, naming both switches
    import shutil
    broken = tmp_path / "broken"
    shutil.copytree(their_configs, broken)
    db = broken / "configs" / "ctsw-02" / "config_db.json"
    doc = json.loads(db.read_text())
    doc["LOOPBACK_INTERFACE"] = {"Loopback0": {}, f"Loopback0|{_numbers()[('ctsw-01', 'loopback')]}": {}}
    db.write_text(json.dumps(doc))
    run = _fablab("diff", str(PLAN), str(broken))
    said = " ".join(run.stderr.split())
    assert run.returncode == 2 and "is used twice" in said and "ctsw-01's loopback" in said and "ctsw-02's" in said


@pytest.fixture(scope="module")
def lab(their_configs):
    with up_with_configs(PLAN, "nb", their_configs) as name:
        yield name


def test_the_lab_runs_their_addresses(lab):
    numbers = _numbers()
    plan = Lab.attach(lab).plan
    leaf = plan.switch("rtsw-g1-r0")
    assert leaf.asn == int(numbers[("rtsw-g1-r0", "asn")]) and str(leaf.loopback) == numbers[("rtsw-g1-r0", "loopback")]
    port = leaf.host_ports[0]
    nic = plan.host(port.peer).nic(port.peer_port)
    given = numbers.get((leaf.name, port.name)) or numbers[(port.peer, port.peer_port)]
    assert IPv4Interface(given).network == nic.address.network and nic.address.network.subnet_of(
        IPv4Interface("10.77.0.0/24").network)
    run = _fablab("exec", lab, port.peer, "--", "ip", "-4", "-o", "addr", "show", port.peer_port)
    assert str(nic.address) in run.stdout, run.stdout
    assert str(plan.switch("ctsw-01").mgmt) == "10.250.0.11/24"  # the devices file's


def test_the_checks_pass_in_their_numbering(lab, tmp_path):
    run = _fablab("check", lab, "--only", ONLY, "--json", "--results", str(tmp_path))
    doc = json.loads(run.stdout)
    assert run.returncode == 0 and doc["passed"] and doc["failed"] == [], run.stdout[-3000:]
    evidence = " ".join(p.read_text() for p in tmp_path.rglob("*.observation.json"))
    assert "10.77.0." in evidence and "10.255.254." in evidence and "10.0.1." not in evidence
