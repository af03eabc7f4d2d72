"""Where a plan's numbering puts each plane: its loopbacks, each rail's and the FE's host links, and
the plane's whole address space (what filters permit, hosts route and isolation holds apart).
fablab's allocation gives its blocks; an engineer's own numbering gives the pools its addresses
come from, as far as the addresses tell them (`_pooled`)."""
from __future__ import annotations

import bisect
import ipaddress
from collections import defaultdict
from ipaddress import IPv4Network
from ipaddress import IPv4Interface

from harness.core.declarations import Plane
from harness.core.fabric import Fabric

__all__ = ["Spans", "planned_nets"]


class Spans:
    """Networks as disjoint, sorted address spans: whether a network overlaps any of them is one
    bisect, not a scan of them all (xlarge numbered: thousands of /31s against each other)."""

    def __init__(self, nets: list[IPv4Network]):
        self._spans = [(int(n.network_address), int(n.broadcast_address)) for n in ipaddress.collapse_addresses(nets)]
        self._starts = [a for a, _ in self._spans]

    def overlaps(self, net: IPv4Network) -> bool:
        first, last = int(net.network_address), int(net.broadcast_address)
        i = bisect.bisect_right(self._starts, last) - 1  # the last span starting at or before `last`
        return i >= 0 and self._spans[i][1] >= first


def planned_nets(fabric: Fabric, loopbacks: dict[str, IPv4Interface],
                 link_addr: dict[tuple[str, str], tuple[IPv4Interface, IPv4Interface]], mgmt_net: IPv4Network,
                 be_net: IPv4Network, fe_net: IPv4Network, be_blocks, fe_blocks) -> tuple:
    """(loopback_nets, rail_nets, fe_nets, link_nets, plane_nets): fablab's blocks, or the pools the
    engineer's own addresses come from, for what they gave (`_pooled`)."""
    a = fabric.cluster.addressing
    planes = {sw.name: sw.role.plane for sw in fabric.switches}
    los = {p: [lo.network for s, lo in loopbacks.items() if planes[s] is p] for p in (Plane.BE, Plane.FE)}
    by: dict[tuple[Plane, int | None], list[IPv4Network]] = defaultdict(list)
    plane_of = {(lk.a, lk.a_port): (lk.plane, lk.rail) for lk in fabric.links}
    for key, (leaf_side, _) in link_addr.items():
        by[plane_of[key]].append(leaf_side.network)
    rails = range(len(be_blocks) - 1)
    links = {p: [n for (plane, _), nets in by.items() if plane is p for n in nets] for p in (Plane.BE, Plane.FE)}
    used = [n for nets in los.values() for n in nets] + [n for nets in links.values() for n in nets] + [mgmt_net]
    if a.tenants and fabric.cluster.tenants:
        used.append(IPv4Network(a.tenants))

    def pooled(nets: list[IPv4Network]) -> tuple[IPv4Network, ...]:
        mine = set(nets)
        return _pooled(nets, [n for n in used if n not in mine])

    if a.loopbacks:
        loopback_nets = {p: pooled(los[p]) for p in (Plane.BE, Plane.FE)}
    else:
        loopback_nets = {Plane.BE: (be_blocks[0],), Plane.FE: (fe_blocks[0],)}
    if a.ports:
        rail_nets = tuple(pooled(by[(Plane.BE, r)]) for r in rails)
        fe_nets = pooled(links[Plane.FE]) or (fe_blocks[1],)
        link_nets = {Plane.BE: pooled(links[Plane.BE]), Plane.FE: fe_nets}
    else:
        rail_nets, fe_nets = tuple((b,) for b in be_blocks[1:]), (fe_blocks[1],)
        link_nets = {Plane.BE: tuple(be_blocks[1:]), Plane.FE: fe_nets}
    plane_nets: dict[Plane, tuple[IPv4Network, ...]] = {}
    for plane, rng in ((Plane.BE, be_net), (Plane.FE, fe_net)):
        allocated = not (a.ports and a.loopbacks)
        parts = ([rng] if allocated else []) + (list(loopback_nets[plane]) if a.loopbacks else []) \
            + (list(link_nets[plane]) if a.ports else [])
        plane_nets[plane] = tuple(ipaddress.collapse_addresses(parts))
    plane_nets[Plane.MGMT] = (mgmt_net,)
    return loopback_nets, rail_nets, fe_nets, link_nets, plane_nets


def _pooled(nets: list[IPv4Network], others: list[IPv4Network]) -> tuple[IPv4Network, ...]:
    """The pool a set of the engineer's prefixes comes from, as far as it can be told: each widened
    towards the smallest prefix spanning them all while it takes in nothing of `others` (another
    plane's, rail's or kind's addresses). Loopbacks of two planes from one /24 stay /32s; /31s of
    one plane handed out from a /24 become that /24, as the engineer's own filters write it."""
    nets = list(ipaddress.collapse_addresses(nets))
    if not nets:
        return ()
    span = nets[0]
    while not all(n.subnet_of(span) for n in nets):
        span = span.supernet()
    taken = Spans(others)
    out = []
    for n in nets:
        while n.prefixlen > span.prefixlen and not taken.overlaps(n.supernet()):
            n = n.supernet()
        out.append(n)
    return tuple(ipaddress.collapse_addresses(out))
