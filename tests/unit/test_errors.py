"""One test per declaration error: each names its field and gives a hint."""
from __future__ import annotations

from dataclasses import replace

import pytest

from harness.core.errors import TopologyError
from harness.core.hwsku import hwsku
from harness.core.model import Addressing, Backend, Bfd, Cable, Cluster, Frontend, GpuNodes, Management, build
from harness.core.plan import make_plan
from topologies import BUILTINS


def problems_of(cluster: Cluster) -> list[str]:
    with pytest.raises(TopologyError) as info:
        build(cluster)
    return [str(p) for p in info.value.problems]


def base() -> Cluster:
    return BUILTINS["ai-cluster"]()


def only(cluster: Cluster, field: str, words: str) -> str:
    problems = problems_of(cluster)
    matching = [p for p in problems if p.startswith(field + ":") and words in p]
    assert matching, f"no {field!r} problem with {words!r} in {problems}"
    assert "hint:" in matching[0]
    return matching[0]


def test_valid_builtins_build():
    for name, builder in BUILTINS.items():
        assert build(builder()).name == name


def test_zero_nodes():
    only(replace(base(), gpu=GpuNodes(count=0)), "gpu.count", "at least one")


def test_rails_differ_from_gpus_per_node():
    msg = only(replace(base(), gpu=GpuNodes(count=8, gpus_per_node=8)), "backend.rails", "4 rails but 8 GPUs")
    assert "backend.rails = gpu.gpus_per_node" in msg


def test_leaf_port_budget_exceeded():
    c = replace(base(), backend=replace(base().backend, leaf_ports=4))
    msg = only(c, "backend.leaf_ports", "8 leaves (be-g1-r0, be-g1-r1, ...) need 6 ports each but have 4")
    assert "set backend.leaf_ports=6" in msg


def test_spine_port_budget_exceeded():
    c = replace(base(), backend=replace(base().backend, spine_ports=4))
    only(c, "backend.spine_ports", "2 spines (be-s1, be-s2) need 8 ports each but have 4")


def test_fe_leaf_port_budget_exceeded():
    c = replace(base(), frontend=replace(base().frontend, leaf_ports=4))
    only(c, "frontend.leaf_ports", "fe-l1 needs 14 ports")


def test_mgmt_port_budget_exceeded():
    only(replace(base(), mgmt=Management(ports=10)), "mgmt.ports", "oob1 needs 26 ports but has 10")


def test_duplicate_names():
    # GPU nodes stor01..stor10 and storage servers stor1..stor10 meet at stor10.
    c = replace(base(), gpu=replace(base().gpu, prefix="stor", count=10),
                frontend=replace(base().frontend, storage_servers=10))
    only(c, "nodes", "duplicate node name 'stor10'")


def test_cable_joining_fe_and_be():
    c = replace(base(), cables=(Cable("fe-l1", "be-g1-r0"),))
    msg = only(c, "cables[0]", "joins the FE and the BE fabric")
    assert "fe-l1" in msg and "be-g1-r0" in msg


def test_cable_to_unknown_node():
    only(replace(base(), cables=(Cable("fe-l1", "nowhere"),)), "cables[0]", "no node named 'nowhere'")


def test_cable_from_mgmt_to_data_fabric():
    only(replace(base(), cables=(Cable("oob1", "be-s1"),)), "cables[0]", "mgmt plane to a data fabric")


def test_oversubscribed_be_leaf():
    c = replace(base(), backend=replace(base().backend, uplink_speed=400, uplinks_per_spine=1))
    msg = only(c, "backend", "oversubscribed 2.00:1")
    assert "allow_oversubscription=True" in msg and "set backend.uplinks_per_spine=2" in msg


def test_oversubscription_declared_on_purpose_is_accepted():
    c = replace(base(), backend=replace(base().backend, uplink_speed=400, allow_oversubscription=True))
    assert build(c).name == "ai-cluster"


def test_unknown_backend_kind_lists_valid_kinds():
    msg = only(replace(base(), backend=replace(base().backend, kind="fat-tree")), "backend.kind", "fat-tree")
    assert "rail-only, rail-optimized" in msg


def test_rail_only_with_spines():
    c = replace(base(), backend=replace(base().backend, kind="rail-only", spines=2))
    only(c, "backend.spines", "rail-only backend has no spine tier")


def test_groups_do_not_divide_nodes():
    c = replace(base(), backend=replace(base().backend, groups=3))
    only(c, "backend.groups", "8 GPU nodes do not split evenly into 3 groups")


def test_bad_speed():
    only(replace(base(), gpu=replace(base().gpu, nic_speed=300)), "gpu.nic_speed", "300G is not a port speed")


def test_overlapping_plane_ranges():
    c = replace(base(), addressing=Addressing(be="10.0.0.0/12", fe="10.8.0.0/16"))
    only(c, "addressing.fe", "overlaps addressing.be")


def test_malformed_range():
    only(replace(base(), addressing=Addressing(be="10.0.0.1/16")), "addressing.be", "not an IPv4 network")


def test_bad_cluster_name():
    only(replace(base(), name="AI Cluster!"), "name", "not a usable cluster name")


def test_bad_bfd_timers():
    only(replace(base(), bfd=Bfd(interval_ms=0)), "bfd", "interval 0 ms")


def test_bad_mtu():
    only(replace(base(), backend=replace(base().backend, mtu=20000)), "backend.mtu", "MTU 20000")


def test_every_problem_is_reported_at_once():
    c = Cluster(name="bad", gpu=GpuNodes(count=0, gpus_per_node=8),
                backend=Backend(leaf_ports=1), frontend=Frontend(leaves=0),
                addressing=Addressing(fe="10.0.0.0/8"), cables=(Cable("fe-s1", "be-s1"),))
    fields = {p.split(":")[0] for p in problems_of(c)}
    assert {"gpu.count", "backend.rails", "frontend.leaves", "addressing.fe", "cables[0]",
            "backend.leaf_ports"} <= fields


def plan_problems_of(cluster: Cluster) -> list[str]:
    with pytest.raises(TopologyError) as info:
        make_plan(build(cluster))
    return [str(p) for p in info.value.problems]


def test_switch_with_more_ports_than_any_hwsku():
    # 130 nodes on one rail leaf: within the declared port budget, beyond every supported HwSKU.
    c = replace(BUILTINS["rail-only"](), gpu=GpuNodes(count=130, gpus_per_node=4),
                backend=replace(BUILTINS["rail-only"]().backend, leaf_ports=256),
                frontend=replace(BUILTINS["rail-only"]().frontend, leaves=3))
    problems = plan_problems_of(c)
    assert [p for p in problems if p.startswith("switches.be-r")] == problems and len(problems) == 4
    assert problems[0] == ("switches.be-r0: be-r0 needs 130 ports (130 × 400G); no HwSKU the plan picks from has "
                           "them (the most at 400G or faster: 128, on Arista-7060X6-64PE-O128S2) (hint: use more "
                           "groups (rail-optimized) so each leaf serves fewer nodes)")


def test_declared_port_unknown_to_the_hwsku():
    c = replace(base(), cables=(Cable("fe-l1", "fe-l2", a_port="Ethernet2"),))
    sku = make_plan(build(base())).switch("fe-l1").hwsku
    assert hwsku(sku).row("Ethernet2") is None
    assert plan_problems_of(c) == [
        f"cables[0]: fe-l1 has no port 'Ethernet2': it runs as HwSKU {sku} (hint: name one of "
        f"{hwsku(sku).span}, or leave the port out and let the plan number it)"]
