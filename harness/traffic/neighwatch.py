"""Is any IPv4 next hop of this namespace still being resolved? One netlink dump tells.

A sender primes its paths and waits until no neighbour is INCOMPLETE before it sends, or
the kernel drops what it queues beyond a few packets per unresolved neighbour. Asking over
a netlink socket costs no process: `ip neigh` did, every millisecond, in every sender, and a
sender serving 128 namespaces asks in each.
"""
from __future__ import annotations

import socket
import struct

from harness.plumbing import rtnetlink
from harness.traffic.flows import TrafficError

_NDMSG = struct.Struct("=BBHiHBB")  # family, pad, pad, ifindex, state, flags, type
_NUD_INCOMPLETE = 0x01


class NeighbourWatch:
    """Bound to the network namespace the caller is in when it is made."""

    def __init__(self) -> None:
        self._sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, socket.NETLINK_ROUTE)
        self._sock.bind((0, 0))
        self._seq = 0

    def resolving(self) -> bool:
        """True while some IPv4 neighbour is INCOMPLETE."""
        self._seq += 1
        body = _NDMSG.pack(socket.AF_INET, 0, 0, 0, 0, 0, 0)
        self._sock.send(rtnetlink.request(rtnetlink.RTM_GETNEIGH, rtnetlink.NLM_F_REQUEST | rtnetlink.NLM_F_DUMP,
                                          self._seq, body))
        incomplete = False
        while True:
            data = self._sock.recv(1 << 16)
            try:
                for kind, seq, at in rtnetlink.messages(data):
                    if seq != self._seq:
                        continue
                    if kind == rtnetlink.NLMSG_DONE:
                        return incomplete
                    if kind == rtnetlink.NLMSG_ERROR:
                        (code,) = struct.unpack_from("=i", data, at)
                        raise TrafficError(f"netlink neighbour dump failed: error {-code}")
                    if kind == rtnetlink.RTM_NEWNEIGH:
                        incomplete = incomplete or bool(_NDMSG.unpack_from(data, at)[4] & _NUD_INCOMPLETE)
            except rtnetlink.Malformed as e:
                raise TrafficError(str(e)) from None

    def close(self) -> None:
        self._sock.close()
