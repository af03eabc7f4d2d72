"""A dual-homed frontend (`Frontend(dual_homed=True)`): the declaration's rules, the layout
(each host on both leaves of a pair), the plan (a /32 and an ASN per host), the render (BGP
from the leaves to the hosts and back) and what convergence expects of the hosts."""
from __future__ import annotations

from dataclasses import replace
from ipaddress import IPv4Network

import pytest
import yaml

from harness.core.model import FE_NIC, FE_NIC2, HOST_ASN, Plane, Role, build
from harness.core.plan import make_plan
from harness.observe.convergence import expectations
from harness.render import artifacts
from harness.render.frr import frr_conf, host_frr_conf
from harness.render.containerlab import ROUTED_HOST_IMAGE
from test_errors import only
from topologies.ai_cluster import ai_cluster
from topologies.dual_homed import dual_homed


@pytest.fixture(scope="module")
def plan():
    return make_plan(build(dual_homed()))


def with_frontend(cluster, **kw):
    return replace(cluster, frontend=replace(cluster.frontend, **kw))


def test_an_odd_number_of_leaves_is_refused():
    only(with_frontend(dual_homed(), leaves=3), "frontend.leaves", "pairs of leaves, and 3 is odd")


def test_tenants_on_a_dual_homed_frontend_are_refused_with_the_reason():
    c = with_frontend(ai_cluster(), dual_homed=True, storage_nics=False)
    only(c, "tenants", "EVPN multihoming or MLAG")


def test_storage_nics_on_a_dual_homed_frontend_are_refused():
    c = replace(with_frontend(ai_cluster(), dual_homed=True), tenants=())
    only(c, "frontend.storage_nics", "no tenants")


def test_a_dual_homed_flag_that_is_not_a_bool_is_named():
    only(with_frontend(dual_homed(), dual_homed="yes"), "frontend.dual_homed", "")


def test_every_host_is_on_both_leaves_of_one_pair(plan):
    pairs = {("fe-l1", "fe-l2"), ("fe-l3", "fe-l4")}
    for h in plan.hosts:
        fe = {n.name: n.peer for n in h.fe_nics}
        assert set(fe) == {FE_NIC, FE_NIC2}, h.name
        assert (fe[FE_NIC], fe[FE_NIC2]) in pairs, h.name


def test_each_host_has_its_own_loopback_and_asn_and_no_static_fe_route(plan):
    assert plan.host_block is not None
    hosts = [h for h in plan.hosts if h.routed]
    assert len(hosts) == len(plan.hosts)
    assert len({h.loopback for h in hosts}) == len({h.asn for h in hosts}) == len(hosts)
    for h in hosts:
        assert h.loopback.ip in plan.host_block and h.asn > HOST_ASN
        assert all(n.routes == () for n in h.fe_nics)  # from BGP, not static
        if h.role is Role.GPU:
            assert any(n.routes for n in h.nics if n.plane is Plane.BE)  # the BE keeps its static rail routes


def test_a_leaf_peers_with_the_hosts_behind_it_and_passes_their_32s_on(plan):
    leaf = plan.switch("fe-l1")
    text = frr_conf(plan, leaf)
    for p in leaf.host_peers:
        assert f" neighbor {p.address.network.broadcast_address} peer-group hosts\n" in text
    for prefix in plan.heard(leaf):
        assert f" permit {prefix}\n" in text  # in ORIGINATED: sent to the spines
    assert "  neighbor hosts prefix-list FE-PLANE out\n" in text  # the plane, never a default route
    assert "default-originate" not in text


def test_a_host_announces_only_itself_and_sources_from_its_loopback(plan):
    h = plan.hosts[0]
    text = host_frr_conf(plan, h)
    assert f"router bgp {h.asn}\n" in text
    assert f"ip prefix-list OWN seq 10 permit {h.loopback.network}\n" in text
    assert "  neighbor leaves prefix-list OWN out\n" in text and "  neighbor leaves prefix-list FE-PLANE in\n" in text
    assert f" set src {h.loopback.ip}\n" in text
    for n in h.fe_nics:
        assert f" neighbor {n.gateway} peer-group leaves\n" in text
    assert "  maximum-paths 2\n" in text


def test_a_host_must_show_two_sessions_and_every_far_prefix_over_both_nics(plan):
    exp = expectations(plan)
    src, far = plan.hosts[0], plan.hosts[-1]
    assert src.fe_nics[0].peer != far.fe_nics[0].peer
    e = exp[src.name]
    assert e.sessions == 2 and e.bfd == 2
    widths = dict(e.routes)
    assert widths[far.loopback.network] == 2
    assert src.loopback.network not in widths
    own_leaf = plan.switch(src.fe_nics[0].peer)
    assert widths[own_leaf.loopback.network] == 1  # straight from that leaf, not around through the spines
    assert dict(exp[own_leaf.name].routes)[src.loopback.network] == 1
    assert exp[own_leaf.name].sessions == len(own_leaf.fabric_ports) + len(own_leaf.host_peers)


def test_the_render_gives_each_host_its_frr_files_and_the_frr_image(plan):
    files = artifacts(plan)
    doc = yaml.safe_load(files["dual-homed.clab.yml"])
    for h in plan.hosts:
        assert files[f"configs/{h.name}/frr.conf"] == host_frr_conf(plan, h)
        assert "bgpd=yes" in files[f"configs/{h.name}/daemons"]
        node = doc["topology"]["nodes"][h.name]
        assert node["image"] == ROUTED_HOST_IMAGE
        assert f"ip address add {h.loopback} dev lo" in node["exec"]


def test_single_homed_hosts_are_unchanged():
    plan = make_plan(build(ai_cluster()))
    assert plan.host_block is None and not plan.host_routes
    assert not any(h.routed for h in plan.hosts)
    assert all(IPv4Network(plan.fabric.cluster.addressing.fe) in n.routes for h in plan.hosts for n in h.fe_nics)
