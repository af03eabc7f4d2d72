"""Break a running lab on purpose, to see a check fail for the right reason.

Each function changes the lab and returns a `Sabotage` whose `undo()` puts it back; use it
as a context manager. These are the mistakes the checks exist to catch.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from ipaddress import IPv4Network

from harness.core.errors import HarnessError
from harness.core.hwsku import hwsku
from harness.plumbing.labview import LabView
from harness.core.model import FE_NIC, Plane, Role
from harness.core.plan import CableRow
from harness.plumbing.wait import until


@dataclass
class Sabotage:
    description: str
    _undo: Callable[[], None]
    _done: bool = False

    def undo(self) -> None:
        if not self._done:
            self._done = True
            self._undo()

    def __enter__(self) -> Sabotage:
        return self

    def __exit__(self, *exc: object) -> None:
        self.undo()


def _vtysh_config(lab: LabView, node: str, *lines: str) -> None:
    lab.vtysh(node, "configure terminal", *lines)


def free_port(lab: LabView, switch: str) -> str:
    """The first port of the switch's HwSKU that no cable uses, as an installer would pick."""
    used = {c.a_port for c in lab.all_cables() if c.a_node == switch}
    used |= {c.b_port for c in lab.all_cables() if c.b_node == switch}
    for row in hwsku(lab.plan.switch(switch).hwsku).rows:
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


def stray_cable(lab: LabView, a: str, b: str, peer_group: bool = True, ports: tuple[str, str] | None = None) -> Sabotage:
    """A cable between two switches that the declaration does not have (say an FE leaf and a
    BE leaf), brought into BGP unnumbered. With `peer_group` it gets the fabric's usual port
    config, the `fabric` peer group and so its prefix filters; without, a hand-configured
    session with no filter at all. Either way each end keeps what it received before its
    inbound filter (soft-reconfiguration inbound), so a lab can show the filter at work."""
    for node in (a, b):
        if node not in {s.name for s in lab.plan.switches}:
            raise HarnessError(f"stray_cable joins routed switches; {node!r} is not one")
    pa, pb = ports or (free_port(lab, a), free_port(lab, b))
    with lab.netlink(a) as s:
        s.link("add", ifname=pa, kind="veth", peer={"ifname": pb, "net_ns_fd": lab.namespace(b)})
        s.link("set", ifname=pa, state="up")
    with lab.netlink(b) as s:
        s.link("set", ifname=pb, state="up")
    for node, port in ((a, pa), (b, pb)):
        asn = lab.plan.switch(node).asn
        session = [f"neighbor {port} interface peer-group fabric", "address-family ipv4 unicast"] if peer_group else \
            [f"neighbor {port} interface remote-as external", "address-family ipv4 unicast", f"neighbor {port} activate"]
        _vtysh_config(lab, node, f"interface {port}", "ipv6 nd ra-interval 1", "no ipv6 nd suppress-ra", "exit",
                      f"router bgp {asn}", *session, f"neighbor {port} soft-reconfiguration inbound")
    plane = lab.plan.switch(a).plane
    row = CableRow(a, pa, b, pb, plane, None, 0, "stray")
    lab.extra_cables.append(row)

    def undo() -> None:
        remove_stray(lab, ((a, pa), (b, pb)))
        lab.extra_cables.remove(row)

    how = "in the fabric peer group" if peer_group else "hand-configured BGP, no filters"
    return Sabotage(f"stray cable {a}:{pa} - {b}:{pb} ({how})", undo)


def remove_stray(lab: LabView, ends) -> None:
    """A stray cable's sessions and the cable itself gone ((node, port) of both ends)."""
    for node, port in ends:
        _vtysh_config(lab, node, f"router bgp {lab.plan.switch(node).asn}", f"no neighbor {port}")
    unplug(lab, *ends[0])


def unplug(lab: LabView, node: str, port: str) -> None:
    """A veth gone: deleting one end takes the peer with it."""
    with lab.netlink(node) as s:
        s.link("del", ifname=port)


def leak_route(lab: LabView, host: str) -> Sabotage:
    """A dual-homed GPU node turned into a router: it forwards, and its FE leaf routes the
    whole BE range to it."""
    nic = lab.plan.host(host).nic(FE_NIC)
    leaf = nic.peer
    be = str(IPv4Network(lab.plan.fabric.cluster.addressing.be))
    lab.set_sysctls(host, {"net.ipv4.ip_forward": 1})
    with lab.netlink(leaf) as s:
        s.route("add", dst=be, gateway=str(nic.address.ip))

    return Sabotage(f"route {be} on {leaf} via {host} ({nic.address.ip}), which forwards",
                    lambda: unleak_route(lab, host))


def unleak_route(lab: LabView, host: str) -> None:
    nic = lab.plan.host(host).nic(FE_NIC)
    with lab.netlink(nic.peer) as s:
        s.route("del", dst=str(IPv4Network(lab.plan.fabric.cluster.addressing.be)), gateway=str(nic.address.ip))
    lab.set_sysctls(host, {"net.ipv4.ip_forward": 0})


def l3_hashing(lab: LabView, switches: list[str] | None = None) -> Sabotage:
    """ECMP on addresses only (fib_multipath_hash_policy=0): RoCEv2's low entropy shows."""
    names = switches or [s.name for s in lab.plan.switches if s.plane is Plane.BE]
    before = {n: lab.sysctl(n, "net.ipv4.fib_multipath_hash_policy") for n in names}
    for n in names:
        lab.set_sysctls(n, {"net.ipv4.fib_multipath_hash_policy": 0})

    def undo() -> None:
        for n, value in before.items():
            lab.set_sysctls(n, {"net.ipv4.fib_multipath_hash_policy": value})

    return Sabotage(f"L3-only ECMP hashing on {', '.join(names)}", undo)


def bfd_off(lab: LabView, switches: list[str]) -> Sabotage:
    """No BFD on the fabric sessions of these switches: a gray failure then lasts until the
    BGP hold timer expires.

    A neighbour that keeps BFD sees its session to them fall silent, and its bgpd resets the
    BGP session a detection time later (software bfdd resets them at once, on its own side).
    Returns once every such neighbour has done so, so that a check that waits for BGP next
    does not start in the calm before that reset."""
    watched = [(p.peer, p.peer_port) for n in switches for p in lab.plan.switch(n).fabric_ports
               if p.peer not in switches]
    drops = {(node, port): _bgp_drops(lab, node, port) for node, port in watched}
    for n in switches:
        _vtysh_config(lab, n, f"router bgp {lab.plan.switch(n).asn}", "no neighbor fabric bfd")
    profile = lab.plan.fabric.cluster.bfd.profile

    def noticed(node: str, port: str) -> bool:
        bfd_up = any(b.up for b in lab.bfd_peers(node) if b.interface == port)
        return not bfd_up and _bgp_drops(lab, node, port) > drops[(node, port)]

    until(lambda: all(noticed(node, port) for node, port in watched), 30,
          f"the neighbours of {', '.join(switches)} to act on BFD gone silent")

    def undo() -> None:
        for n in switches:
            _vtysh_config(lab, n, f"router bgp {lab.plan.switch(n).asn}", "neighbor fabric bfd",
                          f"neighbor fabric bfd profile {profile}")

    return Sabotage(f"BFD off on {', '.join(switches)}", undo)


def _bgp_drops(lab: LabView, node: str, port: str) -> int:
    return sum(p.drops for p in lab.bgp_peers(node) if p.peer == port)


def slow_bfd(lab: LabView, switches: list[str], interval_ms: int = 1000, multiplier: int = 3) -> Sabotage:
    """BFD left at slow timers on these switches (a profile copied from a campus network):
    a gray failure now lasts interval × multiplier. Against an absolute objective this must
    fail; a budget derived from the timers would have grown with them."""
    bfd = lab.plan.fabric.cluster.bfd

    bfd_timers(lab, switches, interval_ms, multiplier)
    return Sabotage(f"BFD {interval_ms} ms × {multiplier} on {', '.join(switches)}",
                    lambda: bfd_timers(lab, switches, bfd.interval_ms, bfd.multiplier))


def bfd_timers(lab: LabView, switches: list[str], ms: int, mult: int) -> None:
    """The fabric's BFD profile at these timers on these switches (negotiated by BFD's poll
    sequence: no session is reset)."""
    profile = lab.plan.fabric.cluster.bfd.profile
    for n in switches:
        _vtysh_config(lab, n, "bfd", f"profile {profile}", f"detect-multiplier {mult}", f"receive-interval {ms}",
                      f"transmit-interval {ms}")


def carrier_blind(lab: LabView, node: str, ports: list[str]) -> Sabotage:
    """The switch no longer acts on carrier loss of these ports: zebra ignores the carrier
    (`no link-detect`) and the kernel keeps routing over a next hop whose carrier is gone
    (ignore_routes_with_linkdown=0). A pulled cable is then noticed only when BFD (or the BGP
    hold timer) gives up on the session: the fast local repair a hard failure relies on is gone."""
    keys = [f"net.ipv4.conf.{p}.ignore_routes_with_linkdown" for p in ports]
    keys.append("net.ipv4.conf.all.ignore_routes_with_linkdown")
    before = {k: lab.sysctl(node, k) for k in keys}
    for p in ports:
        _vtysh_config(lab, node, f"interface {p}", "no link-detect")
    lab.set_sysctls(node, {k: 0 for k in keys})

    def undo() -> None:
        lab.set_sysctls(node, before)
        for p in ports:
            _vtysh_config(lab, node, f"interface {p}", "link-detect")

    return Sabotage(f"carrier loss ignored on {node}:{','.join(ports)}", undo)


def fib_lag(lab: LabView, switches: list[str], hold_ms: int = 2000) -> Sabotage:
    """zebra holds every RIB change `hold_ms` before it reaches the kernel: a withdrawal the
    switch has received keeps forwarding into the dead path until then. (As a restore
    control it is unreliable: bgpd waits for zebra to validate a next hop before it
    advertises, so the hold often delays the advertisement too; see forwarding_blackhole.)"""
    if not 0 <= hold_ms <= 10000:
        raise HarnessError(f"fib_lag hold_ms {hold_ms}: zebra accepts 0..10000 ms")
    for n in switches:
        _vtysh_config(lab, n, f"zebra work-queue {hold_ms}")

    def undo() -> None:
        for n in switches:
            _vtysh_config(lab, n, "no zebra work-queue")

    return Sabotage(f"FIB installs held {hold_ms} ms on {', '.join(switches)}", undo)


def forwarding_blackhole(lab: LabView, switch: str, port: str) -> Sabotage:
    """The switch's data plane drops everything it forwards out of `port`, while its control
    plane (BGP, BFD: sent by the switch itself, not forwarded) stays up and keeps advertising:
    a port that came back with its forwarding entries not reprogrammed. Drops after
    fablab's flow counters (priority -10), so the counters still see the traffic arrive."""
    lab.check_node(switch)
    if port not in {p.name for p in lab.plan.switch(switch).ports}:
        raise HarnessError(f"forwarding_blackhole: {switch} has no port {port!r}")
    table = f"fablab_blackhole_{port}"
    lab.ns_exec(switch, ["nft", "-f", "-"], check=True, input=(
        f"table inet {table} {{\n  chain forward {{\n    type filter hook forward priority 0; policy accept;\n"
        f'    oifname "{port}" drop\n  }}\n}}\n'))

    def undo() -> None:
        lab.ns_exec(switch, ["nft", "delete", "table", "inet", table], check=True)

    return Sabotage(f"forwarding out of {switch}:{port} black-holed", undo)


# --------------------------------------------------------------------------- faults made from outside fablab
# These change the running lab without telling fablab (nothing goes into lab.extra_cables),
# as a technician or a script would: only a check that reads the kernel can see them.


def rogue_cable(lab: LabView, a: tuple[str, str | None], b: tuple[str, str | None]) -> Sabotage:
    """A veth between two nodes' namespaces that nobody declared or recorded, both ends up.
    A port of None on a switch takes its first free HwSKU port."""
    ends = []
    for node, port in (a, b):
        lab.check_node(node)
        port = port or free_port(lab, node)
        with lab.netlink(node) as s:
            if s.link_lookup(ifname=port):
                raise HarnessError(f"{node} already has an interface {port}: pick a free port for the rogue cable")
        ends.append((node, port))
    (na, pa), (nb, pb) = ends
    with lab.netlink(na) as s:
        s.link("add", ifname=pa, kind="veth", peer={"ifname": pb, "net_ns_fd": lab.namespace(nb)})
        s.link("set", ifname=pa, state="up")
    with lab.netlink(nb) as s:
        s.link("set", ifname=pb, state="up")

    return Sabotage(f"rogue cable {na}:{pa} - {nb}:{pb} (not recorded by fablab)", lambda: unplug(lab, na, pa))


def swap_cables(lab: LabView, a: tuple[str, str], b: tuple[str, str]) -> Sabotage:
    """Swap the far ends of the cables on ports `a` and `b` (e.g. two GPU NICs on their rail
    leaves): the far ends of the two veths trade places, so `a` now reaches b's leaf port and
    `b` a's. The ports keep their own configuration (a switch port's address stays on the port,
    as when a technician swaps two cables); only the cables move."""
    far_a, far_b = _far_end(lab, a), _far_end(lab, b)
    if far_a == far_b or a == b:
        raise HarnessError(f"swap_cables needs two different cables; got {a} and {b}")
    _move_far_ends(lab, far_a, far_b)
    return Sabotage(f"cables swapped: {a[0]}:{a[1]} now reaches {far_b[0]}:{far_b[1]}, "
                    f"{b[0]}:{b[1]} reaches {far_a[0]}:{far_a[1]} (not recorded by fablab)",
                    lambda: _move_far_ends(lab, far_a, far_b))


def _far_end(lab: LabView, end: tuple[str, str]) -> tuple[str, str]:
    for c in lab.plan.cables:
        if (c.a_node, c.a_port) == end:
            return c.b_node, c.b_port
        if (c.b_node, c.b_port) == end:
            return c.a_node, c.a_port
    raise HarnessError(f"{end[0]}:{end[1]} is not an end of a planned cable; see cabling.csv for the ports")


def _move_far_ends(lab: LabView, x: tuple[str, str], y: tuple[str, str]) -> None:
    """The interface at x goes to y's place and y's to x's; each place keeps its addresses and MTU.

    Each interface is renamed only while it is parked in a host's namespace, never in a
    switch's: FRR's zebra loses an interface's addresses when one is renamed under it. Its
    switches see the cable's end go and another arrive with the port's name, as in a real swap."""
    park = next((h.name for h in lab.plan.hosts if h.name not in (x[0], y[0])), None)
    if park is None:
        raise HarnessError("swap_cables needs a host namespace, other than the two ends', to park interfaces in")
    saved = {}
    for tag, (node, port) in (("x", x), ("y", y)):
        with lab.netlink(node) as s:
            found = s.get_links(ifname=port)
            if not found:
                raise HarnessError(f"{node} has no interface {port}: is the lab cabled as planned?")
            link = found[0]
            addrs = [(a.get_attr("IFA_ADDRESS"), a["prefixlen"]) for a in s.get_addr(index=link["index"], family=2)]
            saved[(node, port)] = (addrs, link.get_attr("IFLA_MTU"), f"fablabswp{tag}")
    for node, port in (x, y):
        with lab.netlink(node) as s:
            s.link("set", index=s.link_lookup(ifname=port)[0], net_ns_fd=lab.namespace(park),
                   ifname=saved[(node, port)][2])
    for (node, port), (dest_node, dest_port) in ((x, y), (y, x)):
        with lab.netlink(park) as s:
            s.link("set", index=s.link_lookup(ifname=saved[(node, port)][2])[0],
                   net_ns_fd=lab.namespace(dest_node), ifname=dest_port)
    for dest in (x, y):
        addrs, mtu, _ = saved[dest]
        with lab.netlink(dest[0]) as s:
            index = s.link_lookup(ifname=dest[1])[0]
            s.link("set", index=index, mtu=mtu)
            for address, prefixlen in addrs:
                s.addr("add", index=index, address=address, prefixlen=prefixlen)
            s.link("set", index=index, state="up")


def merge_tenants(lab: LabView, leaf: str, port: str, into_vni: int) -> Sabotage:
    """A tenant member's leaf port moved into another tenant's bridge (the wrong VLAN on an
    access port): its frames now reach the other tenant."""
    own = next(t.vni for t in lab.plan.tenants for m in t.members if (m.leaf, m.leaf_port) == (leaf, port))
    move_port(lab, leaf, port, into_vni)
    return Sabotage(f"{leaf}:{port} moved from VNI {own}'s bridge into VNI {into_vni}'s",
                    lambda: move_port(lab, leaf, port, own))


def move_port(lab: LabView, leaf: str, port: str, vni: int) -> None:
    """A leaf port into the bridge of tenant VNI `vni`."""
    from harness.core.tenancy import bridge_device

    lab.ns_exec(leaf, ["ip", "link", "set", port, "master", bridge_device(vni)], check=True)


def flip_acl_entry(lab: LabView, leaf: str, entry: str) -> Sabotage:
    """One ACL entry on one leaf with the opposite action (a rule typed the wrong way round)."""
    from harness.core.tenancy import NFT_TABLE

    listing = lab.ns_exec(leaf, ["nft", "-a", "list", "chain", "bridge", NFT_TABLE, "ingress"], check=True).stdout
    line = next(x for x in listing.splitlines() if f'comment "{entry}"' in x)
    rule, handle = line.strip().rsplit(" # handle ", 1)
    rule = rule.split(" counter ")[0]
    verdict = "drop" if " accept " in line else "accept"
    flipped = f'{rule} counter {verdict} comment "{entry}"'
    lab.ns_exec(leaf, ["nft", "replace", "rule", "bridge", NFT_TABLE, "ingress", "handle", handle, flipped],
                check=True)

    def undo() -> None:
        back = "accept" if verdict == "drop" else "drop"
        lab.ns_exec(leaf, ["nft", "replace", "rule", "bridge", NFT_TABLE, "ingress", "handle", handle,
                           f'{rule} counter {back} comment "{entry}"'], check=True)

    return Sabotage(f"{leaf}: ACL entry {entry} turned to {verdict}", undo)


def route_tenant(lab: LabView, leaf: str, vni: int) -> Sabotage:
    """A leaf that routes a tenant into the underlay: an address on the tenant's bridge (an SVI
    in the default VRF, which is what a missing VRF makes of an anycast gateway)."""
    from harness.core.tenancy import NFT_TABLE, bridge_device

    br = bridge_device(vni)
    lab.set_sysctls(leaf, {f"net.ipv4.conf.{br}.forwarding": 1})
    lab.ns_exec(leaf, ["nft", "flush", "chain", "bridge", NFT_TABLE, "to_leaf"], check=True)
    return Sabotage(f"{leaf} routes VNI {vni}'s bridge into the underlay", lambda: unroute_tenant(lab, leaf, vni))


def unroute_tenant(lab: LabView, leaf: str, vni: int) -> None:
    """The tenant's bridge no longer forwards IP, and the leaf takes none for itself."""
    from harness.core.tenancy import NFT_TABLE, bridge_device

    lab.ns_exec(leaf, ["nft", "add", "rule", "bridge", NFT_TABLE, "to_leaf", "ether", "type", "{", "ip,", "ip6", "}",
                       "counter", "drop", "comment", '"to-leaf"'], check=True)
    lab.set_sysctls(leaf, {f"net.ipv4.conf.{bridge_device(vni)}.forwarding": 0})


def join_rails(lab: LabView, leaf: str) -> Sabotage:
    """A rail-only leaf of several rails that forwards between them (its rails in one VRF, the
    port groups' separation forgotten): a GPU's NIC on one rail reaches another rail."""
    if not lab.plan.switch(leaf).separate_rails:
        raise HarnessError(f"join_rails: {leaf} keeps no rails apart (not a rail-only leaf of several rails)")
    listing = lab.ns_exec(leaf, ["nft", "-a", "list", "ruleset"], check=True).stdout
    found: list[tuple[list[str], str, str]] = []  # (family table chain, rule, handle)
    where: list[str] = []
    for line in map(str.strip, listing.splitlines()):
        if line.startswith("table "):
            where = line.split()[1:3]
        elif line.startswith("chain "):
            where = where[:2] + [line.split()[1]]
        elif "oifname !=" in line:
            rule, handle = line.rsplit(" # handle ", 1)
            found.append((list(where), rule, handle))
    if not found:
        raise HarnessError(f"join_rails: {leaf} has no rule keeping its rails apart")
    for where, _, handle in found:
        lab.ns_exec(leaf, ["nft", "delete", "rule", *where, "handle", handle], check=True)

    def undo() -> None:
        for where, rule, _ in found:
            lab.ns_exec(leaf, ["nft", "add", "rule", *where, rule], check=True)

    return Sabotage(f"{leaf} forwards between its rails' port groups", undo)
