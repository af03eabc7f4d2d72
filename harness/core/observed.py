"""What a running lab shows, as values: BGP and BFD peers, FIB routes, interface counters, what a
switch still lacks to be converged, and what the cabling audit can see on a runtime.

They sit in core, below every layer, because each side of the lab's door names them: the
observers that parse FRR and the kernel make them (harness.observe), the runtimes return them,
and `LabView`, the typed face of a running lab that checks use, gives them back. Pure values:
no I/O.
"""
from __future__ import annotations

from dataclasses import dataclass
from ipaddress import IPv4Network

from harness.core.model import Plane


@dataclass(frozen=True)
class BgpPeer:
    node: str
    peer: str  # the interface name for unnumbered sessions
    state: str
    remote_as: int
    prefixes_received: int
    uptime_ms: int
    drops: int = 0  # times the session went down since bgpd started

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
    # what the peer's packets say of it: its timers as this end runs the session with them
    remote_detect_multiplier: int = 0
    remote_receive_interval_ms: int = 0
    remote_transmit_interval_ms: int = 0

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


@dataclass(frozen=True)
class Counters:
    interface: str
    rx_packets: int
    tx_packets: int
    rx_bytes: int
    tx_bytes: int
    rx_dropped: int
    tx_dropped: int
    carrier: bool


@dataclass(frozen=True)
class Shortfall:
    switch: str
    sessions_up: int
    sessions_expected: int
    bfd_up: int
    bfd_expected: int
    missing_routes: tuple[str, ...]  # "10.0.2.0/31 (0/2 paths)"
    stuck: tuple[str, ...] = ()  # "Ethernet8: BGP Idle (no peer address learned)", one per session not up
    drops: int = 0  # BGP sessions of this switch that went down since its bgpd started

    @property
    def ok(self) -> bool:
        return (self.sessions_up >= self.sessions_expected and self.bfd_up >= self.bfd_expected
                and not self.missing_routes)

    def __str__(self) -> str:
        parts = []
        if self.sessions_up < self.sessions_expected:
            parts.append(f"{self.sessions_up}/{self.sessions_expected} BGP sessions")
        if self.bfd_up < self.bfd_expected:
            parts.append(f"{self.bfd_up}/{self.bfd_expected} BFD sessions up")
        if self.missing_routes:
            more = f" (+{len(self.missing_routes) - 3} more)" if len(self.missing_routes) > 3 else ""
            parts.append("routes " + ", ".join(self.missing_routes[:3]) + more)
        if self.stuck:
            more = f" (+{len(self.stuck) - 4} more)" if len(self.stuck) > 4 else ""
            parts.append("stuck: " + ", ".join(self.stuck[:4]) + more)
        return f"{self.switch}: " + "; ".join(parts)


@dataclass(frozen=True)
class CablingScope:
    """What the cabling audit can see on a runtime: the planes whose cables it compares, the
    nodes whose namespaces it reads, interfaces it leaves out, and that scope in words."""

    planes: tuple[Plane, ...]
    nodes: tuple[str, ...]
    skip_interfaces: frozenset[str]
    text: str
    veth: bool = True  # each cable end's peer is readable from the kernel (an emulation's veth); else LLDP only


@dataclass(frozen=True)
class LldpNeighbour:
    """One LLDP neighbour a node heard on one of its ports, as lldpd (`lldpctl -f json`) or
    SONiC (`show lldp table`) lists it: the evidence of a cable on real gear."""

    local_port: str  # the port it was heard on, as the node names it
    chassis: str  # the neighbour's system name; its chassis ID where it sends no name
    port_id: str  # the neighbour's port ID: an ifname, a SONiC alias ("etp1"), or a MAC
    port_descr: str = ""  # the neighbour's port description, where it sends one
    chassis_id: str = ""  # the neighbour's chassis ID (a MAC, usually)
    age_s: int = -1  # seconds since it was first heard (lldpd's "age"); -1 where the output gives none


@dataclass(frozen=True)
class PortState:
    """One interface of a node as its kernel lists it (`ip -j -d link show`)."""

    name: str
    up: bool  # administratively
    carrier: bool
    mtu: int
    kind: str = ""  # veth, bridge, ...; "" for a physical port
    bridge: str | None = None  # the bridge it is a member of
