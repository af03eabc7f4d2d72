"""FE tenant isolation and the edge ACL, proven with frames and read back from FRR.

Tenant isolation. From every tenant member's NIC, frames go
  - to another member of its tenant (behind another leaf when there is one): controls, that
    must land on that member's NIC (over VXLAN when the leaves differ);
  - to a member of every other tenant, addressed to that member's own MAC and address: they
    must land nowhere;
  - to the underlay through its leaf (the leaf port's MAC): to a routed FE host and to an FE
    spine's loopback; they must land nowhere.
Every frame's 5-tuple is one the edge ACL permits (UDP to PROBE_PORT where it may, else ICMP,
else what a permit rule opens), so that a negative is stopped by the segment and not by the
ACL; a negative with no permitted tuple is sent anyway and counted as such. A member with no
permitted peer is reported, as is a tenant with one member (nothing to control with).
EVPN: every member announces itself (a gratuitous ARP, as a booting host does) and every
VTEP leaf's BGP table must then hold a type-2 route with the MAC and IP of every member behind
another leaf, in the tenant's VNI (by its route target).

Edge ACL. For every compiled entry (each declared rule for each pair of members it names,
and the default) one frame whose 5-tuple that entry decides, from a member behind one leaf to a
member it can reach: a permit must land on the destination's NIC, a deny must not, and the
entry's counter on the source leaf must count it.
"""
from __future__ import annotations

import dataclasses
import re
import time
from collections import defaultdict
from dataclasses import dataclass
from ipaddress import IPv4Address

from harness.plumbing import wait
from harness.core.acl import AclEntry, verdict
from harness.checks.base import Case, Check, Outcome, tally
from harness.plumbing.labview import LabView
from harness.core.model import ACL_PROTOCOLS, Plane, Role
from harness.core.plan import Plan, TenantMember
from harness.traffic.frames import Landing, Shot, TapSession
from harness.traffic.probe import PROBE_PORT, new_nonce

ICMP, TCP, UDP = (ACL_PROTOCOLS[p] for p in ("icmp", "tcp", "udp"))
_NAMES = {number: name for name, number in ACL_PROTOCOLS.items() if number is not None}
_EPHEMERAL = 40000
_TYPE2 = re.compile(r"\[2\]:\[\d+\]:\[48\]:\[([0-9a-f:]{17})\](?::\[32\]:\[([\d.]+)\])?")


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


@dataclass(frozen=True)
class TenantResult(Outcome):
    controls: int
    controls_landed: int
    negatives: int
    leaks: tuple[str, ...]
    evpn_expected: int
    evpn_missing: tuple[str, ...]
    acl_entries: int
    acl_wrong: tuple[str, ...]
    counters: dict[str, dict[str, int]]  # leaf -> entry -> packets counted during the check
    failed_controls: tuple[str, ...] = ()
    gaps: tuple[str, ...] = ()  # what the declaration leaves no control for
    shadowed: int = 0  # negatives on a 5-tuple the ACL denies too (it permits none)
    acl_not_probed: str = ""  # why the ACL's data path was not probed (the runtime's), "" where it was
    acl_rules: int = 0  # rules each VTEP leaf must have loaded, times the leaves
    acl_rules_missing: tuple[str, ...] = ()  # "leaf: rule (status)" not loaded, or not in force

    held, broken = "tenants isolated", "NOT as declared"

    def sentence(self) -> str:
        probed = (f"{self.acl_entries} ACL entries" if not self.acl_not_probed
                  else f"ACL data path not applicable: {self.acl_not_probed}")
        figures = (f"{self.controls} controls, {self.negatives} cross-tenant/underlay frames"
                   + (f" ({self.shadowed} of them on a 5-tuple the ACL denies too: no tuple it permits)"
                      if self.shadowed else "")
                   + f", {self.evpn_expected} type-2 routes, {probed}, {self.acl_rules} rules loaded "
                   f"on the VTEP leaves, in {self.seconds:.1f} s")
        if not self.passed:
            return figures
        acl = ("ACL: the data path not probed (below), " if self.acl_not_probed else
               f"ACL: {self.acl_entries}/{self.acl_entries} entries decided and counted as declared, ")
        return (f"0/{self.negatives} frames left their tenant, {self.controls_landed}/{self.controls} controls landed, "
                f"{self.evpn_expected}/{self.evpn_expected} remote MAC/IP type-2 routes; {acl}"
                f"{self.acl_rules}/{self.acl_rules} rules loaded; {figures}")

    def named(self) -> tuple[str, ...]:
        return (tally(self.leaks, "frames left their tenant")
                + tally(self.failed_controls, "controls did not land", self.controls,
                        then=" (nothing is proven until they do)")
                + tally(self.evpn_missing, "type-2 routes missing", self.evpn_expected)
                + tally(self.acl_wrong, "ACL outcomes differ from the declaration")
                + tally(self.acl_rules_missing, "ACL rules not loaded", self.acl_rules)
                + self.gaps[:1])


# --------------------------------------------------------------------------- planning


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


# --------------------------------------------------------------------------- running


def check_tenants(lab: LabView, timeout: float = 5.0, resend: int = 2) -> TenantResult:
    t0 = time.monotonic()
    plan: Plan = lab.plan
    shots, gaps = plan_shots(plan)
    nonces = {x.shot.id: x.shot.nonce for x in shots}
    by_id = {x.shot.id: x for x in shots}
    sends: dict[str, set[str]] = defaultdict(set)
    macs: dict[str, set[str]] = defaultdict(set)
    for x in shots:
        sends[x.shot.src_node].add(x.shot.src_port)
        macs[x.shot.to_node].add(x.shot.to_port)
    for t in plan.tenants:  # every member's MAC, for its type-2 route
        for m in t.members:
            macs[m.host].add(m.nic)
    taps = _tap_ports(plan)
    vteps = [s.name for s in plan.switches if s.vnis]
    # Where the data plane does not filter (SONiC-VS), the ACL's frames would prove nothing:
    # they are not sent, the check says why, and the rules are proven loaded instead.
    not_probed = next((why for why in map(lab.acl_data_path, vteps) if why), "")
    if not_probed:
        shots = [x for x in shots if not x.entry]
    leaves = sorted({m.leaf for t in plan.tenants for m in t.members}) if not not_probed else []
    before = {leaf: lab.acl_counters(leaf) for leaf in leaves}
    landings: list[Landing] = []
    must = {x.shot.id: x.must_land for x in shots if x.must_land is not None}
    with TapSession(lab.in_namespace, taps, sends, macs) as session:
        member_macs = {(m.host, m.nic): session.mac(m.host, m.nic).hex(":") for t in plan.tenants for m in t.members}
        _announce(lab, plan)
        batch = shots
        for attempt in range(1 + resend):
            for x in batch:
                session.send(x.shot)
            landed_ids = {a.shot for a in landings if must.get(a.shot) == (a.node, a.port)}

            def done(got: list[Landing], seen=landed_ids) -> bool:
                return set(must) <= seen | {a.shot for a in got if must.get(a.shot) == (a.node, a.port)}

            landings += session.collect(nonces, done, time.monotonic() + timeout)
            landed = {a.shot for a in landings if must.get(a.shot) == (a.node, a.port)}
            # a control lost once (a MAC still being learned, an ARP still resolving) gets
            # another go; a deny never does, so a resend cannot hide a leak
            batch = [by_id[i] for i in must if i not in landed]
            if not batch:
                break
    after = {leaf: lab.acl_counters(leaf) for leaf in leaves}
    counted = {leaf: {k: after[leaf].get(k, 0) - before[leaf].get(k, 0) for k in after[leaf]} for leaf in leaves}
    evpn_expected, missing = _evpn(lab, plan, member_macs)
    rules, rules_missing = _rules_loaded(lab, plan, vteps)
    result = _verdict(plan, shots, landings, counted, gaps, evpn_expected, missing, t0)
    return dataclasses.replace(result, acl_not_probed=not_probed, acl_rules=rules, acl_rules_missing=rules_missing,
                               problems=result.problems + rules_missing)


IN_FORCE = ("Active", "N/A")  # SONiC's status of a rule in force; N/A where STATE_DB has none


def _rules_loaded(lab: LabView, plan: Plan, vteps: list[str]) -> tuple[int, tuple[str, ...]]:
    """Every compiled entry a rule on every VTEP leaf, in force (`show acl rule` on SONiC)."""
    want = [e.name for e in plan.acl]
    missing = []
    for leaf in vteps:
        have = lab.acl_rules(leaf)
        missing += [f"{leaf}: rule {name} " + (f"is {have[name]}" if name in have else "is not loaded")
                    for name in want if have.get(name) not in IN_FORCE]
    return len(want) * len(vteps), tuple(missing)


def _tap_ports(plan: Plan) -> dict[str, set[str]]:
    """Every NIC a shot could land on: every tenant NIC, every routed FE host NIC, every FE
    spine port."""
    taps: dict[str, set[str]] = defaultdict(set)
    for h in plan.hosts:
        for n in h.nics:
            if n.plane is Plane.FE:
                taps[h.name].add(n.name)
    for s in plan.switches:
        if s.role is Role.FE_SPINE:
            taps[s.name] |= {p.name for p in s.fabric_ports}
    return taps


def _announce(lab: LabView, plan: Plan) -> None:
    """Each member's gratuitous ARP: its leaf learns MAC and IP, EVPN carries both."""
    from harness.traffic.garp import send_garp

    for t in plan.tenants:
        for m in t.members:
            lab.in_namespace(m.host, lambda m=m: send_garp(m.nic, str(m.address.ip)))


def _evpn(lab: LabView, plan: Plan, mac_of: dict[tuple[str, str], str],
          timeout: float = 10.0) -> tuple[int, tuple[str, ...]]:
    """Remote members' MAC/IP type-2 routes on every VTEP leaf, polled until complete."""
    rt_asn = plan.fabric.cluster.addressing.fe_asn
    want = {(leaf, t.vni, mac_of[(m.host, m.nic)], str(m.address.ip), m.host)
            for t in plan.tenants for leaf in t.leaves for m in t.members if m.leaf != leaf}
    missing: list[tuple[str, int, str, str, str]] = []

    def complete() -> bool:
        nonlocal missing
        have: set[tuple[str, int, str, str]] = set()
        for leaf in sorted({w[0] for w in want}):
            have |= {(leaf, *r) for r in type2_routes(lab.vtysh(leaf, "show bgp l2vpn evpn route type macip"),
                                                      rt_asn)}
        missing = sorted(w for w in want if w[:4] not in have)
        return not missing

    wait.within(complete, timeout, interval=0.2)
    return len(want), tuple(f"{leaf}: no type-2 for {host} ({mac} {ip}) in VNI {vni}"
                            for leaf, vni, mac, ip, host in missing)


def type2_routes(text: str, rt_asn: int) -> set[tuple[int, str, str]]:
    """(vni, mac, ip) of every MAC/IP type-2 route in `show bgp l2vpn evpn route type macip`,
    the VNI read from the route target (ASN:VNI) printed under it."""
    out: set[tuple[int, str, str]] = set()
    pending: list[tuple[str, str]] = []
    rt = re.compile(rf"RT:{rt_asn}:(\d+)")
    for line in text.splitlines():
        m = _TYPE2.search(line)
        if m:
            if m.group(2):
                pending.append((m.group(1), m.group(2)))
            continue
        r = rt.search(line)
        if r and pending:
            out |= {(int(r.group(1)), mac, ip) for mac, ip in pending}
            pending = []
    return out


def _verdict(plan: Plan, shots: list[Expectation], landings: list[Landing], counted: dict[str, dict[str, int]],
             gaps: list[str], evpn_expected: int, evpn_missing: tuple[str, ...], t0: float) -> TenantResult:
    where: dict[int, set[tuple[str, str]]] = defaultdict(set)
    for a in landings:
        if not a.encapsulated:  # a tunnelled copy between VTEPs is transport, not delivery
            where[a.shot].add((a.node, a.port))
    tenant_of = {(m.host, m.nic): t.name for t in plan.tenants for m in t.members}
    leaks, wrong, failed = [], [], []
    controls = [x for x in shots if x.kind == "tenant control"]
    for x in shots:
        got = where.get(x.shot.id, set())
        home = tenant_of[(x.shot.src_node, x.shot.src_port)]
        if x.entry and x.must_land is None:
            dst = {(x.shot.to_node, x.shot.to_port)} & got
            if dst:
                wrong.append(f"{x} — landed on {x.shot.to_node}:{x.shot.to_port}")
        elif x.must_land is None:
            # a frame for an unknown MAC floods its own segment: only a landing outside it leaks
            out = sorted(w for w in got if tenant_of.get(w) != home)
            if out:
                leaks.append(f"{x} — landed on {', '.join(f'{n}:{p}' for n, p in out)}")
        elif x.must_land not in got:
            (wrong if x.entry else failed).append(f"{x} — did not")
        if x.entry and counted.get(x.leaf, {}).get(x.entry, 0) < 1:
            wrong.append(f"{x} — {x.leaf}'s counter of {x.entry} did not count it")
    negatives = sum(1 for x in shots if x.must_land is None and not x.entry)
    shadowed = sum(1 for x in shots if x.kind.endswith("(the ACL denies it too)"))
    acl = [x for x in shots if x.entry]
    problems = tuple(gaps) + tuple(leaks) + tuple(f"control failed: {f}" for f in failed) + evpn_missing + tuple(
        wrong)
    return TenantResult(seconds=round(time.monotonic() - t0, 2), problems=problems,
                        controls=len(controls), controls_landed=len(controls) - len(failed), negatives=negatives,
                        leaks=tuple(leaks), evpn_expected=evpn_expected, evpn_missing=evpn_missing,
                        acl_entries=len(acl), acl_wrong=tuple(wrong), counters=counted, failed_controls=tuple(failed),
                        gaps=tuple(gaps), shadowed=shadowed)


def _no_tenants(plan: Plan) -> str | None:
    return None if plan.tenants else "no FE tenants declared (Cluster.tenants): nothing to isolate or filter"


CHECK = Check("tenants", "FE tenants: frames stay in their EVPN/VXLAN segment (controls inside each), remote members' "
              "MAC/IP as type-2 routes on every VTEP, every edge ACL entry permits or denies and counts as declared",
              (Case("tenants", check_tenants),), _no_tenants)
