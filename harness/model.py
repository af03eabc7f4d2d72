"""Declarations of an AI cluster and the validated, frozen fabric built from them.

A `Cluster` is what an engineer writes: counts, kinds, speeds, ranges. `build()` expands
it into a `Fabric` (every node and every cable, each tagged with its plane) and validates
both levels at once, so that every problem is reported together, each with its field and
a hint. Nothing here touches the system.
"""
from __future__ import annotations

import ipaddress
import math
import re
from collections import Counter
from dataclasses import dataclass, field, fields
from enum import Enum

from harness.errors import Problem, TopologyError


class Plane(str, Enum):
    FE = "fe"
    BE = "be"
    MGMT = "mgmt"


class Role(str, Enum):
    GPU = "gpu"
    CPU = "cpu"
    STORAGE = "storage"
    GATEWAY = "gateway"
    BE_LEAF = "be-leaf"
    BE_SPINE = "be-spine"
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
    Role.FE_LEAF: Plane.FE,
    Role.FE_SPINE: Plane.FE,
    Role.OOB: Plane.MGMT,
}

BACKEND_KINDS = ("rail-only", "rail-optimized")
ECMP_HASHES = {"l3": 0, "l4": 1}  # value of net.ipv4.fib_multipath_hash_policy
SPEEDS_GBPS = (1, 10, 25, 40, 50, 100, 200, 400, 800, 1600)
_NAME = re.compile(r"^[a-z][a-z0-9-]{0,30}$")
_SWITCH_MGMT_PORT = "eth0"  # SONiC's management port name


# --------------------------------------------------------------------------- declarations


@dataclass(frozen=True)
class GpuNodes:
    """GPU servers: one BE NIC per GPU (NIC r on rail r), one FE NIC, one mgmt port."""

    count: int = 8
    gpus_per_node: int = 4
    nic_speed: int = 400
    fe_speed: int = 100
    prefix: str = "gpu"


@dataclass(frozen=True)
class Backend:
    """The GPU (compute) fabric.

    rail-only: one leaf per rail, no spine; cross-rail traffic stays in the node (NVLink).
    rail-optimized: nodes split in `groups` (pods); each group has one leaf per rail; every
    leaf connects to every spine with `uplinks_per_spine` links.
    """

    kind: str = "rail-optimized"
    rails: int = 4
    groups: int = 2
    spines: int = 2
    leaf_ports: int = 64
    spine_ports: int = 64
    uplink_speed: int = 800
    uplinks_per_spine: int = 1
    mtu: int = 9100
    allow_oversubscription: bool = False
    ecmp_hash: str = "l4"


@dataclass(frozen=True)
class Frontend:
    """The north-south Clos: GPU nodes' FE NICs, CPU and storage servers, gateways.
    `storage_nics`: every GPU node also has a storage NIC (`st0`, `storage_nic_speed`) on its
    FE leaf, for the storage plane: a tenant declared with `nic='st0'` (see Tenant)."""

    spines: int = 2
    leaves: int = 2
    leaf_ports: int = 48
    spine_ports: int = 32
    host_speed: int = 100
    uplink_speed: int = 400
    cpu_servers: int = 0
    storage_servers: int = 2
    gateways: int = 1
    mtu: int = 1500
    ecmp_hash: str = "l4"
    storage_nics: bool = False
    storage_nic_speed: int = 200


@dataclass(frozen=True)
class Management:
    """The out-of-band plane: one L2 switch that every node's management port plugs into."""

    ports: int = 256
    speed: int = 1


@dataclass(frozen=True)
class Addressing:
    """Disjoint ranges per plane, and the ASN of each spine tier (leaves count up from it)."""

    be: str = "10.0.0.0/16"
    fe: str = "10.16.0.0/16"
    mgmt: str = "172.31.0.0/20"
    tenants: str = "10.32.0.0/16"  # FE tenant subnets (one /24 each unless declared)
    be_asn: int = 64600
    fe_asn: int = 65100


@dataclass(frozen=True)
class Routing:
    """What the leaves advertise for their host links.

    summarize_hosts: the fewest prefixes covering a leaf's host links (one /27 for a rail
    leaf of 16 GPUs, as the plan's addressing aligns them) instead of one /31 each. One
    event behind a BFD session or a spine then rewrites a leaf's few summaries, not every
    GPU's /31 (xlarge: 1,071 routes per leaf, 1.0–1.6 s for a gray failure on this machine).
    A host link that fails stays inside its leaf's summary: traffic to it is dropped at
    the leaf, not rerouted (there is no other way to that NIC anyway).
    """

    summarize_hosts: bool = False


@dataclass(frozen=True)
class Bfd:
    """BFD on every fabric session, through a named FRR profile."""

    profile: str = "fabric"
    interval_ms: int = 300
    multiplier: int = 3
    enabled: bool = True

    @property
    def detect_ms(self) -> int:
        return self.interval_ms * self.multiplier


@dataclass(frozen=True)
class Objectives:
    """The loss window each QP may suffer, in ms, per kind of event: what the job can bear,
    declared by the user and never derived from the configuration under test (raising BFD
    timers must not raise the budget). Defaults, and why, in the README ("Failover").

    hard_ms: carrier loss next to the switch that must reroute (a leaf uplink, a whole spine).
    remote_ms: carrier loss one hop away: the news must travel as a BGP withdrawal.
    gray_ms: a link that stays up and drops everything (only BFD can tell).
    restore_ms: a failed element coming back.
    """

    hard_ms: float = 50.0
    remote_ms: float = 250.0
    gray_ms: float = 1000.0
    restore_ms: float = 10.0


@dataclass(frozen=True)
class Lossless:
    """The backend's lossless RoCEv2 contract, the same on every hop: RoCE traffic is marked
    `roce_dscp` and travels in traffic class, queue, priority group and PFC priority
    `roce_priority` (ECN marking on that queue); congestion notifications (CNPs) are marked
    `cnp_dscp` and go to strict-priority queue `cnp_priority`; RoCE frames carry `roce_mtu`
    bytes of payload (an InfiniBand MTU), which every BE port's MTU must hold with the
    headers (`roce_frame_bytes`)."""

    roce_priority: int = 3
    roce_dscp: int = 26
    cnp_priority: int = 6
    cnp_dscp: int = 48
    roce_mtu: int = 4096

    @property
    def roce_frame_bytes(self) -> int:
        """The IP packet a full RoCEv2 RDMA WRITE carries: IPv4 20 + UDP 8 + BTH 12 + RETH 16
        + payload + ICRC 4. A port's (IP) MTU must be at least this."""
        return 20 + 8 + 12 + 16 + self.roce_mtu + 4


ROCE_MTUS = (256, 512, 1024, 2048, 4096)  # the InfiniBand path MTUs a RoCE NIC negotiates


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

    name: str
    vni: int
    members: tuple[str, ...]
    vlan: int | None = None
    subnet: str | None = None
    nic: str = "fe0"


ACL_ACTIONS = ("permit", "deny")
ACL_PROTOCOLS = {"any": None, "icmp": 1, "tcp": 6, "udp": 17}


@dataclass(frozen=True)
class AclRule:
    """One rule of the FE edge ACL, applied where traffic enters the fabric (every
    tenant member's leaf port, ingress). `src`/`dst`: `any`, `tenant:NAME`, `role:ROLE` or a
    host name. `dst_ports`/`src_ports`: "" (any), "2049" or "8000-8100" (TCP/UDP only).
    First match wins, in declaration order."""

    action: str
    src: str = "any"
    dst: str = "any"
    protocol: str = "any"
    dst_ports: str = ""
    src_ports: str = ""


@dataclass(frozen=True)
class Acl:
    """The FE edge ACL: its rules, and what happens to IPv4 traffic no rule matches."""

    rules: tuple[AclRule, ...] = ()
    default: str = "permit"


@dataclass(frozen=True)
class Cable:
    """A cable beyond what the builders lay: between two nodes, by name.

    Ports on switches are assigned by the plan; a host end needs its NIC name.
    """

    a: str
    b: str
    a_port: str | None = None
    b_port: str | None = None
    speed: int | None = None


@dataclass(frozen=True)
class Cluster:
    """The whole declaration of one AI cluster."""

    name: str
    gpu: GpuNodes = field(default_factory=GpuNodes)
    backend: Backend = field(default_factory=Backend)
    frontend: Frontend = field(default_factory=Frontend)
    mgmt: Management = field(default_factory=Management)
    addressing: Addressing = field(default_factory=Addressing)
    bfd: Bfd = field(default_factory=Bfd)
    routing: Routing = field(default_factory=Routing)
    cables: tuple[Cable, ...] = ()
    objectives: Objectives = field(default_factory=Objectives)
    lossless: Lossless = field(default_factory=Lossless)
    tenants: tuple[Tenant, ...] = ()
    acl: Acl = field(default_factory=Acl)


# --------------------------------------------------------------------------- the built fabric


@dataclass(frozen=True)
class Node:
    name: str
    role: Role
    group: int | None = None  # BE group (pod) of a GPU node or rail leaf
    rail: int | None = None  # rail of a rail leaf

    @property
    def is_switch(self) -> bool:
        return self.role.is_switch


@dataclass(frozen=True)
class Link:
    """One cable. `a` is the lower end (host or leaf), `b` the upper (leaf, spine, OOB).

    A port of None is a switch data port that the plan numbers.
    """

    a: str
    b: str
    plane: Plane
    speed: int
    a_port: str | None = None
    b_port: str | None = None
    rail: int | None = None
    declared: bool = False  # came from Cluster.cables, not from a builder


@dataclass(frozen=True)
class Fabric:
    """A validated cluster: every node and link. Frozen; build it with `build()`."""

    cluster: Cluster
    nodes: tuple[Node, ...]
    links: tuple[Link, ...]

    @property
    def name(self) -> str:
        return self.cluster.name

    def node(self, name: str) -> Node:
        for n in self.nodes:
            if n.name == name:
                return n
        raise KeyError(name)

    def nodes_with(self, *roles: Role) -> tuple[Node, ...]:
        return tuple(n for n in self.nodes if n.role in roles)

    def links_in(self, plane: Plane) -> tuple[Link, ...]:
        return tuple(link for link in self.links if link.plane is plane)

    @property
    def switches(self) -> tuple[Node, ...]:
        return tuple(n for n in self.nodes if n.is_switch)

    @property
    def hosts(self) -> tuple[Node, ...]:
        return tuple(n for n in self.nodes if not n.is_switch)


def rail_nic(rail: int) -> str:
    return f"rail{rail}"


FE_NIC = "fe0"
STORAGE_NIC = "st0"
MGMT_NIC = "mgmt0"


def switch_mgmt_port() -> str:
    return _SWITCH_MGMT_PORT


# --------------------------------------------------------------------------- build + validate


def build(cluster: Cluster) -> Fabric:
    """Expand and validate a declaration; raise TopologyError listing every problem."""
    problems = _check_declaration(cluster)
    nodes, links = _expand(cluster)
    cable_links, cable_problems = _cables(cluster, nodes)
    links += cable_links
    problems += cable_problems
    fabric = Fabric(cluster, tuple(nodes), tuple(links))
    problems += _check_fabric(fabric)
    from harness.tenancy import check_tenancy  # it resolves members over the built nodes

    problems += check_tenancy(fabric)
    if problems:
        raise TopologyError(_dedupe(problems), source=cluster.name)
    return fabric


def _dedupe(problems: list[Problem]) -> list[Problem]:
    seen: dict[Problem, None] = {}
    for p in problems:
        seen.setdefault(p, None)
    return list(seen)


def _width(count: int) -> int:
    return max(2, len(str(max(count, 1))))


def gpu_node_names(cluster: Cluster) -> list[str]:
    w = _width(cluster.gpu.count)
    return [f"{cluster.gpu.prefix}{i:0{w}d}" for i in range(1, cluster.gpu.count + 1)]


def _nodes_per_group(cluster: Cluster) -> int:
    be = cluster.backend
    groups = be.groups if be.kind == "rail-optimized" and be.groups > 0 else 1
    return max(1, -(-cluster.gpu.count // groups))


def _expand(cluster: Cluster) -> tuple[list[Node], list[Link]]:
    """Lay nodes and cables as the builders intend. Robust to bad counts, so that
    validation of the expanded graph can still report its own problems."""
    gpu, be, fe = cluster.gpu, cluster.backend, cluster.frontend
    nodes: list[Node] = []
    links: list[Link] = []
    rail_only = be.kind == "rail-only"
    per_group = _nodes_per_group(cluster)
    gpu_names = gpu_node_names(cluster)
    for i, name in enumerate(gpu_names):
        nodes.append(Node(name, Role.GPU, group=None if rail_only else i // per_group + 1))
    fe_hosts = list(gpu_names)
    storage_links: list[Link] = []
    for prefix, count, role in (
        ("stor", fe.storage_servers, Role.STORAGE),
        ("cpu", fe.cpu_servers, Role.CPU),
        ("gw", fe.gateways, Role.GATEWAY),
    ):
        for i in range(1, max(count, 0) + 1):
            nodes.append(Node(f"{prefix}{i}", role))
            fe_hosts.append(f"{prefix}{i}")

    # Backend
    be_spines = [] if rail_only else [f"be-s{i}" for i in range(1, max(be.spines, 0) + 1)]
    nodes += [Node(s, Role.BE_SPINE) for s in be_spines]
    groups = 1 if rail_only else max(be.groups, 1)
    leaf_of: dict[tuple[int, int], str] = {}
    for g in range(1, groups + 1):
        for r in range(max(be.rails, 0)):
            name = f"be-r{r}" if rail_only else f"be-g{g}-r{r}"
            leaf_of[(g, r)] = name
            nodes.append(Node(name, Role.BE_LEAF, group=None if rail_only else g, rail=r))
    for i, host in enumerate(gpu_names):
        g = 1 if rail_only else i // per_group + 1
        for r in range(max(gpu.gpus_per_node, 0)):
            leaf = leaf_of.get((g, r))
            if leaf is not None:
                links.append(Link(host, leaf, Plane.BE, gpu.nic_speed, a_port=rail_nic(r), rail=r))
    for (_, r), leaf in leaf_of.items():
        for spine in be_spines:
            for _ in range(max(be.uplinks_per_spine, 0)):
                links.append(Link(leaf, spine, Plane.BE, be.uplink_speed, rail=r))

    # Frontend: hosts in contiguous blocks per leaf (a rack each), every leaf to every spine.
    fe_spines = [f"fe-s{i}" for i in range(1, max(fe.spines, 0) + 1)]
    fe_leaves = [f"fe-l{i}" for i in range(1, max(fe.leaves, 0) + 1)]
    nodes += [Node(s, Role.FE_SPINE) for s in fe_spines]
    nodes += [Node(leaf, Role.FE_LEAF) for leaf in fe_leaves]
    if fe_leaves:
        per_leaf = -(-len(fe_hosts) // len(fe_leaves))
        for i, host in enumerate(fe_hosts):
            speed = gpu.fe_speed if i < len(gpu_names) else fe.host_speed
            links.append(Link(host, fe_leaves[i // per_leaf], Plane.FE, speed, a_port=FE_NIC))
            if fe.storage_nics and i < len(gpu_names):  # in the same rack, to the same leaf
                storage_links.append(Link(host, fe_leaves[i // per_leaf], Plane.FE, fe.storage_nic_speed,
                                          a_port=STORAGE_NIC))
        links += storage_links
    for leaf in fe_leaves:
        for spine in fe_spines:
            links.append(Link(leaf, spine, Plane.FE, fe.uplink_speed))

    # Management: every node's management port on the OOB switch.
    nodes.append(Node("oob1", Role.OOB))
    for n in nodes:
        if n.role is Role.OOB:
            continue
        port = switch_mgmt_port() if n.is_switch else MGMT_NIC
        links.append(Link(n.name, "oob1", Plane.MGMT, cluster.mgmt.speed, a_port=port))
    return nodes, links


def _cables(cluster: Cluster, nodes: list[Node]) -> tuple[list[Link], list[Problem]]:
    by_name = {n.name: n for n in nodes}
    links: list[Link] = []
    problems: list[Problem] = []
    for i, c in enumerate(cluster.cables):
        where = f"cables[{i}]"
        ends = []
        for end, port in ((c.a, c.a_port), (c.b, c.b_port)):
            node = by_name.get(end)
            if node is None:
                problems.append(Problem(where, f"no node named {end!r}",
                                        "use a name from `fablab show`"))
            elif not node.is_switch and not port:
                problems.append(Problem(where, f"host {end!r} needs its NIC name",
                                        f"set the port of {end!r}, e.g. a_port='eth9'"))
            ends.append(node)
        a, b = ends
        if a is None or b is None:
            continue
        planes = {n.role.plane for n in (a, b) if n.is_switch}
        if {Plane.FE, Plane.BE} <= planes:
            problems.append(Problem(where, f"cable {a.name}–{b.name} joins the FE and the BE fabric",
                                    "FE and BE must stay physically separate: remove this cable"))
            plane = Plane.BE
        elif Plane.MGMT in planes and len(planes) > 1:
            problems.append(Problem(where, f"cable {a.name}–{b.name} joins the mgmt plane to a data fabric",
                                    "management ports only plug into the OOB switch"))
            plane = Plane.MGMT
        elif planes:
            plane = planes.pop()
        else:
            problems.append(Problem(where, f"cable {a.name}–{b.name} joins two hosts",
                                    "cable a host to a leaf"))
            continue
        speed = c.speed or (cluster.backend.uplink_speed if plane is Plane.BE else cluster.frontend.uplink_speed)
        links.append(Link(a.name, b.name, plane, speed, a_port=c.a_port, b_port=c.b_port, declared=True))
    return links, problems


def _check_declaration(c: Cluster) -> list[Problem]:
    p: list[Problem] = []
    gpu, be, fe, addr = c.gpu, c.backend, c.frontend, c.addressing
    if not _NAME.match(c.name or ""):
        p.append(Problem("name", f"{c.name!r} is not a usable cluster name",
                         "lower-case letters, digits and '-', starting with a letter, at most 31"))
    if not _NAME.match(gpu.prefix or ""):
        p.append(Problem("gpu.prefix", f"{gpu.prefix!r} is not a usable name prefix", "e.g. 'gpu'"))
    if gpu.count < 1:
        p.append(Problem("gpu.count", f"{gpu.count} GPU nodes: a cluster needs at least one",
                         "set gpu.count >= 1"))
    if gpu.gpus_per_node < 1:
        p.append(Problem("gpu.gpus_per_node", f"{gpu.gpus_per_node} GPUs per node", "set it >= 1"))
    if be.kind not in BACKEND_KINDS:
        p.append(Problem("backend.kind", f"unknown backend kind {be.kind!r}",
                         f"valid kinds: {', '.join(BACKEND_KINDS)}"))
    if be.rails != gpu.gpus_per_node:
        p.append(Problem("backend.rails",
                         f"{be.rails} rails but {gpu.gpus_per_node} GPUs per node",
                         "one rail per GPU: set backend.rails = gpu.gpus_per_node"))
    if be.kind == "rail-only" and be.spines:
        p.append(Problem("backend.spines", f"a rail-only backend has no spine tier, but spines={be.spines}",
                         "set spines=0, or kind='rail-optimized'"))
    if be.kind == "rail-optimized":
        if be.spines < 1:
            p.append(Problem("backend.spines", f"rail-optimized needs a spine tier, spines={be.spines}",
                             "set spines >= 1, or kind='rail-only'"))
        if be.groups < 1:
            p.append(Problem("backend.groups", f"{be.groups} groups", "set groups >= 1"))
        elif gpu.count >= 1 and gpu.count % be.groups:
            p.append(Problem("backend.groups",
                             f"{gpu.count} GPU nodes do not split evenly into {be.groups} groups",
                             "make gpu.count a multiple of backend.groups"))
        if be.uplinks_per_spine < 1:
            p.append(Problem("backend.uplinks_per_spine", f"{be.uplinks_per_spine}", "set it >= 1"))
    if fe.leaves < 1:
        p.append(Problem("frontend.leaves", f"{fe.leaves} FE leaves", "set frontend.leaves >= 1"))
    if fe.spines < 1:
        p.append(Problem("frontend.spines", f"{fe.spines} FE spines", "set frontend.spines >= 1"))
    for fname, value in (("frontend.cpu_servers", fe.cpu_servers), ("frontend.storage_servers", fe.storage_servers),
                         ("frontend.gateways", fe.gateways)):
        if value < 0:
            p.append(Problem(fname, f"{value} is negative", "set it >= 0"))
    for fname, value in (("gpu.nic_speed", gpu.nic_speed), ("gpu.fe_speed", gpu.fe_speed),
                         ("backend.uplink_speed", be.uplink_speed), ("frontend.host_speed", fe.host_speed),
                         ("frontend.uplink_speed", fe.uplink_speed), ("mgmt.speed", c.mgmt.speed),
                         ("frontend.storage_nic_speed", fe.storage_nic_speed)):
        if value not in SPEEDS_GBPS:
            p.append(Problem(fname, f"{value}G is not a port speed",
                             f"use one of {', '.join(f'{s}G' for s in SPEEDS_GBPS)}"))
    for fname, mtu in (("backend.mtu", be.mtu), ("frontend.mtu", fe.mtu)):
        if not 1280 <= mtu <= 9216:
            p.append(Problem(fname, f"MTU {mtu} out of range", "use 1280..9216 (9100 is usual on the BE)"))
    for fname, h in (("backend.ecmp_hash", be.ecmp_hash), ("frontend.ecmp_hash", fe.ecmp_hash)):
        if h not in ECMP_HASHES:
            p.append(Problem(fname, f"unknown ECMP hash {h!r}", f"valid: {', '.join(ECMP_HASHES)}"))
    if c.bfd.interval_ms < 10 or c.bfd.multiplier < 1:
        p.append(Problem("bfd", f"interval {c.bfd.interval_ms} ms × {c.bfd.multiplier}",
                         "use interval_ms >= 10 and multiplier >= 1"))
    if not _NAME.match(c.bfd.profile or ""):
        p.append(Problem("bfd.profile", f"{c.bfd.profile!r} is not a usable profile name", "e.g. 'fabric'"))
    p += _check_addressing(addr)
    p += _check_objectives(c.objectives)
    p += check_lossless(c.lossless, be.mtu)
    return p


def check_lossless(q: Lossless, be_mtu: int) -> list[Problem]:
    p: list[Problem] = []
    if not isinstance(q, Lossless):
        return [Problem("lossless", f"{q!r} is not a Lossless", "write lossless=Lossless(roce_priority=3, ...)")]
    for name in ("roce_priority", "cnp_priority"):
        if not 0 <= getattr(q, name) <= 7:
            p.append(Problem(f"lossless.{name}", f"{getattr(q, name)} is not an 802.1p priority", "use 0..7"))
    for name in ("roce_dscp", "cnp_dscp"):
        if not 0 <= getattr(q, name) <= 63:
            p.append(Problem(f"lossless.{name}", f"{getattr(q, name)} is not a DSCP", "use 0..63"))
    if q.cnp_priority == q.roce_priority:
        p.append(Problem("lossless.cnp_priority", f"CNPs in the RoCE class ({q.roce_priority})",
                         "give CNPs their own strict queue, e.g. 6, so they are not paused behind the data"))
    if q.cnp_dscp == q.roce_dscp:
        p.append(Problem("lossless.cnp_dscp", f"CNPs marked like RoCE data (DSCP {q.roce_dscp})",
                         "mark CNPs apart, e.g. DSCP 48"))
    if q.roce_mtu not in ROCE_MTUS:
        p.append(Problem("lossless.roce_mtu", f"{q.roce_mtu} is not an InfiniBand MTU",
                         f"use one of {', '.join(map(str, ROCE_MTUS))}"))
    elif q.roce_frame_bytes > be_mtu:
        p.append(Problem("lossless.roce_mtu", f"RoCE frames of {q.roce_mtu} bytes need an MTU of "
                         f"{q.roce_frame_bytes}, backend.mtu is {be_mtu}",
                         f"raise backend.mtu to >= {q.roce_frame_bytes} or lower roce_mtu"))
    return p


def _check_objectives(o: Objectives) -> list[Problem]:
    p: list[Problem] = []
    if not isinstance(o, Objectives):
        return [Problem("objectives", f"{o!r} is not an Objectives", "write objectives=Objectives(hard_ms=50, ...)")]
    for name in ("hard_ms", "remote_ms", "gray_ms", "restore_ms"):
        value = getattr(o, name)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            p.append(Problem(f"objectives.{name}", f"{value!r} is not a number of milliseconds",
                             f"e.g. {name}={getattr(Objectives(), name):g}"))
        elif value <= 0:
            p.append(Problem(f"objectives.{name}", f"{value:g} ms: a loss window objective must be > 0",
                             "a zero objective cannot be measured (one packet slot is the resolution)"))
        elif value > 60_000:
            p.append(Problem(f"objectives.{name}", f"{value:g} ms is over a minute: no job survives that",
                             "declare what the job can bear, in ms (default "
                             f"{getattr(Objectives(), name):g})"))
    return p


def _check_addressing(addr: Addressing) -> list[Problem]:
    p: list[Problem] = []
    nets: dict[str, ipaddress.IPv4Network] = {}
    for plane in ("be", "fe", "mgmt", "tenants"):
        text = getattr(addr, plane)
        try:
            nets[plane] = ipaddress.IPv4Network(text)
        except ValueError as e:
            p.append(Problem(f"addressing.{plane}", f"{text!r} is not an IPv4 network ({e})",
                             "write it like 10.0.0.0/16 with no host bits set"))
    planes = list(nets)
    for i, x in enumerate(planes):
        for y in planes[i + 1:]:
            if nets[x].overlaps(nets[y]):
                p.append(Problem(f"addressing.{y}", f"{nets[y]} overlaps addressing.{x} {nets[x]}",
                                 "each plane needs its own disjoint range"))
    for fname, asn in (("addressing.be_asn", addr.be_asn), ("addressing.fe_asn", addr.fe_asn)):
        if not 1 <= asn <= 4294967294:
            p.append(Problem(fname, f"ASN {asn} out of range", "use a private ASN, e.g. 64600"))
    return p


def _check_fabric(f: Fabric) -> list[Problem]:
    p: list[Problem] = []
    c = f.cluster
    counts = Counter(n.name for n in f.nodes)
    for name, k in sorted(counts.items()):
        if k > 1:
            p.append(Problem("nodes", f"duplicate node name {name!r} ({k} nodes)",
                             "change a prefix (e.g. gpu.prefix) so that names stay unique"))
    budget = {
        Role.BE_LEAF: ("backend.leaf_ports", c.backend.leaf_ports),
        Role.BE_SPINE: ("backend.spine_ports", c.backend.spine_ports),
        Role.FE_LEAF: ("frontend.leaf_ports", c.frontend.leaf_ports),
        Role.FE_SPINE: ("frontend.spine_ports", c.frontend.spine_ports),
        Role.OOB: ("mgmt.ports", c.mgmt.ports),
    }
    used = Counter()
    for link in f.links:
        for end, port in ((link.a, link.a_port), (link.b, link.b_port)):
            if port != switch_mgmt_port():
                used[end] += 1
    for n in f.switches:
        fname, ports = budget[n.role]
        if used[n.name] > ports:
            p.append(Problem(fname, f"{n.name} needs {used[n.name]} ports but has {ports}",
                             _port_hint(n.role)))
    for leaf in f.nodes_with(Role.BE_LEAF):
        down = sum(lk.speed for lk in f.links if lk.b == leaf.name and lk.plane is Plane.BE)
        up = sum(lk.speed for lk in f.links if lk.a == leaf.name and lk.plane is Plane.BE)
        if up and down > up and not c.backend.allow_oversubscription:
            p.append(Problem("backend", f"{leaf.name} is oversubscribed {down / up:.2f}:1 "
                                        f"({down}G down, {up}G up); the BE must be non-blocking",
                             "add spines or uplinks_per_spine, raise uplink_speed, "
                             "or set allow_oversubscription=True on purpose"))
    return p


def _port_hint(role: Role) -> str:
    if role is Role.BE_LEAF:
        return "raise backend.leaf_ports, or use more groups (rail-optimized) so each leaf serves fewer nodes"
    if role is Role.BE_SPINE:
        return "raise backend.spine_ports, or add spines"
    if role is Role.FE_LEAF:
        return "raise frontend.leaf_ports, or add FE leaves"
    if role is Role.FE_SPINE:
        return "raise frontend.spine_ports"
    return "raise mgmt.ports"


def oversubscription(fabric: Fabric, leaf: str) -> float | None:
    """Downlink over uplink bandwidth of a leaf; None where it has no uplinks (rail-only)."""
    plane = fabric.node(leaf).role.plane
    down = sum(lk.speed for lk in fabric.links if lk.b == leaf and lk.plane is plane)
    up = sum(lk.speed for lk in fabric.links if lk.a == leaf and lk.plane is plane)
    return round(down / up, 3) if up else None


# --------------------------------------------------------------------------- (de)serialisation


def cluster_to_dict(cluster: Cluster) -> dict:
    """Plain data, for a running lab's state file (the declaration it was booted from)."""
    from dataclasses import asdict

    return asdict(cluster)


def cluster_from_dict(data: dict) -> Cluster:
    """The inverse of cluster_to_dict. Sections come from Cluster's own fields, so a new
    section survives the state file without being listed here (routing once did not:
    an attached lab then expected /31s where it advertised summaries). A section missing
    from an older state file gets its default."""
    kwargs: dict = {}
    for f in fields(Cluster):
        if f.name not in data or f.name in _LISTS:
            continue
        kwargs[f.name] = _SECTIONS[f.name](**data[f.name])
    kwargs["cables"] = tuple(Cable(**c) for c in data.get("cables", ()))
    kwargs["tenants"] = tuple(Tenant(**{**t, "members": tuple(t["members"])}) for t in data.get("tenants", ()))
    acl = data.get("acl", {})
    kwargs["acl"] = Acl(tuple(AclRule(**r) for r in acl.get("rules", ())), acl.get("default", "permit"))
    return Cluster(name=data["name"], **kwargs)


# Section name → its class, from the annotations (strings under `from __future__ import annotations`).
_LISTS = ("name", "cables", "tenants", "acl")  # not a flat section: read back by hand
_SECTIONS = {f.name: globals()[f.type] for f in fields(Cluster) if f.name not in _LISTS}
