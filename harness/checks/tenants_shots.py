"""Which frames the tenants check sends, from where to where, and what each must do (pure: the
plan in, frames out; the check: harness/checks/tenants.py).

From every member: a control to another member of its tenant (behind another leaf when there
is one), a frame to every member of every other tenant and two into the underlay through its
leaf, each on a 5-tuple the edge ACL permits where there is one; and for every compiled ACL
entry one frame whose 5-tuple that entry decides.
"""
from __future__ import annotations

from dataclasses import dataclass
from ipaddress import IPv4Address

from harness.core.acl import AclEntry, verdict
from harness.core.model import ACL_PROTOCOLS, Plane, Role
from harness.core.plan import Plan, TenantMember
from harness.traffic.frames import Shot
from harness.traffic.probe import PROBE_PORT, new_nonce

ICMP, TCP, UDP = (ACL_PROTOCOLS[p] for p in ("icmp", "tcp", "udp"))
_NAMES = {number: name for name, number in ACL_PROTOCOLS.items() if number is not None}
_EPHEMERAL = 40000


@dataclass(frozen=True)
class Expectation:
    shot: Shot
    kind: str  # "tenant control", "cross-tenant", "tenant->underlay", "acl permit", "acl deny"
    must_land: tuple[str, str] | None  # (node, port) for a control or a permit; None: nowhere
    entry: str | None = None  # the ACL entry that decides it
    leaf: str | None = None  # the source's leaf (where the ACL counts)

    def __str__(self) -> str:
        s = self.shot
        proto = _NAMES[s.protocol]
        ports = f" {s.sport}->{s.dport}" if s.protocol != ICMP else ""
        where = f"{self.must_land[0]}:{self.must_land[1]}" if self.must_land else "nowhere"
        rule = f" [{self.entry}]" if self.entry else ""
        return (f"{self.kind}{rule} {s.src_node}:{s.src_port} {s.src_addr} -> {s.dst_addr} {proto}{ports} "
                f"(to {s.to_node}'s MAC) must land {where}")


def plan_shots(plan: Plan, nonce=new_nonce) -> tuple[list[Expectation], list[str]]:
    """Every frame of one run, and what cannot be controlled (reported as problems)."""
    entries = plan.acl
    out: list[Expectation] = []
    gaps: list[str] = []

    def add(m: TenantMember, to: tuple[str, str], dst: str, kind: str, must: tuple[str, str] | None,
            protocol: int = UDP, sport: int = PROBE_PORT, dport: int = PROBE_PORT, entry: str | None = None) -> None:
        shot = Shot(len(out) + 1, nonce(), m.host, m.nic, str(m.address.ip), to[0], to[1], dst, protocol, sport,
                    dport)
        out.append(Expectation(shot, kind, must, entry, m.leaf))

    routed = [(h, n) for h in plan.hosts for n in h.nics if n.plane is Plane.FE and n.tenant is None]
    spines = [s for s in plan.switches if s.role is Role.FE_SPINE]
    for t in plan.tenants:
        if len(t.members) < 2:
            gaps.append(f"tenant {t.name} has {len(t.members)} member: no control can prove its segment carries")
        for m in t.members:
            peers = [(d, tup) for d in t.members if d.host != m.host
                     for tup in [permitted_tuple(entries, m.address.ip, d.address.ip)] if tup is not None]
            if len(t.members) >= 2 and not peers:
                gaps.append(f"{m.host} ({t.name}): the ACL permits nothing from it to any other member, "
                            "so no control reaches it")
            if peers:
                d, (protocol, sport, dport) = next((p for p in peers if p[0].leaf != m.leaf), peers[0])
                add(m, (d.host, d.nic), str(d.address.ip), "tenant control", (d.host, d.nic), protocol, sport, dport)
            def negative(to: tuple[str, str], dst: IPv4Address, kind: str) -> None:
                # a 5-tuple the ACL lets pass where there is one, so that the segment, not the
                # ACL, is what must stop the frame; where there is none it says so
                tup = permitted_tuple(entries, m.address.ip, dst)
                add(m, to, str(dst), kind if tup else f"{kind} (the ACL denies it too)", None,
                    *(tup or (UDP, PROBE_PORT, PROBE_PORT)))

            for other in plan.tenants:
                if other.name == t.name:
                    continue
                for d in other.members:
                    if d.host != m.host:
                        negative((d.host, d.nic), d.address.ip, "cross-tenant")
            for h, n in routed[:1] + [x for x in routed if x[1].peer == m.leaf][:1]:
                negative((m.leaf, m.leaf_port), n.address.ip, "tenant->underlay")
            for s in spines[:1]:
                negative((m.leaf, m.leaf_port), s.loopback.ip, "tenant->underlay")
    out += _acl_shots(plan, entries, len(out), nonce)
    return out, gaps


def permitted_tuple(entries: tuple[AclEntry, ...], src: IPv4Address, dst: IPv4Address) -> tuple[int, int, int] | None:
    """(protocol, sport, dport) of a frame the ACL lets from src to dst: the probe port over
    UDP if it may, else ICMP, else what a permit entry covering the pair opens; None if nothing."""
    candidates = [(UDP, PROBE_PORT, PROBE_PORT), (ICMP, 0, 0), (TCP, _EPHEMERAL, PROBE_PORT)]
    for e in entries:
        protocol = e.protocol or UDP
        ports = (0, 0) if protocol == ICMP else (e.src_ports.low if e.src_ports else _EPHEMERAL,
                                              e.dst_ports.low if e.dst_ports else PROBE_PORT)
        if e.action == "permit" and e.matches(src, dst, protocol, *ports):
            candidates.append((protocol, *ports))
    return next((c for c in candidates if verdict(entries, src, dst, *c).action == "permit"), None)


def _acl_shots(plan: Plan, entries: tuple[AclEntry, ...], start: int, nonce) -> list[Expectation]:
    members = [m for t in plan.tenants for m in t.members]
    out: list[Expectation] = []
    for e in entries:
        pick = _tuple_for(plan, e, entries, members)
        if pick is None:
            continue
        m, d, protocol, sport, dport = pick
        shot = Shot(start + len(out) + 1, nonce(), m.host, m.nic, str(m.address.ip), d.host, d.nic,
                    str(d.address.ip), protocol, sport, dport)
        out.append(Expectation(shot, f"acl {e.action}", (d.host, d.nic) if e.action == "permit" else None,
                               e.name, m.leaf))
    return out


def _tuple_for(plan: Plan, e: AclEntry, entries: tuple[AclEntry, ...], members: list[TenantMember]):
    """A (source, destination, protocol, sport, dport) that entry e decides, between two
    members of one tenant; None when every such tuple is decided earlier (a shadowed entry)."""
    protocols = [e.protocol] if e.protocol is not None else [UDP, TCP, ICMP]
    for m in members:
        if e.src is not None and m.address.ip not in e.src:
            continue
        for d in members:
            if d.host == m.host or d.address.network != m.address.network:
                continue
            if e.dst is not None and d.address.ip not in e.dst:
                continue
            for protocol in protocols:
                dports = [e.dst_ports.low, e.dst_ports.high] if e.dst_ports else [PROBE_PORT + 1]
                sport = e.src_ports.low if e.src_ports else _EPHEMERAL
                for dport in dports:
                    if protocol == ICMP:
                        sport_, dport_ = 0, 0
                    else:
                        sport_, dport_ = sport, dport
                    if verdict(entries, m.address.ip, d.address.ip, protocol, sport_, dport_) is e:
                        return m, d, protocol, sport_, dport_
    return None
