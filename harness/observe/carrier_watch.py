"""When a node's kernel acted on the carrier loss of its ports: the RTM_NEWLINK its link-state
work (linkwatch) sends once it has taken a port's carrier down, right after the FIB stopped
routing over the port (ignore_routes_with_linkdown). A switch's ASIC does that in
microseconds. This kernel does it in a kworker that waits for the rtnl lock and a CPU, which
a machine busy with other labs gives late (a leaf once took 118 ms: failover-local's window).
"""
from __future__ import annotations

import socket
import struct
import threading
import time
from collections.abc import Collection

from harness.core.errors import LabError
from harness.plumbing import namespaces, rtnetlink

_IFF_LOWER_UP = 0x10000
_IFINFO = struct.Struct("=BxHiII")  # family, type, index, flags, change


def carrier_losses(data: bytes, ports: dict[int, str]) -> list[str]:
    """The ports (by ifindex in `ports`) that a netlink datagram announces without carrier."""
    out = []
    try:
        for kind, _, body in rtnetlink.messages(data):
            if kind == rtnetlink.RTM_NEWLINK and body + _IFINFO.size <= len(data):
                _, _, index, flags, _ = _IFINFO.unpack_from(data, body)
                if index in ports and not flags & _IFF_LOWER_UP:
                    out.append(ports[index])
    except rtnetlink.Malformed:
        pass  # what came before it stands
    return out


class CarrierWatch:
    """While open: when (time.monotonic()) the node's kernel first announced each of `ports`
    without carrier, in `lost`. Its reader is a thread of the opener's, so under the check's
    SCHED_FIFO it wakes as the message is sent. A port the kernel does not have is not watched."""

    def __init__(self, namespace: str, ports: Collection[str]) -> None:
        self._namespace, self._ports = namespace, tuple(ports)
        self.lost: dict[str, float] = {}
        self._stop = threading.Event()
        self._sock: socket.socket | None = None
        self._thread: threading.Thread | None = None

    def __enter__(self) -> CarrierWatch:
        def opened() -> tuple[socket.socket, dict[int, str]]:
            sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, socket.NETLINK_ROUTE)
            sock.bind((0, rtnetlink.RTMGRP_LINK))
            index = {}
            for port in self._ports:
                try:
                    index[socket.if_nametoindex(port)] = port
                except OSError:
                    pass
            return sock, index

        try:
            self._sock, index = namespaces.run_in(self._namespace, opened)
        except LabError:
            return self  # no evidence, so no allowance: the window is judged as it is
        self._sock.settimeout(0.2)
        self._thread = threading.Thread(target=self._read, args=(self._sock, index), daemon=True,
                                        name=f"carrier-{self._namespace}")
        self._thread.start()
        return self

    def _read(self, sock: socket.socket, index: dict[int, str]) -> None:
        while not self._stop.is_set():
            try:
                data = sock.recv(65536)
            except socket.timeout:
                continue
            except OSError:
                return
            now = time.monotonic()
            for port in carrier_losses(data, index):
                self.lost.setdefault(port, now)

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(1.0)
        if self._sock is not None:
            self._sock.close()
