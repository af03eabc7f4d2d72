"""Lesson 1 — the frontend and the backend never meet.

Claim: no packet, no route and no BGP session passes between the FE (TCP, north-south,
tenants), the BE (RoCEv2 between GPUs) and the management plane. Every FE NIC is probed
towards every BE leaf and the BE loopbacks, every BE NIC towards every FE leaf, every
switch's management port `eth0` from the mgmt plane towards both data planes, and every
switch on a data port towards its own mgmt address (Linux is a weak host: a switch must
not answer for its mgmt address there; SONiC keeps `eth0` in a management VRF). A probe
counts only when another node's IP stack delivers it with its nonce. In the same run a
same-plane control goes to every listener and from every port, so every "nothing arrived"
could have arrived; and every node's whole FIB and every switch's BGP sessions are read.

Why it matters in an AI data center: the BE is lossless and carries elephant flows with
PFC; one route from the FE into it lets tenant or storage traffic into the priority that
pauses GPUs, and lets a compromised frontend host reach the compute fabric. FE and BE are
built as physically separate networks for that reason; this lab proves it on the real
data plane (kernel forwarding, FRR's routes), not on a drawing.

Defence in depth: every BGP session filters, in and out, to its own plane's prefixes (switch
loopbacks /32, host links /31 or their leaf's summaries) under a maximum-prefix limit
(harness/render/frr.py). So a stray cable between an FE leaf and a BE leaf, brought into
BGP with the fabric's usual port config, carries BGP but no route: the filters hold, no probe
crosses, and the isolation check still fails the lab, naming both ports, because a BGP
session runs between the planes. A cable with no BGP on it crosses nothing the probes can
see; the cabling audit (`harness/checks/cabling.py`, compared with the plan from the
kernel's links) is the check that flags it.

Make it fail (the tests after the first do): that stray cable with the fabric's config; the
same cable with a hand-configured session that has no filter (the probes then cross and the
leak is named with its path); and a dual-homed GPU node that forwards while its FE leaf
routes the BE range to it (a kernel route no BGP filter sees).
"""
from __future__ import annotations

import json
from ipaddress import IPv4Network

import pytest

from harness.checks.registry import case, run_case
from harness.faults.sabotage import leak_route, stray_cable, stray_ends
from harness.core.model import FE_NIC, Plane, Role
from harness.plumbing.wait import until


def _range(lab, plane: Plane) -> IPv4Network:
    a = lab.plan.fabric.cluster.addressing
    return IPv4Network(a.be if plane is Plane.BE else a.fe)


def _fib_holds(lab, switch: str, plane: Plane) -> list[IPv4Network]:
    return [p for p in lab.routes(switch) if p.overlaps(_range(lab, plane))]


def _json(lab, switch: str, command: str) -> dict:
    text = lab.vtysh(switch, command).strip()
    return json.loads(text) if text.startswith("{") else {}  # FRR prints no JSON for an empty answer


def _bgp_holds(lab, switch: str, plane: Plane) -> list[str]:
    table = _json(lab, switch, "show bgp ipv4 unicast json")
    return [p for p in table.get("routes", {}) if IPv4Network(p).overlaps(_range(lab, plane))]


def _received(lab, switch: str, port: str) -> tuple[list[str], int]:
    """What the neighbour on `port` sent (kept before the inbound filter), and how many
    prefixes the session accepted."""
    raw = _json(lab, switch, f"show bgp ipv4 unicast neighbors {port} received-routes json")
    accepted = _json(lab, switch, f"show bgp ipv4 unicast neighbors {port} routes json")
    return sorted(raw.get("receivedRoutes", {})), len(accepted.get("routes", {}))


def _ends(lab):
    ends = stray_ends(lab)
    if ends is None:
        pytest.skip("not applicable: every port of every FE or BE switch is cabled; no stray cable fits")
    return ends


def test_fe_be_and_mgmt_are_isolated(lab, results):
    result = run_case(case("isolation"), lab, results)
    assert result.controls_delivered == result.controls > 0, result.reason  # the positive control
    assert result.negatives > 0 and result.routes_scanned > 0 and result.sessions_scanned > 0
    assert {"fe->be", "be->fe", "mgmt->be", "mgmt->fe", "be->mgmt", "fe->mgmt"} <= set(result.probes_per_kind)
    assert result.passed, result.reason


def test_a_stray_fe_be_cable_is_held_by_the_filters_and_still_fails_isolation(lab, results):
    fe_leaf, be_leaf = _ends(lab)
    with stray_cable(lab, fe_leaf, be_leaf) as stray:
        cable = lab.extra_cables[-1]
        fe_port, be_port = cable.a_port, cable.b_port
        # positive control: the stray session is up and each end has the other plane's
        # prefixes in hand, before its inbound filter
        until(lambda: _received(lab, be_leaf, be_port)[0] and _received(lab, fe_leaf, fe_port)[0], 30,
              "the stray session to come up and exchange updates")
        heard_by_be, accepted_by_be = _received(lab, be_leaf, be_port)
        heard_by_fe, accepted_by_fe = _received(lab, fe_leaf, fe_port)
        assert all(IPv4Network(p).subnet_of(_range(lab, Plane.FE)) for p in heard_by_be), heard_by_be
        assert all(IPv4Network(p).subnet_of(_range(lab, Plane.BE)) for p in heard_by_fe), heard_by_fe
        # the filters hold: nothing accepted, nothing of the other plane in any BGP table or FIB
        assert (accepted_by_be, accepted_by_fe) == (0, 0)
        for sw in lab.plan.switches:
            other = Plane.FE if sw.plane is Plane.BE else Plane.BE
            assert not _bgp_holds(lab, sw.name, other), sw.name
            assert not _fib_holds(lab, sw.name, other), sw.name
        result = run_case(case("isolation"), lab, results, name="isolation-stray-cable-filtered",
                          sabotage=stray.description)
    assert not result.passed, "a BGP session between the planes must fail isolation"
    assert result.controls_delivered == result.controls
    assert not result.leaks and not result.leaked_routes, result.reason  # no frame and no route crossed
    sessions = " | ".join(result.cross_plane_sessions)
    assert f"{fe_leaf}:{fe_port} (FE) has a BGP session with BE" in sessions, result.reason
    assert f"{be_leaf}:{be_port} (BE) has a BGP session with FE" in sessions, result.reason


def test_a_stray_cable_without_filters_leaks_and_the_path_is_named(lab, results):
    fe_leaf, be_leaf = _ends(lab)
    with stray_cable(lab, fe_leaf, be_leaf, peer_group=False) as broken:
        until(lambda: _fib_holds(lab, fe_leaf, Plane.BE), 30, f"BE routes to leak into {fe_leaf}")
        result = run_case(case("isolation"), lab, results, name="isolation-stray-cable-unfiltered",
                          sabotage=broken.description)
    assert not result.passed
    assert result.controls_delivered == result.controls  # the fabric still works; it leaks
    assert result.leaks, result.reason
    assert any(leak.path[1] == fe_leaf and be_leaf in leak.path for leak in result.leaks), result.reason
    assert any(r.startswith(f"{fe_leaf} (FE) has a route to") for r in result.leaked_routes), result.reason
    assert "no filters" in broken.description
    # a leaf sends only what it originates: the leak stops at the leaf it entered
    spines = tuple(f"{n.name} " for n in lab.plan.fabric.nodes_with(Role.FE_SPINE, Role.BE_SPINE))
    assert not [r for r in result.leaked_routes if r.startswith(spines)], result.leaked_routes
    until(lambda: not _fib_holds(lab, fe_leaf, Plane.BE), 30, "the leak to be withdrawn")


def test_a_leaked_route_through_a_forwarding_gpu_node_is_caught(lab, results, control):
    # a GPU node on a routed FE /31 (a tenant member's FE NIC is an L2 port: no route to leak)
    gpu = next(h.name for h in lab.plan.hosts if h.role is Role.GPU
               and any(n.name == FE_NIC and n.tenant is None for n in h.nics))
    with leak_route(lab, gpu) as leaked:
        result = run_case(case("isolation"), lab, results, name="isolation-leaked-route",
                          sabotage=leaked.description)
    assert not result.passed
    assert any(gpu in leak.path[1:] for leak in result.leaks), result.reason
    after = control(case("isolation"), lab)
    assert after.passed, after.reason
