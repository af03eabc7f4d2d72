"""What an engineer declares about an AI cluster, and the fabric a declaration expands to.

A `Cluster` is counts, kinds, speeds and ranges (frozen dataclasses); a `Fabric` is every node
and every cable, each tagged with its plane. Types only: `harness.core.model.build` validates a
declaration and expands it. A wrong call of a declaration class (an unknown field, a missing
one) is a declaration error naming its section (harness.core.declguard), not Python's TypeError.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import Enum

from harness.core.declguard import guard
from harness.core.defaults import follow
from harness.core.errors import Problem
from harness.core.hwsku import HwSku
from harness.core.lossless_declaration import ROCE_MTUS, Dcqcn, Ecn, Lossless  # noqa: F401 (re-exported)


class Plane(str, Enum):
    FE = "fe"
    BE = "be"
    MGMT = "mgmt"


class NicRole(str, Enum):
    """What a host NIC is for, whatever it is named (fablab's rail0/fe0, or enp12s0np0 in a plan)."""

    RAIL = "rail"  # a GPU's BE NIC on its rail
    FE = "fe"  # the FE NIC (the first of a dual-homed host's two)
    FE2 = "fe2"  # a dual-homed host's FE NIC on the second leaf of its pair
    STORAGE = "storage"  # a GPU node's storage NIC, beside its FE NIC on the same leaf
    MGMT = "mgmt"


class Role(str, Enum):
    GPU = "gpu"
    CPU = "cpu"
    STORAGE = "storage"
    GATEWAY = "gateway"
    BE_LEAF = "be-leaf"
    BE_SPINE = "be-spine"
    BE_SUPERSPINE = "be-superspine"
    FE_LEAF = "fe-leaf"
    FE_SPINE = "fe-spine"
    OOB = "oob-switch"

    @property
    def is_switch(self) -> bool:
        return self in _SWITCH_PLANE

    @property
    def plane(self) -> Plane | None:
        """The plane a switch belongs to; hosts sit on several planes, so None."""
        return _SWITCH_PLANE.get(self)

    @property
    def is_routed(self) -> bool:
        """Switches that run BGP (the OOB switch is a plain L2 segment)."""
        return self.is_switch and self is not Role.OOB


_SWITCH_PLANE = {
    Role.BE_LEAF: Plane.BE,
    Role.BE_SPINE: Plane.BE,
    Role.BE_SUPERSPINE: Plane.BE,
    Role.FE_LEAF: Plane.FE,
    Role.FE_SPINE: Plane.FE,
    Role.OOB: Plane.MGMT,
}

BACKEND_KINDS = ("rail-only", "rail-optimized")
ECMP_HASHES = {"l3": 0, "l4": 1}  # value of net.ipv4.fib_multipath_hash_policy
SPEEDS_GBPS = (1, 10, 25, 40, 50, 100, 200, 400, 800, 1600)
_NAME = re.compile(r"^[a-z][a-z0-9-]{0,30}$")
# A lab name: a cluster name of at most 24 characters, the runtimes' limit (run directory
# /run/fablab/<lab>, namespaces fl_<lab>_<node>, FRR's -N pathspace, containers fablab-<lab>-<node>).
LAB_NAME_MAX = 24
_LAB_NAME = re.compile(rf"[a-z][a-z0-9-]{{0,{LAB_NAME_MAX - 1}}}")


def check_lab_name(name: object, field: str = "name") -> list[Problem]:
    """The problem with a lab name (`render --name`, `Lab.up(name=...)`), if any."""
    if isinstance(name, str) and _LAB_NAME.fullmatch(name):
        return []
    return [Problem(field, f"{name!r} is not a usable lab name",
                    f"lower-case letters, digits and '-', starting with a letter, at most {LAB_NAME_MAX}, e.g. lab1")]


_SWITCH_MGMT_PORT = "eth0"  # SONiC's management port name


# --------------------------------------------------------------------------- declarations


@dataclass(frozen=True)
class GpuNodes:
    """GPU servers: one BE NIC per GPU (NIC r on rail r), one FE NIC, one mgmt port."""

    count: int = 8  # GPU nodes, >= 1
    gpus_per_node: int = 4  # GPUs per node, each with its BE NIC on its rail; >= 1
    nic_speed: int = 400  # Gb/s of each BE (rail) NIC
    fe_speed: int = 100  # Gb/s of each GPU node's FE NIC
    prefix: str = "gpu"  # GPU node names: gpu01, gpu02, ...


@dataclass(frozen=True)
class Backend:
    """The GPU (compute) fabric.

    rail-only: one leaf per rail, no spine; cross-rail traffic stays in the node (NVLink).
    rail-optimized: nodes split in `groups` (pods); each group has one leaf per rail; every
    leaf connects to every spine with `uplinks_per_spine` links.
    `rails_per_leaf=k`: a leaf carries k consecutive rails (`rails` must divide by k), each in
    its own port group: the leaf's first ports, rail by rail, one port per GPU node of the
    group, contiguous (rails 0-1 on one leaf: rail 0's NICs on its first ports, then rail 1's);
    then its uplinks, which every rail of the leaf shares. In a rail-only fabric the rails of
    one leaf stay apart as they would on leaves of their own (a VRF per rail on SONiC).
    `pods=P, superspines=S` (rail-optimized): a 5-stage fabric. Each pod is a 3-stage fabric
    of its own (`groups` and `spines` count per pod) and every spine has
    `uplinks_per_superspine` links (at `uplink_speed`) to the super-spine tier: to every
    super-spine while their radix allows (pods × spines × uplinks_per_superspine <=
    superspine_ports), else in planes, spine j of every pod to plane j's S / spines
    super-spines. `pods=1` (the default) is the 3-stage fabric and has no super-spine.
    Left None, `spines` and the uplinks follow the rest of the declaration (harness.core.defaults):
    no spine on rail-only, and as many uplinks as make the fabric non-blocking, unless
    `allow_oversubscription=True` declares it oversubscribed on purpose.
    """

    kind: str = "rail-optimized"  # rail-only: a leaf per rail, no spine; rail-optimized: groups, spines (and pods)
    rails: int = 4  # one per GPU of a node: equal to gpu.gpus_per_node
    rails_per_leaf: int = 1  # consecutive rails on one leaf; divides rails
    groups: int = 2  # rail-optimized: node groups per pod, each with a leaf per rail; divides gpu.count
    spines: int | None = None  # per pod; None: 0 on rail-only, else 2
    leaf_ports: int = 64  # data ports of a BE leaf
    spine_ports: int = 64  # data ports of a BE spine
    uplink_speed: int = 800  # Gb/s of every leaf-spine and spine-super-spine link
    uplinks_per_spine: int | None = None  # links from each leaf to each spine; None: non-blocking (or 1)
    pods: int = 1  # 1: a 3-stage fabric; P >= 2: 5-stage, P pods joined by super-spines
    superspines: int = 0  # the super-spine tier of a 5-stage fabric (0 with one pod)
    superspine_ports: int = 64  # data ports of a super-spine
    uplinks_per_superspine: int | None = None  # links from a spine to each super-spine; None: non-blocking (or 1)
    mtu: int = 9100  # IP MTU of every BE port, 1280..9216; must hold a RoCE frame (lossless.roce_mtu)
    allow_oversubscription: bool = False  # True: less up than down is declared on purpose (uplinks default to 1)
    ecmp_hash: str = "l4"  # l3 or l4: the hosts' multipath hash (fib_multipath_hash_policy)


@dataclass(frozen=True)
class Frontend:
    """The north-south Clos: GPU nodes' FE NICs, CPU and storage servers, gateways.
    `storage_nics`: every GPU node also has a storage NIC (`st0`, `storage_nic_speed`) on its
    FE leaf, for the storage plane: a tenant declared with `nic='st0'` (see Tenant).
    `dual_homed`: every FE host has a second FE NIC (`fe1`) on the other leaf of a leaf pair
    (fe-l1/fe-l2, fe-l3/fe-l4, ...), routed: the host runs BGP to both leaves and announces
    its own /32 (docs/concepts.md, "A dual-homed frontend")."""

    spines: int = 2  # FE spines, >= 1
    leaves: int = 2  # FE leaves (racks), >= 1; even when dual_homed
    leaf_ports: int = 48  # data ports of an FE leaf
    spine_ports: int = 32  # data ports of an FE spine
    host_speed: int = 100  # Gb/s of the servers' and gateways' FE NICs
    uplink_speed: int = 400  # Gb/s of every FE leaf-spine link
    cpu_servers: int = 0  # CPU servers (cpu1, ...), >= 0
    storage_servers: int = 2  # storage servers (stor1, ...), >= 0
    gateways: int = 1  # gateways (gw1, ...), >= 0
    mtu: int = 1500  # IP MTU of every FE port, 1280..9216
    ecmp_hash: str = "l4"  # l3 or l4: the hosts' multipath hash
    storage_nics: bool = False  # every GPU node also has a storage NIC st0 on its FE leaf
    storage_nic_speed: int = 200  # Gb/s of the storage NICs
    dual_homed: bool = False  # every FE host also has fe1 on the other leaf of its pair, routed (BGP)


@dataclass(frozen=True)
class Management:
    """The out-of-band plane: one L2 switch that every node's management port plugs into."""

    ports: int = 256  # ports of the OOB switch
    speed: int = 1  # Gb/s of every management link


@dataclass(frozen=True)
class Addressing:
    """Disjoint ranges per plane, and the ASN of each spine tier (leaves count up from it):
    fablab's allocation. Or the engineer's own numbering, item by item (harness/core/numbering.py):
    `asns` and `loopbacks` for every routed switch, `ports` for every addressed host link (either
    end: the other is the rest of its /31 or /30), `mgmt_ips` for any node. Given, they are the
    plan, whatever ranges they come from; the ranges then only allocate what they leave out."""

    be: str = "10.0.0.0/16"  # BE range (IPv4 network), disjoint from the others
    fe: str = "10.16.0.0/16"  # FE range
    mgmt: str = "172.31.0.0/20"  # management range
    tenants: str = "10.32.0.0/16"  # FE tenant subnets (one /24 each unless declared)
    be_asn: int = 64600  # the BE spines' ASN (1..4294967294); leaves count up from it
    fe_asn: int = 65100  # the FE spines' ASN; leaves count up from it
    asns: tuple[tuple[str, int], ...] = ()  # (switch, ASN) for every routed switch, or none
    loopbacks: tuple[tuple[str, str], ...] = ()  # (switch, "10.255.0.1/32") for every routed switch, or none
    ports: tuple[tuple[str, str, str], ...] = ()  # (device, port or NIC, "10.1.7.4/31"): host links' ends
    mgmt_ips: tuple[tuple[str, str], ...] = ()  # (device, "172.31.0.10/20"): the rest from `mgmt`


@dataclass(frozen=True)
class Routing:
    """What the leaves advertise for their host links.

    summarize_hosts: the fewest prefixes covering a leaf's host links (one /27 for a rail
    leaf of 16 GPUs, as the plan's addressing aligns them) instead of one /31 each. One
    event behind a BFD session or a spine then rewrites a leaf's few summaries, not every
    GPU's /31 (xlarge: 1,071 routes per leaf, 1.0–1.6 s for a gray failure on this machine).
    A host link that fails stays inside its leaf's summary: traffic to it is dropped at
    the leaf, not rerouted (there is no other way to that NIC anyway).

    keepalive_s and hold_s: BGP's timers on every session, FRR's datacenter 3 s and 9 s by
    default. BFD, not the hold time, detects a failure on time; a fabric of thousands of
    sessions on few cores declares slower ones (docs/examples/gpu4096.py: at 3 s, a bgpd
    starved for 9 s lost its sessions as they came up, and gpu4096 never converged here).
    """

    summarize_hosts: bool = False  # leaves advertise the fewest prefixes covering their host links
    keepalive_s: int = 3  # BGP keepalive, >= 1 and at most a third of hold_s
    hold_s: int = 9  # BGP hold time, >= 3
    allowas_in: int = 0  # leaves accept their own ASN this many times in a path (1..10; 0: never), for leaves sharing one


@dataclass(frozen=True)
class Bfd:
    """BFD on every fabric session, through a named FRR profile.

    offload: the sessions run in the lab's BFD data plane ("the ASIC", as SONiC offloads BFD to
    hardware), bfdd keeping the configuration and telling bgpd (FRR's distributed BFD). False:
    bfdd sends and receives every packet itself, on the switch's CPU. Both are compared in
    docs/performance.md ("BFD offload"). On containerlab, SONiC-VS's bfdd always runs them.

    200 ms x 3 by default, not FRR's 300 ms x 3: a gray failure must be rerouted within the
    default gray objective (1000 ms) with room to spare, and 300 ms x 3 detects only after
    600-900 ms (docs/concepts.md, "Failover objectives").
    """

    profile: str = "fabric"  # FRR BFD profile name
    interval_ms: int = 200  # transmit and receive interval, >= 10
    multiplier: int = 3  # missed packets before a session is down, >= 1
    enabled: bool = True  # BFD on every fabric session
    offload: bool = True  # sessions in the lab's BFD data plane, not bfdd

    @property
    def detect_ms(self) -> int:
        return self.interval_ms * self.multiplier


@dataclass(frozen=True)
class Objectives:
    """The loss window each QP may suffer, in ms, per kind of event: what the job can bear,
    declared by the user and never derived from the configuration under test (raising BFD
    timers must not raise the budget). Defaults, and why, in docs/concepts.md ("Failover objectives").

    hard_ms: carrier loss next to the switch that must reroute (a leaf uplink, a whole spine).
    remote_ms: carrier loss one hop away: the news must travel as a BGP withdrawal.
    gray_ms: a link that stays up and drops everything (only BFD can tell).
    restore_ms: a failed element coming back.
    """

    hard_ms: float = 50.0  # carrier loss next to the rerouting switch, > 0
    remote_ms: float = 250.0  # carrier loss one hop away, > 0
    gray_ms: float = 1000.0  # a link up that drops everything, > 0
    restore_ms: float = 10.0  # a failed element coming back, > 0


@dataclass(frozen=True)
class Tenant:
    """A frontend tenant: one L2 segment stretched over the FE leaves by BGP EVPN (VXLAN VNI
    `vni`, VLAN `vlan` on the leaves), with its own subnet. `members` are host names, shell
    patterns over them (`gpu0[1-4]`) or roles (`role:storage`); a member of one tenant is an
    access port, a member of several (a gateway, or a GPU node also in the storage tenant) a
    tagged trunk with one VLAN interface per tenant. `vlan` and `subnet` default to one per
    tenant in declaration order (VLAN 100+i; the i-th /24 of addressing.tenants).
    `nic`: the NIC members join through where they have it (`st0`, the GPU nodes' storage
    NIC, makes the tenant the storage plane; hosts without it join with `fe0`)."""

    name: str  # tenant name
    vni: int  # VXLAN VNI of its L2 segment
    members: tuple[str, ...]  # host names, shell patterns (gpu0[1-4]) or roles (role:storage)
    vlan: int | None = None  # VLAN on the leaves; None: 100 + its index
    subnet: str | None = None  # its subnet; None: the i-th /24 of addressing.tenants
    nic: str = "fe0"  # the NIC members join through: fe0, or st0 (the storage plane)


ACL_ACTIONS = ("permit", "deny")
ACL_PROTOCOLS = {"any": None, "icmp": 1, "tcp": 6, "udp": 17}


@dataclass(frozen=True)
class AclRule:
    """One rule of the FE edge ACL, applied where traffic enters the fabric (every
    tenant member's leaf port, ingress). `src`/`dst`: `any`, `tenant:NAME`, `role:ROLE` or a
    host name. `dst_ports`/`src_ports`: "" (any), "2049" or "8000-8100" (TCP/UDP only).
    First match wins, in declaration order."""

    action: str  # permit or deny
    src: str = "any"  # any, tenant:NAME, role:ROLE or a host name
    dst: str = "any"  # any, tenant:NAME, role:ROLE or a host name
    protocol: str = "any"  # any, icmp, tcp or udp
    dst_ports: str = ""  # '' (any), '2049' or '8000-8100' (tcp, udp)
    src_ports: str = ""  # '' (any), '2049' or '8000-8100' (tcp, udp)


@dataclass(frozen=True)
class Acl:
    """The FE edge ACL: its rules, and what happens to IPv4 traffic no rule matches."""

    rules: tuple[AclRule, ...] = ()  # first match wins, in declaration order
    default: str = "permit"  # permit or deny: traffic no rule matches


@dataclass(frozen=True)
class Cable:
    """A cable beyond what the builders lay: between two nodes, by name.

    Ports on switches are assigned by the plan unless named (`Ethernet<N>` of the switch's
    HwSKU); a host end needs its NIC name (`rail<r>`, `fe0`, `st0`, `mgmt0`). A NIC or port
    takes one cable. `speed` defaults to the speed of the links it joins (the plane's uplinks,
    or the host NIC's); a cable of another speed is refused, as it would sit in an ECMP group
    of faster or slower links, unless `mixed_speed=True` says it is on purpose.
    """

    a: str  # a node's name
    b: str  # the other node's name
    a_port: str | None = None  # a's port (Ethernet<N>) or NIC (rail<r>, fe0, st0, mgmt0); None: the plan picks
    b_port: str | None = None  # b's port or NIC; None: the plan picks
    speed: int | None = None  # Gb/s; None: the speed of the links it joins
    mixed_speed: bool = False  # True: another speed than the links it joins, on purpose


@dataclass(frozen=True)
class Hardware:
    """The SONiC HwSKU each switch role runs: a name of fablab's catalogue (e.g.
    'Arista-7060X6-64PE-P32O64', 'ACS-SN5600'; `fablab hwskus` lists them), or any other HwSKU
    of SONiC's device tree read from its folder (`HwSku.from_sonic('device/<vendor>/<platform>/<HwSKU>')`).
    None, the default: the plan picks one whose ports are as fast as the switch's links. A link
    faster than its port is refused; a slower one runs on a faster port at the link's speed."""

    be_leaf: str | HwSku | None = None
    be_spine: str | HwSku | None = None
    superspine: str | HwSku | None = None
    fe_leaf: str | HwSku | None = None
    fe_spine: str | HwSku | None = None


@dataclass(frozen=True)
class Cabling:
    """Your own names and ports, from your cabling plan (`fablab import PLAN`, or the plan
    given as the TOPOLOGY). fablab lays the declaration out as it always does; then each node
    named in `names` takes your name, and each cable takes its ports from the one in `cables`
    between the same two devices (parallel cables in port order).

    - names: (fablab's name, yours) pairs; a node not named keeps fablab's (e.g. `oob1` where
      your plan has no management network).
    - cables: every cable of your plan, both ports given (`Cable('gpu-a01', 'rtsw-g1-r0',
      'enp12s0np0', 'Ethernet0')`). A GPU node's NICs toward its rail leaves, in their names'
      natural order, are its rails 0, 1, ...; a host's FE NICs: the first by name is its FE NIC,
      a second on the same leaf its storage NIC, one on another leaf its second FE NIC
      (dual-homed). Hosts cable to the FE leaves your plan says, not fablab's racks.
    - A node with no cable to the OOB switch gets fablab's management port on it.
    - source: the plan it came from, for messages.
    - hwskus: a switch whose HwSKU is not its role's (`Hardware`): a plan of mixed hardware.
    """

    names: tuple[tuple[str, str], ...] = ()
    cables: tuple[Cable, ...] = ()
    source: str = ""
    hwskus: tuple[tuple[str, str], ...] = ()  # (your switch, its HwSKU) where it is not its role's in Hardware

    def hwsku_of(self, node: str) -> str | None:
        return next((sku for name, sku in self.hwskus if name == node), None)


@dataclass(frozen=True)
class Cluster:
    """The whole declaration of one AI cluster."""

    name: str  # lower-case letters, digits and '-', from a letter; at most 24 to be booted
    gpu: GpuNodes = field(default_factory=GpuNodes)  # the GPU nodes
    backend: Backend = field(default_factory=Backend)  # the GPU (compute) fabric
    frontend: Frontend = field(default_factory=Frontend)  # the north-south Clos
    mgmt: Management = field(default_factory=Management)  # the out-of-band plane
    addressing: Addressing = field(default_factory=Addressing)  # IPv4 ranges and ASNs
    bfd: Bfd = field(default_factory=Bfd)  # BFD on every fabric session
    routing: Routing = field(default_factory=Routing)  # what leaves advertise
    cables: tuple[Cable, ...] = ()  # cables beyond what the builders lay
    objectives: Objectives = field(default_factory=Objectives)  # loss windows each QP may suffer
    lossless: Lossless = field(default_factory=Lossless)  # the lossless RoCEv2 contract
    tenants: tuple[Tenant, ...] = ()  # FE tenants (EVPN-VXLAN)
    acl: Acl = field(default_factory=Acl)  # the FE edge ACL
    hardware: Hardware = field(default_factory=Hardware)  # the HwSKU of each switch role
    cabling: Cabling = field(default_factory=Cabling)  # your names and ports, from a cabling plan

    def __post_init__(self) -> None:  # backend fields left None follow the rest (harness.core.defaults)
        object.__setattr__(self, "backend", follow(self))


DECLARATIONS: dict[type, str] = guard(Cluster)  # every declaration class, and where it sits in a Cluster


def rail_nic(rail: int) -> str:
    return f"rail{rail}"


FE_NIC = "fe0"
FE_NIC2 = "fe1"  # a dual-homed host's NIC on the second leaf of its pair
# Dual-homed host k's ASN is HOST_ASN + k (k from 1): RFC 6996's private 4-byte range, one per
# host, so that a host accepts the other hosts' /32s (a shared ASN would be an AS-path loop).
HOST_ASN = 4_200_000_000
STORAGE_NIC = "st0"
MGMT_NIC = "mgmt0"


def switch_mgmt_port() -> str:
    return _SWITCH_MGMT_PORT
