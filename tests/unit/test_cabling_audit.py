"""The cabling audit's comparison, on kernel views built from the plan and then broken the
ways a technician breaks them. No root: the kernel's side is given, not read."""
from __future__ import annotations

import dataclasses

from harness.checks.cabling import CableFinding, KernelPort, audit, matched_cables
from harness.core.model import Plane


def as_cabled(plan) -> list[KernelPort]:
    """What the kernel shows for a lab cabled exactly as planned (OOB ends in the bridge)."""
    ports = []
    for c in plan.cables:
        for (node, port), peer in (((c.a_node, c.a_port), (c.b_node, c.b_port)),
                                   ((c.b_node, c.b_port), (c.a_node, c.a_port))):
            ports.append(KernelPort(node, port, peer, bridge="br0" if node == "oob1" else None))
    return ports


def replace(ports, end, **changes):
    return [dataclasses.replace(p, **changes) if (p.node, p.port) == end else p for p in ports]


def test_a_lab_cabled_as_planned_has_no_finding(ai_plan):
    ports = as_cabled(ai_plan)
    assert audit(ai_plan, ports) == []
    assert matched_cables(ai_plan, ports, []) == len(ai_plan.cables)


def test_a_rogue_fe_be_cable_is_unknown_and_joins_the_planes(ai_plan):
    rogue = [KernelPort("fe-l1", "Ethernet120", ("be-g1-r0", "Ethernet120")),
             KernelPort("be-g1-r0", "Ethernet120", ("fe-l1", "Ethernet120"))]
    findings = audit(ai_plan, as_cabled(ai_plan) + rogue)
    assert findings == [CableFinding("unknown", "fe-l1", "Ethernet120", "", "be-g1-r0:Ethernet120",
                                     ("joins FE and BE",))]


def test_two_gpu_nics_swapped_between_rail_leaves(ai_plan):
    r0 = ai_plan.host("gpu01").nic("rail0")
    r1 = ai_plan.host("gpu01").nic("rail1")
    leaf0, leaf1 = (r0.peer, r0.peer_port), (r1.peer, r1.peer_port)
    ports = as_cabled(ai_plan)
    ports = replace(ports, ("gpu01", "rail0"), peer=leaf1)
    ports = replace(ports, leaf1, peer=("gpu01", "rail0"))
    ports = replace(ports, ("gpu01", "rail1"), peer=leaf0)
    ports = replace(ports, leaf0, peer=("gpu01", "rail1"))
    findings = audit(ai_plan, ports)
    by_end = {(f.node, f.port): f for f in findings}
    assert set(by_end) == {("gpu01", "rail0"), ("gpu01", "rail1"), leaf0, leaf1}
    f = by_end[("gpu01", "rail0")]
    assert (f.kind, f.expected_peer, f.actual_peer) == ("swapped", f"{leaf0[0]}:{leaf0[1]}", f"{leaf1[0]}:{leaf1[1]}")
    assert f"gpu01:rail0 is rail 0, {leaf1[0]} is a rail-1 leaf" in f.notes
    assert matched_cables(ai_plan, ports, findings) == len(ai_plan.cables) - 2


def test_a_cable_on_the_wrong_port_of_the_right_leaf_is_miswired(ai_plan):
    nic = ai_plan.host("gpu02").nic("rail0")
    planned_end = (nic.peer, nic.peer_port)
    ports = [p for p in as_cabled(ai_plan) if (p.node, p.port) != planned_end]
    ports = replace(ports, ("gpu02", "rail0"), peer=(nic.peer, "Ethernet124"))
    ports.append(KernelPort(nic.peer, "Ethernet124", ("gpu02", "rail0")))
    findings = audit(ai_plan, ports)
    assert [(f.kind, f.node, f.port, f.actual_peer) for f in findings] == [
        ("miswired", "gpu02", "rail0", f"{nic.peer}:Ethernet124"),
        ("missing", nic.peer, nic.peer_port, ""),
    ]
    assert findings[0].notes == ()  # same rail, same plane: only the port is wrong


def test_a_planned_cable_that_is_absent_is_missing(ai_plan):
    c = ai_plan.cables[0]
    ports = [p for p in as_cabled(ai_plan) if p.node not in (c.a_node,) or p.port != c.a_port]
    ports = [p for p in ports if (p.node, p.port) != (c.b_node, c.b_port)]
    findings = audit(ai_plan, ports)
    assert findings == [CableFinding("missing", c.a_node, c.a_port, f"{c.b_node}:{c.b_port}", "",
                                     ("neither end has an interface",))]


def test_a_planned_cable_that_is_down_is_missing(ai_plan):
    c = next(c for c in ai_plan.cables if c.plane is Plane.BE)
    ports = replace(as_cabled(ai_plan), (c.b_node, c.b_port), up=False)
    ports = replace(ports, (c.a_node, c.a_port), carrier=False)
    (f,) = audit(ai_plan, ports)
    assert (f.kind, f.node, f.port) == ("missing", c.b_node, c.b_port)
    assert f.notes == (f"{c.b_node}:{c.b_port} is administratively down",)


def test_a_mgmt_port_outside_the_oob_bridge_is_not_bridged(ai_plan):
    c = next(c for c in ai_plan.cables if c.plane is Plane.MGMT and c.a_node == "gpu03")
    ports = replace(as_cabled(ai_plan), (c.b_node, c.b_port), bridge=None)
    (f,) = audit(ai_plan, ports)
    assert (f.kind, f.node, f.port, f.expected_peer) == ("not bridged", "oob1", c.b_port, "gpu03:mgmt0")


def test_a_data_port_bridged_into_mgmt_joins_the_planes(ai_plan):
    rogue = [KernelPort("oob1", "Ethernet200", ("be-s1", "Ethernet124"), bridge="br0"),
             KernelPort("be-s1", "Ethernet124", ("oob1", "Ethernet200"))]
    (f,) = audit(ai_plan, as_cabled(ai_plan) + rogue)
    assert (f.kind, f.node, f.port, f.actual_peer) == ("unknown", "oob1", "Ethernet200", "be-s1:Ethernet124")
    assert f.notes == ("joins MGMT and BE",)


def test_a_cable_leading_out_of_the_lab_is_named(ai_plan):
    c = next(c for c in ai_plan.cables if c.a_node == "gpu04" and c.plane is Plane.FE)
    ports = [p for p in as_cabled(ai_plan) if (p.node, p.port) != (c.b_node, c.b_port)]
    ports = replace(ports, (c.a_node, c.a_port), peer=None, outside="the host's root namespace")
    findings = audit(ai_plan, ports)
    assert [(f.kind, f.node, f.port, f.actual_peer) for f in findings] == [
        ("miswired", "gpu04", c.a_port, "outside the lab (the host's root namespace)"),
        ("missing", c.b_node, c.b_port, ""),
    ]


def test_only_the_planes_asked_for_are_audited(ai_plan):
    ports = [p for p in as_cabled(ai_plan) if p.node != "oob1" and not p.port.startswith("mgmt")
             and not (p.port == "eth0")]
    assert audit(ai_plan, ports, (Plane.FE, Plane.BE)) == []
