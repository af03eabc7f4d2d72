"""The deterministic plan of a fabric: addresses, ASNs, port maps, cabling and counts.

Layout of each data plane's range (say BE 10.0.0.0/16):
  block 0           switch loopbacks (/32 each)
  block 1 + r       rail r's host links on the BE (/31 each: leaf even, host odd)
  block 1 (FE)      every FE host link
  block 2 (FE)      the /32 of each dual-homed FE host
Blocks are a power of two, at least a /24, large enough for the plane's host links; the
address of a host link follows the node's index, so it reads back to the node.
The mgmt plane is flat: node k gets the (k+2)-th address (the first is left for the
containerlab management bridge).
Each routed switch runs as a SONiC HwSKU (harness/core/hwsku.py) and its ports are that HwSKU's
rows: the one `Hardware` declares for its role, else one whose ports are as fast as its links
(harness/core/portmap.py).
"""
from __future__ import annotations

import ipaddress
from collections import Counter, defaultdict
from dataclasses import dataclass
from ipaddress import IPv4Interface, IPv4Network

from harness.core.acl import compile_acl
from harness.core.numbering import allocated_asns, allocated_loopbacks, own_numbering_of
from harness.core.pools import planned_nets
from harness.core.errors import Problem, TopologyError
from harness.core.portmap import assign_rows
from harness.core.declarations import NicRole
from harness.core.model import (ECMP_HASHES, HOST_ASN, Fabric, Link, Plane, Role, oversubscription,
                           switch_mgmt_port)
from harness.core.planned import (  # the plan's types: importable from here as well
    SWITCH_ROLES_ORDER, Bom, CableRow, HostPlan, Nic, Plan, Port, SwitchPlan, TenantMember, TenantPlan)
from harness.core.tenancy import VXLAN_OVERHEAD, member_nics, tenant_subnet, tenant_vlan

__all__ = ["SWITCH_ROLES_ORDER", "Bom", "CableRow", "HostPlan", "Nic", "Plan", "Port", "SwitchPlan", "TenantMember",
           "TenantPlan", "clab_port_name", "make_plan", "media_of", "port_name", "summary"]

def port_name(index: int) -> str:
    return f"Ethernet{4 * index}"


def clab_port_name(index: int) -> str:
    return f"eth{index + 1}"


def media_of(link: Link, fabric: Fabric) -> str:
    if link.plane is Plane.MGMT:
        return "rj45"
    a_is_host = not fabric.node(link.a).is_switch
    if link.plane is Plane.FE and a_is_host:
        return "dac"
    return "optic"


def _block_size(host_links: int) -> int:
    size = 256
    while size < 2 * host_links:
        size *= 2
    return size


def _blocks(network: IPv4Network, size: int, count: int, field: str) -> list[IPv4Network]:
    prefix = 32 - (size.bit_length() - 1)
    if prefix < network.prefixlen:
        raise TopologyError([Problem(field, f"{network} is smaller than one /{prefix} block",
                                     "use a larger range, e.g. a /16")])
    blocks = list(network.subnets(new_prefix=prefix))
    if len(blocks) < count:
        raise TopologyError([Problem(field, f"{network} holds {len(blocks)} /{prefix} blocks, "
                                            f"{count} are needed (loopbacks + host links)",
                                     "use a larger range")])
    return blocks[:count]


def make_plan(fabric: Fabric) -> Plan:
    """Number every port and address every interface. Same fabric, same plan."""
    c = fabric.cluster
    n = _number(fabric)
    switches = _switch_plans(fabric, n)
    hosts = _host_plans(fabric, n)
    cables = tuple(
        CableRow(lk.a, n.end_port(lk, False), lk.b, n.end_port(lk, True), lk.plane, lk.rail, lk.speed,
                 media_of(lk, fabric))
        for lk in fabric.links)
    tenants = _tenant_plans(fabric, hosts, n.tenant_mtu)
    return Plan(fabric, tuple(switches), tuple(hosts), _oob_ports(n), cables, n.mgmt_net,
                n.rail_blocks, n.fe_blocks[1], _bom(fabric, cables), tenants,
                acl=compile_acl(c.acl, tenants, tuple(hosts)),
                originates=_originates(switches, c.routing.summarize_hosts),
                tenant_mtus=_tenant_mtus(switches, tenants),
                host_block=n.fe_blocks[2] if c.frontend.dual_homed else None,
                host_routes=_host_routes(switches, n.host_lo),
                loopback_nets=n.loopback_nets, rail_nets=n.rail_nets, fe_nets=n.fe_nets, link_nets=n.link_nets,
                plane_nets=n.plane_nets)


@dataclass(frozen=True)
class _Numbering:
    """What make_plan decides before it writes a switch or a host: address blocks, each
    switch's ports in order with its HwSKU rows, every link's addresses, ASNs and MTUs."""

    be_net: IPv4Network
    fe_net: IPv4Network
    mgmt_net: IPv4Network
    be_blocks: list[IPv4Network]
    fe_blocks: list[IPv4Network]
    ports_of: dict[str, list[tuple[Link, bool]]]  # node -> (link, the node is its upper end), port order
    skus: dict
    rows_of: dict
    breakouts: dict
    link_addr: dict[tuple[str, str], tuple[IPv4Interface, IPv4Interface]]  # (host, port) -> (leaf side, host side)
    in_tenants: dict[tuple[str, str], tuple[_Membership, ...]]
    host_lo: dict[str, IPv4Interface]  # a dual-homed host's own /32
    mgmt_addr: dict[str, IPv4Interface]
    oob_names: dict[tuple[int, bool], str]
    asn_of: dict[str, int]
    host_asn: dict[str, int]
    loopbacks: dict
    mtu_of: dict[Plane, int]
    tenant_mtu: int  # a tenant frame crosses the FE inside VXLAN
    loopback_nets: dict[Plane, tuple[IPv4Network, ...]]
    rail_nets: tuple[tuple[IPv4Network, ...], ...]
    fe_nets: tuple[IPv4Network, ...]
    link_nets: dict[Plane, tuple[IPv4Network, ...]]
    plane_nets: dict[Plane, tuple[IPv4Network, ...]]

    @property
    def rail_blocks(self) -> tuple[IPv4Network, ...]:
        return tuple(self.be_blocks[1:])

    def end_port(self, lk: Link, is_b: bool) -> str:
        fixed = lk.b_port if is_b else lk.a_port
        if fixed is not None:
            return fixed
        row = self.rows_of.get((id(lk), is_b))
        return row.name if row is not None else self.oob_names[(id(lk), is_b)]


def _number(fabric: Fabric) -> _Numbering:
    c = fabric.cluster
    be_net, fe_net = IPv4Network(c.addressing.be), IPv4Network(c.addressing.fe)
    mgmt_net = IPv4Network(c.addressing.mgmt)
    gpu_nodes = fabric.nodes_with(Role.GPU)
    fe_host_links = [lk for lk in fabric.links_in(Plane.FE) if not fabric.node(lk.a).is_switch]
    be_blocks = _blocks(be_net, _block_size(len(gpu_nodes)), 1 + c.backend.rails, "addressing.be")
    dual = c.frontend.dual_homed
    fe_blocks = _blocks(fe_net, _block_size(len(fe_host_links)), 3 if dual else 2, "addressing.fe")
    problems = _room_problems(fabric, mgmt_net, be_blocks[0], fe_blocks[0])
    ports_of = _ports_in_order(fabric)
    skus, rows_of, breakouts, sku_problems = assign_rows(fabric, ports_of)
    problems += sku_problems
    if problems:
        raise TopologyError(problems, source=fabric.name)
    in_tenants = _tenancy(fabric)
    link_addr = _link_addresses(fabric, gpu_nodes, fe_host_links, be_blocks[1:], fe_blocks[1], in_tenants)
    host_lo = {}
    if dual:  # by its order among the FE hosts, in block 2 of the FE range
        fe_hosts = list(dict.fromkeys(lk.a for lk in fe_host_links))
        host_lo = {h: IPv4Interface(f"{fe_blocks[2].network_address + 1 + k}/32") for k, h in enumerate(fe_hosts)}
    mgmt_addr = {n.name: IPv4Interface(f"{mgmt_net.network_address + k + 2}/{mgmt_net.prefixlen}")
                 for k, n in enumerate(fabric.nodes)}
    own, problems = own_numbering_of(fabric, rows_of, link_addr, allocated_loopbacks(fabric, be_blocks[0], fe_blocks[0]),
                                   allocated_asns(fabric), mgmt_addr, mgmt_net, be_net, fe_net)
    if problems:
        raise TopologyError(problems, source=fabric.name)
    link_addr, asn_of, mgmt_addr, mgmt_net = own.link_addr, own.asns, own.mgmt, own.mgmt_net
    nets = planned_nets(fabric, own.loopbacks, own.link_addr, own.mgmt_net, be_net, fe_net, be_blocks, fe_blocks)
    host_asn = {h: HOST_ASN + k for k, h in enumerate(host_lo, 1)}
    clash = next((n for n, a in asn_of.items() if a in host_asn.values()), None)
    if clash is not None:
        raise TopologyError([Problem("addressing.fe_asn", f"{clash}'s ASN {asn_of[clash]} is a dual-homed host's "
                                     f"(hosts take {HOST_ASN + 1} up)", "give the switches 2-byte ASNs")],
                            source=fabric.name)
    return _Numbering(be_net, fe_net, mgmt_net, be_blocks, fe_blocks, ports_of, skus, rows_of, breakouts, link_addr,
                      in_tenants, host_lo, mgmt_addr, _number_oob(fabric, ports_of), asn_of, host_asn,
                      own.loopbacks,
                      {Plane.BE: c.backend.mtu, Plane.FE: c.frontend.mtu, Plane.MGMT: 1500},
                      c.frontend.mtu - VXLAN_OVERHEAD, *nets)


def _room_problems(fabric: Fabric, mgmt_net: IPv4Network, be_lo: IPv4Network, fe_lo: IPv4Network) -> list[Problem]:
    """Address ranges too small for the nodes, or the loopbacks, they must hold."""
    problems: list[Problem] = []
    mgmt_hosts = mgmt_net.num_addresses - 2
    if len(fabric.nodes) - 1 + 1 > mgmt_hosts:  # +1: the clab bridge takes the first address
        problems.append(Problem("addressing.mgmt", f"{mgmt_net} has {mgmt_hosts} host addresses, "
                                                   f"{len(fabric.nodes)} are needed", "use a larger range"))
    routed = [n for n in fabric.switches if n.role.is_routed]
    for plane, block in ((Plane.BE, be_lo), (Plane.FE, fe_lo)):
        k = sum(1 for n in routed if n.role.plane is plane)
        if k > block.num_addresses - 2:
            problems.append(Problem(f"addressing.{plane.value}", f"{k} switches do not fit the loopback block {block}",
                                    "use a larger range"))
    return problems


def _ports_in_order(fabric: Fabric) -> dict[str, list[tuple[Link, bool]]]:
    """Switch ports: downlinks (links where the switch is the upper end) first, then uplinks,
    each in declaration order, so host-facing ports take the HwSKU's first rows."""
    ports_of: dict[str, list[tuple[Link, bool]]] = defaultdict(list)
    for lk in fabric.links:
        ports_of[lk.b].append((lk, True))
    for lk in fabric.links:
        if lk.a_port != switch_mgmt_port():
            ports_of[lk.a].append((lk, False))
    for node in fabric.nodes_with(Role.BE_LEAF):
        if len(node.rails) > 1:  # port groups: a leaf's host ports rail by rail (a stable sort)
            ports_of[node.name].sort(key=lambda e: (not e[1], e[0].rail if e[1] and e[0].rail is not None else 99))
    return ports_of


def _link_addresses(fabric: Fabric, gpu_nodes, fe_host_links: list[Link], rail_blocks: list[IPv4Network],
                    fe_block: IPv4Network, in_tenants) -> dict[tuple[str, str], tuple[IPv4Interface, IPv4Interface]]:
    """(host, host port) -> (leaf side, host side): a /31 per GPU NIC in its rail's block, and
    per routed FE host link in the FE block (an L2 tenant member has none)."""
    gpu_index = {n.name: i for i, n in enumerate(gpu_nodes)}
    link_addr: dict[tuple[str, str], tuple[IPv4Interface, IPv4Interface]] = {}
    for lk in fabric.links_in(Plane.BE):
        if lk.a in gpu_index and lk.rail is not None and not lk.declared:
            base = rail_blocks[lk.rail].network_address + 2 * gpu_index[lk.a]
            link_addr[(lk.a, lk.a_port)] = (IPv4Interface(f"{base}/31"), IPv4Interface(f"{base + 1}/31"))
    for i, lk in enumerate(fe_host_links):
        if (lk.a, lk.a_port) in in_tenants or lk.nic is NicRole.STORAGE:
            continue  # an L2 tenant member (a storage NIC always is); the other hosts keep their /31s
        base = fe_block.network_address + 2 * i
        link_addr[(lk.a, lk.a_port)] = (IPv4Interface(f"{base}/31"), IPv4Interface(f"{base + 1}/31"))
    return link_addr


def _switch_plans(fabric: Fabric, n: _Numbering) -> list[SwitchPlan]:
    c = fabric.cluster
    routed = [node for node in fabric.switches if node.role.is_routed]
    switches: list[SwitchPlan] = []
    for node in sorted(routed, key=lambda node: SWITCH_ROLES_ORDER.index(node.role)):
        ports = []
        ends = [(n.rows_of[(id(lk), is_b)], lk, is_b) for lk, is_b in n.ports_of[node.name]]
        for row, lk, is_b in sorted(ends, key=lambda e: e[0].position):
            peer = lk.a if is_b else lk.b
            addr = n.link_addr.get((lk.a, lk.a_port)) if is_b else None
            vlans = tuple(m.vlan for m in n.in_tenants.get((lk.a, lk.a_port), ())) if is_b else ()
            ports.append(Port(
                name=row.name, clab=row.clab, index=row.position, peer=peer,
                peer_port=n.end_port(lk, not is_b), plane=lk.plane, speed=lk.speed, mtu=n.mtu_of[lk.plane],
                address=addr[0] if addr else None, rail=lk.rail, row=row, vlans=vlans,
                peer_asn=n.host_asn.get(lk.a) if is_b and lk.plane is Plane.FE and addr else None))
        plane = node.role.plane
        cfg = c.backend if plane is Plane.BE else c.frontend
        switches.append(SwitchPlan(
            name=node.name, role=node.role, plane=plane, asn=n.asn_of[node.name],
            loopback=n.loopbacks[node.name], mgmt=n.mgmt_addr[node.name], ports=tuple(ports),
            hwsku=n.skus[node.name], breakout=n.breakouts[node.name],
            mtu=cfg.mtu, lossless=plane is Plane.BE, hash_policy=ECMP_HASHES[cfg.ecmp_hash],
            plane_range=n.be_net if plane is Plane.BE else n.fe_net,
            oversubscription=oversubscription(fabric, node.name) if node.role in OVERSUBSCRIBED else None,
            group=node.group, pod=node.pod, rails=node.rails,
            separate_rails=c.backend.kind == "rail-only" and len(node.rails) > 1,
            vnis=tuple(sorted({m.vni for p in ports for m in n.in_tenants.get((p.peer, p.peer_port), ())
                               if p.vlans}))))
    return switches


def _host_plans(fabric: Fabric, n: _Numbering) -> list[HostPlan]:
    hosts: list[HostPlan] = []
    for node in fabric.hosts:
        nics = []
        for lk in fabric.links:
            if lk.a != node.name or lk.a_port is None:
                continue
            if lk.plane is Plane.MGMT:
                nics.append(Nic(lk.a_port, Plane.MGMT, n.mgmt_addr[node.name], None, (), 1500,
                                lk.b, n.end_port(lk, True), role=lk.nic))
                continue
            if (node.name, lk.a_port) in n.in_tenants:
                nics += _tenant_nics(n.in_tenants[(node.name, lk.a_port)], lk, n.end_port(lk, True), n.tenant_mtu)
                continue
            pair = n.link_addr.get((lk.a, lk.a_port))
            if pair is None:
                continue  # a declared extra cable on a host: cabled, not addressed
            leaf_side, host_side = pair
            if lk.plane is Plane.BE:
                routes = tuple(net for net in n.rail_nets[lk.rail] if net != host_side.network)  # not its own: connected
            else:  # a routed host's routes come from BGP: a default over both its leaves
                routes = () if node.name in n.host_lo else tuple(net for net in n.plane_nets[Plane.FE]
                                                                 if net != host_side.network)
            nics.append(Nic(lk.a_port, lk.plane, host_side, leaf_side.ip, routes, n.mtu_of[lk.plane],
                            lk.b, n.end_port(lk, True), rail=lk.rail, role=lk.nic))
        hosts.append(HostPlan(node.name, node.role, tuple(nics), group=node.group, pod=node.pod,
                              loopback=n.host_lo.get(node.name), asn=n.host_asn.get(node.name)))
    return hosts


def _oob_ports(n: _Numbering) -> tuple[Port, ...]:
    oob_ports = []
    for lk, is_b in sorted(n.ports_of.get("oob1", []), key=lambda e: _port_index(n.end_port(*e))):
        index = _port_index(n.end_port(lk, is_b))
        oob_ports.append(Port(name=n.end_port(lk, True), clab=clab_port_name(index), index=index, peer=lk.a,
                              peer_port=n.end_port(lk, False), plane=Plane.MGMT, speed=lk.speed, mtu=1500,
                              address=None))
    return tuple(oob_ports)


def _host_routes(switches: list[SwitchPlan], host_lo: dict[str, IPv4Interface]) -> dict[str, tuple[IPv4Network, ...]]:
    return {sw.name: tuple(host_lo[p.peer].network for p in sw.host_peers) for sw in switches if sw.host_peers}


def _originates(switches: list[SwitchPlan], summarize: bool) -> dict[str, tuple[IPv4Network, ...]]:
    out = {}
    for sw in switches:
        hosts = [p.address.network for p in sw.host_ports]
        if hosts and summarize:
            hosts = list(ipaddress.collapse_addresses(hosts))
        out[sw.name] = (sw.loopback.network, *hosts)
    return out


def _tenant_mtus(switches: list[SwitchPlan], tenants: tuple[TenantPlan, ...]) -> dict[str, dict[str, int]]:
    """Every tenant frame is the same size, so every FE fabric port carries it: a fabric port's
    path is whatever ECMP and failover choose."""
    if not tenants:
        return {}
    frame = tenants[0].mtu
    return {s.name: {p.name: frame if p.vlans else frame + VXLAN_OVERHEAD for p in s.ports if p.vlans or p.unnumbered}
            for s in switches if s.plane is Plane.FE}


@dataclass(frozen=True)
class _Membership:
    tenant: str
    vni: int
    vlan: int
    address: IPv4Interface


def _tenancy(fabric: Fabric) -> dict[tuple[str, str], tuple[_Membership, ...]]:
    """(host, NIC) -> its tenants, in declaration order, each with the NIC's address in it
    (members numbered from the subnet's first address, in the fabric's order)."""
    out: dict[tuple[str, str], list[_Membership]] = defaultdict(list)
    for i, t in enumerate(fabric.cluster.tenants):
        net = tenant_subnet(fabric, i, t)
        for k, key in enumerate(member_nics(fabric, t)):
            out[key].append(_Membership(t.name, t.vni, tenant_vlan(i, t),
                                        IPv4Interface(f"{net.network_address + 1 + k}/{net.prefixlen}")))
    return {key: tuple(m) for key, m in out.items()}


def _tenant_nics(memberships: tuple[_Membership, ...], lk: Link, leaf_port: str, mtu: int) -> list[Nic]:
    """One tenant: the FE NIC itself, untagged. Several: a VLAN interface per tenant on it."""
    if len(memberships) == 1:
        m = memberships[0]
        return [Nic(lk.a_port, Plane.FE, m.address, None, (), mtu, lk.b, leaf_port, tenant=m.tenant, role=lk.nic)]
    return [Nic(f"{lk.a_port}.{m.vlan}", Plane.FE, m.address, None, (), mtu, lk.b, leaf_port, tenant=m.tenant,
                parent=lk.a_port, vlan=m.vlan) for m in memberships]


def _tenant_plans(fabric: Fabric, hosts: list[HostPlan], mtu: int) -> tuple[TenantPlan, ...]:
    out = []
    for i, t in enumerate(fabric.cluster.tenants):
        rows = [TenantMember(h.name, n.name, n.address, n.peer, n.peer_port)
                for h in hosts for n in h.nics if n.tenant == t.name]
        out.append(TenantPlan(t.name, t.vni, tenant_vlan(i, t), tenant_subnet(fabric, i, t), tuple(rows), mtu))
    return tuple(out)


def _number_oob(fabric: Fabric, ports_of: dict[str, list[tuple[Link, bool]]]) -> dict[tuple[int, bool], str]:
    """The OOB switch is a Linux bridge, not SONiC: its ports are numbered, skipping named ones."""
    names: dict[tuple[int, bool], str] = {}
    for node in fabric.nodes_with(Role.OOB):
        items = ports_of.get(node.name, [])
        fixed = {lk.b_port if is_b else lk.a_port for lk, is_b in items} - {None}
        index = 0
        for lk, is_b in items:
            if (lk.b_port if is_b else lk.a_port) is None:
                while port_name(index) in fixed:
                    index += 1
                names[(id(lk), is_b)] = port_name(index)
                index += 1
    return names


def _port_index(name: str) -> int:
    digits = "".join(ch for ch in name if ch.isdigit())
    return int(digits) // 4 if name.startswith("Ethernet") and digits else 10_000


# Switches with uplinks whose down:up ratio the plan reports: leaves, and a 5-stage BE's spines.
OVERSUBSCRIBED = (Role.BE_LEAF, Role.FE_LEAF, Role.BE_SPINE)


def _bom(fabric: Fabric, cables: tuple[CableRow, ...]) -> Bom:
    switches = Counter(n.role.value for n in fabric.switches)
    ports = Counter()
    media = Counter()
    optics = Counter()
    for row in cables:
        media[f"{row.media} {row.speed}G"] += 1
        for node in (row.a_node, row.b_node):
            if fabric.node(node).is_switch:
                ports[f"{row.speed}G"] += 1
        if row.media == "optic":
            optics[f"{row.speed}G"] += 2
    return Bom(tuple(sorted(switches.items())), _by_speed(ports), tuple(sorted(media.items())), _by_speed(optics))


def _by_speed(counter: Counter) -> tuple[tuple[str, int], ...]:
    return tuple(sorted(counter.items(), key=lambda kv: int(kv[0].rstrip("G").split()[-1])))


def summary(plan: Plan) -> dict:
    """Counts an engineer reads first: nodes per role, links per plane, oversubscription, BOM."""
    f = plan.fabric
    return {
        "name": f.name,
        "backend": f.cluster.backend.kind,
        "nodes": dict(sorted(Counter(n.role.value for n in f.nodes).items())),
        "links": {p.value: len(f.links_in(p)) for p in Plane},
        "gpus": f.cluster.gpu.count * f.cluster.gpu.gpus_per_node,
        # leaves, and the spines of a 5-stage BE (the second stage's ratio towards the super-spines)
        "oversubscription": {s.name: s.oversubscription for s in plan.switches
                             if s.role in (Role.BE_LEAF, Role.FE_LEAF)
                             or (s.role is Role.BE_SPINE and s.oversubscription is not None)},
        "asn": {s.name: s.asn for s in plan.switches},
        # dual-homed FE hosts: each host's own /32 and ASN (it speaks BGP to both its leaves)
        "routed_hosts": {h.name: {"loopback": str(h.loopback), "asn": h.asn} for h in plan.hosts if h.routed},
        "ranges": {"be": str(ipaddress.IPv4Network(f.cluster.addressing.be)),
                   "be_rails": [str(b) for b in plan.be_rail_blocks],
                   "fe": f.cluster.addressing.fe, "fe_hosts": str(plan.fe_block),
                   # where the numbering put each plane (the engineer's own addresses, or the ranges)
                   "planes": {p.value: [str(n) for n in nets] for p, nets in plan.plane_nets.items()},
                   "rails": [[str(n) for n in nets] for nets in plan.rail_nets],
                   "mgmt": str(plan.mgmt_network)},
        "bom": {"switches": dict(plan.bom.switches), "ports_used": dict(plan.bom.ports_used),
                "cables": dict(plan.bom.cables), "optics": dict(plan.bom.optics)},
        "tenants": [{"name": t.name, "vni": t.vni, "vlan": t.vlan, "subnet": str(t.subnet),
                     "members": [f"{m.host}:{m.nic}" for m in t.members], "leaves": list(t.leaves)}
                    for t in plan.tenants],
        "acl": {"default": f.cluster.acl.default,
                "rules": [f"{r.action} {r.protocol} {r.src} -> {r.dst}"
                          + (f" dport {r.dst_ports}" if r.dst_ports else "")
                          + (f" sport {r.src_ports}" if r.src_ports else "") for r in f.cluster.acl.rules]},
    }
