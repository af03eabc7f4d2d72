"""Is any IPv4 next hop of this namespace still being resolved? One netlink dump tells.

A sender primes its paths and waits until no neighbour is INCOMPLETE before it sends, or
the kernel drops what it queues beyond a few packets per unresolved neighbour. Asking over
a netlink socket costs no process: `ip neigh` did, every millisecond, in every sender, and a
sender serving 128 namespaces asks in each.
"""
from __future__ import annotations

import socket
import struct

from harness.traffic.flows import TrafficError

_NLMSG_HDR = struct.Struct("=IHHII")  # len, type, flags, seq, pid
_NDMSG = struct.Struct("=BBHiHBB")  # family, pad, pad, ifindex, state, flags, type
_NLMSG_ERROR, _NLMSG_DONE = 2, 3
_RTM_NEWNEIGH, _RTM_GETNEIGH = 28, 30
_NLM_F_REQUEST, _NLM_F_DUMP = 0x1, 0x300
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
        self._sock.send(_NLMSG_HDR.pack(_NLMSG_HDR.size + len(body), _RTM_GETNEIGH,
                                        _NLM_F_REQUEST | _NLM_F_DUMP, self._seq, 0) + body)
        incomplete = False
        while True:
            data = self._sock.recv(1 << 16)
            at = 0
            while at + _NLMSG_HDR.size <= len(data):
                length, kind, _, seq, _ = _NLMSG_HDR.unpack_from(data, at)
                if length < _NLMSG_HDR.size:
                    raise TrafficError(f"netlink: malformed message of length {length}")
                if seq == self._seq:
                    if kind == _NLMSG_DONE:
                        return incomplete
                    if kind == _NLMSG_ERROR:
                        (code,) = struct.unpack_from("=i", data, at + _NLMSG_HDR.size)
                        raise TrafficError(f"netlink neighbour dump failed: error {-code}")
                    if kind == _RTM_NEWNEIGH:
                        state = _NDMSG.unpack_from(data, at + _NLMSG_HDR.size)[4]
                        incomplete = incomplete or bool(state & _NUD_INCOMPLETE)
                at += (length + 3) & ~3

    def close(self) -> None:
        self._sock.close()
