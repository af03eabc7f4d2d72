"""Declarations of an AI cluster and the validated, frozen fabric built from them.

A `Cluster` is what an engineer writes: counts, kinds, speeds, ranges. `build()` expands
it into a `Fabric` (every node and every cable, each tagged with its plane) and validates
both levels at once, so that every problem is reported together, each with its field and
a hint. Nothing here touches the system.
"""
from __future__ import annotations

import difflib
import functools
import ipaddress
import math
import re
from collections import Counter
from dataclasses import MISSING, dataclass, field, fields
from enum import Enum

from harness.codec import CodecError, from_plain, to_plain
from harness.errors import DeclarationArgumentError, Problem, TopologyError


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
# A lab name: a cluster name of at most 24 characters, the runtimes' limit (run directory
# /run/fablab/<lab>, namespaces fl_<lab>_<node>, FRR's -N pathspace, containers fablab-<lab>-<node>).
_LAB_NAME = re.compile(r"[a-z][a-z0-9-]{0,23}")


def check_lab_name(name: object, field: str = "name") -> list[Problem]:
    """The problem with a lab name (`render --name`, `Lab.up(name=...)`), if any."""
    if isinstance(name, str) and _LAB_NAME.fullmatch(name):
        return []
    return [Problem(field, f"{name!r} is not a usable lab name",
                    "lower-case letters, digits and '-', starting with a letter, at most 24, e.g. lab1")]


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
    timers must not raise the budget). Defaults, and why, in docs/concepts.md ("Failover objectives").

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

    Ports on switches are assigned by the plan unless named (`Ethernet<N>` of the switch's
    HwSKU); a host end needs its NIC name (`rail<r>`, `fe0`, `st0`, `mgmt0`). A NIC or port
    takes one cable. `speed` defaults to the speed of the links it joins (the plane's uplinks,
    or the host NIC's); a cable of another speed is refused, as it would sit in an ECMP group
    of faster or slower links, unless `mixed_speed=True` says it is on purpose.
    """

    a: str
    b: str
    a_port: str | None = None
    b_port: str | None = None
    speed: int | None = None
    mixed_speed: bool = False


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


def _section_names() -> dict[type, str]:
    """Each declaration class and where it sits in a Cluster (`backend`, `cables`, `acl.rules`)."""
    import typing

    out: dict[type, str] = {Cluster: "cluster"}
    todo = [(Cluster, "")]
    while todo:
        cls, path = todo.pop()
        for name, t in typing.get_type_hints(cls).items():
            for arg in (t, *typing.get_args(t)):
                if isinstance(arg, type) and hasattr(arg, "__dataclass_fields__") and arg not in out:
                    out[arg] = f"{path}.{name}" if path else name
                    todo.append((arg, out[arg]))
    return out


def _guard_init(cls: type, section: str) -> None:
    """A wrong call of a declaration class (an unknown field, a missing one, too many values
    by position) raises DeclarationArgumentError naming its section and the fix, not Python's
    bare TypeError: the CLI then reports it as a bad declaration (exit 2)."""
    init = cls.__init__

    @functools.wraps(init)
    def __init__(self, *args, **kwargs) -> None:
        try:
            init(self, *args, **kwargs)
        except TypeError:
            problems = call_problems(cls, section, args, kwargs)
            if not problems:
                raise
            raise DeclarationArgumentError(problems, source=f"{cls.__name__}(...)") from None

    cls.__init__ = __init__


def call_problems(cls: type, section: str, args: tuple, kwargs: dict) -> list[Problem]:
    """What is wrong with calling declaration class `cls` with these arguments."""
    names = [f.name for f in fields(cls) if f.init]
    shown = f"{cls.__name__}'s fields: {', '.join(names)}"
    p: list[Problem] = []
    if len(args) > len(names):
        p.append(Problem(section, f"{cls.__name__}() takes {len(names)} values by position, {len(args)} were given",
                         f"name them; {shown}"))
    by_position = set(names[:len(args)])
    meant = set()
    for key in kwargs:
        if key not in names:
            near = difflib.get_close_matches(key, names, n=1, cutoff=0.6)
            meant.update(near)
            p.append(Problem(section, f"{cls.__name__} has no field {key!r}",
                             (f"did you mean {near[0]!r}? " if near else "") + shown))
        elif key in by_position:
            p.append(Problem(section, f"{cls.__name__}() got {key!r} twice, by position and by name",
                             f"give it once; {shown}"))
    missing = [f.name for f in fields(cls) if f.init and f.default is MISSING and f.default_factory is MISSING
               and f.name not in by_position and f.name not in kwargs and f.name not in meant]
    if missing:
        p.append(Problem(section, f"{cls.__name__}() needs {' and '.join(map(repr, missing))}", shown))
    return p


DECLARATIONS: dict[type, str] = _section_names()  # every declaration class, and where it sits in a Cluster
for _cls, _section in DECLARATIONS.items():
    _guard_init(_cls, _section)


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
    """Expand and validate a declaration; raise TopologyError listing every problem.

    First every field's type, choice and limit (harness.declcheck); then the declaration's
    rules, skipping what reads a field that failed; then, when gpu, backend, frontend and
    mgmt passed whole and the totals are within what fablab can plan, the expansion and the
    checks over the expanded graph (cables, port budgets, tenants).
    """
    from harness import declcheck
    from harness.tenancy import check_tenancy  # it resolves members over the built nodes

    checked = declcheck.check(cluster)
    cluster, ok = checked.cluster, checked.ok
    problems = _check_declaration(cluster, ok)
    said = {p.field for p in (*checked.problems, *problems)}

    def settled(*paths: str) -> bool:  # no problem yet at, above or below these fields
        return not any(declcheck.related(path, f) for path in paths for f in said)

    fabric = None
    if checked.can_expand:
        nodes, links = _expand(cluster)
        cable_links, cable_problems = _cables(cluster, nodes, links, ok)
        later = cable_problems
        fabric = Fabric(cluster, tuple(nodes), tuple(links + cable_links))
        later += _check_fabric(fabric, balance=settled(*_BE_SHAPE))
        if ok("tenants", "acl", "addressing") and settled(*_HOSTS):
            later += check_tenancy(fabric)
        problems += [p for p in later if p.field not in said]  # one problem per field the user wrote
    problems = checked.after(problems)
    if problems or fabric is None:
        raise TopologyError(_dedupe(problems), source=checked.source)
    return fabric


# The fields that shape the BE's leaves and uplinks, and those that name and count the hosts:
# with a problem on one, the oversubscription, resp. the tenants, would be judged on a made-up
# expansion, so they wait for it to be fixed.
_BE_SHAPE = ("gpu.count", "gpu.gpus_per_node", "backend.kind", "backend.rails", "backend.groups",
             "backend.spines", "backend.uplinks_per_spine")
_HOSTS = ("gpu.count", "gpu.prefix", "frontend.leaves", "frontend.cpu_servers", "frontend.storage_servers",
          "frontend.gateways")


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


_PORT = re.compile(r"^Ethernet\d{1,5}$")  # a switch data port; the plan checks it against the HwSKU


def host_nics(cluster: Cluster, node: Node) -> dict[str, Plane]:
    """The NICs a host has, and the plane each is cabled into."""
    gpu = node.role is Role.GPU
    nics = {rail_nic(r): Plane.BE for r in range(cluster.gpu.gpus_per_node if gpu else 0)}
    nics[FE_NIC] = Plane.FE
    if gpu and cluster.frontend.storage_nics:
        nics[STORAGE_NIC] = Plane.FE
    nics[MGMT_NIC] = Plane.MGMT
    return nics


def _nic_speed(cluster: Cluster, node: Node, nic: str) -> int:
    gpu, fe = cluster.gpu, cluster.frontend
    if nic == MGMT_NIC:
        return cluster.mgmt.speed
    if nic == STORAGE_NIC:
        return fe.storage_nic_speed
    if nic == FE_NIC:
        return gpu.fe_speed if node.role is Role.GPU else fe.host_speed
    return gpu.nic_speed


def _cables(cluster: Cluster, nodes: list[Node], laid: list[Link], ok) -> tuple[list[Link], list[Problem]]:
    """The declared cables, checked against the nodes and the cables the builders laid."""
    by_name = {n.name: n for n in nodes}
    taken = {(end, port): f"cabled to {other}" for lk in laid
             for end, port, other in ((lk.a, lk.a_port, lk.b), (lk.b, lk.b_port, lk.a)) if port is not None}
    links: list[Link] = []
    problems: list[Problem] = []
    for i, c in enumerate(cluster.cables if isinstance(cluster.cables, tuple) else ()):
        where = f"cables[{i}]"
        if not ok(where):
            continue
        found = len(problems)
        ends = []
        for end, port, side in ((c.a, c.a_port, "a_port"), (c.b, c.b_port, "b_port")):
            node = by_name.get(end)
            ends.append(node)
            if node is None:
                problems.append(Problem(where, f"no node named {end!r}", "use a name from `fablab show`"))
            elif not node.is_switch and not port:
                problems.append(Problem(where, f"host {end!r} needs its NIC name",
                                        f"set the port of {end!r}, e.g. {side}='fe0'"))
            elif not node.is_switch and port not in host_nics(cluster, node):
                problems.append(Problem(f"{where}.{side}", f"{end} has no NIC {port!r}",
                                        f"its NICs: {', '.join(host_nics(cluster, node))}"))
            elif node.is_switch and port is not None and not _PORT.match(port):
                problems.append(Problem(f"{where}.{side}", f"{end} has no port {port!r}",
                                        "name a data port, Ethernet<N>, or leave it out and let the plan number it"))
            elif port is not None and (end, port) in taken:
                problems.append(Problem(f"{where}.{side}", f"{end}:{port} is already {taken[(end, port)]}",
                                        "a NIC or port takes one cable: remove this one or use a free port"))
        a, b = ends
        if a is None or b is None or len(problems) > found:
            continue
        if a is b:
            problems.append(Problem(where, f"cable from {a.name} to itself", "a cable joins two different nodes"))
            continue
        planes = {n.role.plane for n in (a, b) if n.is_switch}
        if {Plane.FE, Plane.BE} <= planes:
            problems.append(Problem(where, f"cable {a.name}–{b.name} joins the FE and the BE fabric",
                                    "FE and BE must stay physically separate: remove this cable"))
            continue
        if Plane.MGMT in planes and len(planes) > 1:
            problems.append(Problem(where, f"cable {a.name}–{b.name} joins the mgmt plane to a data fabric",
                                    "management ports only plug into the OOB switch"))
            continue
        if not planes:
            problems.append(Problem(where, f"cable {a.name}–{b.name} joins two hosts", "cable a host to a leaf"))
            continue
        plane = planes.pop()
        host, nic = next(((n, port) for n, port in ((a, c.a_port), (b, c.b_port)) if not n.is_switch), (None, None))
        if host is not None and (nic_plane := host_nics(cluster, host)[nic]) is not plane:
            problems.append(Problem(where, f"{host.name}'s {nic} is a {nic_plane.value.upper()} NIC, cabled here "
                                           f"into the {plane.value.upper()} plane",
                                    "cable a NIC to a switch of its plane"))
            continue
        group = (_nic_speed(cluster, host, nic) if host is not None else cluster.mgmt.speed if plane is Plane.MGMT
                 else cluster.backend.uplink_speed if plane is Plane.BE else cluster.frontend.uplink_speed)
        if c.speed is not None and c.speed != group and not c.mixed_speed:
            problems.append(Problem(f"{where}.speed", f"a {c.speed}G cable among the {group}G links it joins",
                                    f"use speed={group} (or leave it out), or set mixed_speed=True on purpose"))
            continue
        for end, port in ((a.name, c.a_port), (b.name, c.b_port)):
            if port is not None:
                taken[(end, port)] = f"cabled by {where}"
        links.append(Link(a.name, b.name, plane, c.speed or group, a_port=c.a_port, b_port=c.b_port, declared=True))
    return links, problems


def _check_declaration(c: Cluster, ok) -> list[Problem]:
    """The declaration's own rules. `ok(*fields)`: none of them failed the first pass
    (declcheck: type, choice, limit); a rule reading one that did is skipped."""
    p: list[Problem] = []
    gpu, be, fe = c.gpu, c.backend, c.frontend
    if ok("name") and not _NAME.match(c.name):
        p.append(Problem("name", f"{c.name!r} is not a usable cluster name",
                         "lower-case letters, digits and '-', starting with a letter, at most 31"))
    if ok("gpu.prefix") and not _NAME.match(gpu.prefix):
        p.append(Problem("gpu.prefix", f"{gpu.prefix!r} is not a usable name prefix", "e.g. 'gpu'"))
    if ok("gpu.count") and gpu.count < 1:
        p.append(Problem("gpu.count", f"{gpu.count} GPU nodes: a cluster needs at least one",
                         "set gpu.count >= 1"))
    if ok("gpu.gpus_per_node") and gpu.gpus_per_node < 1:
        p.append(Problem("gpu.gpus_per_node", f"{gpu.gpus_per_node} GPUs per node", "set it >= 1"))
    if ok("backend.rails", "gpu.gpus_per_node") and be.rails != gpu.gpus_per_node >= 1:
        p.append(Problem("backend.rails",
                         f"{be.rails} rails but {gpu.gpus_per_node} GPUs per node",
                         "one rail per GPU: set backend.rails = gpu.gpus_per_node"))
    if ok("backend.kind", "backend.spines") and be.kind == "rail-only" and be.spines:
        p.append(Problem("backend.spines", f"a rail-only backend has no spine tier, but spines={be.spines}",
                         "set spines=0, or kind='rail-optimized'"))
    if ok("backend.kind") and be.kind == "rail-optimized":
        if ok("backend.spines") and be.spines < 1:
            p.append(Problem("backend.spines", f"rail-optimized needs a spine tier, spines={be.spines}",
                             "set spines >= 1, or kind='rail-only'"))
        if ok("backend.groups") and be.groups < 1:
            p.append(Problem("backend.groups", f"{be.groups} groups", "set groups >= 1"))
        elif ok("backend.groups", "gpu.count") and gpu.count >= 1 and gpu.count % be.groups:
            p.append(Problem("backend.groups",
                             f"{gpu.count} GPU nodes do not split evenly into {be.groups} groups",
                             "make gpu.count a multiple of backend.groups"))
        if ok("backend.uplinks_per_spine") and be.uplinks_per_spine < 1:
            p.append(Problem("backend.uplinks_per_spine", f"{be.uplinks_per_spine}", "set it >= 1"))
    if ok("frontend.leaves") and fe.leaves < 1:
        p.append(Problem("frontend.leaves", f"{fe.leaves} FE leaves", "set frontend.leaves >= 1"))
    if ok("frontend.spines") and fe.spines < 1:
        p.append(Problem("frontend.spines", f"{fe.spines} FE spines", "set frontend.spines >= 1"))
    for fname in ("frontend.cpu_servers", "frontend.storage_servers", "frontend.gateways"):
        if ok(fname) and (value := getattr(fe, fname.split(".")[1])) < 0:
            p.append(Problem(fname, f"{value} is negative", "set it >= 0"))
    for fname in ("backend.mtu", "frontend.mtu"):
        if ok(fname) and not 1280 <= (mtu := getattr(c, fname.split(".")[0]).mtu) <= 9216:
            p.append(Problem(fname, f"MTU {mtu} out of range", "use 1280..9216 (9100 is usual on the BE)"))
    if ok("bfd.interval_ms", "bfd.multiplier") and (c.bfd.interval_ms < 10 or c.bfd.multiplier < 1):
        p.append(Problem("bfd", f"interval {c.bfd.interval_ms} ms × {c.bfd.multiplier}",
                         "use interval_ms >= 10 and multiplier >= 1"))
    if ok("bfd.profile") and not _NAME.match(c.bfd.profile):
        p.append(Problem("bfd.profile", f"{c.bfd.profile!r} is not a usable profile name", "e.g. 'fabric'"))
    if isinstance(c.addressing, Addressing):
        p += _check_addressing(c.addressing, ok)
    if isinstance(c.objectives, Objectives):
        p += _check_objectives(c.objectives, ok)
    if ok("lossless", "backend.mtu"):  # an MTU out of range is reported as such, not as too small for RoCE
        p += check_lossless(c.lossless, be.mtu if 1280 <= be.mtu <= 9216 else 1 << 30)
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


def _check_objectives(o: Objectives, ok) -> list[Problem]:
    p: list[Problem] = []
    for name in ("hard_ms", "remote_ms", "gray_ms", "restore_ms"):
        if not ok(f"objectives.{name}"):
            continue
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


def _check_addressing(addr: Addressing, ok) -> list[Problem]:
    p: list[Problem] = []
    nets: dict[str, ipaddress.IPv4Network] = {}
    for plane in ("be", "fe", "mgmt", "tenants"):
        if not ok(f"addressing.{plane}"):
            continue
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
    for fname in ("addressing.be_asn", "addressing.fe_asn"):
        if ok(fname) and not 1 <= (asn := getattr(addr, fname.split(".")[1])) <= 4294967294:
            p.append(Problem(fname, f"ASN {asn} out of range", "use a private ASN, e.g. 64600"))
    return p


def _check_fabric(f: Fabric, balance: bool = True) -> list[Problem]:
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
        if balance and up and down > up and not c.backend.allow_oversubscription:
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
    return to_plain(cluster)


def cluster_from_dict(data: dict) -> Cluster:
    """The inverse of cluster_to_dict (harness.codec, driven by the classes' own annotations,
    so a new field or section survives the state file without being listed here: routing
    once did not, and an attached lab then expected /31s where it advertised summaries). A
    field or section missing from an older state file gets its default; data that does not
    fit (a key no class has, a section that is no object) is a TopologyError naming where it
    is (source "state file")."""
    try:
        return from_plain(Cluster, data, where="cluster")
    except CodecError as e:
        field = e.where.removeprefix("cluster.") if e.where != "cluster" else "cluster"
        hint = e.hint or "the state file is damaged: tear the lab down and boot it again"
        raise TopologyError([Problem(field, e.message, hint)], source="state file") from None
