"""Which probes the isolation check sends, from where to where (pure: the plan in, probes out).

One probe per (source port × destination block or leaf), so the cost follows the fabric:
negatives across planes, into the tenants' segments and (rail-only) across rails, each
switch's mgmt and data ports fed towards the other plane, and the controls that prove every
source and destination of a negative would have been heard (harness/checks/isolation.py).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from harness.core.acl import verdict
from harness.core.model import Plane, Role
from harness.core.plan import HostPlan, Nic, Plan
from harness.traffic.probe import PROBE_PORT, Probe, new_nonce

MGMT_PORT = "eth0"  # a switch's management port (SONiC's name, kept by both runtimes)


@dataclass(frozen=True)
class _Target:
    node: str
    addr: str
    plane: Plane
    rail: int | None  # the rail block the address is in (None: a loopback or the FE)
    leaf: str | None  # the switch it sits behind (or is)


def _nics(plan: Plan, plane: Plane) -> list[tuple[HostPlan, Nic]]:
    """A plane's routed host NICs. Tenant NICs are L2 members of their tenant's segment, with
    no route into the plane: the tenant check covers them (harness/checks/tenants.py)."""
    return [(h, n) for h in plan.hosts for n in h.nics if n.plane is plane and n.tenant is None]


def _targets(plan: Plan, plane: Plane) -> list[list[_Target]]:
    """Destinations standing for a plane: per leaf (per port group, on a leaf of several rails),
    the hosts behind it (first choice first); and the plane's loopback block, standing in a
    spine's loopback (a leaf's without a spine)."""
    nics = _nics(plan, plane)
    switches = [s for s in plan.switches if s.plane is plane]
    out: list[list[_Target]] = []
    for sw in switches:
        behind = [_Target(h.name, str(n.address.ip), plane, n.rail, sw.name) for h, n in nics if n.peer == sw.name]
        for rail in dict.fromkeys(t.rail for t in behind):
            out.append([t for t in behind if t.rail == rail][:2])  # a second, for a source that is the first
    loop = [s for s in switches if s.role in (Role.BE_SPINE, Role.BE_SUPERSPINE, Role.FE_SPINE)] or switches
    if loop:
        out.append([_Target(s.name, str(s.loopback.ip), plane, None, s.name) for s in loop[:2]])
    return out


def _tenant_targets(plan: Plan) -> tuple[list[list[_Target]], dict[str, tuple[str, str, str, tuple[str, str]]]]:
    """Per tenant and leaf, two of its members' tenant addresses (the second for a source
    that is the first), and per address its control: a member of the same tenant on another
    node whose probe the edge ACL lets through, sent straight to the target's MAC (the segment
    is L2). A member no control can reach is no target: its silence would prove nothing."""
    entries = plan.acl
    targets: list[list[_Target]] = []
    controls: dict[str, tuple[str, str, str, tuple[str, str]]] = {}
    for t in plan.tenants:
        for m in t.members:
            src = next((s for s in t.members if s.host != m.host and verdict(
                entries, s.address.ip, m.address.ip, 17, PROBE_PORT, PROBE_PORT).action == "permit"), None)
            if src is not None:
                controls[str(m.address.ip)] = (src.host, src.nic, str(src.address.ip), (m.host, m.nic))
        for leaf in sorted({m.leaf for m in t.members}):
            choice = [_Target(m.host, str(m.address.ip), Plane.FE, None, leaf) for m in t.members
                      if m.leaf == leaf and str(m.address.ip) in controls][:2]
            if choice:
                targets.append(choice)
    return targets, controls


class _Builder:
    def __init__(self, plan: Plan, nonce: Callable[[], bytes]) -> None:
        self.plan = plan
        self.nonce = nonce
        self.probes: list[Probe] = []
        self._seen: set[tuple] = set()

    def add(self, src_node: str, src_port: str, src_addr: str, hop: tuple[str, str], dst_node: str, dst_addr: str,
            expect: bool, kind: str) -> None:
        key = (src_node, src_port, hop, dst_addr, expect)
        if key in self._seen or dst_node == src_node:
            return  # a node's own stack never counts as delivery: nothing to learn
        self._seen.add(key)
        self.probes.append(Probe(len(self.probes) + 1, self.nonce(), src_node, src_port, src_addr, hop[0], hop[1],
                                 dst_node, dst_addr, expect, kind))

    def from_nic(self, h: HostPlan, n: Nic, t: _Target, expect: bool, kind: str) -> None:
        self.add(h.name, n.name, str(n.address.ip), (n.peer, n.peer_port), t.node, t.addr, expect, kind)


def _pick(choices: list[_Target], avoid: str) -> _Target | None:
    return next((t for t in choices if t.node != avoid), None)


def plan_probes(plan: Plan, nonce: Callable[[], bytes] = new_nonce) -> list[Probe]:
    """Every probe of one run: the switches' own mgmt controls, then the negatives, then the
    other controls. Deterministic but for the nonces."""
    b = _Builder(plan, nonce)
    be_nics, fe_nics = _nics(plan, Plane.BE), _nics(plan, Plane.FE)
    be, fe = _targets(plan, Plane.BE), _targets(plan, Plane.FE)
    rail_only = plan.fabric.cluster.backend.kind == "rail-only"
    hosts = list(plan.hosts)

    # negatives: data plane to data plane
    for nics, targets, kind in ((fe_nics, be, "fe->be"), (be_nics, fe, "be->fe")):
        for h, n in nics:
            for choices in targets:
                if (t := _pick(choices, h.name)) is not None:
                    b.from_nic(h, n, t, False, kind)
    # negatives: the routed planes towards the tenants (L2 segments no FIB should lead to)
    tenants, tenant_controls = _tenant_targets(plan)
    for nics, kind in ((be_nics, "be->tenant"), (fe_nics, "fe->tenant")):
        for h, n in nics:
            for choices in tenants:
                if (t := _pick(choices, h.name)) is not None:
                    b.from_nic(h, n, t, False, kind)
    if rail_only:
        for h, n in be_nics:
            for choices in be:
                t = _pick(choices, h.name)
                if t is not None and t.rail is not None and t.rail != n.rail:
                    b.from_nic(h, n, t, False, f"rail{n.rail}->rail{t.rail}")

    # negatives: mgmt into a switch's eth0, towards the data planes and the switch's own loopback;
    # a data port into a switch, towards its mgmt address and a host's
    feeders = _data_feeders(plan)
    for i, sw in enumerate(plan.switches):
        if not hosts:
            break
        src = hosts[i % len(hosts)]
        m = src.mgmt
        for choices in be + fe:
            if (t := _pick(choices, src.name)) is not None:
                b.add(src.name, m.name, str(m.address.ip), (sw.name, MGMT_PORT), t.node, t.addr, False,
                      f"mgmt->{t.plane.value}")
        b.add(src.name, m.name, str(m.address.ip), (sw.name, MGMT_PORT), sw.name, str(sw.loopback.ip), False,
              f"mgmt->{sw.plane.value}")
        feeder = feeders.get(sw.name)
        if feeder is not None:
            node, port, addr, hop = feeder
            other = next((h for h in hosts[i + 1:] + hosts[:i + 1] if h.name != node), None)
            b.add(node, port, addr, hop, sw.name, str(sw.mgmt.ip), False, f"{sw.plane.value}->mgmt")
            if other is not None:
                b.add(node, port, addr, hop, other.name, str(other.mgmt.address.ip), False, f"{sw.plane.value}->mgmt")

    # controls: every source port, every destination of a negative, every switch's eth0
    for nics, plane in ((fe_nics, Plane.FE), (be_nics, Plane.BE)):
        for i, (h, n) in enumerate(nics):
            t = _peer_target(nics, i, plane)
            if t is not None:
                b.from_nic(h, n, t, True, f"{plane.value} control")
    for targets, nics, plane in ((be, be_nics, Plane.BE), (fe, fe_nics, Plane.FE)):
        for choices in targets:
            for t in choices:
                src = _source_for(plan, nics, t)
                if src is not None:
                    b.from_nic(*src, t, True, f"{plane.value} control")
    for choices in tenants:
        for t in choices:
            node, port, addr, hop = tenant_controls[t.addr]
            b.add(node, port, addr, hop, t.node, t.addr, True, "tenant control")
    for i, sw in enumerate(plan.switches):
        if hosts:
            src = hosts[i % len(hosts)]
            b.add(src.name, src.mgmt.name, str(src.mgmt.address.ip), (sw.name, MGMT_PORT), sw.name, str(sw.mgmt.ip),
                  True, "mgmt control")
        feeder = feeders.get(sw.name)
        if feeder is not None:
            node, port, addr, hop = feeder
            b.add(node, port, addr, hop, sw.name, str(sw.loopback.ip), True, f"{sw.plane.value} control")
    for i, h in enumerate(hosts):
        d = hosts[(i + 1) % len(hosts)]
        b.add(h.name, h.mgmt.name, str(h.mgmt.address.ip), (d.name, d.mgmt.name), d.name, str(d.mgmt.address.ip),
              True, "mgmt control")
    # every switch's eth0 speaks too, first: the OOB bridge then knows its MAC and does not
    # flood each mgmt probe to every port (a silent eth0's entry has aged out by now)
    for i, sw in enumerate(plan.switches):
        if hosts:
            d = hosts[i % len(hosts)]
            b.add(sw.name, MGMT_PORT, str(sw.mgmt.ip), (d.name, d.mgmt.name), d.name, str(d.mgmt.address.ip), True,
                  "mgmt control")
    switches = {s.name for s in plan.switches}
    first = [p for p in b.probes if p.src_node in switches and p.src_port == MGMT_PORT]
    rest = [p for p in b.probes if not (p.src_node in switches and p.src_port == MGMT_PORT)]
    return first + sorted(rest, key=lambda p: p.expect_delivery)


def _data_feeders(plan: Plan) -> dict[str, tuple[str, str, str, tuple[str, str]]]:
    """Per switch, a data port that can hand it a frame: (node, port, source address, next hop).
    A host NIC for a leaf, a leaf's uplink for a spine."""
    out = {}
    switches = {s.name: s for s in plan.switches}
    for sw in plan.switches:
        for p in sw.ports:
            if p.peer in switches:
                out[sw.name] = (p.peer, p.peer_port, str(switches[p.peer].loopback.ip), (sw.name, p.name))
                break
            try:
                nic = plan.host(p.peer).nic(p.peer_port)
            except KeyError:
                continue  # a tenant port (its NIC may be a VLAN interface) or an unaddressed cable
            if nic.tenant is not None:
                continue
            out[sw.name] = (p.peer, nic.name, str(nic.address.ip), (sw.name, p.name))
            break
    return out


def _peer_target(nics: list[tuple[HostPlan, Nic]], i: int, plane: Plane) -> _Target | None:
    """A same-plane destination for NIC i: same rail on the BE, preferably behind another leaf."""
    h, n = nics[i]
    ring = nics[i + 1:] + nics[:i]
    same = [(d, m) for d, m in ring if d.name != h.name and (plane is Plane.FE or m.rail == n.rail)]
    if not same:
        return None
    d, m = next(((d, m) for d, m in same if m.peer != n.peer), same[0])
    return _Target(d.name, str(m.address.ip), plane, m.rail, m.peer)


def _source_for(plan: Plan, nics: list[tuple[HostPlan, Nic]], t: _Target) -> tuple[HostPlan, Nic] | None:
    """A same-plane NIC that can reach t: on t's rail (for a host), under t (for a leaf's
    loopback), from another leaf when there is one."""
    if t.rail is not None or t.node not in {s.name for s in plan.switches}:
        ok = [(h, n) for h, n in nics if h.name != t.node and n.rail == t.rail]
    else:
        sw = plan.switch(t.node)
        below = [(h, n) for h, n in nics if n.peer == sw.name]
        ok = below if sw.host_ports else nics
    return next(((h, n) for h, n in ok if n.peer != t.leaf), ok[0] if ok else None)
