"""Runtime pieces that need no root: naming, registries, expectations, how FRR gets its config."""
from __future__ import annotations

from ipaddress import IPv4Network
import shutil

import pytest

from harness.core.errors import HarnessError
from harness.core.model import build
from harness.observe.convergence import expectations
from harness.core.plan import make_plan
from harness.runtime import get_runtime
from harness.runtime.frr import with_emulation
from harness.runtime.frr_parts import config_lines, daemon_parts
from harness.render.frr import frr_conf
from harness.runtime.state import check_lab_name, lab_of_namespace, namespace
from topologies import BUILTINS

needs_vtysh = pytest.mark.skipif(shutil.which("vtysh") is None, reason="FRR's vtysh is not installed")


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


@needs_vtysh
def test_each_daemon_gets_its_part_as_vtysh_hands_it_out():
    plan = plan_of("ai-cluster")
    parts, refused = daemon_parts(frr_conf(plan, plan.switch("be-s1")), "be-s1")
    assert refused == "" and set(parts) == {"zebra", "bgpd", "bfdd"}
    assert all(p.startswith("hostname be-s1\n") for p in parts.values())  # vtysh keeps hostname to itself
    assert "profile fabric" in parts["bfdd"] and "router bgp" not in parts["bfdd"]
    assert "router bgp 64600" in parts["bgpd"] and "detect-multiplier" not in parts["bgpd"]
    assert " neighbor fabric bfd profile fabric" in parts["bgpd"].splitlines()
    assert "interface Ethernet0" in parts["zebra"] and "router bgp" not in parts["zebra"]
    # what only the emulation needs is the runtime's, never in the render (harness.core.emulation)
    assert "nexthop kernel" not in frr_conf(plan, plan.switch("be-s1"))
    zebra = with_emulation("zebra", parts["zebra"])
    assert zebra.startswith(parts["zebra"]) and zebra.endswith("no zebra nexthop kernel enable\n")
    assert with_emulation("bgpd", parts["bgpd"]) == parts["bgpd"]


def test_a_part_is_what_vtysh_sent_between_its_markers():
    sent = ["enable", "configure terminal", "XFRR_start_configuration", "frr defaults datacenter", "bfd",
            " profile fabric", "XFRR_end_configuration", "end", "disable"]
    assert config_lines(sent) == ["frr defaults datacenter", "bfd", " profile fabric"]
    assert config_lines(["enable", "configure terminal"]) == []


def test_clab_runtime_names_what_is_missing(monkeypatch):
    import shutil

    from harness.core.errors import PrerequisiteError
    from harness.runtime.clab import check_prerequisites

    monkeypatch.setattr(shutil, "which", lambda tool: None if tool == "containerlab" else f"/usr/bin/{tool}")
    with pytest.raises(PrerequisiteError, match="containerlab.dev/install"):
        check_prerequisites()


def test_parts_are_kept_between_boots_keyed_by_the_file_and_vtysh(tmp_path, monkeypatch):
    from harness.runtime import frr_parts

    calls = []

    def split(text, hostname, timeout=60.0):
        calls.append(hostname)
        return {"zebra": f"hostname {hostname}\n", "bgpd": text, "bfdd": ""}, ""

    monkeypatch.setattr(frr_parts, "daemon_parts", split)
    first = frr_parts.cached_parts("router bgp 1\n", "be-s1", tmp_path)
    assert frr_parts.cached_parts("router bgp 1\n", "be-s1", tmp_path) == first and calls == ["be-s1"]
    frr_parts.cached_parts("router bgp 2\n", "be-s1", tmp_path)  # an edited file is split again
    frr_parts.cached_parts("router bgp 1\n", "be-s2", tmp_path)  # so is another switch's
    assert calls == ["be-s1", "be-s1", "be-s2"]
    assert frr_parts.cached_parts("router bgp 1\n", "be-s1", None) == first
    assert len(calls) == 4  # no cache: always vtysh
