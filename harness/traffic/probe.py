"""Isolation probes: single UDP frames put on a wire by hand, and listeners that see them.

A probe is injected with AF_PACKET on a chosen NIC, addressed to a chosen next hop's MAC,
so it tests the fabric rather than the sending host's routing table: a host without a
route would never emit the packet, but a miscabled or leaking fabric would still carry it
if something put it there. Listeners are AF_PACKET sockets in every destination namespace.
All sockets live in one process: each is opened by a thread that joined the namespace,
and a socket stays in the namespace it was created in.
"""
from __future__ import annotations

import select
import socket
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass
from ipaddress import IPv4Address


PROBE_PORT = 33434
MAGIC = b"FLPROBE1"
ETH_P_IP = 0x0800
ETH_P_ALL = 0x0003
PACKET_OUTGOING = 4


@dataclass(frozen=True)
class Probe:
    """One packet's journey: from a NIC, through a next hop, to an address that must (or
    must not) receive it."""

    id: int
    src_node: str
    src_nic: str
    src_addr: str
    next_hop_node: str
    next_hop_port: str
    dst_node: str
    dst_addr: str
    expect_delivery: bool
    kind: str  # what the probe stands for, e.g. "fe->be", "be->fe (control)"


@dataclass(frozen=True)
class Arrival:
    probe: int
    node: str
    interface: str


def _checksum(data: bytes) -> int:
    if len(data) % 2:
        data += b"\0"
    total = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def frame(src_mac: bytes, dst_mac: bytes, src: str, dst: str, probe_id: int, ttl: int = 64) -> bytes:
    payload = MAGIC + struct.pack("!I", probe_id)
    udp = struct.pack("!HHHH", PROBE_PORT, PROBE_PORT, 8 + len(payload), 0) + payload
    header = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), probe_id & 0xFFFF, 0, ttl, 17, 0,
                         IPv4Address(src).packed, IPv4Address(dst).packed)
    header = header[:10] + struct.pack("!H", _checksum(header)) + header[12:]
    return dst_mac + src_mac + struct.pack("!H", ETH_P_IP) + header + udp


def parse(data: bytes) -> int | None:
    """The probe id of a frame, or None if it is not a probe."""
    if len(data) < 14 + 20 + 8 + 12 or data[12:14] != b"\x08\x00":
        return None
    ihl = (data[14] & 0x0F) * 4
    udp = 14 + ihl
    if data[23] != 17 or struct.unpack("!H", data[udp + 2:udp + 4])[0] != PROBE_PORT:
        return None
    body = data[udp + 8:udp + 8 + 12]
    if body[:8] != MAGIC:
        return None
    return struct.unpack("!I", body[8:12])[0]


OpenIn = Callable[[str, Callable[[], socket.socket]], socket.socket]


class ProbeSession:
    """Sockets for one round of probes: listeners on `listen` nodes, senders opened on demand.

    `open_in(node, fn)` runs fn in the node's network namespace (`Lab.in_namespace`)."""

    def __init__(self, listen: list[str], open_in: OpenIn) -> None:
        self._open_in = open_in
        self._listeners: dict[socket.socket, str] = {}
        self._senders: dict[tuple[str, str], socket.socket] = {}
        for node in listen:
            sock = open_in(node, lambda: socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_IP)))
            sock.setblocking(False)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
            self._listeners[sock] = node

    def sender(self, node: str, ifname: str) -> socket.socket:
        key = (node, ifname)
        if key not in self._senders:
            def open_socket() -> socket.socket:
                s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
                s.bind((ifname, 0))
                return s

            self._senders[key] = self._open_in(node, open_socket)
        return self._senders[key]

    def collect(self, expected: set[int], deadline: float, quiet: float = 0.3) -> list[Arrival]:
        """Read until every expected probe arrived and `quiet` s passed without any frame, or
        until the deadline."""
        arrivals: list[Arrival] = []
        seen: set[int] = set()
        last = time.monotonic()
        while True:
            now = time.monotonic()
            if now > deadline or (expected <= seen and now - last > quiet):
                return arrivals
            ready, _, _ = select.select(list(self._listeners), [], [], 0.05)
            for sock in ready:
                while True:
                    try:
                        data, addr = sock.recvfrom(2048)
                    except BlockingIOError:
                        break
                    if addr[2] == PACKET_OUTGOING:
                        continue
                    pid = parse(data)
                    if pid is not None:
                        arrivals.append(Arrival(pid, self._listeners[sock], addr[0]))
                        seen.add(pid)
                        last = time.monotonic()

    def close(self) -> None:
        for s in list(self._listeners) + list(self._senders.values()):
            s.close()

    def __enter__(self) -> ProbeSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
