"""Lesson 1 — the frontend and the backend never meet.

Claim: no packet and no route passes between the FE (TCP, north-south, tenants), the BE
(RoCEv2 between GPUs) and the management plane. Every FE NIC is probed towards every BE
address, every BE NIC towards every FE address, every management port through every
switch towards the BE — and in the same run, same-plane controls must arrive, so the check
cannot pass just because nothing works.

Why it matters in an AI data center: the BE is lossless and carries elephant flows with
PFC; one route from the FE into it lets tenant or storage traffic into the priority that
pauses GPUs, and lets a compromised frontend host reach the compute fabric. FE and BE are
built as physically separate networks for that reason; this lab proves it on the real
data plane (kernel forwarding, FRR's routes), not on a drawing.

Make it fail (the two tests after the first do): a stray cable between an FE leaf and a BE
leaf that the fabric's port template brings into BGP, or a dual-homed GPU node that
forwards while its FE leaf routes the BE range to it. Both must be caught, and the
failure must name the path the leak takes.
"""
from __future__ import annotations

from ipaddress import IPv4Network

from harness.checks.isolation import check_isolation
from harness.checks.sabotage import leak_route, stray_cable
from harness.model import Role
from harness.wait import until


def _be(lab) -> IPv4Network:
    return IPv4Network(lab.plan.fabric.cluster.addressing.be)


def _fe_holds_be_routes(lab, fe_switch: str) -> bool:
    return any(p.overlaps(_be(lab)) for p in lab.routes(fe_switch))


def test_fe_be_and_mgmt_are_isolated(lab, results):
    result = check_isolation(lab)
    results.record("isolation", result)
    assert result.controls_delivered == result.controls > 0, result.reason  # the positive control
    assert result.negatives > 0
    assert result.passed, result.reason


def test_a_stray_fe_be_cable_is_caught_and_named(lab, results):
    fe_leaf = lab.plan.fabric.nodes_with(Role.FE_LEAF)[0].name
    be_leaf = lab.plan.fabric.nodes_with(Role.BE_LEAF)[0].name
    with stray_cable(lab, fe_leaf, be_leaf) as broken:
        until(lambda: _fe_holds_be_routes(lab, fe_leaf), 30, f"BE routes to leak into {fe_leaf}")
        result = check_isolation(lab)
        results.record("isolation-stray-cable", result)
    assert not result.passed
    assert result.controls_delivered == result.controls  # the fabric still works; it leaks
    assert result.leaks, result.reason
    assert any(fe_leaf in leak.path and be_leaf in leak.path for leak in result.leaks), result.reason
    assert any(r.startswith(f"{fe_leaf} (FE) has a route to") for r in result.leaked_routes), result.reason
    assert broken.description in repr(broken)
    until(lambda: not _fe_holds_be_routes(lab, fe_leaf), 30, "the leak to be withdrawn")


def test_a_leaked_route_through_a_forwarding_gpu_node_is_caught(lab, results):
    gpu = lab.plan.fabric.nodes_with(Role.GPU)[0].name
    with leak_route(lab, gpu):
        result = check_isolation(lab)
        results.record("isolation-leaked-route", result)
    assert not result.passed
    assert any(gpu in leak.path[1:] for leak in result.leaks), result.reason
    after = check_isolation(lab)
    assert after.passed, after.reason
