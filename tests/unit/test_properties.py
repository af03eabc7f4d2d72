"""Properties that hold for every cluster shape, over many shapes drawn by hypothesis."""
from __future__ import annotations

import ipaddress

import yaml
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from harness.core.model import Backend, Cluster, Frontend, GpuNodes, Plane, Role, build
from harness.core.plan import make_plan
from harness.render.containerlab import clab_yaml


@st.composite
def clusters(draw) -> Cluster:
    gpus = draw(st.sampled_from([1, 2, 4, 8]))
    per_leaf = draw(st.sampled_from([k for k in (1, 2, 4) if gpus % k == 0]))
    kind = draw(st.sampled_from(["rail-only", "rail-optimized"]))
    groups = 1 if kind == "rail-only" else draw(st.integers(1, 4))
    nodes = groups * draw(st.integers(1, 6))
    spines = 0 if kind == "rail-only" else draw(st.integers(1, 4))
    # enough uplink bandwidth to stay non-blocking: per_group × rails per leaf × 400G down
    # over spines × 800G up
    uplinks = max(1, -(-(nodes // groups) * per_leaf * 400 // (spines * 800))) if spines else 1
    # a 5-stage fabric now and then: 2 pods, as many super-spines as spines, non-blocking above too
    pod_count = draw(st.sampled_from([1, 2])) if kind == "rail-optimized" else 1
    nodes *= pod_count
    leaf_links = groups * (gpus // per_leaf) * uplinks
    supers = spines * -(-leaf_links // (spines * 16)) if pod_count > 1 else 0  # <= 16 links per pair
    up = -(-leaf_links // supers) if pod_count > 1 else 1
    # every port as fast as its link, on the HwSKUs fablab carries: a pod's spine takes every
    # leaf's uplinks and, at most, `up` links to every super-spine, all 800G (64 ports at most);
    # a leaf's 800G uplinks fit 32 ports beside its 400G host ports (Arista-7060X6-64PE-P32O64)
    assume(leaf_links + supers * up <= 64 and (spines * uplinks <= 32 or not spines))
    dual = draw(st.booleans())
    fe_leaves = 2 * draw(st.integers(1, 2)) if dual else draw(st.integers(1, 3))
    return Cluster(
        name=draw(st.sampled_from(["c1", "lab-a", "pod7"])),
        gpu=GpuNodes(count=nodes, gpus_per_node=gpus),
        backend=Backend(kind=kind, rails=gpus, rails_per_leaf=per_leaf, groups=groups, spines=spines,
                        uplinks_per_spine=uplinks, spine_ports=512, pods=pod_count,
                        superspines=supers, uplinks_per_superspine=up,
                        superspine_ports=512),
        frontend=Frontend(spines=draw(st.integers(1, 3)), leaves=fe_leaves, leaf_ports=128, dual_homed=dual,
                          storage_servers=draw(st.integers(0, 3)), cpu_servers=draw(st.integers(0, 3)),
                          gateways=draw(st.integers(0, 2))),
    )


SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(clusters())
def test_gpu_nic_r_lands_on_a_rail_r_leaf(cluster):
    fabric = build(cluster)
    plan = make_plan(fabric)
    for host in plan.hosts:
        if host.role is not Role.GPU:
            continue
        be_nics = [n for n in host.nics if n.plane is Plane.BE]
        assert len(be_nics) == cluster.gpu.gpus_per_node
        for nic in be_nics:
            leaf = fabric.node(nic.peer)
            assert leaf.role is Role.BE_LEAF
            assert nic.rail == int(nic.name.removeprefix("rail")) and nic.rail in leaf.rails
            assert plan.switch(leaf.name).group_of(nic.peer_port) == nic.rail  # in its rail's port group
            if cluster.backend.kind == "rail-optimized":
                assert leaf.group == host.group


@SETTINGS
@given(clusters())
def test_no_link_joins_fe_and_be(cluster):
    fabric = build(cluster)
    plane_of = {n.name: n.role.plane for n in fabric.nodes if n.is_switch}
    for link in fabric.links:
        if link.plane is Plane.MGMT:  # a management port into the OOB switch, nothing else
            assert plane_of[link.b] is Plane.MGMT and link.a_port in ("eth0", "mgmt0"), link
            continue
        planes = {plane_of.get(link.a), plane_of.get(link.b)} - {None}
        assert planes == {link.plane}, link


@SETTINGS
@given(clusters())
def test_addresses_are_unique_and_in_their_planes_range(cluster):
    plan = make_plan(build(cluster))
    ranges = {Plane.BE: ipaddress.IPv4Network(cluster.addressing.be),
              Plane.FE: ipaddress.IPv4Network(cluster.addressing.fe),
              Plane.MGMT: ipaddress.IPv4Network(cluster.addressing.mgmt)}
    seen: dict[ipaddress.IPv4Address, str] = {}

    def claim(addr, plane, owner):
        assert addr in ranges[plane], f"{owner} {addr} outside {plane.value} range"
        assert addr not in seen, f"{addr} used by {seen[addr]} and {owner}"
        seen[addr] = owner

    for sw in plan.switches:
        claim(sw.loopback.ip, sw.plane, f"{sw.name} lo")
        claim(sw.mgmt.ip, Plane.MGMT, f"{sw.name} mgmt")
        for p in sw.host_ports:
            claim(p.address.ip, p.plane, f"{sw.name}:{p.name}")
    for host in plan.hosts:
        if host.routed:  # a dual-homed host's own /32
            claim(host.loopback.ip, Plane.FE, f"{host.name} lo")
        for nic in host.nics:
            claim(nic.address.ip, nic.plane, f"{host.name}:{nic.name}")
            if nic.gateway:
                assert nic.gateway in nic.address.network


@SETTINGS
@given(clusters())
def test_clab_file_loads_and_names_only_declared_nodes(cluster):
    plan = make_plan(build(cluster))
    doc = yaml.safe_load(clab_yaml(plan))
    declared = {n.name for n in plan.fabric.nodes}
    assert set(doc["topology"]["nodes"]) <= declared
    for link in doc["topology"]["links"]:
        for ep in link["endpoints"]:
            assert ep.split(":", 1)[0] in doc["topology"]["nodes"]
