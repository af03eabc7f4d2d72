"""A pod-based 5-stage BE (`Backend(pods=P, superspines=S)`): the declaration's rules, the
layout (full mesh or planes), RFC 7938 ASNs in three tiers, and what the render and the
convergence rule expect of it."""
from __future__ import annotations

from dataclasses import replace
from ipaddress import IPv4Network

import pytest

from harness.core.model import Role, build
from harness.core.plan import make_plan
from harness.observe.convergence import expectations
from harness.render.frr import session_limit
from harness.render.sonic import config_db
from test_errors import base, only
from topologies.pods import pods


@pytest.fixture(scope="module")
def plan():
    return make_plan(build(pods()))


def with_backend(cluster, **kw):
    return replace(cluster, backend=replace(cluster.backend, **kw))


def test_pods_need_a_superspine_tier():
    only(with_backend(pods(), superspines=0), "backend.superspines", "need a super-spine tier")


def test_one_pod_needs_no_superspine():
    only(with_backend(base(), superspines=2), "backend.superspines", "one pod needs no super-spine tier")


def test_a_spine_count_of_the_wrong_type_is_named_not_a_crash():
    only(with_backend(pods(), spines="2"), "backend.spines", "not an integer")  # None: the default (2)


def test_a_rail_only_backend_has_no_pods():
    c = replace(base(), backend=replace(base().backend, kind="rail-only", spines=0, groups=1, pods=2))
    only(c, "backend.pods", "no spine tier to gather in pods")


def test_nodes_must_split_into_pods_and_groups():
    msg = only(replace(pods(), gpu=replace(pods().gpu, count=10)), "backend.groups", "2 pods × 2 groups")
    assert "multiple of 4" in msg


def test_superspines_that_fit_neither_mesh_nor_planes():
    c = with_backend(pods(), superspines=3, superspine_ports=8, uplinks_per_superspine=3)
    only(c, "backend.superspines", "do not split into planes of 2")


def test_an_oversubscribed_spine_is_refused():
    msg = only(with_backend(pods(), uplinks_per_superspine=1), "backend",
               "4 spines (be-p1-s1, be-p1-s2, ...) are oversubscribed 4.00:1 towards")
    assert "set backend.uplinks_per_superspine=4" in msg


def test_names_and_counts(plan):
    roles = {r: [s.name for s in plan.switches if s.role is r] for r in (Role.BE_SUPERSPINE, Role.BE_SPINE)}
    assert roles[Role.BE_SUPERSPINE] == ["be-ss1", "be-ss2"]
    assert roles[Role.BE_SPINE] == ["be-p1-s1", "be-p1-s2", "be-p2-s1", "be-p2-s2"]
    leaves = [s for s in plan.switches if s.role is Role.BE_LEAF]
    assert len(leaves) == 16 and leaves[0].name == "be-p1-g1-r0" and leaves[-1].name == "be-p2-g2-r3"
    assert {h.pod for h in plan.hosts if h.role is Role.GPU} == {1, 2}


def test_every_spine_reaches_every_superspine_when_the_radix_allows(plan):
    for sw in (s for s in plan.switches if s.role is Role.BE_SPINE):
        above = [p.peer for p in sw.fabric_ports if plan.switch(p.peer).role is Role.BE_SUPERSPINE]
        assert sorted(set(above)) == ["be-ss1", "be-ss2"] and len(above) == 8
        below = {plan.switch(p.peer).pod for p in sw.fabric_ports if plan.switch(p.peer).role is Role.BE_LEAF}
        assert below == {sw.pod}  # a spine serves its own pod only


def test_planes_when_the_superspine_radix_is_short():
    plan = make_plan(build(with_backend(pods(), superspines=4, superspine_ports=12, uplinks_per_superspine=4)))
    for sw in (s for s in plan.switches if s.role is Role.BE_SPINE):
        j = int(sw.name.rsplit("-s", 1)[1]) - 1
        above = {p.peer for p in sw.fabric_ports if plan.switch(p.peer).role is Role.BE_SUPERSPINE}
        assert above == {f"be-ss{2 * j + 1}", f"be-ss{2 * j + 2}"}, sw.name  # plane j: two super-spines


def test_asns_in_three_tiers(plan):
    asn = {s.name: s.asn for s in plan.switches if s.plane.value == "be"}
    assert asn["be-ss1"] == asn["be-ss2"]
    assert asn["be-p1-s1"] == asn["be-p1-s2"] != asn["be-p2-s1"] == asn["be-p2-s2"]
    leaves = [v for k, v in asn.items() if "-g" in k]
    assert len(set(leaves)) == len(leaves) and not set(leaves) & {asn["be-ss1"], asn["be-p1-s1"], asn["be-p2-s1"]}


def test_superspines_are_t2_in_config_db(plan):
    assert config_db(plan, plan.switch("be-ss1"))["DEVICE_METADATA"]["localhost"]["type"] == "SpineRouter"
    assert config_db(plan, plan.switch("be-p1-s1"))["DEVICE_METADATA"]["localhost"]["type"] == "LeafRouter"


def test_a_spine_may_hear_the_rest_of_the_plane_from_a_superspine(plan):
    be_total = sum(len(plan.originated(s)) for s in plan.switches if s.plane.value == "be")
    spine = plan.switch("be-p1-s1")
    assert session_limit(plan, spine) >= be_total - len(plan.originated(spine))


def test_routes_between_pods_use_every_uplink_at_both_stages(plan):
    exp = expectations(plan)
    far = plan.switch("be-p2-g1-r0")
    prefix = plan.originated(far)[1]  # a host link of the far pod
    assert dict(exp["be-p1-g1-r0"].routes)[prefix] == 2  # both spines of its pod
    assert dict(exp["be-p1-s1"].routes)[prefix] == 8  # every link to the super-spines
    assert dict(exp["be-ss1"].routes)[prefix] == 8  # the far pod's two spines, 4 links each
    assert isinstance(prefix, IPv4Network)


def test_the_diagram_draws_each_pod_and_the_superspines(plan):
    from harness.render.diagram import topology_svg

    svg = topology_svg(plan)
    assert svg.count('stroke-dasharray="5 3"') == 2 and ">pod 1<" in svg and ">pod 2<" in svg
    assert ">be-ss1<" in svg and ">be-p2-s2<" in svg
