"""A BGP speaker of the plan as the config judge sees it: a switch, or a routed host (a
dual-homed FE host speaks BGP to both its leaves), with each port's peer and the peer's ASN
where the plan has a session there."""
from __future__ import annotations

import ipaddress
from dataclasses import dataclass

from harness.core.meaning.bgp import Session
from harness.core.plan import Plan


@dataclass(frozen=True)
class End:
    """One port of a BGP speaker as the judge needs it: its peer, and the peer's ASN where the
    plan has a session on it."""
    name: str
    peer: str
    peer_port: str
    address: ipaddress.IPv4Interface | None
    peer_asn: int | None
    unnumbered: bool


@dataclass(frozen=True)
class Speaker:
    """A switch, or a routed host (a dual-homed FE host speaks BGP to both its leaves)."""
    name: str
    asn: int | None
    loopback: ipaddress.IPv4Interface
    mgmt: ipaddress.IPv4Interface | None
    ports: tuple[End, ...]

    @property
    def router_id(self) -> ipaddress.IPv4Address:
        return self.loopback.ip

    @property
    def fabric_ports(self) -> tuple[End, ...]:
        return tuple(p for p in self.ports if p.unnumbered)

    @property
    def host_ports(self) -> tuple[End, ...]:
        return tuple(p for p in self.ports if p.address is not None)

    @property
    def host_peers(self) -> tuple[End, ...]:
        return tuple(p for p in self.ports if p.peer_asn is not None and not p.unnumbered)


def speaker(plan: Plan, name: str) -> Speaker:
    switches = {s.name: s for s in plan.switches}
    if name in switches:
        sw = switches[name]
        ends = tuple(End(p.name, p.peer, p.peer_port, p.address,
                          switches[p.peer].asn if p.peer in switches and p.unnumbered else p.peer_asn, p.unnumbered)
                     for p in sw.ports)
        return Speaker(sw.name, sw.asn, sw.loopback, sw.mgmt, ends)
    host = plan.host(name)
    ends = []
    mgmt = None
    for nic in host.nics:
        leaf = switches.get(nic.peer)
        port = next((p for p in leaf.ports if p.name == nic.peer_port), None) if leaf else None
        if leaf is None:
            mgmt = nic.address
            continue
        ends.append(End(nic.name, nic.peer, nic.peer_port, nic.address,
                         leaf.asn if port is not None and port.peer_asn is not None else None, False))
    return Speaker(host.name, host.asn, host.loopback or ends[0].address, mgmt, tuple(ends))


def peer_of(sw: Speaker, name: str) -> tuple[str | None, int | None, str | None]:
    """(the port it runs on, the peer's ASN, the peer's name) for a neighbour as written."""
    for p in sw.ports:
        if p.name == name:
            return p.name, p.peer_asn, f"{p.peer}:{p.peer_port}"
    try:
        ip = ipaddress.ip_address(name)
    except ValueError:
        return None, None, None
    for p in sw.ports:
        if p.address is not None and ip in p.address.network and ip != p.address.ip:
            return p.name, p.peer_asn, f"{p.peer}:{p.peer_port}"
    return None, None, None



def session_state(sw: Speaker, interface_vrfs: dict[str, str], asn: str, s: Session) -> str:
    """How a neighbour fares on the planned fabric: "up: ..." or "down: why"."""
    port, peer_asn, peer = peer_of(sw, s.name)
    if port is None:
        cabled = ", ".join(p.name for p in sw.ports if p.unnumbered or p.peer_asn is not None)
        what = "is not cabled" if s.interface else "is on no planned link"
        return f"down: {s.name} {what} on {sw.name}; its BGP ports are {cabled or 'none'}"
    if s.remote_as is None:
        return "down: no remote-as (FRR has no such neighbour)"
    if s.shutdown:
        return "down: shut down"
    port_vrf = interface_vrfs.get(port, "default")
    if s.vrf != port_vrf:
        return f"down: BGP in VRF {s.vrf}, but {port} is in the {port_vrf} VRF"
    if peer_asn is None:
        return f"down: {peer} speaks no BGP in the plan"
    local = int(asn) if asn.isdigit() else None
    kind = "eBGP" if peer_asn != local else "iBGP"
    if s.remote_as == "external" and peer_asn == local:
        return f"down: remote-as external, but {peer} shares AS {peer_asn}"
    if s.remote_as == "internal" and peer_asn != local:
        return f"down: remote-as internal, but {peer} is AS {peer_asn}"
    if s.remote_as not in ("external", "internal") and s.remote_as != str(peer_asn):
        return f"down: remote-as {s.remote_as}, but {peer} is AS {peer_asn}"
    return f"up: {kind} to {peer} (AS {peer_asn})"
