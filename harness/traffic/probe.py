"""Isolation probes: single UDP frames put on a wire by hand, and the sockets that receive them.

A probe is injected with AF_PACKET on a chosen port, addressed to a chosen next hop's MAC,
so it tests the fabric rather than the sending host's routing table: a host without a
route would never emit the packet, but a miscabled or leaking fabric would still carry it
if something put it there.

A probe counts as delivered only when a node's IP stack hands it to a UDP socket: the
listeners are UDP sockets bound to the probe port in every routed node, not packet taps.
A tap also sees the sender's outgoing copy and every frame a bridge floods to ports that
are not its destination (the OOB bridge floods unknown unicast to every host's mgmt port),
and counting those made a host "deliver" its own probes. Each probe carries a random nonce,
so a late frame of an earlier round, or of another check, never matches.
All sockets live in one process: each is opened by a thread that joined the namespace, and
a socket stays in the namespace it was created in.
"""
from __future__ import annotations

import errno
import fcntl
import os
import selectors
import socket
import struct
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from ipaddress import IPv4Address
from typing import Protocol, TypeVar

from harness.plumbing import wait
from harness.core.errors import HarnessError

PROBE_PORT = 33434
MAGIC = b"FLPROBE2"
ETH_P_IP = 0x0800
ETH_P_ALL = 0x0003
IP_PKTINFO = 8  # linux/in.h; Python's socket module does not export it
SO_RCVBUFFORCE = 33  # asm-generic/socket.h: as root, past net.core.rmem_max
SIOCGIFHWADDR = 0x8927
NONCE_BYTES = 8
_PAYLOAD = struct.Struct(f"!8sI{NONCE_BYTES}s")
R = TypeVar("R")
S = TypeVar("S")  # anything select() takes: a socket, a ProbeEnd
_SELECT_S = 0.05  # the longest read_until blocks on its sockets per look


@dataclass(frozen=True)
class Probe:
    """One packet's journey: from a port, through a next hop, to an address that must (or
    must not) receive it."""

    id: int
    nonce: bytes
    src_node: str
    src_port: str
    src_addr: str
    next_hop_node: str
    next_hop_port: str
    dst_node: str
    dst_addr: str
    expect_delivery: bool
    kind: str  # what the probe stands for, e.g. "fe->be", "be control"

    @property
    def source(self) -> str:
        return f"{self.src_node}:{self.src_port}"

    def __str__(self) -> str:
        return (f"{self.kind} {self.source} via {self.next_hop_node}:{self.next_hop_port} "
                f"-> {self.dst_node} ({self.dst_addr})")


@dataclass(frozen=True)
class Arrival:
    probe: int
    node: str
    ifindex: int  # where the node's stack received it
    dst: str  # the address the stack received it on
    port: str = ""  # the ifindex's name, where the receiving end named it (fablab's agent over SSH)


def new_nonce() -> bytes:
    return os.urandom(NONCE_BYTES)


def internet_checksum(data: bytes) -> int:
    if len(data) % 2:
        data += b"\0"
    total = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def payload(probe_id: int, nonce: bytes) -> bytes:
    return _PAYLOAD.pack(MAGIC, probe_id, nonce)


def frame(src_mac: bytes, dst_mac: bytes, src: str, dst: str, probe_id: int, nonce: bytes, ttl: int = 64) -> bytes:
    """An Ethernet frame holding one probe (UDP checksum 0: allowed on IPv4, and the kernel
    then delivers without checking)."""
    body = payload(probe_id, nonce)
    udp = struct.pack("!HHHH", PROBE_PORT, PROBE_PORT, 8 + len(body), 0) + body
    header = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), probe_id & 0xFFFF, 0, ttl, 17, 0,
                         IPv4Address(src).packed, IPv4Address(dst).packed)
    header = header[:10] + struct.pack("!H", internet_checksum(header)) + header[12:]
    return dst_mac + src_mac + struct.pack("!H", ETH_P_IP) + header + udp


def parse(data: bytes) -> tuple[int, bytes] | None:
    """(probe id, nonce) of a UDP payload, or None if it is not a probe."""
    if len(data) != _PAYLOAD.size:
        return None
    magic, probe_id, nonce = _PAYLOAD.unpack(data)
    return (probe_id, nonce) if magic == MAGIC else None


def _pktinfo(ancillary: list) -> tuple[int, str]:
    for level, kind, data in ancillary:
        if level == socket.IPPROTO_IP and kind == IP_PKTINFO and len(data) >= 12:
            ifindex, _spec, addr = struct.unpack("=i4s4s", data[:12])
            return ifindex, str(IPv4Address(addr))
    return 0, "?"


def mac_of(sock: socket.socket, ifname: str) -> bytes:
    """The MAC of an interface in the namespace `sock` was made in."""
    info = fcntl.ioctl(sock.fileno(), SIOCGIFHWADDR, struct.pack("256s", ifname.encode()[:15]))
    return info[18:24]


OpenIn = Callable[[str, Callable[[], object]], object]


class ProbeEnd(Protocol):
    """What a node holds for a round of probes: sockets in its namespace (`_NodeSockets`), or
    fablab's agent holding them on a node reached over SSH (harness/remote/agent.py)."""

    macs: dict[str, bytes]
    ports: frozenset[str]  # the ports it may send from
    listening: bool

    def fileno(self) -> int: ...  # readable when probes may have arrived (select)

    def send(self, port: str, data: bytes, copies: int) -> None: ...

    def read(self, nonces: dict[int, bytes]) -> list[Arrival]: ...  # what arrived, without blocking

    def close(self) -> None: ...


@dataclass(frozen=True)
class OpenProbes:
    """A node's part of a round, as a request: run in the node's namespace (`Lab.in_namespace`)
    it opens the sockets there; a view reached over SSH hands the same request to fablab's
    agent on the node. `listen`: a UDP listener on the probe port; `sends`: ports probes leave
    from; `macs`: ports whose MAC is needed (next hops)."""

    node: str
    listen: bool
    sends: tuple[str, ...]
    macs: tuple[str, ...]

    def __call__(self) -> ProbeEnd:
        return _open(self.node, self.listen, list(self.sends), list(self.macs))


@dataclass
class _NodeSockets:
    node: str
    listener: socket.socket | None
    sender: socket.socket | None  # AF_PACKET, unbound: sendto names the port
    ports: frozenset[str]
    macs: dict[str, bytes]

    @property
    def listening(self) -> bool:
        return self.listener is not None

    def fileno(self) -> int:
        assert self.listener is not None
        return self.listener.fileno()

    def send(self, port: str, data: bytes, copies: int) -> None:
        assert self.sender is not None
        for _ in range(copies):
            self.sender.sendto(data, (port, ETH_P_IP))

    def read(self, nonces: dict[int, bytes]) -> list[Arrival]:
        return _read(self.listener, self.node, nonces) if self.listener is not None else []

    def close(self) -> None:
        for s in (self.listener, self.sender):
            if s is not None:
                s.close()


class ProbeSession:
    """Ends for one round of probes, opened with one visit per node.

    `open_in(node, fn)` runs fn in the node's network namespace (`Lab.in_namespace`); fn is an
    `OpenProbes`. `listen`: nodes whose stack may receive a probe (every routed node).
    `send_ports`: per node, the ports probes leave from. `mac_ports`: per node, the ports whose
    MAC is needed (next hops)."""

    def __init__(self, open_in: OpenIn, listen: Iterable[str], send_ports: dict[str, set[str]],
                 mac_ports: dict[str, set[str]]) -> None:
        self._nodes: dict[str, ProbeEnd] = {}
        listen = set(listen)
        try:
            for node in sorted(listen | set(send_ports) | set(mac_ports)):
                sends = tuple(sorted(send_ports.get(node, ())))
                macs = tuple(sorted(set(mac_ports.get(node, ())) | set(sends)))
                self._nodes[node] = open_in(node, OpenProbes(node, node in listen, sends, macs))  # type: ignore[assignment]
        except BaseException:
            self.close()
            raise
        self._listeners = [end for end in self._nodes.values() if end.listening]

    def mac(self, node: str, port: str) -> bytes:
        return self._nodes[node].macs[port]

    def send(self, probe: Probe, copies: int) -> None:
        data = frame(self.mac(probe.src_node, probe.src_port), self.mac(probe.next_hop_node, probe.next_hop_port),
                     probe.src_addr, probe.dst_addr, probe.id, probe.nonce)
        node = self._nodes[probe.src_node]
        if probe.src_port not in node.ports:
            raise HarnessError(f"{probe.source} was not opened for sending")
        node.send(probe.src_port, data, copies)

    def drain(self, nonces: dict[int, bytes]) -> list[Arrival]:
        """Every probe the listeners hold now; frames with an unknown id or nonce are dropped."""
        arrivals: list[Arrival] = []
        for end in self._listeners:
            arrivals += end.read(nonces)
        return arrivals

    def collect(self, nonces: dict[int, bytes], must_arrive: Callable[[list[Arrival]], bool], deadline: float,
                quiet: float = 0.3) -> list[Arrival]:
        """Read until `must_arrive(arrivals)` holds and `quiet` s passed without a probe, or
        until the deadline."""
        return read_until(self._listeners, lambda end: end.read(nonces), must_arrive, deadline, quiet)

    def close(self) -> None:
        ends = list(self._nodes.values())
        self._nodes.clear()
        self._listeners = []
        # closing a packet socket waits for an RCU grace period (~10 ms): wait for them together
        with ThreadPoolExecutor(max_workers=32) as pool:
            list(pool.map(lambda end: end.close(), ends))

    def __enter__(self) -> ProbeSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def read_until(socks: Sequence[S], read: Callable[[S], list[R]],
               done: Callable[[list[R]], bool], deadline: float, quiet: float) -> list[R]:
    """What `read` makes of the sockets as they become readable, until `done(got)` holds and
    `quiet` s passed without anything new, or until the deadline."""
    got: list[R] = []
    last = time.monotonic()
    finished = False
    # epoll, not select(): gpu4096's isolation listens on more than select's 1,024 descriptors
    watch = selectors.DefaultSelector()
    for sock in socks:
        watch.register(sock, selectors.EVENT_READ)

    def settled() -> bool:  # the wait is the pause between looks: it returns as soon as a socket has data
        nonlocal last, finished
        for key, _ in watch.select(_SELECT_S):
            new = read(key.fileobj)
            if new:
                got.extend(new)
                last = time.monotonic()
                finished = False
        finished = finished or done(got)
        return finished and time.monotonic() - last > quiet

    try:
        wait.within(settled, deadline - time.monotonic(), interval=0)
    finally:
        watch.close()
    return got


def _open(node: str, listen: bool, sends: list[str], macs: list[str]) -> _NodeSockets:
    """Runs inside the node's network namespace."""
    listener = sender = None
    try:
        if listen:
            listener = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            try:
                listener.bind(("0.0.0.0", PROBE_PORT))
            except OSError as e:
                if e.errno == errno.EADDRINUSE:
                    raise HarnessError(f"{node}: UDP port {PROBE_PORT} is taken (another isolation check on this "
                                       "lab?): wait for it to finish") from e
                raise
            listener.setsockopt(socket.IPPROTO_IP, IP_PKTINFO, 1)
            try:
                listener.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, 4 << 20)
            except PermissionError:
                listener.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
            listener.setblocking(False)
        if sends:
            sender = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)  # protocol 0: sends only, queues nothing
        ask = listener or sender or socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            found = {}
            for port in macs:
                try:
                    found[port] = mac_of(ask, port)
                except OSError as e:
                    raise HarnessError(f"{node} has no interface {port!r} ({e.strerror})") from e
        finally:
            if ask is not listener and ask is not sender:
                ask.close()
        return _NodeSockets(node, listener, sender, frozenset(sends), found)
    except BaseException:
        for s in (listener, sender):
            if s is not None:
                s.close()
        raise


def _read(sock: socket.socket, node: str, nonces: dict[int, bytes]) -> list[Arrival]:
    out = []
    while True:
        try:
            data, ancillary, _flags, _addr = sock.recvmsg(2048, socket.CMSG_SPACE(12))
        except BlockingIOError:
            return out
        parsed = parse(data)
        if parsed is None or nonces.get(parsed[0]) != parsed[1]:
            continue
        ifindex, dst = _pktinfo(ancillary)
        out.append(Arrival(parsed[0], node, ifindex, dst))
