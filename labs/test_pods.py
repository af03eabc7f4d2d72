"""Lesson 12 — a pod-based 5-stage backend.

Claim: with `Backend(pods=2, superspines=2)` each pod is a 3-stage fabric of its own and the
spines of every pod reach each other through the super-spine tier: a GPU reaches the same
rail in the other pod over leaf -> spine -> super-spine -> spine -> leaf, with ASNs in three
tiers (RFC 7938: the super-spines share one, each pod's spines one of their own, every leaf
its own), so no path re-enters a tier it left. QPs between pods spread at both stages (over
the leaf's uplinks, and over each spine's links to the super-spines), and losing a spine's
link to a super-spine, or a whole super-spine, costs no more than the declared hard-failure
objective: the spines reroute by themselves over their other super-spine links.

Why it matters in an AI data center: past a few thousand GPUs one spine tier runs out of
radix; Meta's AI Zones and most large clusters add a tier (rack -> cluster -> aggregation).
Every new tier is one more place where a hash can polarise (the same hash function and seed
at two tiers sends every flow of a leaf uplink to one super-spine) and one more failure
domain whose repair must stay local.

Make it fail: make a spine blind to the carrier of its super-spine link (it keeps
forwarding into the dead link until BFD notices); the super-spine-link case then loses more
than the objective.
"""
from __future__ import annotations

import json

import pytest

from harness.checks.ecmp import _far_peer, first_gpu_nic
from harness.checks.registry import case, run_case
from harness.faults.sabotage import carrier_blind
from harness.core.model import Role
from harness.pytest_plugin import boot, measured
from topologies.pods import pods


@pytest.fixture(scope="module")
def pods_lab(pytestconfig):
    yield from boot(pods(), pytestconfig.getoption("runtime"), "pd")


def _cross_pod(lab):
    src = first_gpu_nic(lab.plan)
    nic = lab.plan.host(src[0]).nic(src[1])
    return src, _far_peer(lab.plan, src[0], nic, "pod")


def test_paths_between_pods_cross_three_tiers_of_asns(pods_lab):
    plan = pods_lab.plan
    (src, src_nic), (dst, dst_nic) = _cross_pod(pods_lab)
    assert plan.host(src).pod != plan.host(dst).pod
    leaf, far = plan.host(src).nic(src_nic).peer, plan.host(dst).nic(dst_nic).peer
    prefix = plan.route_prefix(plan.host(dst).nic(dst_nic))
    shown = json.loads(pods_lab.vtysh(leaf, f"show ip bgp {prefix} json"))
    paths = [p["aspath"]["string"] for p in shown["paths"]]
    spine_asn = {s.asn for s in plan.switches if s.role is Role.BE_SPINE and s.pod == plan.switch(leaf).pod}
    far_spine_asn = {s.asn for s in plan.switches if s.role is Role.BE_SPINE and s.pod == plan.switch(far).pod}
    ss_asn = {s.asn for s in plan.switches if s.role is Role.BE_SUPERSPINE}
    expected = " ".join(map(str, (*spine_asn, *ss_asn, *far_spine_asn, plan.switch(far).asn)))
    assert paths and set(paths) == {expected}, paths  # every path: spine, super-spine, spine, leaf
    run = pods_lab.exec(src, ["ping", "-c1", "-W1", "-I", src_nic, pods_lab.address(dst, dst_nic)])
    assert run.returncode == 0, run.stdout


@pytest.mark.parametrize("name", ["failover-superspine-link", "failover-superspine"])
def test_a_superspine_failure_is_repaired_by_the_spines(pods_lab, results, name):
    result = measured(run_case(case(name), pods_lab, results))
    assert result.qps_on_element >= result.min_on_element
    if name == "failover-superspine-link":  # one link: the QPs elsewhere lose nothing
        assert result.lost_elsewhere == 0
    # a whole super-spine takes 4 links of each spine down one after the other: QPs the spine
    # rehashes onto a dying one are held to the objective too (failover_windows.judge)
    assert result.passed is True, result.reason


def test_a_spine_blind_to_its_superspine_link_fails_the_case(pods_lab, results, control):
    src, _ = _cross_pod(pods_lab)
    spine = pods_lab.plan.switch(pods_lab.plan.host(src[0]).nic(src[1]).peer).fabric_ports[0].peer
    up = next(p.name for p in pods_lab.plan.switch(spine).fabric_ports
              if pods_lab.plan.switch(p.peer).role is Role.BE_SUPERSPINE)
    good = measured(control(case("failover-superspine-link"), pods_lab, element=(spine, up)))
    assert good.passed is True, good.reason  # the positive control, on the same element
    with carrier_blind(pods_lab, spine, [up]) as blind:
        bad = run_case(case("failover-superspine-link"), pods_lab, results, name="failover-superspine-link-carrier-blind",
                       sabotage=blind.description, element=(spine, up))
    assert bad.passed is False and bad.worst_window_ms > bad.objective_ms, bad.reason


def test_qps_between_pods_spread_at_both_stages(pods_lab, results):
    result = run_case(case("ecmp-superspine"), pods_lab, results)
    assert len(result.spines) == 2 and all(len(s.paths) == 8 for s in result.spines)  # 2 super-spines × 4 links
    assert sum(s.qps for s in result.spines) == result.qps  # every QP reached one spine
    assert result.passed, result.reason


def test_a_spine_hashing_on_addresses_only_fails_the_second_stage(pods_lab, results, control):
    """Run with the QPs shared over 3 GPUs of the other pod (a source port per QP and
    destination), as a 4,096-GPU fabric needs: on 3 destinations an L3 hash still has 3 paths
    at most, of the spine's 8."""
    from harness.faults.sabotage import l3_hashing

    src, _ = _cross_pod(pods_lab)
    spine = pods_lab.plan.switch(pods_lab.plan.host(src[0]).nic(src[1]).peer).fabric_ports[0].peer
    before = control(case("ecmp-superspine"), pods_lab, per_destination=512)  # the positive control
    with l3_hashing(pods_lab, [spine]) as s:
        bad = run_case(case("ecmp-superspine"), pods_lab, results, name="ecmp-superspine-l3-hashing",
                       sabotage=s.description, per_destination=512)
    assert before.passed, before.reason
    assert len({d.split(":")[0] for d in before.destinations}) == 3 == -(-before.qps // 512)
    assert all(pods_lab.plan.host(d.split(":")[0]).pod != pods_lab.plan.host(src[0]).pod for d in before.destinations)
    assert bad.passed is False
    assert all(p.startswith(f"{spine}:") for p in bad.problems if "carried" in p), bad.reason
    assert bad.leaf.paths[0].within  # the first stage still spreads: only the spine is wrong

