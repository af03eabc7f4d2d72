"""One test per fault of a declaration: each is a TopologyError (never another exception, never
a hang), names its field with a fix, and brings no follow-on problems."""
from __future__ import annotations

import json
import tracemalloc
from dataclasses import replace

import pytest

from harness.core.errors import DeclarationArgumentError, Problem, TopologyError
from harness.core.model import (Acl, AclRule, Backend, Bfd, Cable, Cluster, Frontend, GpuNodes, Objectives, Routing,
                                Tenant, build, cluster_from_dict, cluster_to_dict)
from harness.core.plan import make_plan
from topologies import BUILTINS
from topologies.edge import edge


def base() -> Cluster:
    return BUILTINS["ai-cluster"]()


def problems(cluster: Cluster) -> list[Problem]:
    with pytest.raises(TopologyError) as info:
        make_plan(build(cluster))
    return list(info.value.problems)


def the_one(cluster: Cluster, field: str, *words: str) -> Problem:
    """The declaration has exactly one problem, on `field`, saying `words`, with a hint."""
    found = problems(cluster)
    assert len(found) == 1, [str(p) for p in found]
    p = found[0]
    assert p.field == field, str(p)
    for w in words:
        assert w in str(p), str(p)
    assert p.hint, str(p)
    return p


def with_gpu(**kw) -> Cluster:
    return replace(base(), gpu=replace(base().gpu, **kw))


def with_backend(**kw) -> Cluster:
    return replace(base(), backend=replace(base().backend, **kw))


def with_frontend(**kw) -> Cluster:
    return replace(base(), frontend=replace(base().frontend, **kw))


def with_cables(*cables) -> Cluster:
    return replace(base(), cables=cables)


# --------------------------------------------------------------------------- types


def test_count_as_a_string():
    the_one(with_gpu(count="8"), "gpu.count", "'8' is a str, not an integer", "count=8")


def test_count_as_a_bool():
    the_one(with_gpu(count=True), "gpu.count", "True is a bool, not an integer")


def test_count_as_a_float():
    the_one(with_gpu(count=8.0), "gpu.count", "8.0 is a float, not an integer")


def test_count_as_none():
    the_one(with_gpu(count=None), "gpu.count", "None is not an integer")


def test_gpus_per_node_mistyped_brings_no_rails_problem():
    the_one(with_gpu(gpus_per_node="4"), "gpu.gpus_per_node", "not an integer")


def test_flag_as_an_int():
    the_one(with_backend(allow_oversubscription=1), "backend.allow_oversubscription", "not True or False")


def test_prefix_as_an_int():
    the_one(with_gpu(prefix=5), "gpu.prefix", "5 is an int, not a string", "prefix='gpu'")


def test_storage_nics_as_a_string():
    the_one(with_frontend(storage_nics="yes"), "frontend.storage_nics", "not True or False")


def test_section_of_the_wrong_class():
    p = the_one(replace(base(), backend=Frontend()), "backend", "is a Frontend, not a Backend")
    assert "Backend(" in p.hint


def test_section_as_a_dict():
    the_one(replace(base(), backend={"kind": "rail-only"}), "backend", "is a dict, not a Backend")


def test_cables_not_a_tuple():
    the_one(replace(base(), cables=Cable("fe-l1", "fe-l2")), "cables", "not a tuple of Cable")


def test_cables_as_a_list_are_read_as_a_tuple():
    fabric = build(replace(base(), cables=[Cable("fe-l1", "fe-l2")]))
    assert fabric.cluster.cables == (Cable("fe-l1", "fe-l2"),)
    make_plan(fabric)


def test_tenant_that_is_a_string():
    the_one(replace(base(), tenants=("alpha",)), "tenants[0]", "is a str, not a Tenant")


def test_tenant_vni_as_a_string():
    tenants = (replace(base().tenants[0], vni="10100"), *base().tenants[1:])
    the_one(replace(base(), tenants=tenants), "tenants[0].vni", "not an integer")


def test_member_that_is_no_string():
    tenants = (replace(base().tenants[0], members=("gpu01", 7)), *base().tenants[1:])
    the_one(replace(base(), tenants=tenants), "tenants[0].members[1]", "7 is an int, not a string")


def test_acl_protocol_as_a_number():
    acl = Acl(rules=(AclRule("deny", protocol=6),))
    the_one(replace(base(), acl=acl), "acl.rules[0].protocol", "6 is an int, not a string")


def test_objective_as_none():
    the_one(replace(base(), objectives=Objectives(hard_ms=None)), "objectives.hard_ms", "not a number")


def test_bfd_multiplier_as_a_float():
    the_one(replace(base(), bfd=Bfd(multiplier=2.5)), "bfd.multiplier", "not an integer")


def test_name_as_a_number():
    the_one(replace(base(), name=7), "name", "7 is an int, not a string")


def test_a_string_too_long():
    the_one(with_gpu(prefix="g" * 1000), "gpu.prefix", "1000 characters")


def test_not_a_cluster_at_all():
    with pytest.raises(TopologyError) as info:
        build(Backend())
    assert info.value.problems[0].field == "cluster"


# --------------------------------------------------------------------------- choices


def test_unknown_kind_brings_no_oversubscription_problems():
    p = the_one(with_backend(kind="rail_optimized"), "backend.kind", "unknown backend kind")
    assert "did you mean 'rail-optimized'?" in p.hint


def test_unknown_ecmp_hash():
    the_one(with_frontend(ecmp_hash="l5"), "frontend.ecmp_hash", "unknown ECMP hash 'l5'")


def test_uplink_speed_unknown_brings_no_oversubscription_problems():
    the_one(with_backend(uplink_speed=80), "backend.uplink_speed", "80G is not a port speed")


def test_unknown_acl_protocol_with_ports_is_one_problem():
    acl = Acl(rules=(AclRule("deny", protocol="tpc", dst_ports="22"),))
    the_one(replace(base(), acl=acl), "acl.rules[0].protocol", "unknown protocol 'tpc'")


# --------------------------------------------------------------------------- limits


def timed_problems(cluster: Cluster) -> list[Problem]:
    """The problems, found without expanding the declaration: a few MB at most, where expanding
    a billion groups would take all the memory there is (memory, not the clock: a busy machine
    slows a refusal down, it does not make it allocate)."""
    tracemalloc.start()
    try:
        found = problems(cluster)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 16 * 2 ** 20, f"{peak / 2 ** 20:.0f} MB to refuse a declaration: it was expanded"
    return found


def test_a_huge_count_is_refused_before_anything_expands():
    found = timed_problems(with_gpu(count=100_000))
    assert [str(p) for p in found] == [
        "gpu.count: 100000 is over the 1024 fablab can plan (hint: fablab plans clusters of up to 1024 nodes and "
        "16,384 links in all (xlarge, the largest built-in, has 229 and 2,426; docs/examples/gpu4096.py 892 and "
        "13,730): scale the declaration down or split it)"]


def test_fe_spines_two_to_the_seventieth():
    (p,) = timed_problems(with_frontend(spines=2 ** 70))
    assert p.field == "frontend.spines" and "over the 128 fablab can plan" in p.message


def test_a_billion_groups():
    (p,) = timed_problems(with_backend(groups=10 ** 9))
    assert p.field == "backend.groups" and "1000000000 is over the 128" in p.message


def test_an_integer_python_cannot_print():
    (p,) = timed_problems(with_gpu(count=-10 ** 5000))
    assert p.field == "gpu.count" and "digits" in p.message


def test_counts_within_their_limits_whose_product_is_not():
    # 960 nodes × 16 rails, their FE NICs and mgmt ports: over the 16,384 links fablab plans.
    c = replace(base(), gpu=GpuNodes(count=960, gpus_per_node=16), backend=Backend(rails=16, groups=1),
                tenants=(), acl=Acl(), frontend=replace(base().frontend, storage_nics=False))
    (p,) = timed_problems(c)
    assert p.field == "links" and "over the 16,384 fablab can plan" in p.message


def test_too_many_nodes_in_all():
    c = with_frontend(cpu_servers=600, storage_servers=600)
    (p,) = timed_problems(c)
    assert p.field == "nodes" and "over the 1024" in p.message


def test_too_many_cables():
    c = with_cables(*[Cable("fe-l1", "fe-l2")] * 2000)
    (p,) = timed_problems(c)
    assert p.field == "cables" and "2000 declared cables" in p.message


def test_the_largest_declarations_fablab_plans_are_planned():
    plan = make_plan(build(edge()))  # how long it takes: scripts/bench_plan.py
    assert (len(plan.fabric.nodes), len(plan.fabric.links)) == (1021, 16246)


def test_just_over_the_limits_is_refused_at_once():
    c = replace(edge(), frontend=replace(edge().frontend, storage_servers=110))
    assert {p.field for p in timed_problems(c)} == {"nodes", "links"}


# --------------------------------------------------------------------------- field names


def test_unknown_field_name():
    with pytest.raises(DeclarationArgumentError) as info:
        Backend(rail=4)
    (p,) = info.value.problems
    assert p.field == "backend" and "no field 'rail'" in p.message
    assert "did you mean 'rails'?" in p.hint and "uplinks_per_spine" in p.hint
    assert isinstance(info.value, TopologyError) and isinstance(info.value, TypeError)


def test_unknown_field_name_through_replace():
    with pytest.raises(TopologyError, match="did you mean 'count'"):
        replace(base().gpu, cuont=8)


def test_missing_required_field():
    with pytest.raises(TopologyError) as info:
        Tenant("alpha", members=("gpu01",))
    (p,) = info.value.problems
    assert p.field == "tenants" and "needs 'vni'" in p.message


def test_too_many_values_by_position():
    with pytest.raises(TopologyError) as info:
        Cable("fe-l1", "fe-l2", None, None, 400, False, "extra")
    (p,) = info.value.problems
    assert p.field == "cables" and "takes 6 values by position, 7 were given" in p.message


def test_a_misspelt_field_is_not_also_reported_missing():
    with pytest.raises(TopologyError) as info:
        AclRule(actoin="deny")
    (p,) = info.value.problems
    assert p.field == "acl.rules" and "did you mean 'action'?" in p.hint


def test_state_file_with_an_unknown_key():
    data = cluster_to_dict(base())
    data["backend"]["rail"] = data["backend"].pop("rails")
    with pytest.raises(TopologyError) as info:
        cluster_from_dict(json.loads(json.dumps(data)))
    assert [p.field for p in info.value.problems] == ["backend"]
    assert "did you mean 'rails'?" in info.value.problems[0].hint
    assert info.value.source == "state file"


def test_state_file_with_a_section_that_is_no_object():
    data = cluster_to_dict(base())
    data["cables"] = [["fe-l1", "fe-l2"]]
    with pytest.raises(TopologyError) as info:
        cluster_from_dict(data)
    assert [p.field for p in info.value.problems] == ["cables[0]"]


def test_state_file_round_trip():
    c = replace(base(), cables=(Cable("fe-l1", "fe-l2", speed=100, mixed_speed=True),))
    assert cluster_from_dict(json.loads(json.dumps(cluster_to_dict(c)))) == c


# --------------------------------------------------------------------------- cables


def test_cable_to_itself():
    the_one(with_cables(Cable("be-s1", "be-s1")), "cables[0]", "from be-s1 to itself")


def test_cable_to_a_nic_the_host_has_not():
    p = the_one(with_cables(Cable("gpu01", "be-g1-r1", a_port="rail9")), "cables[0].a_port",
                "gpu01 has no NIC 'rail9'")
    assert "rail0, rail1, rail2, rail3, fe0, st0, mgmt0" in p.hint


def test_cable_on_a_nic_the_builders_cabled():
    # With the oversubscription it adds allowed, this once crashed make_plan.
    c = replace(with_cables(Cable("gpu01", "be-g1-r0", a_port="rail0")),
                backend=replace(base().backend, allow_oversubscription=True))
    the_one(c, "cables[0].a_port", "gpu01:rail0 is already cabled to be-g1-r0")


def test_two_cables_on_one_switch_port():
    c = with_cables(Cable("fe-l1", "fe-l2", a_port="Ethernet8"), Cable("fe-l1", "fe-s1", a_port="Ethernet8"))
    the_one(c, "cables[1].a_port", "fe-l1:Ethernet8 is already cabled by cables[0]")


def test_cable_on_a_switch_management_port():
    the_one(with_cables(Cable("fe-l1", "fe-l2", a_port="eth0")), "cables[0].a_port", "fe-l1 has no port 'eth0'")


def test_cable_on_a_switch_port_beyond_its_hwsku():
    the_one(with_cables(Cable("fe-l1", "fe-l2", a_port="Ethernet4000")), "cables[0]", "has no port 'Ethernet4000'")


def test_cable_slower_than_its_ecmp_group():
    p = the_one(with_cables(Cable("be-g1-r0", "be-s1", speed=100)), "cables[0].speed",
                "a 100G cable among the 800G links")
    assert "mixed_speed=True" in p.hint


def test_cable_of_a_mixed_speed_declared_on_purpose():
    c = replace(with_cables(Cable("be-g1-r0", "be-s1", speed=400, mixed_speed=True)),
                backend=replace(base().backend, spine_ports=128))
    plan = make_plan(build(c))
    assert [r.speed for r in plan.cables if r.a_node == "be-g1-r0" and r.b_node == "be-s1"] == [800, 400]


def test_cable_of_no_port_speed():
    the_one(with_cables(Cable("fe-l1", "fe-l2", speed=7)), "cables[0].speed", "7G is not a port speed")


def test_cable_to_an_unknown_node_still_refused():
    the_one(with_cables(Cable("fe-l1", "fe-l9")), "cables[0]", "no node named 'fe-l9'")


def test_cable_from_a_nic_into_another_plane():
    # With 2 rails for 4 GPUs, rail3 has no leaf of its own: cabling it to the FE is refused.
    c = replace(with_cables(Cable("gpu01", "fe-l1", a_port="rail3")), backend=replace(base().backend, rails=2))
    found = [str(p) for p in problems(c)]
    assert "cables[0]: gpu01's rail3 is a BE NIC, cabled here into the FE plane " \
           "(hint: cable a NIC to a switch of its plane)" in found


@pytest.mark.parametrize("keepalive, hold", [(0, 9), (4, 9), (3, 2), (10, 20)])
def test_bgp_timers_frr_would_not_keep(keepalive, hold):
    the_one(replace(base(), routing=Routing(keepalive_s=keepalive, hold_s=hold)), "routing", "keepalive", "hold")


def test_bgp_timers_a_third_apart_are_taken():
    make_plan(build(replace(base(), routing=Routing(keepalive_s=10, hold_s=30))))  # the control
