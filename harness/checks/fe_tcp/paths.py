"""Where the frontend's TCP checks run: two routed FE hosts in different racks, the address each
is reached at, and the points where their connections are counted.

A single-homed host is reached at its FE NIC's /31 and its connections leave through its one
leaf; a dual-homed host (`Frontend(dual_homed=True)`) is reached at its own /32, which its bgpd
announces to both its leaves, and its connections spread over its two NICs first, then over
the uplinks of whichever leaf each took.
"""
from __future__ import annotations

from dataclasses import dataclass
from ipaddress import IPv4Network

from harness.core.errors import HarnessError
from harness.core.plan import Plan

End = tuple[str, str]  # (host, FE NIC)


@dataclass(frozen=True)
class Point:
    """Where connections are counted: a node's egress ports; `sent` on a host (what it sends)."""

    node: str
    ports: tuple[str, ...]
    sent: bool = False


def fe_pair(plan: Plan) -> tuple[End, End]:
    """Two routed FE hosts in different racks (behind different leaves, or leaf pairs), each
    with its first FE NIC: the first host of each of the first two racks."""
    by_rack: dict[tuple[str, ...], End] = {}
    for h in plan.hosts:
        nics = h.fe_nics
        if nics:
            by_rack.setdefault(tuple(n.peer for n in nics), (h.name, nics[0].name))
    if len(by_rack) < 2:
        raise HarnessError(f"{plan.name}: routed FE hosts sit behind {len(by_rack)} FE leaf (or leaf pair); the FE "
                           "TCP checks need two racks (hosts outside every tenant, behind different leaves)")
    first, second = list(by_rack.values())[:2]
    return first, second


def fe_address(plan: Plan, end: End) -> str:
    host = plan.host(end[0])
    return str(host.loopback.ip if host.routed else host.nic(end[1]).address.ip)


def fe_prefix(plan: Plan, end: End) -> IPv4Network:
    """The prefix the fabric carries the host's FE address in."""
    host = plan.host(end[0])
    return plan.route_prefix(host.nic(end[1]), host)


def source_leaves(plan: Plan, src: End) -> list[Point]:
    """Each FE leaf the source host sends through, with its uplinks (at least two each)."""
    out = []
    for nic in plan.host(src[0]).fe_nics:
        leaf = plan.switch(nic.peer)
        uplinks = tuple(p.name for p in leaf.fabric_ports)
        if len(uplinks) < 2:
            raise HarnessError(f"{leaf.name} has {len(uplinks)} uplink(s): nothing to spread over or fail to")
        out.append(Point(leaf.name, uplinks))
    return out


def source_nics(plan: Plan, src: End) -> Point | None:
    """A dual-homed source's FE NICs, where it spreads its connections first (None: one NIC)."""
    host = plan.host(src[0])
    nics = tuple(n.name for n in host.fe_nics)
    return Point(host.name, nics, sent=True) if host.routed and len(nics) > 1 else None


def fe_pair_missing(plan: Plan) -> str | None:
    try:
        source_leaves(plan, fe_pair(plan)[0])
    except HarnessError as e:
        return str(e)
    return None


def dual_homing_missing(plan: Plan) -> str | None:
    if not plan.fabric.cluster.frontend.dual_homed:
        return "the FE hosts are single-homed (Frontend(dual_homed=False)): no host uplink or leaf pair to fail"
    return fe_pair_missing(plan)
