"""The staged-fabric path on a real lab: sshd and lldpd in every node, `fablab check --via ssh`
from the management station gives the direct path's figures, a stray FE–BE cable made from
outside is named from LLDP over SSH, the lab's own inventory checks it as a foreign fabric,
a node that cannot be reached is named, and teardown leaves no daemon behind."""
from __future__ import annotations

import json
import subprocess
import sys

from .conftest import fablab, leftovers_of

from harness import Lab
from harness.faults.sabotage import rogue_cable, stray_ends
from harness.runtime import mgmt_services
from harness.runtime.state import namespace
from topologies import ai_cluster

CHECKS = "cabling,routing,isolation,lossless"


def _figures(doc: dict) -> dict:
    """What each case measured, as numbers: the same fabric must give the same ones either way."""
    keep = ("planned", "matched", "lldp_matched", "routes_scanned", "nodes_scanned", "sessions_scanned",
            "switches", "ports", "links", "findings", "speakers", "sessions", "bfd", "prefixes", "short")
    return {c["check"]: {k: c["result"][k] for k in keep if isinstance(c.get("result"), dict) and k in c["result"]}
            for c in doc["checks"] if c["passed"] is not None}


def _check(*argv: str, station: str | None = None) -> tuple[int, dict]:
    cmd = [sys.executable, "-m", "harness.cli", "check", *argv, "--json"]
    run = subprocess.run(["ip", "netns", "exec", station, *cmd] if station else cmd, capture_output=True, text=True,
                         timeout=300)
    assert run.stdout.strip(), run.stderr
    return run.returncode, json.loads(run.stdout)


def test_the_same_checks_over_ssh_from_the_management_station(lab_name, tmp_path):
    lab = Lab.up(ai_cluster(), name=lab_name, mgmt_services=True)  # make test boots its other labs without
    # sshd and lldpd in every node's namespace (lldpd on the OOB switch too), sshd on the mgmt address only
    running = mgmt_services.pids_of(lab_name)
    for node in lab.plan.fabric.nodes:
        assert namespace(lab_name, node.name) in running.values(), node.name
    be_s1 = lab.plan.switch("be-s1")
    listening = lab.ns_exec("be-s1", ["ss", "-Hltn", "sport", "= :22"], check=True).stdout.split()
    assert f"{be_s1.mgmt.ip}:22" in listening and "0.0.0.0:22" not in listening

    results = str(tmp_path / "results")
    code, direct = _check(lab_name, "--only", CHECKS, "--results", results)
    assert code == 0, direct["failed"]
    code, over_ssh = _check(lab_name, "--via", "ssh", "--only", CHECKS, "--results", results)
    assert code == 0, over_ssh["failed"]
    assert _figures(over_ssh) == {k: v for k, v in _figures(direct).items() if k in _figures(over_ssh)}
    assert set(_figures(over_ssh)) == {"cabling", "routing", "isolation", "lossless-audit"}  # lossless-wire: not over SSH
    assert over_ssh["reach"]["reached"] == len(lab.plan.fabric.nodes) - 1  # every node but the OOB switch
    cabling = next(c for c in over_ssh["checks"] if c["check"] == "cabling")["result"]
    assert cabling["lldp_matched"] == cabling["planned"] == len(lab.plan.cables) and cabling["observed"] == 0

    fe_leaf, be_leaf = stray_ends(lab)
    with rogue_cable(lab, (fe_leaf, None), (be_leaf, None)):
        code, stray = _check(lab_name, "--via", "ssh", "--only", "cabling", "--results", results)
    assert code == 3
    (problem,) = stray["checks"][0]["problems"]
    assert fe_leaf in problem and be_leaf in problem and "joins" in problem and "seen by LLDP" in problem

    # the lab's mgmt plane as a foreign fabric: its inventory, from the station, nothing of the lab's state used
    inventory = tmp_path / "inventory.yml"
    assert fablab("inventory", lab_name, "-o", str(inventory)).returncode == 0
    station = namespace(lab_name, mgmt_services.STATION)
    code, foreign = _check("--inventory", str(inventory), "--only", "cabling", "--results", results,
                           station=station)
    assert code == 0, foreign["failed"]
    assert _figures(foreign)["cabling"] == _figures(over_ssh)["cabling"]
    assert foreign["reach"]["from"] == "this machine" and foreign["reach"]["unreachable"] == {}

    # one switch's address wrong: it is named, its cables are still seen from its peers, nothing crashes
    unused = str(lab.plan.mgmt_network.broadcast_address - 1)
    inventory.write_text(inventory.read_text().replace(f"address: {be_s1.mgmt.ip},", f"address: {unused},"))
    code, partial = _check("--inventory", str(inventory), "--only", "lossless", "--results", results,
                           station=station)
    assert "be-s1" in partial["reach"]["unreachable"] and code == 0
    audit = next(c for c in partial["checks"] if c["check"] == "lossless-audit")
    assert audit["passed"] is None and "be-s1" in audit["reason"]  # its peers' cables: test_judge_cabling_lldp.py

    lab.down()
    assert leftovers_of(lab_name) == []
