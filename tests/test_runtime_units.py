"""Runtime pieces that need no root: naming, registries, expectations, config splitting."""
from __future__ import annotations

from ipaddress import IPv4Network

import pytest

from harness.core.errors import HarnessError
from harness.core.model import build
from harness.observe.convergence import expectations
from harness.core.plan import make_plan
from harness.runtime import get_runtime
from harness.runtime.frr import split_config
from harness.runtime.state import check_lab_name, lab_of_namespace, namespace
from harness.render.frr import frr_conf
from topologies import BUILTINS


def plan_of(name: str):
    return make_plan(build(BUILTINS[name]()))


def test_namespace_names_carry_the_lab_and_parse_back():
    ns = namespace("lab-7", "be-g1-r0")
    assert ns == "fl_lab-7_be-g1-r0" and "." not in ns  # FRR's -N refuses dots
    assert lab_of_namespace(ns) == "lab-7"
    assert lab_of_namespace("other_ns") is None and lab_of_namespace("fl_x") is None


@pytest.mark.parametrize("bad", ["", "Lab", "1lab", "a_b", "a.b", "x" * 25])
def test_bad_lab_names_are_refused_with_a_hint(bad):
    with pytest.raises(HarnessError, match="letters, digits"):
        check_lab_name(bad)


def test_unknown_runtime_lists_the_valid_ones():
    with pytest.raises(HarnessError, match="netns, clab"):
        get_runtime("docker")


def test_leaf_expects_both_spines_for_the_other_group():
    exp = expectations(plan_of("ai-cluster"))["be-g1-r0"]
    routes = dict(exp.routes)
    assert exp.sessions == 2 and exp.bfd == 2
    other_group_host = IPv4Network("10.0.1.8/31")  # gpu05 rail0, group 2
    assert routes[other_group_host] == 2
    assert routes[IPv4Network("10.0.0.1/32")] == 1  # a spine's loopback: its own link only
    assert IPv4Network("10.0.1.0/31") not in routes  # its own host port is connected, not learned


def test_spines_never_learn_each_other():
    plan = plan_of("ai-cluster")
    exp = dict(expectations(plan)["be-s1"].routes)
    assert plan.switch("be-s2").loopback.network not in exp  # same ASN: AS-path loop


def test_rail_only_leaves_have_no_sessions():
    exp = expectations(plan_of("rail-only"))
    assert all(e.sessions == 0 and not e.routes for name, e in exp.items() if name.startswith("be-"))


def test_bfdd_gets_only_its_block_and_the_rest_goes_to_zebra_and_bgpd():
    plan = plan_of("ai-cluster")
    conf = frr_conf(plan, plan.switch("be-s1"))
    bfdd, bgpd = split_config(conf, "bfdd"), split_config(conf, "bgpd")
    assert "profile fabric" in bfdd and "router bgp" not in bfdd
    assert "router bgp 64600" in bgpd and "detect-multiplier" not in bgpd
    assert "neighbor fabric bfd profile fabric" in bgpd


def test_clab_runtime_names_what_is_missing(monkeypatch):
    import shutil

    from harness.core.errors import PrerequisiteError
    from harness.runtime.clab import check_prerequisites

    monkeypatch.setattr(shutil, "which", lambda tool: None if tool == "containerlab" else f"/usr/bin/{tool}")
    with pytest.raises(PrerequisiteError, match="containerlab.dev/install"):
        check_prerequisites()
