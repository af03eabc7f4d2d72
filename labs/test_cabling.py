"""Lesson 0 — the cables are the ones in the plan, and only those.

Claim: every cable the running lab has (each veth pair, read from the kernel in every
node's namespace, both ends) is a cable of cabling.csv, on the planned ports, up; and every
planned cable is there. Mgmt cables must also be members of the OOB switch's bridge.

Why it matters in an AI data center: the other checks send what the plan declares, so they
are blind to what it does not: a patch cable between an FE leaf and a BE leaf that nobody
declared, or two GPU NICs swapped between rail leaves (GPU r is then on rail s: its traffic
crosses rails, or goes nowhere). Thousands of cables are plugged by hand; the audit against
the plan is the first thing a pre-deployment engineer runs, before any traffic.

Make it fail (the tests after the first do): a rogue FE–BE cable made from outside fablab
(nothing records it), and two GPU NICs swapped between their rail leaves (the kernel really
carries the swap). Each must fail naming the nodes and ports, as cabling.csv names them,
and pass again once undone — through the library and through `fablab check --only cabling`.
"""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from harness.checks.registry import case, run_case
from harness.faults.sabotage import rogue_cable, stray_cable, stray_ends, swap_cables
from harness.plumbing.wait import until


def _leaves(lab) -> tuple[str, str]:
    ends = stray_ends(lab)
    if ends is None:
        pytest.skip("not applicable: every port of every FE or BE switch is cabled; no stray cable fits")
    return ends


def _check_cli(lab, tmp_path) -> tuple[int, dict]:
    run = subprocess.run([sys.executable, "-m", "harness.cli", "check", lab.name, "--only", "cabling", "--json",
                          "--results", str(tmp_path)], capture_output=True, text=True, timeout=120)
    return run.returncode, json.loads(run.stdout) if run.stdout.strip() else {"stderr": run.stderr}


def test_the_lab_is_cabled_as_planned(lab, results):
    result = run_case(case("cabling"), lab, results)
    assert result.passed, result.reason
    assert result.matched == result.planned == len(lab.plan.cables)
    assert result.observed == result.planned  # every veth in the lab is a planned cable


def test_a_rogue_fe_be_cable_fails_naming_both_ends(lab, results, control, tmp_path):
    fe_leaf, be_leaf = _leaves(lab)
    with rogue_cable(lab, (fe_leaf, None), (be_leaf, None)) as rogue:
        assert lab.extra_cables == []  # made from outside: fablab has no record of it
        result = run_case(case("cabling"), lab, results, name="cabling-rogue-cable",
                          sabotage=rogue.description)
        code, doc = _check_cli(lab, tmp_path)
    assert not result.passed
    (finding,) = result.findings
    ends = {f"{finding.node}:{finding.port}", finding.actual_peer}
    assert finding.kind == "unknown" and finding.expected_peer == ""
    assert {e.split(":")[0] for e in ends} == {fe_leaf, be_leaf}, finding
    assert all(e in rogue.description for e in ends), (ends, rogue.description)
    assert any(n in ("joins FE and BE", "joins BE and FE") for n in finding.notes), finding
    assert code == 3, doc
    assert doc["failed"] == ["cabling"] and finding.actual_peer in doc["checks"][0]["reason"]
    assert control(case("cabling"), lab).passed  # undone: as planned again
    assert _check_cli(lab, tmp_path)[0] == 0


def test_two_gpu_nics_swapped_between_rail_leaves_fail_naming_the_ports(lab, results, control, tmp_path):
    host = lab.plan.hosts[0]
    nic0, nic1 = host.nic("rail0"), host.nic("rail1")
    with swap_cables(lab, (host.name, nic0.name), (host.name, nic1.name)) as swap:
        result = run_case(case("cabling"), lab, results, name="cabling-swapped-pair",
                          sabotage=swap.description)
        code, doc = _check_cli(lab, tmp_path)
    assert not result.passed
    rows = {(f.node, f.port): f for f in result.findings}
    assert set(rows) == {(host.name, "rail0"), (host.name, "rail1"), (nic0.peer, nic0.peer_port),
                         (nic1.peer, nic1.peer_port)}, result.reason
    r0 = rows[(host.name, "rail0")]
    assert (r0.kind, r0.expected_peer, r0.actual_peer) == ("swapped", f"{nic0.peer}:{nic0.peer_port}",
                                                           f"{nic1.peer}:{nic1.peer_port}")
    assert f"{host.name}:rail0 is rail 0, {nic1.peer} is a rail-1 leaf" in r0.notes
    assert code == 3 and f"{host.name}:rail0" in doc["checks"][0]["reason"]
    assert control(case("cabling"), lab).passed
    assert _check_cli(lab, tmp_path)[0] == 0
    # the swap back restored each leaf port's address: the fabric converges again
    until(lambda: not lab.shortfalls(), 60, lambda: "; ".join(map(str, lab.shortfalls())))


def test_a_cable_fablab_itself_added_is_not_trusted(lab, results, control):
    fe_leaf, be_leaf = _leaves(lab)
    with stray_cable(lab, fe_leaf, be_leaf) as stray:
        assert lab.extra_cables  # recorded by fablab, and still not in the plan
        result = run_case(case("cabling"), lab, results, name="cabling-stray-cable",
                          sabotage=stray.description)
    assert [f.kind for f in result.findings] == ["unknown"], result.reason
    assert control(case("cabling"), lab).passed
    until(lambda: not lab.shortfalls(), 60, lambda: "; ".join(map(str, lab.shortfalls())))
