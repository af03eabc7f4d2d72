"""The cabling audit on LLDP evidence: tables of LLDP neighbours (as lldpd or SONiC would list
them for ai-cluster's plan) and the verdict each gets, with no lab. Port IDs are judged by
meaning: an interface name, a SONiC alias ("etp1") or a port description all name the same port."""
from __future__ import annotations

from dataclasses import replace

import pytest

from harness.checks.cabling import CablingSeen, judge_cabling
from harness.checks.cabling_lldp import NO_LLDP
from harness.core.model import Plane, Role
from harness.core.observed import LldpNeighbour, PortState


def _alias(plan, node: str, port: str) -> str:
    sw = next((s for s in plan.switches if s.name == node), None)
    return next((p.row.alias for p in sw.ports if p.name == port), port) if sw else port


def heard(plan, port_id=lambda plan, node, port: port, skip=(), descr=False):
    """What every node's lldpd hears on ai-cluster cabled as planned (the OOB switch's own table left out)."""
    lldp: dict[str, list[LldpNeighbour]] = {}
    for c in plan.cables:
        for (me, mine), (them, theirs) in (((c.a_node, c.a_port), (c.b_node, c.b_port)),
                                           ((c.b_node, c.b_port), (c.a_node, c.a_port))):
            if me in skip:
                continue
            lldp.setdefault(me, []).append(LldpNeighbour(mine, them, port_id(plan, them, theirs), theirs if descr else ""))
    return {n: tuple(sorted(v, key=lambda x: x.local_port)) for n, v in lldp.items()}


def links(lldp):
    return {n: tuple(PortState(x.local_port, True, True, 9100, "veth") for x in found) for n, found in lldp.items()}


def seen(lldp, link_states=None):
    return CablingSeen((), tuple(Plane), "LLDP over SSH", lldp, link_states if link_states is not None else links(lldp))


def oob(plan):
    return {n.name for n in plan.fabric.nodes if n.role is Role.OOB}


def test_cabled_as_planned_by_lldp_alone(ai_plan):
    r = judge_cabling(ai_plan, seen(heard(ai_plan, skip=oob(ai_plan))))
    assert r.passed, r.problems
    assert r.matched == r.planned == r.lldp_matched == len(ai_plan.cables) and r.observed == 0
    assert "confirmed by LLDP" in r.sentence() and "veth" not in r.sentence()


def test_sonic_aliases_and_descriptions_name_the_same_ports(ai_plan):
    by_alias = heard(ai_plan, _alias, skip=oob(ai_plan))
    assert any(n.port_id.startswith("etp") for found in by_alias.values() for n in found)  # SONiC's own names
    assert judge_cabling(ai_plan, seen(by_alias)).passed
    # a port ID the plan cannot place, with the port's name as its description
    described = {node: tuple(replace(n, port_id=f"fp-{n.port_id}") for n in found) for node, found in by_alias.items()}
    with_descr = heard(ai_plan, lambda plan, node, port: f"fp-{port}", skip=oob(ai_plan), descr=True)
    assert judge_cabling(ai_plan, seen(with_descr)).passed
    assert not judge_cabling(ai_plan, seen(described)).passed  # the control: neither name nor description


def _swap(lldp, node, a, b):
    found = {n.local_port: n for n in lldp[node]}
    found[a], found[b] = replace(found[b], local_port=a), replace(found[a], local_port=b)
    return {**lldp, node: tuple(found.values())}


def test_two_cables_exchanged_are_swapped(ai_plan):
    lldp = heard(ai_plan, skip=oob(ai_plan))
    assert judge_cabling(ai_plan, seen(lldp)).passed  # the positive control
    r = judge_cabling(ai_plan, seen(_swap(lldp, "gpu01", "rail0", "rail1")))
    kinds = {(f.kind, f.node, f.port) for f in r.findings}
    assert ("swapped", "gpu01", "rail0") in kinds and ("swapped", "gpu01", "rail1") in kinds


def test_a_port_that_hears_nobody_is_a_missing_cable(ai_plan):
    lldp = heard(ai_plan, skip=oob(ai_plan))
    quiet = {**lldp, "gpu01": tuple(n for n in lldp["gpu01"] if n.local_port != "rail2")}
    states = links(lldp)
    r = judge_cabling(ai_plan, seen(quiet, states))
    assert not r.passed and r.lldp_silent == 1
    assert any(f.kind == "missing" and (f.node, f.port) == ("gpu01", "rail2") and NO_LLDP in f.notes[0]
               for f in r.findings)
    # with no carrier either, the port is still missing: the cable is not there
    down = {**states, "gpu01": tuple(replace(s, carrier=False) if s.name == "rail2" else s for s in states["gpu01"])}
    assert any(f.kind == "missing" and f.port == "rail2" for f in judge_cabling(ai_plan, seen(quiet, down)).findings)


def test_a_stray_cable_to_another_plane_is_unknown_and_joins_the_planes(ai_plan):
    lldp = heard(ai_plan, skip=oob(ai_plan))
    stray = {**lldp,
             "fe-l1": lldp["fe-l1"] + (LldpNeighbour("Ethernet100", "be-g1-r0", "Ethernet300"),),
             "be-g1-r0": lldp["be-g1-r0"] + (LldpNeighbour("Ethernet300", "fe-l1", "Ethernet100"),)}
    r = judge_cabling(ai_plan, seen(stray))
    assert not r.passed
    (f,) = r.findings
    assert f.kind == "unknown" and "joins" in f.notes[0] and {f.node, f.actual_peer.split(":")[0]} == {"fe-l1", "be-g1-r0"}


def test_a_neighbour_from_outside_the_plan_is_named(ai_plan):
    lldp = heard(ai_plan, skip=oob(ai_plan))
    (first, *rest) = lldp["gpu01"]
    outsider = {**lldp, "gpu01": (replace(first, chassis="lab-router", port_id="ge-0/0/1"), *rest)}
    r = judge_cabling(ai_plan, seen(outsider))
    f = next(f for f in r.findings if f.node == "gpu01" and f.port == first.local_port)
    assert f.kind == "miswired" and "lab-router port ge-0/0/1, no node of the plan" in f.actual_peer


@pytest.mark.parametrize("silent_node", ["be-s1", "gpu03"])
def test_an_unreached_node_is_spoken_for_by_its_peers(ai_plan, silent_node):
    """Its own table is missing (not reached): every cable of it is still seen from the other end."""
    r = judge_cabling(ai_plan, seen(heard(ai_plan, skip=oob(ai_plan) | {silent_node})))
    assert r.passed, r.problems
    # only its mgmt cable, to the OOB switch (not reached either), is unseen; every other cable is matched
    assert r.unseen == 1 and r.lldp_matched == r.planned == len(ai_plan.cables) - 1
    assert "1 between nodes not reached" in r.sentence()
