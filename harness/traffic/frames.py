"""Single TCP, UDP or ICMP frames with a chosen 5-tuple, and taps that see where they land.

For checks that must hit one ACL entry or one L2 segment exactly: the frame is written by
hand (addresses, protocol, ports, a nonce in the payload) and put on a chosen NIC with
AF_PACKET, addressed to a chosen MAC; taps on the NICs where it could land report it by
nonce. A tap on the destination NIC counts a frame that reached it, whatever the host's
stack would do with it (a TCP SYN with no listener is still a SYN the fabric delivered);
frames a tap sends itself are not counted.
"""
from __future__ import annotations

import socket
import struct
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from ipaddress import IPv4Address

from harness.core.tenancy import VXLAN_PORT
from harness.traffic.probe import (ETH_P_ALL, ETH_P_IP, MAGIC, NONCE_BYTES, OpenIn, internet_checksum, mac_of,
                                   read_until)

_PACKET_OUTGOING = 4
_TAG = struct.Struct(f"!8sI{NONCE_BYTES}s")


@dataclass(frozen=True)
class Shot:
    """One frame: from a NIC, to a MAC (a node's port), carrying a 5-tuple."""

    id: int
    nonce: bytes
    src_node: str
    src_port: str
    src_addr: str
    to_node: str  # whose MAC the frame is addressed to
    to_port: str
    dst_addr: str
    protocol: int
    sport: int = 0
    dport: int = 0


@dataclass(frozen=True)
class Landing:
    shot: int
    node: str
    port: str
    encapsulated: bool = False  # seen inside a VXLAN packet (in transit between VTEPs), not delivered


def is_vxlan(data: bytes) -> bool:
    """An IPv4 UDP packet to the VXLAN port (the outer headers of a tunnelled frame)."""
    if len(data) < 38 or data[12:14] != b"\x08\x00" or data[23] != 17:
        return False
    ihl = (data[14] & 0x0F) * 4
    return struct.unpack_from("!H", data, 14 + ihl + 2)[0] == VXLAN_PORT


def l4_frame(src_mac: bytes, dst_mac: bytes, shot: Shot, ttl: int = 64) -> bytes:
    body = _TAG.pack(MAGIC, shot.id, shot.nonce)
    src, dst = IPv4Address(shot.src_addr).packed, IPv4Address(shot.dst_addr).packed
    if shot.protocol == 6:
        l4 = struct.pack("!HHIIBBHHH", shot.sport, shot.dport, shot.id, 0, 5 << 4, 0x02, 64240, 0, 0) + body
    elif shot.protocol == 17:
        l4 = struct.pack("!HHHH", shot.sport, shot.dport, 8 + len(body), 0) + body
    else:
        l4 = struct.pack("!BBHHH", 8, 0, 0, shot.id & 0xFFFF, 1) + body  # echo request
    if shot.protocol == 1:
        l4 = l4[:2] + struct.pack("!H", internet_checksum(l4)) + l4[4:]
    else:
        pseudo = src + dst + struct.pack("!BBH", 0, shot.protocol, len(l4))
        at = 16 if shot.protocol == 6 else 6
        l4 = l4[:at] + struct.pack("!H", internet_checksum(pseudo + l4)) + l4[at + 2:]
    header = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(l4), shot.id & 0xFFFF, 0x4000, ttl, shot.protocol, 0,
                         src, dst)
    header = header[:10] + struct.pack("!H", internet_checksum(header)) + header[12:]
    return dst_mac + src_mac + struct.pack("!H", ETH_P_IP) + header + l4


def tag_of(data: bytes) -> tuple[int, bytes] | None:
    at = data.find(MAGIC)
    if at < 0 or len(data) < at + _TAG.size:
        return None
    _, shot_id, nonce = _TAG.unpack_from(data, at)
    return shot_id, nonce


class TapSession:
    """Taps on `taps` (node -> ports), senders on `sends` (node -> ports), MACs of both."""

    def __init__(self, open_in: OpenIn, taps: dict[str, set[str]], sends: dict[str, set[str]],
                 macs: dict[str, set[str]]) -> None:
        self._taps: dict[socket.socket, tuple[str, str]] = {}
        self._senders: dict[str, socket.socket] = {}
        self._macs: dict[tuple[str, str], bytes] = {}
        try:
            for node in sorted(set(taps) | set(sends) | set(macs)):
                opened = open_in(node, lambda n=node: _open(sorted(taps.get(n, ())), bool(sends.get(n)),
                                                            sorted(set(macs.get(n, ())) | set(sends.get(n, ())))))
                tap_socks, sender, found = opened  # type: ignore[misc]
                self._taps.update({s: (node, port) for port, s in tap_socks.items()})
                if sender is not None:
                    self._senders[node] = sender
                self._macs.update({(node, port): mac for port, mac in found.items()})
        except BaseException:
            self.close()
            raise

    def mac(self, node: str, port: str) -> bytes:
        return self._macs[(node, port)]

    def send(self, shot: Shot, copies: int = 1) -> None:
        data = l4_frame(self.mac(shot.src_node, shot.src_port), self.mac(shot.to_node, shot.to_port), shot)
        for _ in range(copies):
            self._senders[shot.src_node].sendto(data, (shot.src_port, ETH_P_IP))

    def collect(self, nonces: dict[int, bytes], done: Callable[[list[Landing]], bool], deadline: float,
                quiet: float = 0.3) -> list[Landing]:
        """Read the taps until `done(landings)` holds and `quiet` s passed without a frame,
        or until the deadline."""
        return read_until(list(self._taps), lambda sock: _drain(sock, *self._taps[sock], nonces), done, deadline,
                          quiet)

    def close(self) -> None:
        for s in list(self._taps) + list(self._senders.values()):
            s.close()
        self._taps.clear()
        self._senders.clear()

    def __enter__(self) -> TapSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _open(taps: Iterable[str], send: bool, macs: list[str]):
    opened: dict[str, socket.socket] = {}
    sender = None
    try:
        for port in taps:
            s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
            opened[port] = s
            s.bind((port, ETH_P_ALL))
            s.setblocking(False)
        sender = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
        found = {port: mac_of(sender, port) for port in macs}
        if not send:
            sender.close()
            sender = None
        return opened, sender, found
    except BaseException:
        for s in opened.values():
            s.close()
        if sender is not None:
            sender.close()
        raise


def _drain(sock: socket.socket, node: str, port: str, nonces: dict[int, bytes]) -> list[Landing]:
    out = []
    while True:
        try:
            data, addr = sock.recvfrom(65535)
        except BlockingIOError:
            return out
        if addr[2] == _PACKET_OUTGOING:
            continue
        tag = tag_of(data)
        if tag is not None and nonces.get(tag[0]) == tag[1]:
            out.append(Landing(tag[0], node, port, is_vxlan(data)))
