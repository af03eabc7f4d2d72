"""Leaves that carry several rails (`Backend(rails_per_leaf=k)`): the declaration's rules, the
port groups the plan lays, the cabling audit that knows them, and how a rail-only leaf keeps
its rails apart (a VRF per rail in config_db, forwarding rules on the netns runtime)."""
from __future__ import annotations

from dataclasses import replace

import pytest

from harness.checks.cabling import audit
from harness.core.model import Backend, Role, build
from harness.core.plan import make_plan
from harness.render.cabling import cabling_csv
from harness.render.sonic import config_db
from harness.runtime.netns_setup import switch_rules
from test_cabling_audit import as_cabled, replace as rewire
from test_errors import base, only
from topologies.multi_rail import multi_rail


@pytest.fixture(scope="module")
def plan():
    return make_plan(build(multi_rail()))


@pytest.fixture(scope="module")
def rail_only_plan():
    return make_plan(build(multi_rail(kind="rail-only")))


def with_backend(**kw):
    c = base()
    return replace(c, backend=replace(c.backend, **kw))


# --------------------------------------------------------------------------- the declaration


def test_rails_must_divide_by_rails_per_leaf():
    msg = only(with_backend(rails_per_leaf=3, uplinks_per_spine=3), "backend.rails_per_leaf", "do not split evenly")
    assert "1, 2, 4" in msg  # the divisors of 4 rails


def test_rails_per_leaf_at_least_one():
    only(with_backend(rails_per_leaf=0), "backend.rails_per_leaf", "0 rails per leaf")


def test_rails_per_leaf_over_the_limit():
    only(with_backend(rails_per_leaf=17), "backend.rails_per_leaf", "over the 16")


def test_a_leaf_of_two_rails_needs_twice_the_uplinks():
    msg = only(with_backend(rails_per_leaf=2, uplinks_per_spine=1), "backend",
               "4 leaves (be-g1-r0-1, be-g1-r2-3, ...) are oversubscribed 2.00:1")
    assert "set backend.uplinks_per_spine=2" in msg
    left_out = with_backend(rails_per_leaf=2, uplinks_per_spine=None)  # the default: what is non-blocking
    assert build(left_out).cluster.backend.uplinks_per_spine == 2


def test_a_leaf_of_many_rails_runs_out_of_ports():
    msg = only(with_backend(rails_per_leaf=4, uplinks_per_spine=4, leaf_ports=16), "backend.leaf_ports",
               "2 leaves (be-g1-r0-3, be-g2-r0-3) need 24 ports each but have 16")
    assert "rails_per_leaf" in msg


# --------------------------------------------------------------------------- the plan


def test_one_leaf_per_rail_is_unchanged():
    names = [n.name for n in build(base()).nodes_with(Role.BE_LEAF)]
    assert names == [f"be-g{g}-r{r}" for g in (1, 2) for r in range(4)]


def test_leaves_are_named_by_their_rails(plan):
    leaves = [(s.name, s.rails) for s in plan.switches if s.rails]
    assert leaves == [("be-g1-r0-1", (0, 1)), ("be-g1-r2-3", (2, 3)), ("be-g2-r0-1", (0, 1)), ("be-g2-r2-3", (2, 3))]


def test_port_groups_are_contiguous_rail_by_rail(plan):
    for sw in (s for s in plan.switches if s.rails):
        hosts = [p.index for r in sw.rails for p in sw.port_groups[r]]
        # one run of the HwSKU's rows of the hosts' speed, rail by rail, no gap
        assert hosts == list(range(hosts[0], hosts[0] + len(hosts))), sw.name
        for r, group in sw.port_groups.items():
            assert len(group) == 4 and {p.rail for p in group} == {r}
        assert not {p.index for p in sw.fabric_ports} & set(hosts)  # the uplinks on rows of their own


def test_gpu_nic_r_lands_in_rail_rs_group(plan):
    for h in plan.hosts:
        for n in h.nics:
            if n.rail is not None:
                leaf = plan.switch(n.peer)
                assert n.rail in leaf.rails and leaf.group_of(n.peer_port) == n.rail, (h.name, n.name)
                assert leaf.group == h.group


def test_every_rail_keeps_its_own_address_block(plan):
    for h in plan.hosts:
        for n in h.nics:
            if n.rail is not None:
                assert n.address.ip in plan.be_rail_blocks[n.rail]


def test_uplinks_of_a_multi_rail_leaf_carry_no_single_rail(plan):
    rows = [line.split(",") for line in cabling_csv(plan).splitlines()[1:]]
    uplinks = [r for r in rows if r[0].startswith("be-g") and r[2].startswith("be-s")]
    assert len(uplinks) == 4 * 2 * 2 and all(r[6] == "" for r in uplinks)
    hosts = [r for r in rows if r[1].startswith("rail")]
    assert all(r[6] == r[1].removeprefix("rail") for r in hosts)


def test_a_leaf_of_several_rails_is_non_blocking_with_enough_uplinks(plan):
    assert {s.oversubscription for s in plan.switches if s.rails} == {1.0}


# --------------------------------------------------------------------------- the cabling audit


def test_a_nic_in_the_wrong_group_of_the_right_leaf_is_a_finding(plan):
    r0, r1 = plan.host("gpu01").nic("rail0"), plan.host("gpu01").nic("rail1")
    assert r0.peer == r1.peer  # one leaf carries both rails
    p0, p1 = (r0.peer, r0.peer_port), (r1.peer, r1.peer_port)
    ports = as_cabled(plan)
    for nic, port in ((("gpu01", "rail0"), p1), (("gpu01", "rail1"), p0)):
        ports = rewire(ports, nic, peer=port)
        ports = rewire(ports, port, peer=nic)
    by_end = {(f.node, f.port): f for f in audit(plan, ports)}
    assert set(by_end) == {("gpu01", "rail0"), ("gpu01", "rail1"), p0, p1}
    f = by_end[("gpu01", "rail0")]
    assert f.kind == "swapped"
    assert f"gpu01:rail0 is rail 0, {p1[0]}:{p1[1]} is in rail 1's port group" in f.notes


def test_a_nic_on_a_leaf_without_its_rail_says_which_rails_it_carries(plan):
    r0, r2 = plan.host("gpu01").nic("rail0"), plan.host("gpu01").nic("rail2")
    p0, p2 = (r0.peer, r0.peer_port), (r2.peer, r2.peer_port)
    ports = as_cabled(plan)
    for nic, port in ((("gpu01", "rail0"), p2), (("gpu01", "rail2"), p0)):
        ports = rewire(ports, nic, peer=port)
        ports = rewire(ports, port, peer=nic)
    f = {(f.node, f.port): f for f in audit(plan, ports)}[("gpu01", "rail0")]
    assert f"gpu01:rail0 is rail 0, {p2[0]} carries rails 2-3" in f.notes


# --------------------------------------------------------------------------- rail-only: rails apart


def test_rail_optimized_leaves_share_one_routing_domain(plan):
    sw = plan.switch("be-g1-r0-1")
    assert not sw.separate_rails
    assert "VRF" not in config_db(plan, sw)
    assert "oifname !=" not in switch_rules(sw)


def test_a_rail_only_leaf_gives_each_rail_a_vrf(rail_only_plan):
    sw = rail_only_plan.switch("be-r0-1")
    db = config_db(rail_only_plan, sw)
    assert sw.separate_rails and set(db["VRF"]) == {"Vrf_rail0", "Vrf_rail1"}
    for r, group in sw.port_groups.items():
        for p in group:
            assert db["INTERFACE"][p.name] == {"vrf_name": f"Vrf_rail{r}"}
            assert f"{p.name}|{p.address}" in db["INTERFACE"]


def test_the_netns_runtime_forwards_only_within_a_port_group(rail_only_plan):
    sw = rail_only_plan.switch("be-r2-3")
    rules = switch_rules(sw)
    for group in sw.port_groups.values():
        names = ", ".join(f'"{p.name}"' for p in group)
        assert f"iifname {{ {names} }} oifname != {{ {names} }} drop" in rules


def test_a_single_rail_leaf_needs_no_separation():
    plan = make_plan(build(replace(base(), backend=Backend(kind="rail-only", rails=4, groups=1, spines=0))))
    assert not any(s.separate_rails for s in plan.switches)
