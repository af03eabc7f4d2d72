"""What a plan holds: every switch with its ports, ASN, loopback and HwSKU; every host with its
NICs; the tenants; the cabling rows; the bill of materials; and the facts that follow from them
which render, runtimes, checks and the audit all need (the compiled edge ACL, what each switch
originates, the MTU a tenant frame needs on each FE port). Frozen; `harness.core.plan.make_plan`
computes it from a fabric, deterministically, each fact once."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from ipaddress import IPv4Address, IPv4Interface, IPv4Network

from harness.core.declarations import NicRole, Plane, Role
from harness.core.fabric import Fabric
from harness.core.hwsku import PortRow
from harness.core.tenancy import PortRange


SWITCH_ROLES_ORDER = (Role.BE_SUPERSPINE, Role.BE_SPINE, Role.BE_LEAF, Role.FE_SPINE, Role.FE_LEAF)


@dataclass(frozen=True)
class AclEntry:
    """One entry of the compiled FE edge ACL (harness.core.acl), first match wins."""

    name: str  # R<rule>_<k>: the declared rule's index and which of its expansions
    rule: int | None  # index in Cluster.acl.rules; None for the default
    action: str  # permit | deny
    src: IPv4Network | None
    dst: IPv4Network | None
    protocol: int | None
    dst_ports: PortRange | None
    src_ports: PortRange | None

    def matches(self, src: IPv4Address, dst: IPv4Address, protocol: int, sport: int = 0, dport: int = 0) -> bool:
        return ((self.src is None or src in self.src) and (self.dst is None or dst in self.dst)
                and (self.protocol is None or protocol == self.protocol)
                and (self.dst_ports is None or dport in self.dst_ports)
                and (self.src_ports is None or sport in self.src_ports))


@dataclass(frozen=True)
class Port:
    """One used port of a switch."""

    name: str  # SONiC name, e.g. Ethernet8 (also the kernel name in the netns runtime)
    clab: str  # containerlab endpoint name of sonic-vs, e.g. eth3: the interface owning the port's lanes
    index: int  # row of the HwSKU's port_config.ini (0-based); on the OOB bridge, just a number
    peer: str
    peer_port: str
    plane: Plane
    speed: int
    mtu: int
    address: IPv4Interface | None  # set on host-facing ports; fabric ports are unnumbered
    rail: int | None = None
    row: PortRow | None = None  # the HwSKU's row of this port; None on the OOB bridge
    vlans: tuple[int, ...] = ()  # tenant VLANs of an FE leaf's L2 port (tagged when several)
    peer_asn: int | None = None  # a host port whose host speaks BGP to this leaf (a dual-homed FE host)

    @property
    def unnumbered(self) -> bool:
        """A fabric port: no address of its own (BGP unnumbered), not a tenant's L2 port."""
        return self.address is None and not self.vlans

    @property
    def tagged(self) -> bool:
        return len(self.vlans) > 1


@dataclass(frozen=True)
class SwitchPlan:
    name: str
    role: Role
    plane: Plane
    asn: int
    loopback: IPv4Interface
    mgmt: IPv4Interface
    ports: tuple[Port, ...]
    mtu: int
    lossless: bool
    hash_policy: int
    plane_range: IPv4Network
    oversubscription: float | None
    hwsku: str
    group: int | None = None
    pod: int | None = None  # a 5-stage BE's pod of a leaf or spine
    rails: tuple[int, ...] = ()  # the rails a BE leaf carries, each in a port group of its own
    # A rail-only leaf of several rails: its rails must not reach each other through it (no
    # spine joins rails in a rail-only fabric); SONiC gives each a VRF.
    separate_rails: bool = False
    vnis: tuple[int, ...] = ()  # tenant VNIs with members behind this leaf (it is their VTEP)
    # (parent port, breakout mode) of every cage of a HwSKU with breakout modes: the HwSKU's own,
    # or the mode a cage was broken out to for links slower than its ports (SONiC's BREAKOUT_CFG)
    breakout: tuple[tuple[str, str], ...] = ()

    @property
    def router_id(self) -> IPv4Address:
        return self.loopback.ip

    @property
    def fabric_ports(self) -> tuple[Port, ...]:
        return tuple(p for p in self.ports if p.unnumbered)

    @property
    def host_ports(self) -> tuple[Port, ...]:
        """Routed ports towards hosts (each with its /31)."""
        return tuple(p for p in self.ports if p.address is not None)

    @property
    def host_peers(self) -> tuple[Port, ...]:
        """Host ports with a BGP session to the host behind them (dual-homed FE hosts)."""
        return tuple(p for p in self.ports if p.peer_asn is not None)

    @property
    def tenant_ports(self) -> tuple[Port, ...]:
        return tuple(p for p in self.ports if p.vlans)

    @property
    def port_groups(self) -> dict[int, tuple[Port, ...]]:
        """A BE leaf's host ports by rail: one group per rail it carries, contiguous ports."""
        return {r: tuple(p for p in self.host_ports if p.rail == r) for r in self.rails}

    def group_of(self, port: str) -> int | None:
        """The rail whose port group holds `port` (None: an uplink, or not a BE leaf's port)."""
        return next((p.rail for p in self.host_ports if p.name == port), None)


@dataclass(frozen=True)
class Nic:
    """One interface of a host, with the routes that must leave through it."""

    name: str
    plane: Plane
    address: IPv4Interface
    gateway: IPv4Address | None
    routes: tuple[IPv4Network, ...]
    mtu: int
    peer: str
    peer_port: str
    rail: int | None = None
    tenant: str | None = None  # an FE NIC in a tenant: an L2 member, addressed in the tenant's subnet
    parent: str | None = None  # a tagged tenant NIC's physical NIC (fe0.101 on fe0)
    vlan: int | None = None
    role: NicRole | None = None  # what it is for, whatever its name (None: a tenant's tagged NIC)

    @property
    def physical(self) -> str:
        return self.parent or self.name


@dataclass(frozen=True)
class TenantMember:
    host: str
    nic: str
    address: IPv4Interface
    leaf: str
    leaf_port: str


@dataclass(frozen=True)
class TenantPlan:
    name: str
    vni: int
    vlan: int
    subnet: IPv4Network
    members: tuple[TenantMember, ...]
    mtu: int  # the largest tenant frame: the FE's MTU less VXLAN's overhead, which the underlay carries

    @property
    def leaves(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(m.leaf for m in self.members))


@dataclass(frozen=True)
class HostPlan:
    name: str
    role: Role
    nics: tuple[Nic, ...]
    group: int | None = None
    pod: int | None = None  # a 5-stage BE's pod of a GPU node
    # A dual-homed FE host is routed: its FE address is this /32 on lo, announced over BGP
    # (asn) to both its leaves; its FE NICs keep their /31s to reach them.
    loopback: IPv4Interface | None = None
    asn: int | None = None

    @property
    def routed(self) -> bool:
        return self.loopback is not None

    @property
    def fe_nics(self) -> tuple[Nic, ...]:
        """The routed (not tenant) FE NICs that carry the host's FE traffic: one, or two when dual-homed."""
        return tuple(n for n in self.nics if n.plane is Plane.FE and n.tenant is None and n.role is not NicRole.STORAGE)

    def nic(self, name: str) -> Nic:
        for n in self.nics:
            if n.name == name:
                return n
        raise KeyError(f"{self.name} has no NIC {name!r}")

    @property
    def mgmt(self) -> Nic:
        """The management NIC (mgmt0; a runtime may name it otherwise, e.g. eth0 on containerlab)."""
        for n in self.nics:
            if n.plane is Plane.MGMT:
                return n
        raise KeyError(f"{self.name} has no management NIC")


@dataclass(frozen=True)
class CableRow:
    a_node: str
    a_port: str
    b_node: str
    b_port: str
    plane: Plane
    rail: int | None
    speed: int
    media: str

    @property
    def ends(self) -> tuple[tuple[str, str], tuple[str, str]]:
        return (self.a_node, self.a_port), (self.b_node, self.b_port)

    @property
    def label(self) -> str:
        return f"{self.a_node}:{self.a_port}–{self.b_node}:{self.b_port}"


@dataclass(frozen=True)
class Bom:
    """What to buy: switches per role, cables per media, optics per speed."""

    switches: tuple[tuple[str, int], ...]
    ports_used: tuple[tuple[str, int], ...]  # "400G" -> ports in use on switches
    cables: tuple[tuple[str, int], ...]
    optics: tuple[tuple[str, int], ...]


@dataclass(frozen=True)
class Plan:
    fabric: Fabric
    switches: tuple[SwitchPlan, ...]
    hosts: tuple[HostPlan, ...]
    oob: tuple[Port, ...]  # the OOB switch's ports
    cables: tuple[CableRow, ...]
    mgmt_network: IPv4Network
    be_rail_blocks: tuple[IPv4Network, ...]
    fe_block: IPv4Network
    bom: Bom
    tenants: tuple[TenantPlan, ...] = ()
    # The FE edge ACL compiled to concrete prefixes, first match wins, the default last
    # (harness.core.acl): SONiC's ACL_RULEs, the netns nftables rules and the verdicts a lab
    # expects are all read from here.
    acl: tuple[AclEntry, ...] = ()
    # switch -> what it advertises: its loopback, then its host links one /31 each or, with
    # `Routing.summarize_hosts`, the fewest prefixes that cover them.
    originates: Mapping[str, tuple[IPv4Network, ...]] = field(default_factory=dict, hash=False)
    # FE switch -> port -> the least MTU that carries a tenant frame there: the tenant MTU on a
    # member port, that plus VXLAN's overhead on every fabric port a tenant frame may cross.
    tenant_mtus: Mapping[str, Mapping[str, int]] = field(default_factory=dict, hash=False)
    # A dual-homed FE: the block of the hosts' /32s, and leaf -> the /32s of the hosts behind it
    # (heard from them, passed on to the spines).
    host_block: IPv4Network | None = None
    host_routes: Mapping[str, tuple[IPv4Network, ...]] = field(default_factory=dict, hash=False)
    # Where the numbering put things (fablab's blocks, or the engineer's own addresses collapsed):
    # each plane's loopbacks; each rail's host links (a GPU NIC routes its rail's); the FE's routed
    # host links; and each plane's whole address space (what isolation holds apart).
    loopback_nets: Mapping[Plane, tuple[IPv4Network, ...]] = field(default_factory=dict, hash=False)
    rail_nets: tuple[tuple[IPv4Network, ...], ...] = ()
    fe_nets: tuple[IPv4Network, ...] = ()
    link_nets: Mapping[Plane, tuple[IPv4Network, ...]] = field(default_factory=dict, hash=False)  # each plane's host links
    plane_nets: Mapping[Plane, tuple[IPv4Network, ...]] = field(default_factory=dict, hash=False)

    def plane_of(self, net: IPv4Network) -> Plane | None:
        """The plane whose address space holds `net` (None: no plane's)."""
        return next((p for p, nets in self.plane_nets.items() if any(net.subnet_of(n) for n in nets)), None)

    def tenant(self, name: str) -> TenantPlan:
        for t in self.tenants:
            if t.name == name:
                return t
        raise KeyError(name)

    @property
    def name(self) -> str:
        return self.fabric.name

    def switch(self, name: str) -> SwitchPlan:
        for s in self.switches:
            if s.name == name:
                return s
        raise KeyError(name)

    def host(self, name: str) -> HostPlan:
        for h in self.hosts:
            if h.name == name:
                return h
        raise KeyError(name)

    def originated(self, sw: SwitchPlan) -> tuple[IPv4Network, ...]:
        """What sw advertises (`originates`)."""
        return self.originates[sw.name]

    def heard(self, sw: SwitchPlan) -> tuple[IPv4Network, ...]:
        """The /32s of the dual-homed hosts behind sw (what it hears from them and passes on)."""
        return tuple(self.host_routes.get(sw.name, ()))

    def route_prefix(self, nic: Nic, host: HostPlan | None = None) -> IPv4Network:
        """The prefix the fabric carries a host NIC's address in: its /31, or its leaf's summary;
        a routed host's own /32 when `host` is one."""
        if host is not None and host.loopback is not None:
            return host.loopback.network
        leaf = self.switch(nic.peer)
        return next(p for p in self.originated(leaf) if nic.address.ip in p)
