"""What the tenants check sees on a running lab, and nothing it concludes (its judge:
harness/checks/tenants.py).

It sends every frame of plan_shots(plan) (a control not yet landed gets another go; where
the runtime's data plane does not filter by the edge ACL, the ACL's frames are not sent and
the observation says why), notes every NIC each frame was seen on, the ACL counters the
frames moved on the members' leaves, every member's MAC and, after each member announced
itself, the MAC/IP type-2 routes in every VTEP leaf's BGP table (read until they hold every
remote member, or a deadline), and the status of every ACL rule on every VTEP leaf.
"""
from __future__ import annotations

import re
import time
from collections import defaultdict
from dataclasses import dataclass

from harness.checks.base import Observation
from harness.checks.tenants_shots import Expectation, plan_shots
from harness.core.model import Plane, Role
from harness.core.plan import Plan
from harness.plumbing import wait
from harness.plumbing.labview import LabView
from harness.traffic.frames import Landing, TapSession

_TYPE2 = re.compile(r"\[2\]:\[\d+\]:\[48\]:\[([0-9a-f:]{17})\](?::\[32\]:\[([\d.]+)\])?")


@dataclass(frozen=True)
class Type2:
    """A MAC/IP type-2 route, in the VNI its route target names."""

    vni: int
    mac: str
    ip: str


@dataclass(frozen=True)
class TenantsSeen(Observation):
    shots: int  # frames sent: plan_shots(plan)'s, less the ACL's where acl_not_probed says why
    landed: dict[int, tuple[str, ...]]  # frame id -> each NIC ("node:port") it was seen on, as sent
    tunnelled: dict[int, tuple[str, ...]]  # frame id -> each port it was seen on inside a VXLAN packet
    counters: dict[str, dict[str, int]]  # member leaf -> ACL entry -> packets it counted while the frames went
    macs: dict[str, str]  # "host:nic" of every tenant member -> its MAC
    type2: dict[str, tuple[Type2, ...]]  # VTEP leaf -> the MAC/IP type-2 routes in its BGP table, last read
    rules: dict[str, dict[str, str]]  # VTEP leaf -> ACL rule -> its status (SONiC's `show acl rule`)
    acl_not_probed: str = ""  # why the ACL's data path was not probed (the runtime's), "" where it was


def measure_tenants(lab: LabView, timeout: float = 5.0, resend: int = 2) -> TenantsSeen:
    t0 = time.monotonic()
    plan: Plan = lab.plan
    shots, _ = plan_shots(plan)
    vteps = [s.name for s in plan.switches if s.vnis]
    # Where the data plane does not filter (SONiC-VS), the ACL's frames would prove nothing:
    # they are not sent, and the rules are read instead.
    not_probed = next((why for why in map(lab.acl_data_path, vteps) if why), "")
    if not_probed:
        shots = [x for x in shots if not x.entry]
    leaves = sorted({m.leaf for t in plan.tenants for m in t.members}) if not not_probed else []
    before = {leaf: lab.acl_counters(leaf) for leaf in leaves}
    landings, macs = _send(lab, plan, shots, timeout, resend)
    after = {leaf: lab.acl_counters(leaf) for leaf in leaves}
    counted = {leaf: {k: after[leaf].get(k, 0) - before[leaf].get(k, 0) for k in after[leaf]} for leaf in leaves}
    type2 = evpn_routes(lab, plan, macs)
    rules = {leaf: dict(lab.acl_rules(leaf)) for leaf in vteps}
    return TenantsSeen(shots=len(shots), landed=_where(landings, False), tunnelled=_where(landings, True),
                       counters=counted, macs=macs, type2=type2, rules=rules, acl_not_probed=not_probed,
                       seconds=round(time.monotonic() - t0, 2))


def _where(landings: list[Landing], encapsulated: bool) -> dict[int, tuple[str, ...]]:
    where: dict[int, set[str]] = defaultdict(set)
    for a in landings:
        if a.encapsulated is encapsulated:
            where[a.shot].add(f"{a.node}:{a.port}")
    return {shot: tuple(sorted(ports)) for shot, ports in sorted(where.items())}


def _send(lab: LabView, plan: Plan, shots: list[Expectation], timeout: float, resend: int
          ) -> tuple[list[Landing], dict[str, str]]:
    """Every frame sent, once; those that must land and have not, again, up to `resend` times
    (a deny never is, so a resend cannot hide a leak). The landings and the members' MACs."""
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
    landings: list[Landing] = []
    must = {x.shot.id: x.must_land for x in shots if x.must_land is not None}
    with TapSession(lab.in_namespace, _tap_ports(plan), sends, macs) as session:
        member_macs = {f"{m.host}:{m.nic}": session.mac(m.host, m.nic).hex(":") for t in plan.tenants
                       for m in t.members}
        _announce(lab, plan)
        batch = shots
        for _ in range(1 + resend):
            for x in batch:
                session.send(x.shot)
            landed_ids = {a.shot for a in landings if must.get(a.shot) == (a.node, a.port)}

            def done(got: list[Landing], seen=landed_ids) -> bool:
                return set(must) <= seen | {a.shot for a in got if must.get(a.shot) == (a.node, a.port)}

            landings += session.collect(nonces, done, time.monotonic() + timeout)
            landed = {a.shot for a in landings if must.get(a.shot) == (a.node, a.port)}
            # a control lost once (a MAC still being learned, an ARP still resolving) gets another go
            batch = [by_id[i] for i in must if i not in landed]
            if not batch:
                break
    return landings, member_macs


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


def type2_wanted(plan: Plan, macs: dict[str, str]) -> set[tuple[str, int, str, str, str]]:
    """(leaf, vni, mac, ip, host): every member's type-2 route on every VTEP leaf of its tenant
    but its own (a member whose MAC was not read: mac "")."""
    return {(leaf, t.vni, macs.get(f"{m.host}:{m.nic}", ""), str(m.address.ip), m.host)
            for t in plan.tenants for leaf in t.leaves for m in t.members if m.leaf != leaf}


def evpn_routes(lab: LabView, plan: Plan, macs: dict[str, str], timeout: float = 10.0) -> dict[str, tuple[Type2, ...]]:
    """The type-2 routes of every VTEP leaf of a tenant, read until they hold every remote
    member's (or the deadline): BGP takes a moment to carry an announcement."""
    rt_asn = plan.fabric.cluster.addressing.fe_asn
    want = type2_wanted(plan, macs)
    leaves = sorted({leaf for t in plan.tenants for leaf in t.leaves})
    have: dict[str, set[tuple[int, str, str]]] = {}

    def complete() -> bool:
        for leaf in leaves:
            have[leaf] = type2_routes(lab.vtysh(leaf, "show bgp l2vpn evpn route type macip"), rt_asn)
        return all(w[1:4] in have.get(w[0], set()) for w in want)

    wait.within(complete, timeout, interval=0.2)
    return {leaf: tuple(Type2(*r) for r in sorted(routes)) for leaf, routes in have.items()}


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
