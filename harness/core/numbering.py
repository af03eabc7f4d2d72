"""The engineer's own numbering, and its audit: ASNs, loopbacks, host links' addresses and mgmt
addresses given item by item (`Addressing.asns`, `loopbacks`, `ports`, `mgmt_ips`) instead of
fablab's allocation from ranges.

What is given is the plan; what is not is allocated as before. The audit runs before anything
boots and names device and port: a cable's two ends not in one subnet, an address used twice,
a loopback that is not a /32 or lies inside a link's subnet, one plane's addresses inside
another's, two switches that must speak eBGP sharing an ASN (an iBGP session fablab's configs
do not make), two leaves with uplinks sharing one (each drops the other's routes as an AS-path
loop), and a host link or switch the numbering left out where it numbers the rest.

Pure: plan.py hands it the links and fablab's allocation, it returns the numbering to use.
"""
from __future__ import annotations

import ipaddress
from collections import defaultdict
from dataclasses import dataclass
from ipaddress import IPv4Interface, IPv4Network

from harness.core.declarations import Addressing, Plane, Role
from harness.core.errors import Problem
from harness.core.declcheck import show
from harness.core.fabric import Fabric, Link
from harness.core.planned import SWITCH_ROLES_ORDER
from harness.core.pools import Spans

__all__ = ["LinkEnd", "allocated_asns", "allocated_loopbacks", "Numbered", "field_problems", "number", "own_numbering", "own_numbering_of"]

ASN_MAX = 4294967294


@dataclass(frozen=True)
class LinkEnd:
    """An addressed host link as the plan lays it: the host's NIC and the leaf's port."""

    host: str
    nic: str
    leaf: str
    port: str
    plane: Plane
    rail: int | None

    @property
    def label(self) -> str:
        return f"{self.host}:{self.nic}–{self.leaf}:{self.port}"


@dataclass(frozen=True)
class Numbered:
    """The numbering a plan uses: fablab's allocation with what the engineer gave laid over it."""

    link_addr: dict[tuple[str, str], tuple[IPv4Interface, IPv4Interface]]  # (host, NIC) -> (leaf side, host side)
    loopbacks: dict[str, IPv4Interface]
    asns: dict[str, int]
    mgmt: dict[str, IPv4Interface]
    mgmt_net: IPv4Network


def own_numbering(a: Addressing) -> bool:
    return bool(a.asns or a.loopbacks or a.ports or a.mgmt_ips)


def field_problems(a: Addressing) -> list[Problem]:
    """Each item of the four fields as written: its shape, its value, and no key twice."""
    p: list[Problem] = []
    shapes = (("asns", 2, "('rtsw-g1-r0', 4200100001)"), ("loopbacks", 2, "('rtsw-g1-r0', '10.255.0.1/32')"),
              ("ports", 3, "('gpu-a01', 'enp12s0np0', '10.1.0.1/31')"), ("mgmt_ips", 2, "('gpu-a01', '172.31.0.10/20')"))
    for fname, size, example in shapes:
        items = getattr(a, fname)
        if not isinstance(items, (tuple, list)):
            p.append(Problem(f"addressing.{fname}", f"{show(items)} is not a list of items", f"e.g. ({example},)"))
            continue
        seen: dict[tuple, int] = {}
        for i, item in enumerate(items):
            where = f"addressing.{fname}[{i}]"
            if not (isinstance(item, (tuple, list)) and len(item) == size and all(isinstance(x, str) and x
                                                                                  for x in item[:size - 1])):
                p.append(Problem(where, f"{show(item)} is not {size} values", f"write {example}"))
                continue
            key, value = tuple(item[:size - 1]), item[size - 1]
            if key in seen:
                p.append(Problem(where, f"{':'.join(key)} is numbered twice (also {fname}[{seen[key]}])",
                                 "give each one value"))
            seen.setdefault(key, i)
            if fname == "asns":
                if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= ASN_MAX:
                    p.append(Problem(where, f"{key[0]}'s ASN {show(value)} is not 1..{ASN_MAX}",
                                     "a private ASN: 64512-65534, or 4200000000-4294967294 (RFC 6996)"))
                continue
            try:
                iface = IPv4Interface(value) if isinstance(value, str) else None
            except ValueError as e:
                iface = None
                p.append(Problem(where, f"{':'.join(key)}: {show(value)} is not an IPv4 address with its prefix ({e})",
                                 "write it as 10.1.0.1/31"))
                continue
            if iface is None:
                p.append(Problem(where, f"{':'.join(key)}: {show(value)} is not an address", "write it as 10.1.0.1/31"))
            elif "/" not in value:
                p.append(Problem(where, f"{':'.join(key)}: {show(value)} has no prefix length",
                                 "write it with its subnet, e.g. 10.1.0.1/31 (a loopback: /32)"))
    return p


def number(a: Addressing, ends: list[LinkEnd], routed: dict[str, tuple[Plane, str, int | None]],
           fabric_cables: list[tuple[str, str, str, str]], nodes: list[str],
           alloc_links: dict[tuple[str, str], tuple[IPv4Interface, IPv4Interface]],
           alloc_loopbacks: dict[str, IPv4Interface], alloc_asns: dict[str, int],
           alloc_mgmt: dict[str, IPv4Interface], mgmt_net: IPv4Network,
           ranges: dict[Plane, IPv4Network], tenants: IPv4Network | None,
           allowas_in: int = 0) -> tuple[Numbered, list[Problem]]:
    """The numbering to use, and every problem of it. routed: switch -> (its plane, its role's
    value, its pod); fabric_cables: (switch, port, switch, port) of every cable between two switches."""
    if not own_numbering(a):
        return Numbered(alloc_links, alloc_loopbacks, alloc_asns, alloc_mgmt, mgmt_net), []
    p: list[Problem] = []
    ports = {(d, port): IPv4Interface(v) for d, port, v in a.ports}
    links = dict(alloc_links)
    if a.ports:
        links, more = _links(ports, ends)
        p += more
    loopbacks = dict(alloc_loopbacks)
    if a.loopbacks:
        loopbacks, more = _given_per_switch("loopbacks", {s: IPv4Interface(v) for s, v in a.loopbacks}, routed)
        p += more
        p += [Problem("addressing.loopbacks", f"{s}'s loopback {lo} is not a /32", f"write {lo.ip}/32")
              for s, lo in loopbacks.items() if lo.network.prefixlen != 32]
    asns = dict(alloc_asns)
    if a.asns:
        asns, more = _given_per_switch("asns", dict(a.asns), routed)
        p += more
        p += _asn_problems(asns, routed, fabric_cables, allowas_in)
    mgmt, net, more = _mgmt({d: IPv4Interface(v) for d, v in a.mgmt_ips}, nodes, alloc_mgmt, mgmt_net)
    p += more
    if not p:
        p += _used_twice(links, ends, loopbacks, mgmt)
        p += _loopbacks_in_links(loopbacks, links, ends)
        p += _planes_overlap(links, ends, loopbacks, routed, net, ranges, tenants, a)
    return Numbered(links, loopbacks, asns, mgmt, net), p


def _links(given: dict[tuple[str, str], IPv4Interface], ends: list[LinkEnd]
           ) -> tuple[dict[tuple[str, str], tuple[IPv4Interface, IPv4Interface]], list[Problem]]:
    p: list[Problem] = []
    out: dict[tuple[str, str], tuple[IPv4Interface, IPv4Interface]] = {}
    known = set()
    for e in ends:
        host, leaf = (e.host, e.nic), (e.leaf, e.port)
        known |= {host, leaf}
        h, s = given.get(host), given.get(leaf)
        if h is None and s is None:
            p.append(Problem("addressing.ports", f"{e.label} has no address in your numbering",
                             f"give {e.leaf}:{e.port} (or {e.host}:{e.nic}) its address, e.g. a /31"))
            continue
        if h is not None and s is not None:
            if h.network != s.network:
                p.append(Problem("addressing.ports", f"{e.label}: its ends are not in one subnet ({e.host}:{e.nic} "
                                 f"{h}, {e.leaf}:{e.port} {s})", "number both ends from one /31 (or /30)"))
            elif h.ip == s.ip:
                p.append(Problem("addressing.ports", f"{e.label}: both ends are {h.ip}", "give each end its own address"))
            elif h.ip in (h.network.network_address, h.network.broadcast_address) and h.network.prefixlen < 31:
                p.append(Problem("addressing.ports", f"{e.host}:{e.nic} {h} is its subnet's network or broadcast "
                                 "address", "take a host address of the subnet"))
            out[host] = (s, h)
            continue
        one = h if h is not None else s
        other = _other_end(one)
        if other is None:
            who = f"{e.host}:{e.nic}" if h is not None else f"{e.leaf}:{e.port}"
            p.append(Problem("addressing.ports", f"{e.label}: only {who} {one} is given, and a /{one.network.prefixlen}"
                             " has more than one other address", "give the other end too, or number it from a /31"))
            continue
        out[host] = (s, other) if s is not None else (other, h)
    for (device, port), iface in given.items():
        if (device, port) not in known:
            p.append(Problem("addressing.ports", f"{device}:{port} ({iface}) is no end of an addressed host link",
                             "number the ends of host links only: fabric links are unnumbered (BGP unnumbered), "
                             "tenant and storage NICs take their tenant's subnet"))
    return out, p


def _other_end(one: IPv4Interface) -> IPv4Interface | None:
    """The far end of a point-to-point subnet: the rest of a /31, the other host of a /30."""
    net = one.network
    if net.prefixlen == 31:
        rest = [x for x in (net.network_address, net.broadcast_address) if x != one.ip]
    elif net.prefixlen == 30:
        rest = [x for x in net.hosts() if x != one.ip]
    else:
        return None
    return IPv4Interface(f"{rest[0]}/{net.prefixlen}") if len(rest) == 1 else None


def _given_per_switch(fname: str, given: dict, routed: dict[str, tuple[Plane, str, int | None]]) -> tuple[dict, list[Problem]]:
    p = [Problem(f"addressing.{fname}", f"{s} is numbered but is no routed switch of the plan",
                 "name a switch of `fablab show` (a leaf, spine or super-spine)") for s in given if s not in routed]
    missing = [s for s in routed if s not in given]
    if missing:
        p.append(Problem(f"addressing.{fname}", f"{len(missing)} switches have none: {', '.join(missing[:6])}"
                         + (" ..." if len(missing) > 6 else ""), f"give every routed switch its {fname[:-1]}, or none"))
    return {s: v for s, v in given.items() if s in routed}, p


def _asn_problems(asns: dict[str, int], routed: dict[str, tuple[Plane, str, int | None]],
                  fabric_cables: list[tuple[str, str, str, str]], allowas_in: int = 0) -> list[Problem]:
    p: list[Problem] = []
    said = set()
    for a, a_port, b, b_port in fabric_cables:
        if a in asns and b in asns and asns[a] == asns[b] and (a, b) not in said:
            said.add((a, b))
            p.append(Problem("addressing.asns", f"{a}:{a_port} and {b}:{b_port} share ASN {asns[a]}: their session "
                             "would be iBGP, and the fabric is eBGP (RFC 7938)",
                             "give the tiers of a cable different ASNs"))
    uplinked = {a for a, *_ in fabric_cables} | {b for _, _, b, _ in fabric_cables}
    leaves: dict[int, list[str]] = defaultdict(list)
    spines: dict[int, set] = defaultdict(set)
    for s, (_, role, pod) in routed.items():
        if role.endswith("leaf") and s in uplinked and s in asns:
            leaves[asns[s]].append(s)
        if role == Role.BE_SPINE.value and pod is not None and s in asns:
            spines[asns[s]].add((pod, s))
    for asn, names in leaves.items():
        if len(names) > 1 and not allowas_in:
            p.append(Problem("addressing.asns", f"leaves {', '.join(names)} share ASN {asn}: each drops the others' "
                             "routes as an AS-path loop (no allowas-in is declared)",
                             "give each leaf its own ASN (RFC 7938), e.g. base + group * 100 + rail, or declare "
                             "Routing(allowas_in=1) (your configs' `neighbor ... allowas-in`)"))
    for asn, found in spines.items():
        pods = sorted({pod for pod, _ in found})
        if len(pods) > 1:  # a route from one pod reaches the other's spines with their own ASN in its path
            names = sorted(s for _, s in found)
            p.append(Problem("addressing.asns", f"spines of pods {', '.join(map(str, pods))} share ASN {asn} "
                             f"({', '.join(names[:4])}{' ...' if len(names) > 4 else ''}): each pod's spines drop the "
                             "others' routes, which cross the super-spines with that ASN in their path",
                             "one ASN per pod's spine tier, another for the super-spines (RFC 7938)"))
    return p


def _mgmt(given: dict[str, IPv4Interface], nodes: list[str], alloc: dict[str, IPv4Interface],
          net: IPv4Network) -> tuple[dict[str, IPv4Interface], IPv4Network, list[Problem]]:
    """The given mgmt addresses, the rest allocated from their subnet (one L2 segment: the OOB)."""
    if not given:
        return dict(alloc), net, []
    p = [Problem("addressing.mgmt_ips", f"{d} is numbered but is no node of the plan", "name a node of `fablab show`")
         for d in given if d not in nodes]
    nets = sorted({i.network for i in given.values()})
    if len(nets) > 1:
        p.append(Problem("addressing.mgmt_ips", f"the mgmt addresses are in {len(nets)} subnets ({', '.join(map(str, nets[:4]))})"
                         ": the OOB network is one", "give every mgmt address the same subnet and prefix length"))
        return dict(alloc), net, p
    net = nets[0]
    used = {i.ip for i in given.values()}
    free = (ip for ip in list(net.hosts())[1:] if ip not in used)  # the first is the clab bridge's
    out: dict[str, IPv4Interface] = {}
    for d in nodes:
        if d in given:
            out[d] = given[d]
            continue
        ip = next(free, None)
        if ip is None:
            p.append(Problem("addressing.mgmt_ips", f"{net} has no address left for {d}", "use a larger mgmt subnet"))
            break
        out[d] = IPv4Interface(f"{ip}/{net.prefixlen}")
    return out, net, p


def _used_twice(links, ends: list[LinkEnd], loopbacks, mgmt) -> list[Problem]:
    holders: dict[ipaddress.IPv4Address, list[str]] = defaultdict(list)
    by_host = {(e.host, e.nic): e for e in ends}
    for key, (leaf_side, host_side) in links.items():
        e = by_host[key]
        holders[leaf_side.ip].append(f"{e.leaf}:{e.port}")
        holders[host_side.ip].append(f"{e.host}:{e.nic}")
    for s, lo in loopbacks.items():
        holders[lo.ip].append(f"{s}'s loopback")
    for d, m in mgmt.items():
        holders[m.ip].append(f"{d}'s mgmt")
    return [Problem("addressing", f"{ip} is used twice: {' and '.join(who)}", "give each its own address")
            for ip, who in sorted(holders.items()) if len(who) > 1]


def _loopbacks_in_links(loopbacks, links, ends: list[LinkEnd]) -> list[Problem]:
    by_host = {(e.host, e.nic): e for e in ends}
    # a link's subnet by (its length, its first address): a loopback is looked up once per length
    nets = {(leaf_side.network.prefixlen, int(leaf_side.network.network_address)): (leaf_side.network, by_host[key])
            for key, (leaf_side, _) in links.items()}
    lengths = sorted({plen for plen, _ in nets})
    out = []
    for s, lo in sorted(loopbacks.items()):
        for plen in lengths:
            hit = nets.get((plen, int(lo.ip) >> (32 - plen) << (32 - plen)))
            if hit is not None:
                out.append(Problem("addressing.loopbacks", f"{s}'s loopback {lo.ip} is inside the subnet of "
                                   f"{hit[1].label} ({hit[0]})", "take loopbacks from a range of their own"))
    return out


def _planes_overlap(links, ends: list[LinkEnd], loopbacks, routed, mgmt_net: IPv4Network,
                    ranges: dict[Plane, IPv4Network], tenants: IPv4Network | None, a: Addressing) -> list[Problem]:
    """A plane's given addresses inside another plane's: its range where fablab allocates there,
    its given addresses otherwise; the mgmt subnet and the tenants' pool likewise."""
    owned: dict[str, list[tuple[IPv4Network, str]]] = defaultdict(list)
    by_host = {(e.host, e.nic): e for e in ends}
    for key, (leaf_side, _) in links.items():
        e = by_host[key]
        owned[e.plane.value.upper()].append((leaf_side.network, e.label))
    for s, lo in loopbacks.items():
        owned[routed[s][0].value.upper()].append((lo.network, f"{s}'s loopback"))
    areas = dict(owned)
    for plane in (Plane.BE, Plane.FE):
        if not a.ports or not a.loopbacks:  # fablab allocates some of this plane from its range
            areas.setdefault(plane.value.upper(), []).append((ranges[plane], f"addressing.{plane.value}"))
    areas["mgmt"] = [(mgmt_net, "the mgmt subnet")]
    if tenants is not None:
        areas["tenant"] = [(tenants, "addressing.tenants")]
    p: list[Problem] = []
    names = list(areas)
    spans = {y: Spans([n for n, _ in areas[y]]) for y in names}
    for i, x in enumerate(names):
        for y in names[i + 1:]:
            nx, wx = next(((nx, wx) for nx, wx in areas[x] if spans[y].overlaps(nx)), (None, ""))
            if nx is not None:
                ny, wy = next((ny, wy) for ny, wy in areas[y] if nx.overlaps(ny))
                p.append(Problem("addressing", f"the {x} and {y} planes overlap: {wx} {nx} and {wy} {ny}",
                                 "each plane needs addresses of its own (the planes are apart)"))
    return p


# ---------------------------------------------------------------- for make_plan


def allocated_asns(fabric: Fabric) -> dict[str, int]:
    """RFC 7938: one ASN shared by a spine tier, a unique ASN per leaf. In a 5-stage BE the
    super-spines share the plane's base ASN, each pod's spines share base + pod, and the
    leaves follow (base + pods + i): a path never re-enters the tier it left."""
    a = fabric.cluster.addressing
    out: dict[str, int] = {}
    pods = max((n.pod or 1 for n in fabric.nodes_with(Role.BE_SPINE)), default=1)
    for n in fabric.nodes_with(Role.BE_SUPERSPINE):
        out[n.name] = a.be_asn
    for spine_role, leaf_role, base, first in ((Role.BE_SPINE, Role.BE_LEAF, a.be_asn, pods if pods > 1 else 0),
                                               (Role.FE_SPINE, Role.FE_LEAF, a.fe_asn, 0)):
        for n in fabric.nodes_with(spine_role):
            out[n.name] = base + (n.pod or 0)
        for i, n in enumerate(fabric.nodes_with(leaf_role), start=1 + first):
            out[n.name] = base + i
    return out


def allocated_loopbacks(fabric: Fabric, be_block: IPv4Network, fe_block: IPv4Network) -> dict[str, IPv4Interface]:
    out: dict[str, IPv4Interface] = {}
    for plane, block in ((Plane.BE, be_block), (Plane.FE, fe_block)):
        nodes = [n for role in SWITCH_ROLES_ORDER for n in fabric.nodes_with(role) if role.plane is plane]
        for k, n in enumerate(nodes, start=1):
            out[n.name] = IPv4Interface(f"{block.network_address + k}/32")
    return out


def own_numbering_of(fabric: Fabric, rows_of, link_addr, loopbacks, asns, mgmt_addr, mgmt_net: IPv4Network,
                   be_net: IPv4Network, fe_net: IPv4Network) -> tuple[Numbered, list[Problem]]:
    """fablab's allocation with the engineer's own numbering laid over it, and its audit."""
    def leaf_port(lk: Link) -> str:
        return lk.b_port if lk.b_port is not None else rows_of[(id(lk), True)].name

    def a_port(lk: Link) -> str:
        return lk.a_port if lk.a_port is not None else rows_of[(id(lk), False)].name

    c = fabric.cluster
    ends = [LinkEnd(lk.a, lk.a_port, lk.b, leaf_port(lk), lk.plane, lk.rail) for lk in fabric.links
            if (lk.a, lk.a_port) in link_addr]
    routed = {node.name: (node.role.plane, node.role.value, node.pod) for node in fabric.switches if node.role.is_routed}
    cables = [(lk.a, a_port(lk), lk.b, leaf_port(lk)) for lk in fabric.links if lk.a in routed and lk.b in routed]
    return number(c.addressing, ends, routed, cables, [node.name for node in fabric.nodes], link_addr, loopbacks,
                  asns, mgmt_addr, mgmt_net, {Plane.BE: be_net, Plane.FE: fe_net},
                  IPv4Network(c.addressing.tenants) if c.tenants else None, c.routing.allowas_in)
