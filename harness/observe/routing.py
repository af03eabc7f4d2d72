"""Routing state as typed objects: BGP and BFD peers from FRR, routes from the kernel FIB."""
from __future__ import annotations

import socket
from dataclasses import dataclass
from ipaddress import IPv4Network

from pyroute2 import IPRoute

RT_PROTOS = {2: "kernel", 3: "boot", 4: "static", 186: "bgp", 188: "ospf"}


@dataclass(frozen=True)
class BgpPeer:
    node: str
    peer: str  # the interface name for unnumbered sessions
    state: str
    remote_as: int
    prefixes_received: int
    uptime_ms: int

    @property
    def established(self) -> bool:
        return self.state == "Established"


@dataclass(frozen=True)
class BfdPeer:
    node: str
    interface: str
    peer: str
    status: str
    detect_multiplier: int
    receive_interval_ms: int
    transmit_interval_ms: int

    @property
    def up(self) -> bool:
        return self.status == "up"


@dataclass(frozen=True)
class Route:
    prefix: IPv4Network
    interfaces: tuple[str, ...]  # one per next hop, sorted
    protocol: str

    @property
    def width(self) -> int:
        return len(self.interfaces)


def bgp_peers(node: str, summary: dict) -> tuple[BgpPeer, ...]:
    """From `show bgp ipv4 unicast summary json`."""
    table = summary.get("ipv4Unicast", summary)
    peers = []
    for name, p in sorted(table.get("peers", {}).items()):
        peers.append(BgpPeer(node, name, p.get("state", "?"), int(p.get("remoteAs", 0) or 0),
                             int(p.get("pfxRcd", 0) or 0), int(p.get("peerUptimeMsec", 0) or 0)))
    return tuple(peers)


def bfd_peers(node: str, peers: list) -> tuple[BfdPeer, ...]:
    """From `show bfd peers json`."""
    out = []
    for p in peers:
        out.append(BfdPeer(node, p.get("interface", ""), p.get("peer", ""), p.get("status", "?"),
                           int(p.get("detect-multiplier", 0)), int(p.get("receive-interval", 0)),
                           int(p.get("transmit-interval", 0))))
    return tuple(sorted(out, key=lambda b: b.interface))


def kernel_routes(ipr: IPRoute) -> dict[IPv4Network, Route]:
    """IPv4 routes of the main table, with the interface of every next hop."""
    names = {link["index"]: link.get_attr("IFLA_IFNAME") for link in ipr.get_links()}
    routes: dict[IPv4Network, Route] = {}
    for msg in ipr.get_routes(family=socket.AF_INET, table=254):
        dst = msg.get_attr("RTA_DST") or "0.0.0.0"
        prefix = IPv4Network(f"{dst}/{msg['dst_len']}")
        multipath = msg.get_attr("RTA_MULTIPATH")
        if multipath:
            oifs = [names.get(hop["oif"], str(hop["oif"])) for hop in multipath]
        else:
            oif = msg.get_attr("RTA_OIF")
            oifs = [names.get(oif, str(oif))] if oif is not None else []
        routes[prefix] = Route(prefix, tuple(sorted(oifs)), RT_PROTOS.get(msg["proto"], str(msg["proto"])))
    return routes
