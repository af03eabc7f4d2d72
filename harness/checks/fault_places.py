"""Where each fault of `fablab break` goes by default in a plan, and the elements `--on` takes
(NODE:PORT, SWITCH,SWITCH, ...), parsed."""
from __future__ import annotations

from harness.core.errors import InputError
from harness.core.model import FE_NIC, Plane, Role
from harness.core.plan import Plan


def first(plan: Plan, role: Role) -> str | None:
    return next((s.name for s in plan.switches if s.role is role), None)


def be_switches(plan: Plan) -> str | None:
    names = [s.name for s in plan.switches if s.plane is Plane.BE]
    return ",".join(names) or None


def two_rail_nics(plan: Plan) -> str | None:
    """Two NICs of one GPU node on different leaves: swapping them is a cabling mistake."""
    for h in plan.hosts:
        rails = [n for n in h.nics if n.plane is Plane.BE]
        for a in rails:
            for b in rails:
                if a.peer != b.peer:
                    return f"{h.name}:{a.name},{h.name}:{b.name}"
    return None


def fe_and_be_switch(plan: Plan) -> str | None:
    fe, be = first(plan, Role.FE_LEAF), first(plan, Role.BE_LEAF)
    return f"{fe},{be}" if fe and be else None


def fe_host(plan: Plan) -> str | None:
    return next((h.name for h in plan.hosts if not h.routed and any(n.name == FE_NIC and n.gateway for n in h.nics)),
                None)


def be_uplink(plan: Plan) -> str | None:
    leaf = next((s for s in plan.switches if s.role is Role.BE_LEAF and s.fabric_ports), None)
    return f"{leaf.name},{leaf.fabric_ports[0].peer}" if leaf else None


def be_host_port(plan: Plan) -> str | None:
    leaf = next((s for s in plan.switches if s.role is Role.BE_LEAF), None)
    port = next((p for p in leaf.ports if p not in leaf.fabric_ports), None) if leaf else None
    return f"{leaf.name}:{port.name}" if port else None


def vtep(plan: Plan) -> str | None:
    return next((s.name for s in plan.switches if s.vnis), None)


def two_tenant_port(plan: Plan) -> str | None:
    """A member port on a leaf that holds another tenant's bridge too."""
    for t in plan.tenants:
        for other in plan.tenants:
            for m in t.members:
                if other.vni != t.vni and m.leaf in other.leaves:
                    return f"{m.leaf}:{m.leaf_port}"
    return None


def names(element: str) -> list[str]:
    return [x for x in element.split(",") if x]


def end(text: str) -> tuple[str, str]:
    node, sep, port = text.partition(":")
    if not sep or not node or not port:
        raise InputError(f"--on {text!r}: give NODE:PORT (cabling.csv lists them)")
    return node, port


def pair(element: str) -> tuple[str, str]:
    parts = names(element)
    if len(parts) != 2:
        raise InputError(f"--on {element!r}: give two, separated by a comma")
    return parts[0], parts[1]
