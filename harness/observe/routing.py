"""Routing state as typed objects: BGP and BFD peers from FRR, routes from the kernel FIB."""
from __future__ import annotations

import json
from ipaddress import IPv4Network

from harness.core.observed import BfdPeer, BgpPeer, Route


def bgp_peers(node: str, summary: dict) -> tuple[BgpPeer, ...]:
    """From `show bgp ipv4 unicast summary json`."""
    table = summary.get("ipv4Unicast", summary)
    peers = []
    for name, p in sorted(table.get("peers", {}).items()):
        peers.append(BgpPeer(node, name, p.get("state", "?"), int(p.get("remoteAs", 0) or 0),
                             int(p.get("pfxRcd", 0) or 0), int(p.get("peerUptimeMsec", 0) or 0),
                             int(p.get("connectionsDropped", 0) or 0)))
    return tuple(peers)


def bfd_peers(node: str, peers: list) -> tuple[BfdPeer, ...]:
    """From `show bfd peers json`."""
    out = []
    for p in peers:
        out.append(BfdPeer(node, p.get("interface", ""), p.get("peer", ""), p.get("status", "?"),
                           int(p.get("detect-multiplier", 0)), int(p.get("receive-interval", 0)),
                           int(p.get("transmit-interval", 0)), int(p.get("remote-detect-multiplier", 0)),
                           int(p.get("remote-receive-interval", 0)), int(p.get("remote-transmit-interval", 0))))
    return tuple(sorted(out, key=lambda b: b.interface))


ROUTE_ARGV = ["ip", "-j", "-4", "route", "show", "table", "main"]
WIDTH_ARGV = ["ip", "-o", "-4", "route", "show", "table", "main"]
FIBMATCH_ARGV = ["ip", "-j", "-4", "route", "get", "fibmatch"]


def route_widths(ip_oneline: str) -> dict[str, int]:
    """prefix -> number of next hops, from `ip -o -4 route show table main` (one line per
    route, a multipath route's next hops on its line). The convergence poll needs only this,
    and a leaf of a 64-leaf fabric has 1,100 routes of 16 next hops: parsing them as JSON
    objects cost more than the rest of the poll."""
    widths: dict[str, int] = {}
    for line in ip_oneline.splitlines():
        dst = line.split(" ", 1)[0]
        if not dst:
            continue
        if dst == "default":
            dst = "0.0.0.0/0"
        elif "/" not in dst:
            dst += "/32"
        widths[dst] = line.count(" dev ")
    return widths


def kernel_routes(ip_json: str) -> dict[IPv4Network, Route]:
    """IPv4 routes of the main table, with the interface of every next hop, from the output
    of `ip -j -4 route show table main` run in the node (iproute2 parses netlink in C: a
    large leaf's FIB in 10 ms, where decoding it in Python took 0.4 s)."""
    routes: dict[IPv4Network, Route] = {}
    for r in json.loads(ip_json or "[]"):
        dst = r.get("dst", "")
        prefix = IPv4Network("0.0.0.0/0" if dst == "default" else dst if "/" in dst else f"{dst}/32")
        hops = r.get("nexthops") or ([r] if "dev" in r else [])
        routes[prefix] = Route(prefix, tuple(sorted(h["dev"] for h in hops if "dev" in h)), r.get("protocol", "boot"))
    return routes
