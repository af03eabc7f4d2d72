"""Faults in the cables: two swapped, one nobody planned (made from outside fablab, unrecorded),
and a stray cable between the planes that fablab brings into BGP (with the fabric's filters or
without any)."""
from __future__ import annotations

from dataclasses import dataclass

from harness.core.errors import HarnessError, InputError, LabError
from harness.core.model import Role
from harness.core.plan import CableRow
from harness.core.portmap import running
from harness.faults.protocol import Applied
from harness.faults.targets import Cable, Port, Ports
from harness.plumbing import wait
from harness.plumbing.labview import LabView
from harness.render.frr import RA_INTERVAL_S

TAKES_S = 30.0  # a fault that acts through the routing protocols (a session up, BFD down) takes effect within


def until_in_effect(lab: LabView, holds, what: str) -> None:
    """Return once the fault has taken effect, so that a check run next sees it."""
    wait.until(holds, TAKES_S, what, interval=0.3,
               error=lambda: LabError(f"the fault is in, but {what} did not happen within {TAKES_S:.0f} s"))


def vtysh_config(lab: LabView, node: str, *lines: str) -> None:
    lab.vtysh(node, "configure terminal", *lines)


@dataclass(frozen=True)
class Made:
    """The cable a fault put in (or acted on), its ports as picked."""

    cable: Cable


@dataclass(frozen=True)
class Swapped:
    """The far ends of the two cables, as planned: the same move again puts both back."""

    far: tuple[Port, Port]


def free_port(lab: LabView, switch: str) -> str:
    """The first port of the switch's HwSKU that no cable uses, as an installer would pick."""
    used = {c.a_port for c in lab.all_cables() if c.a_node == switch}
    used |= {c.b_port for c in lab.all_cables() if c.b_node == switch}
    sw = lab.plan.switch(switch)
    cluster = lab.plan.fabric.cluster
    for row in running(cluster.hardware, sw.role, sw.hwsku, cluster.cabling.hwsku_of(switch)).rows:
        if row.name not in used:
            return row.name
    raise HarnessError(f"{switch} has no free port left for a stray cable")


def stray_ends(lab: LabView) -> tuple[str, str] | None:
    """An FE and a BE switch that each have a free port for a cable nobody planned, leaves
    first; None when every port of every FE or every BE switch is cabled (xlarge's 1:1 leaves
    and spines fill their HwSKU): nowhere to plug a stray cable in."""
    def with_free_port(*roles: Role) -> str | None:
        for role in roles:
            for node in lab.plan.fabric.nodes_with(role):
                try:
                    free_port(lab, node.name)
                except HarnessError:
                    continue
                return node.name
        return None

    fe, be = with_free_port(Role.FE_LEAF, Role.FE_SPINE), with_free_port(Role.BE_LEAF, Role.BE_SPINE)
    return None if fe is None or be is None else (fe, be)


def unplug(lab: LabView, node: str, port: str) -> None:
    """A veth gone: deleting one end takes the peer with it."""
    with lab.netlink(node) as s:
        s.link("del", ifname=port)


def _veth(lab: LabView, a: Port, b: Port) -> None:
    with lab.netlink(a.node) as s:
        s.link("add", ifname=a.port, kind="veth", peer={"ifname": b.port, "net_ns_fd": lab.namespace(b.node)})
        s.link("set", ifname=a.port, state="up")
    with lab.netlink(b.node) as s:
        s.link("set", ifname=b.port, state="up")


# --------------------------------------------------------------------------- rogue-cable

def rogue(lab: LabView, target: Cable) -> Applied[Made]:
    """A veth between two nodes' namespaces that nobody declared or recorded, both ends up; an
    end without a port takes its switch's first free HwSKU port."""
    ends = []
    for end in (target.a, target.b):
        lab.check_node(end.node)
        port = end.port or free_port(lab, end.node)
        with lab.netlink(end.node) as s:
            if s.link_lookup(ifname=port):
                raise InputError(f"{end.node} already has an interface {port}: pick a free port for the rogue cable")
        ends.append(Port(end.node, port))
    a, b = ends
    _veth(lab, a, b)
    return Applied(f"rogue cable {a} - {b} (not recorded by fablab)", Made(Cable(a, b)))


def unrogue(lab: LabView, target: Cable, state: Made) -> None:
    unplug(lab, state.cable.a.node, state.cable.a.port)


# --------------------------------------------------------------------------- stray-cable(-unfiltered)

def stray(lab: LabView, target: Cable, peer_group: bool = True) -> Applied[Made]:
    """A cable between two switches that the declaration does not have (say an FE leaf and a
    BE leaf), brought into BGP unnumbered, recorded in lab.extra_cables. With `peer_group` it
    gets the fabric's usual port config, the `fabric` peer group and so its prefix filters;
    without, a hand-configured session with no filter at all. Either way each end keeps what
    it received before its inbound filter (soft-reconfiguration inbound), so a lab can show
    the filter at work. Returns once the session is up."""
    switches = {s.name for s in lab.plan.switches}
    for end in (target.a, target.b):
        if end.node not in switches:
            raise InputError(f"a stray cable joins routed switches; {end.node!r} is not one")
    a = Port(target.a.node, target.a.port or free_port(lab, target.a.node))
    b = Port(target.b.node, target.b.port or free_port(lab, target.b.node))
    _veth(lab, a, b)
    for end in (a, b):
        asn = lab.plan.switch(end.node).asn
        session = [f"neighbor {end.port} interface peer-group fabric", "address-family ipv4 unicast"] if peer_group \
            else [f"neighbor {end.port} interface remote-as external", "address-family ipv4 unicast",
                  f"neighbor {end.port} activate"]
        vtysh_config(lab, end.node, f"interface {end.port}", f"ipv6 nd ra-interval {RA_INTERVAL_S}",
                     "no ipv6 nd suppress-ra", "exit", f"router bgp {asn}", *session,
                     f"neighbor {end.port} soft-reconfiguration inbound")
    lab.extra_cables.append(_row(lab, a, b))
    made = Made(Cable(a, b))
    try:
        until_in_effect(lab, lambda: any(p.peer == a.port and p.established for p in lab.bgp_peers(a.node)),
                        f"the BGP session on {a} to come up")
    except BaseException:
        unstray(lab, target, made)
        raise
    how = "in the fabric peer group" if peer_group else "hand-configured BGP, no filters"
    return Applied(f"stray cable {a} - {b} ({how})", made)


def _row(lab: LabView, a: Port, b: Port) -> CableRow:
    return CableRow(a.node, a.port, b.node, b.port, lab.plan.switch(a.node).plane, None, 0, "stray")


def unstray(lab: LabView, target: Cable, state: Made) -> None:
    a, b = state.cable.a, state.cable.b
    remove_stray(lab, ((a.node, a.port), (b.node, b.port)))
    row = _row(lab, a, b)
    if row in lab.extra_cables:  # recorded by this process; another one (fablab fix) has no record
        lab.extra_cables.remove(row)


def remove_stray(lab: LabView, ends) -> None:
    """A stray cable's sessions and the cable itself gone ((node, port) of both ends)."""
    for node, port in ends:
        vtysh_config(lab, node, f"router bgp {lab.plan.switch(node).asn}", f"no neighbor {port}")
    unplug(lab, *ends[0])


def stray_unfiltered(lab: LabView, target: Cable) -> Applied[Made]:
    return stray(lab, target, peer_group=False)


# --------------------------------------------------------------------------- swapped-cables

def far_end(lab: LabView, end: Port) -> Port:
    for c in lab.plan.cables:
        if (c.a_node, c.a_port) == (end.node, end.port):
            return Port(c.b_node, c.b_port)
        if (c.b_node, c.b_port) == (end.node, end.port):
            return Port(c.a_node, c.a_port)
    raise InputError(f"{end} is not an end of a planned cable; see cabling.csv for the ports")


def swap(lab: LabView, target: Ports) -> Applied[Swapped]:
    """The far ends of the cables on two ports trade places (e.g. two GPU NICs on their rail
    leaves): the first port now reaches the second's leaf port and the second the first's. The
    ports keep their own configuration (a switch port's address stays on the port, as when a
    technician swaps two cables); only the cables move."""
    if len(target.ports) != 2:
        raise InputError(f"--on {target}: swapped cables are two ports, NODE:PORT,NODE:PORT")
    a, b = target.ports
    far_a, far_b = far_end(lab, a), far_end(lab, b)
    if far_a == far_b or a == b:
        raise InputError(f"swapping needs two different cables; got {a} and {b}")
    move_far_ends(lab, far_a, far_b)
    return Applied(f"cables swapped: {a} now reaches {far_b}, {b} reaches {far_a} (not recorded by fablab)",
                   Swapped((far_a, far_b)))


def unswap(lab: LabView, target: Ports, state: Swapped) -> None:
    move_far_ends(lab, *state.far)


def move_far_ends(lab: LabView, x: Port, y: Port) -> None:
    """The interface at x goes to y's place and y's to x's; each place keeps its addresses and MTU.

    Each interface is renamed only while it is parked in a host's namespace, never in a
    switch's: FRR's zebra loses an interface's addresses when one is renamed under it. Its
    switches see the cable's end go and another arrive with the port's name, as in a real swap."""
    park = next((h.name for h in lab.plan.hosts if h.name not in (x.node, y.node)), None)
    if park is None:
        raise HarnessError("swapping cables needs a host namespace, other than the two ends', to park interfaces in")
    saved = {}
    for tag, end in (("x", x), ("y", y)):
        with lab.netlink(end.node) as s:
            found = s.get_links(ifname=end.port)
            if not found:
                raise HarnessError(f"{end.node} has no interface {end.port}: is the lab cabled as planned?")
            link = found[0]
            addrs = [(a.get_attr("IFA_ADDRESS"), a["prefixlen"]) for a in s.get_addr(index=link["index"], family=2)]
            saved[end] = (addrs, link.get_attr("IFLA_MTU"), f"fablabswp{tag}")
    for end in (x, y):
        with lab.netlink(end.node) as s:
            s.link("set", index=s.link_lookup(ifname=end.port)[0], net_ns_fd=lab.namespace(park),
                   ifname=saved[end][2])
    for end, dest in ((x, y), (y, x)):
        with lab.netlink(park) as s:
            s.link("set", index=s.link_lookup(ifname=saved[end][2])[0], net_ns_fd=lab.namespace(dest.node),
                   ifname=dest.port)
    for dest in (x, y):
        addrs, mtu, _ = saved[dest]
        with lab.netlink(dest.node) as s:
            index = s.link_lookup(ifname=dest.port)[0]
            s.link("set", index=index, mtu=mtu)
            for address, prefixlen in addrs:
                s.addr("add", index=index, address=address, prefixlen=prefixlen)
            s.link("set", index=index, state="up")
