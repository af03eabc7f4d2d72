"""Lesson 9 — FE tenants stay apart, and the edge ACL does what it declares.

Claim: each FE tenant is one L2 segment stretched over the FE leaves by BGP EVPN (VXLAN data
plane), and nothing leaves it. From every member, a frame goes to another member of its
tenant (behind another leaf when there is one: over VXLAN) and must land on that member's
NIC; frames go to every member of every other tenant, addressed to that member's own MAC
and address, and must land on no NIC outside the sender's tenant; frames go to the leaf's
own MAC towards a routed FE host and an FE spine's loopback, and must land nowhere (no
tenant is routed into the underlay). Every member announces itself and every VTEP leaf's
BGP table must then hold a type-2 route with the MAC and the IP of every member behind
another leaf, in the tenant's VNI. The edge ACL (ingress on every member port) is proven
entry by entry: for each compiled entry a frame whose 5-tuple that entry decides, landing
if it permits and not if it denies, and counted by that entry's counter on the leaf.

Why it matters in an AI data center: the frontend is shared by tenants (training, inference,
storage clients) whose traffic must not meet; a port in the wrong VLAN, a VNI mapped to the
wrong VLAN on one leaf, or a gateway address in the wrong VRF joins two tenants, silently.
An ACL rule typed the wrong way round lets a tenant reach storage it must not, or cuts off
the NFS mount a job needs. The checks prove it with frames on the kernel's data plane and
FRR's EVPN routes, not from the config files.

What the netns runtime cannot do (its kernel has no VRF, no 802.1Q): tenants are L2 only (no
anycast gateway: it would need a VRF per tenant), and a host in two tenants (a VLAN trunk) is
refused at `fablab up` with the reason; SONiC's rendered tables still carry both.

Make it fail (the tests after the first do): move a member's leaf port into another tenant's
bridge; turn one ACL entry into its opposite on one leaf; let a leaf route a tenant's bridge
into the underlay (what an SVI in the default VRF does). Each is caught, named, and undone.
"""
from __future__ import annotations

import json
from dataclasses import replace

import pytest

from harness.checks.registry import case, run_case
from harness.checks.tenants_measure import evpn_routes, measure_tenants
from harness.core.tenancy import bridge_device
from harness.faults.sabotage import flip_acl_entry, merge_tenants, route_tenant
from harness.plumbing import wait


@pytest.fixture
def tenanted(lab):
    if len(lab.plan.tenants) < 2:
        pytest.skip(f"{lab.plan.name} declares {len(lab.plan.tenants)} tenant(s): this lesson needs two")
    return lab


def test_tenants_are_isolated_and_the_acl_holds(tenanted, results):
    result = run_case(case("tenants"), tenanted, results)
    assert result.passed, result.reason
    assert result.controls_landed == result.controls > 0
    assert result.evpn_expected > 0 and result.acl_entries > 0
    assert any(t.leaves[1:] for t in tenanted.plan.tenants), "no tenant spans two leaves: VXLAN was not exercised"


def _cross_leaf_port(lab):
    """A member port of one tenant on a leaf where another tenant has a bridge too."""
    a, b = lab.plan.tenants[:2]
    for m in b.members:
        if m.leaf in a.leaves:
            return m.leaf, m.leaf_port, m.host, a.vni
    pytest.skip("no leaf holds members of both tenants")


def test_a_port_in_the_wrong_tenant_is_caught(tenanted, results, control):
    leaf, port, host, other_vni = _cross_leaf_port(tenanted)
    with merge_tenants(tenanted, leaf, port, other_vni) as merged:
        result = run_case(case("tenants"), tenanted, results, name="tenants-wrong-bridge",
                          sabotage=merged.description)
    assert not result.passed
    assert any(host in leak for leak in result.leaks), result.reason
    assert control(case("tenants"), tenanted).passed


def test_an_acl_entry_the_wrong_way_round_is_caught(tenanted, results, control):
    result = run_case(case("tenants"), tenanted)
    deny = next((leaf, name) for leaf, counts in sorted(result.counters.items()) for name in counts
                if name.startswith("R") and counts[name] > 0 and _action(tenanted, name) == "deny")
    with flip_acl_entry(tenanted, *deny) as flipped:
        broken = run_case(case("tenants"), tenanted, results, name="tenants-acl-flipped",
                          sabotage=flipped.description)
    assert not broken.passed
    assert any(f"[{deny[1]}]" in w for w in broken.acl_wrong), broken.reason
    assert control(case("tenants"), tenanted).passed


def _action(lab, entry: str) -> str:
    rule = int(entry[1:].split("_")[0])
    return lab.plan.fabric.cluster.acl.rules[rule].action


def test_a_tenant_routed_into_the_underlay_is_caught(tenanted, results, control):
    t = tenanted.plan.tenants[0]
    leaf = t.leaves[0]
    with route_tenant(tenanted, leaf, t.vni) as routed:
        result = run_case(case("tenants"), tenanted, results, name="tenants-routed",
                          sabotage=routed.description)
    assert not result.passed
    assert any(leak.startswith("tenant->underlay") for leak in result.leaks), result.reason
    assert control(case("tenants"), tenanted).passed


def _binding_ages(lab) -> list[int]:
    """Seconds since each member's IP binding on its own leaf's bridge was made or used (the
    kernel's `used`: a gratuitous ARP for a binding already held leaves it as it was)."""
    ages = []
    for t in lab.plan.tenants:
        for leaf in sorted({m.leaf for m in t.members}):
            out = lab.ns_exec(leaf, ["ip", "-j", "-s", "neigh", "show", "dev", bridge_device(t.vni)], check=True).stdout
            ages += [n["used"] for n in json.loads(out or "[]")
                     if "extern_learn" not in n.get("flags", ()) and n.get("dst") in
                     {str(m.address.ip) for m in t.members if m.leaf == leaf}]
    return ages


def test_a_quiet_members_route_outlives_the_kernels_stale_time(tenanted):
    """A member that announced itself and then went quiet keeps its MAC/IP type-2 route on every
    VTEP leaf, as a switch keeps a live host's binding. The kernel's default would drop the
    binding at its first garbage collection after 60 s, announcement or not, and a check
    announcing then would find no route on any leaf (lesson 13 once did, in `make test`)."""
    seen = measure_tenants(tenanted)
    judged = case("tenants").verdict(tenanted.plan, seen)
    assert judged.passed, judged.reason  # every binding made: every route there
    # the kernel's stale time for a device nobody set (a namespace has no `default` of its own)
    stale_s = int(tenanted.sysctl(tenanted.plan.tenants[0].members[0].leaf, "net.ipv4.neigh.lo.gc_stale_time"))
    # past it, and two of the kernel's collections (one each 15 s)
    old_enough = stale_s + 30
    ages: list[int] = []

    def aged() -> bool:  # every binding past it, or gone
        ages[:] = _binding_ages(tenanted)
        return all(a > old_enough for a in ages)

    wait.until(aged, old_enough + 30, f"every binding older than {old_enough} s", interval=2.0)
    # read only, nothing announced again, and judged as the check judges its routes
    later = replace(seen, type2=evpn_routes(tenanted, tenanted.plan, seen.macs, timeout=2.0))
    judged = case("tenants").verdict(tenanted.plan, later)
    assert ages and not judged.evpn_missing, (
        f"{len(judged.evpn_missing)} of {judged.evpn_expected} type-2 routes gone, {len(ages)} bindings left on the "
        f"members' leaves, {old_enough} s after they were made: {judged.evpn_missing[:3]}")
