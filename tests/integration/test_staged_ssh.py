"""The staged-fabric path on a real lab: sshd and lldpd in every node, `fablab check --via ssh`
from the management station gives the direct path's figures (isolation's probes sent by
fablab's agent on every node, --allow-traffic), a stray FE–BE cable made from outside is named
from LLDP over SSH, a cable failed over SSH (--allow-faults) is named by the routing check and
healed, the lab's own inventory checks it as a foreign fabric, a node that cannot be reached is
named, and teardown leaves no daemon, agent or agent file behind."""
from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import fablab, leftovers_of

from harness import Lab
from harness.checks.base import NotMeasurable
from harness.checks.converged import wait_routed
from harness.checks.registry import case, run_case
from harness.plumbing.wait import until
from harness.remote.view import RemoteView
from harness.faults.sabotage import rogue_cable, stray_ends
from harness.runtime import mgmt_services
from harness.runtime.state import namespace
from topologies import ai_cluster

CHECKS = "cabling,routing,isolation,lossless"


def _figures(doc: dict) -> dict:
    """What each case measured, as numbers: the same fabric must give the same ones either way."""
    keep = ("planned", "matched", "lldp_matched", "routes_scanned", "nodes_scanned", "sessions_scanned", "probes",
            "switches", "ports", "links", "findings", "speakers", "sessions", "bfd", "prefixes", "short")
    return {c["check"]: {k: c["result"][k] for k in keep if isinstance(c.get("result"), dict) and k in c["result"]}
            for c in doc["checks"] if c["passed"] is not None}


def _check(*argv: str, station: str | None = None) -> tuple[int, dict]:
    cmd = [sys.executable, "-m", "harness.cli", "check", *argv, "--json"]
    proc = subprocess.Popen(["ip", "netns", "exec", station, *cmd] if station else cmd, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)  # ip netns exec execs: proc.pid is fablab's
    try:
        stdout, stderr = proc.communicate(timeout=240)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGUSR1)  # fablab prints where each thread is, then it is ended
        try:
            proc.communicate(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        proc.kill()
        stdout, stderr = proc.communicate()
        raise AssertionError(f"`fablab check {' '.join(argv)}` hung for 240 s; where it was:\n{stderr[-6000:]}") from None
    assert stdout.strip(), stderr
    return proc.returncode, json.loads(stdout)


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
    code, over_ssh = _check(lab_name, "--via", "ssh", "--allow-traffic", "--only", CHECKS, "--results", results)
    assert code == 0, over_ssh["failed"]
    isolation = next(c for c in over_ssh["checks"] if c["check"] == "isolation")["result"]
    assert isolation["probes"] > 0 and isolation["unprobed"] == ""  # sent by the agents, every control heard
    assert not list(Path("/tmp").glob(f"fablab-{lab_name}-agent-*"))  # each agent deleted its own file
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

    # a cable failed over SSH, as a staged fabric's port is shut (--allow-faults): named at both ends, then healed
    _a_port_shut_over_ssh_is_named_and_healed(lab)

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


def _a_port_shut_over_ssh_is_named_and_healed(lab: Lab) -> None:
    leaf = lab.plan.switch("be-g1-r0")
    spine = leaf.fabric_ports[0].peer
    with RemoteView(lab.plan, lab.mgmt_reach(), lab.name) as view:
        with pytest.raises(NotMeasurable, match="--allow-faults"):
            view.link(leaf.name, spine)  # the control: nothing changes unless asked
        view.allow_faults = True
        assert run_case(case("routing"), view).passed
        link = view.link(leaf.name, spine)
        link.down()
        try:
            both = until(lambda: _both_named(run_case(case("routing"), view), leaf.name, spine), 30,
                         f"{leaf.name} and {spine} both named short over SSH")
        finally:
            link.up()
        assert not both.passed and "BGP sessions" in " ".join(both.short)
        shut = [r.command for r in view.ssh.transcript if "link set" in r.command]
        assert shut == [f"ip link set dev {link.cable.b_port} down", f"ip link set dev {link.cable.b_port} up"]
    wait_routed(lab, 60.0, "the uplink's sessions to come back")


def _both_named(outcome, *switches: str):
    named = " ".join(outcome.short)
    return outcome if all(f"{s}:" in named for s in switches) else None
