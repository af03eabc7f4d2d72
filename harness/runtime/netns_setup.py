"""What the netns runtime sets in each node's namespace before its daemons start: the
kernel's settings of a switch and of a host, a switch's forwarding rules (around its
management port, and between the rails of a rail-only leaf that carries several), and a
dual-homed host's leaves as permanent neighbours; its addresses and static routes."""
from __future__ import annotations

import subprocess
import zlib
from collections.abc import Callable, Collection
from functools import partial
from pathlib import Path

from harness.core.errors import LabError
from harness.core.plan import CableRow, HostPlan, Plan, SwitchPlan
from harness.plumbing import namespaces


MGMT_TABLE = "fablab_mgmt"
OOB_BRIDGE = "br0"
_HASH_SEED = Path("/proc/sys/net/ipv4/fib_multipath_hash_seed")


def switch_sysctls(name: str, hash_policy: int) -> dict[str, int]:
    values = {
        "net.ipv4.ip_forward": 1,
        "net.ipv6.conf.all.forwarding": 1,
        "net.ipv4.fib_multipath_hash_policy": hash_policy,
        "net.ipv4.conf.all.rp_filter": 0,
        "net.ipv4.conf.default.rp_filter": 0,
        # A next hop whose carrier is gone is skipped by the kernel at once, before zebra reacts.
        "net.ipv4.conf.all.ignore_routes_with_linkdown": 1,
        "net.ipv4.conf.default.ignore_routes_with_linkdown": 1,
        # Link-local addresses usable at once: BGP unnumbered need not wait for DAD.
        "net.ipv6.conf.default.accept_dad": 0,
        "net.ipv6.conf.all.accept_dad": 0,
    }
    if _HASH_SEED.exists():
        # A fixed seed per switch: runs repeat, and switches still hash differently
        # (one shared seed would polarise a multi-tier fabric).
        values["net.ipv4.fib_multipath_hash_seed"] = zlib.crc32(name.encode()) & 0x7FFFFFFF
    return values


# Hosts never forward (a GPU node sits on FE, BE and mgmt: forwarding would bridge planes),
# speak IPv4 only, and keep rp_filter off so that a leaked packet is seen, not hidden.
HOST_SYSCTLS = {
    "net.ipv4.ip_forward": 0,
    "net.ipv6.conf.all.disable_ipv6": 1,
    "net.ipv6.conf.default.disable_ipv6": 1,
    "net.ipv4.conf.all.rp_filter": 0,
    "net.ipv4.conf.default.rp_filter": 0,
    "net.ipv4.conf.all.arp_ignore": 1,
    "net.ipv4.conf.all.arp_announce": 2,
    # A veth hands a packet's socket hash on, and the switches' policy-1 ECMP hash takes it: TCP's
    # redraw of it on every RTO moved a black-holed stream to another path within an RTO or two,
    # which no switch hashing the headers on the wire does (only IPv6's flow label carries it).
    "net.core.txrehash": 0,
}


def routed_host_sysctls(name: str, hash_policy: int) -> dict[str, int]:
    """A dual-homed host: still no forwarding, but ECMP over its two NICs as the FE leaves hash,
    a NIC whose carrier is gone skipped at once, and a seed of its own (as a switch has)."""
    values = {**HOST_SYSCTLS, "net.ipv4.fib_multipath_hash_policy": hash_policy,
              "net.ipv4.conf.all.ignore_routes_with_linkdown": 1,
              "net.ipv4.conf.default.ignore_routes_with_linkdown": 1}
    if _HASH_SEED.exists():
        values["net.ipv4.fib_multipath_hash_seed"] = zlib.crc32(name.encode()) & 0x7FFFFFFF
    return values


# SONiC keeps eth0 in a management VRF; this kernel has no VRF, so the switch refuses to
# forward anything into or out of its management port instead, and (Linux being a weak
# host) keeps its mgmt address off the data ports and its data addresses off eth0.
# Likewise a rail-only leaf of several rails, which SONiC renders with a VRF per rail: each
# port group forwards only within itself.
def switch_rules(sw: SwitchPlan) -> str:
    own = f"{{ {sw.mgmt.ip}, {sw.mgmt.network.broadcast_address}, 255.255.255.255, 224.0.0.0/4 }}"
    rails = "".join(f"\n    iifname {{ {_names(g)} }} oifname != {{ {_names(g)} }} drop"
                    for g in sw.port_groups.values() if g) if sw.separate_rails else ""
    return f"""table inet {MGMT_TABLE} {{
  chain forward {{
    type filter hook forward priority 0; policy accept;
    iifname "eth0" drop
    oifname "eth0" drop{rails}
  }}
  chain input {{
    type filter hook input priority 0; policy accept;
    iifname "eth0" ip daddr != {own} drop
    iifname != {{ "eth0", "lo" }} ip daddr {sw.mgmt.ip} drop
  }}
}}
"""


def _names(ports) -> str:
    return ", ".join(f'"{p.name}"' for p in ports)


def gateways_permanent(plan: Plan, namespace_of: Callable[[str], str]) -> None:
    """A dual-homed host holds each leaf's address as a permanent neighbour, as FRR's RFC 5549
    entries (169.254.0.1) are held on the switches. With a learned entry, a packet the host routes
    to a NIC in the instant its carrier drops (the kernel flushes the NIC's neighbours before it
    marks its routes linkdown) waits in the ARP queue of a dead link, and Linux TCP sends no
    retransmission of a segment still held in a host queue: the stream stalled for the whole
    failure, until the cable came back (fe-host-failover and fe-leaf-failover under load). A permanent
    entry is never flushed: that packet is dropped at once, and the RTO sends it over the other NIC."""
    for host in plan.hosts:
        if not host.routed:
            continue
        for nic in host.fe_nics:
            mac = namespaces.run_in(namespace_of(nic.peer), partial(_mac_of, nic.peer_port))
            namespaces.run_in(namespace_of(host.name), partial(_permanent_neighbour, nic.name, str(nic.gateway), mac))


def _mac_of(port: str) -> str:
    from pyroute2 import IPRoute

    with IPRoute() as s:
        return s.get_links(s.link_lookup(ifname=port)[0])[0].get_attr("IFLA_ADDRESS")


def _permanent_neighbour(nic: str, address: str, mac: str) -> None:
    from pyroute2 import IPRoute
    from pyroute2.netlink.rtnl.ndmsg import NUD_PERMANENT

    with IPRoute() as s:
        s.neigh("replace", dst=address, lladdr=mac, ifindex=s.link_lookup(ifname=nic)[0], state=NUD_PERMANENT)


def address_lines(plan: Plan, peer_ends: list[str], sw: SwitchPlan | None, host: HostPlan | None,
                  oob: bool) -> list[str]:
    """`ip -batch` for a node's namespace: its veth peers and lo up, the OOB bridge, addresses,
    routes."""
    lines = [f"link set {port} up" for port in peer_ends] + ["link set lo up"]
    if oob:
        lines += [f"link add {OOB_BRIDGE} type bridge"]
        lines += [f"link set {port.name} master {OOB_BRIDGE}" for port in plan.oob]
        lines += [f"link set {OOB_BRIDGE} up"]
    if sw is not None:
        lines += [f"addr add {sw.loopback.ip}/32 dev lo", f"addr add {sw.mgmt} dev eth0"]
        lines += [f"addr add {p.address} dev {p.name}" for p in sw.host_ports]
    if host is not None:
        if host.routed:  # its FE address, which its bgpd announces to both leaves
            lines += [f"addr add {host.loopback.ip}/32 dev lo"]
        for nic in host.nics:
            lines += [f"addr add {nic.address} dev {nic.name}"]
            lines += [f"route add {route} via {nic.gateway} dev {nic.name}" for route in nic.routes]
    return lines


def without_link_local(routes: str, ports: Collection[str]) -> list[str]:
    """The ports that `ip -6 route show table main` (routes) shows no fe80::/64 route on."""
    have = {words[2] for words in map(str.split, routes.splitlines()) if words[:2] == ["fe80::/64", "dev"]}
    return [p for p in ports if p not in have]


def restore_link_local(ns: str, ports: Collection[str]) -> list[str]:
    """Each port's fe80::/64 route where the kernel left none; the ports it was added on.

    The kernel adds a port's route itself once the port has carrier, from an allocation that
    may not wait for memory: with thousands of ports coming up at once one was missing in 4 of
    8 gpu4096 cablings (its link-local address there, the route not: 1 port in 27,000), and BGP
    unnumbered over it neither connects out nor answers a SYN, so the boot never converged.
    Added here, from a process that may wait; the kernel's own, if it comes after all, finds it."""
    shown = subprocess.run(["ip", "-n", ns, "-6", "route", "show", "table", "main"], capture_output=True, text=True)
    if shown.returncode != 0:
        raise LabError(f"ip in {ns}: reading its IPv6 routes: {shown.stderr.strip()}")
    added = []
    for port in without_link_local(shown.stdout, ports):
        run = subprocess.run(["ip", "-n", ns, "-6", "route", "append", "fe80::/64", "dev", port, "proto", "kernel",
                              "metric", "256"], capture_output=True, text=True)
        if run.returncode == 0:
            added.append(port)
        elif "File exists" not in run.stderr:  # the kernel's came meanwhile
            raise LabError(f"ip in {ns}: adding the fe80::/64 route of {port}: {run.stderr.strip()}")
    return added


def veth_lines(cables: list[CableRow], mtu: Callable[[CableRow], int], peer_ns: Callable[[str], str]) -> list[str]:
    """`ip -batch` for the namespace of each cable's a-end: the veth pair, both MTUs, this end
    up (the kernel does not bring a peer up on creation: its own node's batch does)."""
    return [f"link add {c.a_port} mtu {mtu(c)} up type veth peer name {c.b_port} mtu {mtu(c)} "
            f"netns {peer_ns(c.b_node)}" for c in cables]
