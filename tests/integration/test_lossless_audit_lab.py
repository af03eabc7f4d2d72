"""`fablab audit LAB`: the lossless contract on a running lab. What was changed by hand after
the boot (a port's MTU in the kernel, a switch's running config_db) is found and named; each
test puts the lab back."""
from __future__ import annotations

import json
import os
from contextlib import contextmanager

import pytest

from harness.checks.registry import case, run_case
from harness.cli.main import main
from harness.lab import Lab
from harness.runtime.state import run_dir
from topologies import BUILTINS

from .conftest import leftovers_of


@pytest.fixture(scope="module")
def lab():
    name = f"t{os.getpid() % 100000}a"
    with Lab.up(BUILTINS["ai-cluster"](), name=name, timeout=90) as running:
        yield running
    assert leftovers_of(name) == []


def audit_lab(lab):
    """The lossless-audit case on the lab as it runs now, as `fablab check` runs it."""
    return run_case(case("lossless-audit"), lab)


def test_a_fresh_lab_is_lossless_on_every_hop(lab):
    result = audit_lab(lab)
    assert result.passed, result.reason
    assert result.switches == 10 and result.links == 16
    assert main(["audit", lab.name]) == 0


@contextmanager
def mtu_lowered(lab, node: str, port: str, mtu: int):
    """A port's MTU lowered by hand in the node's kernel, put back as booted afterwards."""
    booted = lab.mtus(node)[port]
    lab.ns_exec(node, ["ip", "link", "set", port, "mtu", str(mtu)], check=True)
    try:
        yield
    finally:
        lab.ns_exec(node, ["ip", "link", "set", port, "mtu", str(booted)], check=True)


def test_a_port_mtu_lowered_by_hand_is_named(lab):
    with mtu_lowered(lab, "be-g2-r1", "Ethernet8", 4000):
        found = {(f.node, f.port, f.table) for f in audit_lab(lab).findings}
        assert ("be-g2-r1", "Ethernet8", "PORT") in found
        assert main(["audit", lab.name]) == 3
    assert audit_lab(lab).passed  # the control: back as booted, clean again


def test_a_gpu_nic_mtu_lowered_by_hand_is_named(lab):
    with mtu_lowered(lab, "gpu06", "rail3", 2000):
        found = [(f.node, f.port, f.table, f.found) for f in audit_lab(lab).findings]
        assert found == [("gpu06", "rail3", "kernel link", "2000")]


def test_a_switch_config_mapping_roce_to_another_priority_is_named(lab):
    path = run_dir(lab.name) / "be-s2" / "config_db.json"
    good = path.read_text()
    db = json.loads(good)
    for row in db["PORT_QOS_MAP"].values():
        row["pfc_enable"] = "4"
    path.write_text(json.dumps(db))
    try:
        findings = audit_lab(lab).findings
        assert {f.node for f in findings} == {"be-s2"} | {f.node for f in findings if "as at its peer be-s2" in f.expected}
        assert {f.port for f in findings if f.node == "be-s2"} == set(db["PORT_QOS_MAP"])
    finally:
        path.write_text(good)
    assert audit_lab(lab).passed


def test_an_fe_spine_port_too_small_for_a_tenant_frame_is_named(lab):
    """A VXLAN-encapsulated tenant frame needs the FE MTU on every fabric hop: a spine port
    lowered by hand is named, with the leaf's tenant ports still fine."""
    with mtu_lowered(lab, "fe-s2", "Ethernet4", 1400):
        found = [(f.node, f.port, f.table, f.found) for f in audit_lab(lab).findings]
        assert found == [("fe-s2", "Ethernet4", "PORT", "1400")]
    assert audit_lab(lab).passed


def test_the_running_configs_diff_as_the_declaration(lab, capsys):
    """`fablab diff TOPOLOGY LAB` reads what FRR holds now (its own running config, defaults
    left out) and the switch's CONFIG_DB: a lab booted from the render has no difference; a
    change made by hand in vtysh is named with its line, and gone once put back."""
    assert main(["diff", "ai-cluster", lab.name]) == 0
    leaf, asn = "be-g1-r0", lab.plan.switch("be-g1-r0").asn

    def paths(n: int) -> None:
        lab.vtysh(leaf, "configure terminal", f"router bgp {asn}", "address-family ipv4 unicast",
                  f"maximum-paths {n}", "end")

    paths(1)
    try:
        capsys.readouterr()
        assert main(["diff", "ai-cluster", lab.name, "--json"]) == 3
        (d,) = json.loads(capsys.readouterr().out)["differences"]
        assert (d["switch"], d["behaviour"]) == (leaf, "multipath") and d["lines"]
    finally:
        paths(64)
    assert main(["diff", "ai-cluster", lab.name]) == 0
