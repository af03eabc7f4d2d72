"""A gratuitous ARP: how a host tells its segment (and an EVPN leaf) its MAC and address."""
from __future__ import annotations

import socket
import struct
from ipaddress import IPv4Address

ETH_P_ARP = 0x0806


def garp_frame(mac: bytes, address: str) -> bytes:
    ip = IPv4Address(address).packed
    arp = struct.pack("!HHBBH6s4s6s4s", 1, 0x0800, 6, 4, 1, mac, ip, b"\0" * 6, ip)  # request, sender = target
    return b"\xff" * 6 + mac + struct.pack("!H", ETH_P_ARP) + arp


def send_garp(nic: str, address: str) -> None:
    """From the current namespace's `nic`."""
    with socket.socket(socket.AF_PACKET, socket.SOCK_RAW) as s:
        s.bind((nic, 0))
        s.send(garp_frame(s.getsockname()[4], address))
