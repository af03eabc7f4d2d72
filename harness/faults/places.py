"""Where each fault goes by default in a plan: a typed target, or None where the plan has no
place for it (no tenants, no spine tier, no rail-only leaf of several rails)."""
from __future__ import annotations

from harness.core.errors import HarnessError
from harness.core.declarations import NicRole
from harness.core.model import Plane, Role
from harness.core.plan import Plan
from harness.faults.targets import Cable, Nic, Port, Ports, Route, Switch, Switches


def first(plan: Plan, role: Role) -> str | None:
    return next((s.name for s in plan.switches if s.role is role), None)


def first_be_leaf(plan: Plan) -> Switch | None:
    name = first(plan, Role.BE_LEAF)
    return Switch(name) if name else None


def be_switches(plan: Plan) -> Switches | None:
    names = tuple(s.name for s in plan.switches if s.plane is Plane.BE)
    return Switches(names) if names else None


def two_rail_nics(plan: Plan) -> Ports | None:
    """Two NICs of one GPU node on different leaves: swapping them is a cabling mistake."""
    for h in plan.hosts:
        rails = [n for n in h.nics if n.plane is Plane.BE]
        for a in rails:
            for b in rails:
                if a.peer != b.peer:
                    return Ports((Port(h.name, a.name), Port(h.name, b.name)))
    return None


def fe_and_be_switch(plan: Plan) -> Cable | None:
    """A new cable from the first FE leaf to the first BE leaf (their first free ports)."""
    fe, be = first(plan, Role.FE_LEAF), first(plan, Role.BE_LEAF)
    return Cable(Port(fe), Port(be)) if fe and be else None


def fe_host(plan: Plan) -> Nic | None:
    return next((Nic(h.name) for h in plan.hosts
                 if not h.routed and any(n.role is NicRole.FE and n.gateway for n in h.nics)), None)


def be_uplink(plan: Plan) -> Cable | None:
    leaf = next((s for s in plan.switches if s.role is Role.BE_LEAF and s.fabric_ports), None)
    if leaf is None:
        return None
    up = leaf.fabric_ports[0]
    return Cable(Port(leaf.name, up.name), Port(up.peer, up.peer_port))


def be_host_port(plan: Plan) -> Port | None:
    leaf = next((s for s in plan.switches if s.role is Role.BE_LEAF), None)
    port = next((p for p in leaf.ports if p not in leaf.fabric_ports), None) if leaf else None
    return Port(leaf.name, port.name) if port else None


def incast_port(plan: Plan) -> Port | None:
    """The leaf port facing rail 0's first GPU NIC: the congested port of the pfc and dcqcn incasts."""
    nic = next((n for h in plan.hosts for n in h.nics if n.rail == 0), None)
    return Port(nic.peer, nic.peer_port) if nic else None


def gpu_nic(plan: Plan) -> Port | None:
    """Rail 0's second GPU NIC: a sender of the pfc check's incast, not its receiver."""
    nics = [(h.name, n.name) for h in plan.hosts for n in h.nics if n.rail == 0]
    return Port(*nics[1]) if len(nics) > 1 else None


def vtep(plan: Plan) -> Switch | None:
    return next((Switch(s.name) for s in plan.switches if s.vnis), None)


def two_tenant_port(plan: Plan) -> Port | None:
    """A member port on a leaf that holds another tenant's bridge too."""
    for t in plan.tenants:
        for other in plan.tenants:
            for m in t.members:
                if other.vni != t.vni and m.leaf in other.leaves:
                    return Port(m.leaf, m.leaf_port)
    return None


def rail_only_leaf(plan: Plan) -> Switch | None:
    """A rail-only leaf of several rails, which keeps them apart."""
    return next((Switch(s.name) for s in plan.switches if s.separate_rails), None)


# --------------------------------------------------------------------------- on the checks' own paths
# The ECMP and failover cases send from the first GPU NIC (harness.checks.ecmp): a fault for
# them goes where that traffic goes.

def _source(plan: Plan):
    """(the source leaf's plan, the ECMP case's destination (host, NIC)), or None without a
    spine tier for the traffic to cross."""
    from harness.checks.base import has_spine_tier
    from harness.checks.ecmp import default_pair

    if not has_spine_tier(plan):
        return None
    try:
        (src, src_nic), dst = default_pair(plan)
    except HarnessError:
        return None
    leaf = plan.switch(plan.host(src).nic(src_nic).peer)
    return (leaf, dst) if len(leaf.fabric_ports) >= 2 else None


def source_leaf(plan: Plan) -> Switches | None:
    found = _source(plan)
    return Switches((found[0].name,)) if found else None


def source_uplinks(plan: Plan) -> Ports | None:
    """Every uplink of the source leaf: whichever one a failover case fails is among them."""
    found = _source(plan)
    return Ports(tuple(Port(found[0].name, p.name) for p in found[0].fabric_ports)) if found else None


def source_leaf_and_spines(plan: Plan) -> Switches | None:
    """The source leaf and every switch above it: both ends of each of its uplinks."""
    found = _source(plan)
    if not found:
        return None
    return Switches((found[0].name, *dict.fromkeys(p.peer for p in found[0].fabric_ports)))


def source_uplink(plan: Plan) -> Port | None:
    found = _source(plan)
    return Port(found[0].name, found[0].fabric_ports[0].name) if found else None


def source_route(plan: Plan) -> Route | None:
    """The source leaf's route to the ECMP case's destination, at its first uplink."""
    found = _source(plan)
    if not found:
        return None
    leaf, (dst, dst_nic) = found
    return Route(leaf.name, leaf.fabric_ports[0].name, str(plan.route_prefix(plan.host(dst).nic(dst_nic))))


def source_switch(plan: Plan) -> Switch | None:
    found = _source(plan)
    return Switch(found[0].name) if found else None
