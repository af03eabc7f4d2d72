"""FE tenants and the edge ACL: members resolved over the built nodes, the declaration
validated (one problem per field, with a fix), VLANs and subnets assigned.

A tenant is an L2 segment stretched over the FE leaves by BGP EVPN (type-2 routes carry its
MACs and IPs, type-3 its flood list, VXLAN its frames). There is no anycast gateway on the
leaves: an SVI per tenant needs a VRF per tenant to keep tenants apart at L3, and the kernel
fablab runs on here has none. So tenants reach each other only through a host that is a
member of both (a gateway), never through the fabric.
"""
from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from ipaddress import IPv4Network

from harness.core.errors import Problem
from harness.core.declarations import (ACL_ACTIONS, ACL_PROTOCOLS, FE_NIC, STORAGE_NIC, AclRule, NicRole, Plane,
                                  Role, Tenant)
from harness.core.fabric import Fabric

VXLAN_OVERHEAD = 50  # outer Ethernet 14 + IPv4 20 + UDP 8 + VXLAN 8: a tenant frame's MTU is the FE's minus this
FIRST_VLAN = 100
NFT_TABLE = "fablab_fe_edge"  # the netns runtime's edge ACL (nftables, bridge family)
VXLAN_PORT = 4789  # IANA's, as SONiC and the kernel use it


def bridge_device(vni: int) -> str:
    """The netns runtime's bridge of a tenant on a leaf (one per VNI: no VLAN-aware bridge there)."""
    return f"br{vni}"


def vxlan_device(vni: int) -> str:
    return f"vx{vni}"


_HOST_ROLES = {r.value: r for r in (Role.GPU, Role.CPU, Role.STORAGE, Role.GATEWAY)}


@dataclass(frozen=True)
class PortRange:
    low: int
    high: int

    def __str__(self) -> str:
        return str(self.low) if self.low == self.high else f"{self.low}-{self.high}"

    def __contains__(self, port: int) -> bool:
        return self.low <= port <= self.high


def tenant_vlan(index: int, tenant: Tenant) -> int:
    return tenant.vlan if tenant.vlan is not None else FIRST_VLAN + index


def tenant_subnet(fabric: Fabric, index: int, tenant: Tenant) -> IPv4Network:
    if tenant.subnet is not None:
        return IPv4Network(tenant.subnet)
    pool = IPv4Network(fabric.cluster.addressing.tenants)
    prefix = max(24, pool.prefixlen)
    if index >= 1 << (prefix - pool.prefixlen):
        raise IndexError(f"{pool} has no subnet {index}")
    return IPv4Network((int(pool.network_address) + (index << (32 - prefix)), prefix))


def members(fabric: Fabric, tenant: Tenant) -> tuple[str, ...]:
    """The hosts a tenant's member patterns name, in the fabric's order."""
    hosts = fabric.hosts
    chosen = set()
    for pattern in tenant.members:
        chosen |= set(_match(hosts, pattern))
    return tuple(h.name for h in hosts if h.name in chosen)


def member_nics(fabric: Fabric, tenant: Tenant) -> tuple[tuple[str, str], ...]:
    """(host, NIC) of every member: the tenant's `nic` where the host has it, else its FE NIC.
    `st0` and `fe0` mean the storage and the FE NIC whatever a cabling plan names them."""
    nic_of = _nics_by_role(fabric)
    want = _ROLE_OF.get(tenant.nic)
    out = []
    for h in members(fabric, tenant):
        if want is None:  # a NIC by its own name
            has = any(lk.a == h and lk.a_port == tenant.nic for lk in fabric.links_in(Plane.FE))
            out.append((h, tenant.nic if has else nic_of.get((h, NicRole.FE), FE_NIC)))
        else:
            out.append((h, nic_of.get((h, want)) or nic_of.get((h, NicRole.FE), FE_NIC)))
    return tuple(out)


_ROLE_OF = {FE_NIC: NicRole.FE, STORAGE_NIC: NicRole.STORAGE}


def _nics_by_role(fabric: Fabric) -> dict[tuple[str, NicRole], str]:
    return {(lk.a, lk.nic): lk.a_port for lk in fabric.links_in(Plane.FE) if lk.nic is not None and lk.a_port}


def _match(hosts, pattern: str) -> list[str]:
    if pattern.startswith("role:"):
        role = _HOST_ROLES.get(pattern[5:])
        return [h.name for h in hosts if h.role is role]
    return [h.name for h in hosts if fnmatch.fnmatchcase(h.name, pattern)]


def parse_ports(text: str) -> PortRange | None:
    """'' is any port; '2049' one; '8000-8100' a range. ValueError names what is wrong."""
    if text in ("", None):
        return None
    low, _, high = str(text).partition("-")
    try:
        lo, hi = int(low), int(high or low)
    except ValueError:
        raise ValueError(f"{text!r} is not a port or a range") from None
    if not 1 <= lo <= hi <= 65535:
        raise ValueError(f"{text!r}: ports are 1..65535, low before high")
    return PortRange(lo, hi)


# --------------------------------------------------------------------------- validation


def check_tenancy(fabric: Fabric) -> list[Problem]:
    c = fabric.cluster
    p: list[Problem] = []
    if not isinstance(c.tenants, tuple) or not all(isinstance(t, Tenant) for t in c.tenants):
        return [Problem("tenants", f"{c.tenants!r} is not a tuple of Tenant",
                        "write tenants=(Tenant('alpha', vni=10100, members=('gpu01',)),)")]
    hosts = fabric.hosts
    seen: dict[str, dict] = {"name": {}, "vni": {}, "vlan": {}}
    subnets: list[tuple[str, IPv4Network]] = []
    try:
        pool = IPv4Network(c.addressing.tenants)
    except ValueError:
        pool = None  # reported with the addressing
    for i, t in enumerate(c.tenants):
        where = f"tenants[{i}]"
        if not isinstance(t.name, str) or not t.name.replace("-", "").isalnum() or not t.name[:1].isalpha() \
                or len(t.name) > 15:
            p.append(Problem(f"{where}.name", f"{t.name!r} is not a usable tenant name",
                             "letters, digits and '-', starting with a letter, at most 15"))
        if not isinstance(t.vni, int) or not 1 <= t.vni <= 16777214:
            p.append(Problem(f"{where}.vni", f"{t.vni!r} is not a VXLAN VNI", "use 1..16777214, e.g. 10100"))
        elif c.addressing.fe_asn > 0xFFFF and t.vni > 0xFFFF:
            p.append(Problem(f"{where}.vni", f"VNI {t.vni} does not fit the route target {c.addressing.fe_asn}:VNI "
                             "(a 4-byte ASN leaves 16 bits for the VNI)", "use a VNI up to 65535, or a 2-byte fe_asn"))
        vlan = tenant_vlan(i, t)
        if not isinstance(vlan, int) or not 2 <= vlan <= 4094:
            p.append(Problem(f"{where}.vlan", f"{vlan!r} is not a usable VLAN", "use 2..4094 (1 is the default VLAN)"))
        for key, value in (("name", t.name), ("vni", t.vni), ("vlan", vlan)):
            if value in seen[key]:
                p.append(Problem(f"{where}.{key}", f"{key} {value!r} is already tenants[{seen[key][value]}]'s",
                                 f"give each tenant its own {key}"))
            else:
                seen[key][value] = i
        if t.nic not in (FE_NIC, STORAGE_NIC):
            p.append(Problem(f"{where}.nic", f"{t.nic!r} is not an FE-side NIC", f"use {FE_NIC!r} or {STORAGE_NIC!r}"))
        elif t.nic == STORAGE_NIC and not c.frontend.storage_nics:
            p.append(Problem(f"{where}.nic", f"GPU nodes have no {STORAGE_NIC} (frontend.storage_nics is False)",
                             "set frontend.storage_nics=True, or join with nic='fe0'"))
        if isinstance(t.members, str) or not isinstance(t.members, tuple) or not t.members:
            p.append(Problem(f"{where}.members", f"{t.members!r}: members are a non-empty tuple of names",
                             "e.g. members=('gpu0[1-4]', 'role:storage', 'gw1')"))
        else:
            for k, pattern in enumerate(t.members):
                if not isinstance(pattern, str) or not _match(hosts, pattern):
                    p.append(Problem(f"{where}.members[{k}]", f"{pattern!r} names no host",
                                     _member_hint(fabric, pattern)))
        try:
            net = tenant_subnet(fabric, i, t) if pool is not None or t.subnet is not None else None
        except ValueError as e:
            p.append(Problem(f"{where}.subnet", f"{t.subnet!r} is not an IPv4 network ({e})",
                             "write it like 10.32.0.0/24 with no host bits set"))
            net = None
        except IndexError:
            p.append(Problem("addressing.tenants", f"{pool} has no /24 left for tenant {t.name!r}",
                             "use a larger range or give the tenant a subnet"))
            net = None
        if net is not None:
            count = len(members(fabric, t)) if isinstance(t.members, tuple) else 0
            if count > net.num_addresses - 2:
                p.append(Problem(f"{where}.subnet", f"{net} holds {net.num_addresses - 2} hosts, "
                                 f"the tenant has {count}", "give the tenant a larger subnet"))
            for other, onet in subnets:
                if net.overlaps(onet):
                    p.append(Problem(f"{where}.subnet", f"{net} overlaps tenant {other!r}'s {onet}",
                                     "give each tenant its own subnet"))
            for plane in ("be", "fe", "mgmt"):
                try:
                    pnet = IPv4Network(getattr(c.addressing, plane))
                except ValueError:
                    continue
                if net.overlaps(pnet):
                    p.append(Problem(f"{where}.subnet", f"{net} overlaps addressing.{plane} {pnet}",
                                     "take tenant subnets from addressing.tenants"))
            subnets.append((t.name, net))
    if c.frontend.storage_nics and all(isinstance(t, Tenant) and isinstance(t.members, tuple) for t in c.tenants):
        joined = {m for t in c.tenants for m in member_nics(fabric, t)}
        nic_of = _nics_by_role(fabric)
        loose = [h.name for h in fabric.nodes_with(Role.GPU)
                 if (h.name, nic_of.get((h.name, NicRole.STORAGE), STORAGE_NIC)) not in joined]
        if loose:
            p.append(Problem("frontend.storage_nics", f"{len(loose)} storage NICs are in no tenant "
                             f"({', '.join(loose[:4])}{', ...' if len(loose) > 4 else ''})",
                             "declare the storage plane: Tenant('storage', vni=..., members=('role:gpu', "
                             "'role:storage'), nic='st0')"))
    if c.tenants and c.frontend.mtu - VXLAN_OVERHEAD < 1280:
        p.append(Problem("frontend.mtu", f"MTU {c.frontend.mtu} leaves tenants "
                         f"{c.frontend.mtu - VXLAN_OVERHEAD} after VXLAN's {VXLAN_OVERHEAD} bytes",
                         "raise frontend.mtu (9100 carries 9050-byte tenant frames)"))
    p += check_acl(fabric)
    return p


def _member_hint(fabric: Fabric, pattern: object) -> str:
    if isinstance(pattern, str) and pattern.startswith("role:"):
        return f"roles: {', '.join('role:' + r for r in _HOST_ROLES)}"
    names = [h.name for h in fabric.hosts]
    shown = ", ".join(names[:6]) + (", ..." if len(names) > 6 else "")
    return f"use host names or patterns over them ({shown}), or role:gpu|cpu|storage|gateway"


def check_acl(fabric: Fabric) -> list[Problem]:
    acl = fabric.cluster.acl
    p: list[Problem] = []
    if acl.default not in ACL_ACTIONS:
        p.append(Problem("acl.default", f"unknown action {acl.default!r}", f"use one of {', '.join(ACL_ACTIONS)}"))
    if acl.rules and not fabric.cluster.tenants:
        p.append(Problem("acl.rules", "ACL rules but no tenants: the edge ACL sits on tenant members' ports",
                         "declare tenants, or drop the rules"))
    tenants = {t.name for t in fabric.cluster.tenants}
    hosts = {h.name for h in fabric.hosts}
    for i, r in enumerate(acl.rules):
        where = f"acl.rules[{i}]"
        if not isinstance(r, AclRule):
            p.append(Problem(where, f"{r!r} is not an AclRule", "write AclRule('deny', src='role:gpu', ...)"))
            continue
        if r.action not in ACL_ACTIONS:
            p.append(Problem(f"{where}.action", f"unknown action {r.action!r}", f"use one of {', '.join(ACL_ACTIONS)}"))
        if r.protocol not in ACL_PROTOCOLS:
            p.append(Problem(f"{where}.protocol", f"unknown protocol {r.protocol!r}",
                             f"use one of {', '.join(ACL_PROTOCOLS)}"))
        for side in ("src", "dst"):
            spec = getattr(r, side)
            kind, _, name = spec.partition(":") if ":" in spec else ("host", "", spec)
            ok = (spec == "any" or (kind == "tenant" and name in tenants) or (kind == "role" and name in _HOST_ROLES)
                  or (kind == "host" and spec in hosts))
            if not ok:
                p.append(Problem(f"{where}.{side}", f"{spec!r} names nothing",
                                 f"use any, tenant:NAME ({', '.join(sorted(tenants)) or 'none declared'}), "
                                 f"role:{'|'.join(_HOST_ROLES)} or a host name"))
        for side in ("dst_ports", "src_ports"):
            text = getattr(r, side)
            try:
                ports = parse_ports(text)
            except ValueError as e:
                p.append(Problem(f"{where}.{side}", str(e), "write '2049' or '8000-8100', or '' for any"))
                continue
            if ports is not None and r.protocol in ACL_PROTOCOLS and r.protocol not in ("tcp", "udp"):
                p.append(Problem(f"{where}.{side}", f"ports with protocol {r.protocol!r}",
                                 "ports need protocol 'tcp' or 'udp'"))
    return p


