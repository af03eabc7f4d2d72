"""Interface counters from the kernel, over netlink."""
from __future__ import annotations

from typing import TYPE_CHECKING

from harness.core.observed import Counters

if TYPE_CHECKING:  # pyroute2 costs a fablab command 0.2 s to import: only where it is used
    from pyroute2 import IPRoute


def interface_counters(ipr: IPRoute, ifname: str | None = None) -> dict[str, Counters]:
    links = ipr.get_links(ifname=ifname) if ifname else ipr.get_links()
    out = {}
    for link in links:
        name = link.get_attr("IFLA_IFNAME")
        s = link.get_attr("IFLA_STATS64") or {}
        out[name] = Counters(name, s.get("rx_packets", 0), s.get("tx_packets", 0), s.get("rx_bytes", 0),
                             s.get("tx_bytes", 0), s.get("rx_dropped", 0), s.get("tx_dropped", 0),
                             bool(link.get_attr("IFLA_CARRIER")))
    return out
