"""FE, BE and mgmt are isolated: no route, no session and no packet between them.

Evidence gathered in one run:
- probes, one per (source port × destination block or leaf), so the cost follows the
  fabric, not the square of its hosts: every FE NIC towards one host behind each BE leaf
  and the BE loopback block, every BE NIC towards each FE leaf and the FE loopback block
  (in a rail-only BE also towards every other rail's leaf), every switch's `eth0` fed from
  the mgmt plane towards every data destination and the switch's own loopback, and every
  switch fed on a data port towards its own mgmt address and a host's (the weak-host model:
  a switch must not answer for its mgmt address on a data port; SONiC keeps `eth0` in a
  management VRF), and every BE NIC and routed FE NIC towards one or two members of every
  FE tenant behind each leaf (tenants are L2 segments: no FIB should lead there). None may
  be delivered. (Between tenants, and from a tenant into the underlay, the tenants check.)
- controls in the same run: every source port and every destination of a negative probe
  also gets a same-plane probe that must be delivered, so each "nothing arrived" has proof
  that the listener would have seen it, and the check cannot pass because nothing works (a
  tenant member's control comes from another member of its tenant, on a tuple the ACL permits).
- the whole FIB of every node: no route out of a port of one plane into another plane's range
  or into a tenant's subnet (only a member's own tenant NIC routes to its subnet, and nowhere else);
- the BGP sessions of every switch: none with a peer of the other plane (a stray cable
  that the prefix filters keep from leaking routes still carries BGP between the planes).
A probe is delivered when the IP stack of a node other than the sender hands it, with its
nonce, to the check's UDP listener (harness/traffic/probe.py). A leak is reported with the
node and port where it arrived and the path it took, walked through the kernel FIBs.
"""
from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from ipaddress import IPv4Network

from harness.acl import compile_acl, verdict
from harness.checks.result import Outcome
from harness.model import Plane, Role
from harness.observe.paths import Fib, owner_of, trace
from harness.observe.routing import Route
from harness.plan import HostPlan, Nic, Plan, SwitchPlan
from harness.traffic.probe import PROBE_PORT, Arrival, Probe, ProbeSession, new_nonce

COPIES = 2  # each probe is sent twice: one lost frame must not hide a delivery
MGMT_PORT = "eth0"  # a switch's management port (SONiC's name, kept by both runtimes)


@dataclass(frozen=True)
class Leak:
    kind: str
    source: str  # node:port the probe left from
    next_hop: str  # node:port it was handed to
    destination: str  # "node (address)"
    arrived: tuple[str, ...]  # node:port of each stack that delivered it
    copies: int
    path: tuple[str, ...]

    def __str__(self) -> str:
        return (f"{self.kind}: {self.source} -> {self.destination} delivered {self.copies}/{COPIES} "
                f"at {', '.join(self.arrived)} via {' -> '.join(self.path)}")


@dataclass(frozen=True)
class IsolationResult(Outcome):
    reason: str
    seconds: float
    problems: tuple[str, ...]
    probes: int
    negatives: int
    controls: int
    controls_delivered: int
    probes_per_kind: dict[str, int]
    frames_sent: int
    controls_resent: int
    leaks: tuple[Leak, ...]
    leaked_routes: tuple[str, ...]
    cross_plane_sessions: tuple[str, ...]
    failed_controls: tuple[str, ...]
    nodes_scanned: int
    routes_scanned: int
    sessions_scanned: int
    probe_seconds: float
    scan_seconds: float


# --------------------------------------------------------------------------- the probes


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
    """Destinations standing for a plane: per leaf, the hosts behind it (first choice first);
    and the plane's loopback block, standing in a spine's loopback (a leaf's without a spine)."""
    nics = _nics(plan, plane)
    switches = [s for s in plan.switches if s.plane is plane]
    out: list[list[_Target]] = []
    for sw in switches:
        behind = [_Target(h.name, str(n.address.ip), plane, n.rail, sw.name) for h, n in nics if n.peer == sw.name]
        if behind:
            out.append(behind[:2])  # a second, for a source that is the first
    loop = [s for s in switches if s.role in (Role.BE_SPINE, Role.FE_SPINE)] or switches
    if loop:
        out.append([_Target(s.name, str(s.loopback.ip), plane, None, s.name) for s in loop[:2]])
    return out


def _tenant_targets(plan: Plan) -> tuple[list[list[_Target]], dict[str, tuple[str, str, str, tuple[str, str]]]]:
    """Per tenant and leaf, two of its members' tenant addresses (the second for a source
    that is the first), and per address its control: a member of the same tenant on another
    node whose probe the edge ACL lets through, sent straight to the target's MAC (the segment
    is L2). A member no control can reach is no target: its silence would prove nothing."""
    entries = compile_acl(plan)
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


# --------------------------------------------------------------------------- routes and sessions


def _ranges(plan: Plan) -> dict[Plane, IPv4Network]:
    a = plan.fabric.cluster.addressing
    return {Plane.BE: IPv4Network(a.be), Plane.FE: IPv4Network(a.fe), Plane.MGMT: plan.mgmt_network}


def route_leaks(plan: Plan, fibs: dict[str, dict[IPv4Network, Route]]) -> list[str]:
    """Routes out of a port of one plane into another plane's range, in every FIB given:
    a host's NIC by its plane (a rail-only BE NIC also by its rail), a switch's `eth0` as
    mgmt and every other port as the switch's plane."""
    ranges = _ranges(plan)
    rail_only = plan.fabric.cluster.backend.kind == "rail-only"
    switches = {s.name: s for s in plan.switches}
    found = []
    for node, fib in fibs.items():
        label = switches[node].plane.value.upper() if node in switches else "host"
        forbidden: dict[str, list[tuple[str, IPv4Network, int, int]]] = {}
        bad: dict[str, list[tuple[IPv4Network, Route]]] = defaultdict(list)
        for prefix, route in sorted(fib.items()):
            lo, hi = int(prefix.network_address), int(prefix.broadcast_address)
            for dev in route.interfaces:
                if dev not in forbidden:  # ipaddress's overlaps() is slow: compare integers, per port once
                    forbidden[dev] = [(name, net, int(net.network_address), int(net.broadcast_address))
                                      for name, net in _forbidden(plan, switches, ranges, rail_only, node, dev)]
                for name, net, a, z in forbidden[dev]:
                    if lo <= z and a <= hi:
                        bad[f"{name} {net}"].append((prefix, route))
        for what, leaked in bad.items():
            prefix, route = leaked[0]
            found.append(f"{node} ({label}) has a route to {len(leaked)} prefixes of {what}, "
                         f"e.g. {prefix} via {', '.join(route.interfaces)}")
    return found


def _forbidden(plan: Plan, switches: dict[str, SwitchPlan], ranges: dict[Plane, IPv4Network], rail_only: bool,
               node: str, dev: str) -> list[tuple[str, IPv4Network]]:
    """The ranges a route out of `dev` on `node` must not touch."""
    if node in switches:
        plane: Plane | None = Plane.MGMT if dev == MGMT_PORT else switches[node].plane
        rail = None
        tenant = None
    else:
        nic = next((n for n in plan.host(node).nics if n.name == dev), None)
        plane, rail, tenant = (nic.plane, nic.rail, nic.tenant) if nic else (None, None, None)
    # tenants are L2 segments: only a member's own tenant NIC routes to its subnet, and that
    # NIC routes nowhere else (not even into the FE underlay it rides on)
    out = [(p.value.upper(), net) for p, net in ranges.items() if p is not plane or tenant is not None]
    out += [(f"tenant {t.name}", t.subnet) for t in plan.tenants if t.name != tenant]
    if plane is None:
        return [(f"{n} (via {dev}, a port the plan does not have)", net) for n, net in out]
    if plane is Plane.BE and rail_only and rail is not None:
        out += [(f"rail {s}", blk) for s, blk in enumerate(plan.be_rail_blocks) if s != rail]
    return out


def cross_plane_sessions(plan: Plan, peers: dict[str, tuple]) -> list[str]:
    """Established BGP sessions whose peer AS belongs to another plane (or to no switch)."""
    owners: dict[int, list[SwitchPlan]] = defaultdict(list)
    for s in plan.switches:
        owners[s.asn].append(s)
    found = []
    for node, sessions in peers.items():
        sw = plan.switch(node)
        for p in sessions:
            if not p.established:
                continue
            theirs = owners.get(p.remote_as, [])
            if theirs and all(o.plane is sw.plane for o in theirs):
                continue
            who = (f"{theirs[0].plane.value.upper()} AS {p.remote_as} ({', '.join(o.name for o in theirs[:3])})"
                   if theirs else f"AS {p.remote_as}, which no switch of the plan has")
            found.append(f"{node}:{p.peer} ({sw.plane.value.upper()}) has a BGP session with {who}: "
                         "packets cross between planes on that port")
    return found


# --------------------------------------------------------------------------- the check


def check_isolation(lab, timeout: float = 5.0, resend: int = 2) -> IsolationResult:
    t0 = time.monotonic()
    plan: Plan = lab.plan
    probes = plan_probes(plan)
    by_id = {p.id: p for p in probes}
    nonces = {p.id: p.nonce for p in probes}
    controls = [p for p in probes if p.expect_delivery]
    send_ports: dict[str, set[str]] = defaultdict(set)
    mac_ports: dict[str, set[str]] = defaultdict(set)
    for p in probes:
        send_ports[p.src_node].add(p.src_port)
        mac_ports[p.next_hop_node].add(p.next_hop_port)
    listen = [h.name for h in plan.hosts] + [s.name for s in plan.switches]

    arrivals: list[Arrival] = []
    frames = 0
    resent = 0
    with ProbeSession(lab.in_namespace, listen, send_ports, mac_ports) as session:
        control_ids = {p.id for p in controls}

        def delivered(got: list[Arrival]) -> set[int]:
            return {a.probe for a in got if a.node == by_id[a.probe].dst_node}

        def done(got: list[Arrival]) -> bool:
            return control_ids <= delivered(arrivals) | delivered(got)

        batch = probes
        for attempt in range(1 + resend):
            for i, p in enumerate(batch):
                session.send(p, COPIES)
                if i % 256 == 255:  # keep the listeners' queues short
                    arrivals += session.drain(nonces)
            frames += COPIES * len(batch)
            arrivals += session.collect(nonces, done, time.monotonic() + timeout)
            batch = [p for p in controls if p.id not in delivered(arrivals)]
            if not batch or attempt == resend:
                break
            resent += len(batch)  # a control lost once (a neighbour still resolving) gets another go
    probe_seconds = time.monotonic() - t0

    t1 = time.monotonic()
    fibs, peers = _scan(lab, plan)
    leaked_routes = route_leaks(plan, fibs)
    sessions = cross_plane_sessions(plan, peers)
    scan_seconds = time.monotonic() - t1

    delivered_controls = {a.probe for a in arrivals if a.node == by_id[a.probe].dst_node} & {p.id for p in controls}
    failed = tuple(str(p) for p in controls if p.id not in delivered_controls)
    leaks = _leaks(lab, by_id, arrivals)
    kinds: dict[str, int] = {}
    for p in probes:
        kinds[p.kind] = kinds.get(p.kind, 0) + 1
    negatives = len(probes) - len(controls)
    seconds = round(time.monotonic() - t0, 2)
    problems = tuple(str(k) for k in leaks) + tuple(leaked_routes) + tuple(sessions) + tuple(
        f"control not delivered: {f}" for f in failed)
    figures = (f"{len(probes)} probes ({negatives} cross-plane, {len(controls)} controls) in {probe_seconds:.1f} s; "
               f"{sum(len(f) for f in fibs.values())} routes on {len(fibs)} nodes and "
               f"{sum(len(s) for s in peers.values())} BGP sessions scanned in {scan_seconds:.1f} s")
    if not problems:
        reason = (f"isolated: 0/{negatives} cross-plane probes delivered, "
                  f"{len(delivered_controls)}/{len(controls)} controls delivered, no route or session across "
                  f"planes; {figures}")
    else:
        parts = []
        if leaks:
            parts.append(f"{len(leaks)} cross-plane probes delivered, e.g. {leaks[0]}")
        if leaked_routes:
            parts.append(f"{len(leaked_routes)} nodes route across planes, e.g. {leaked_routes[0]}")
        if sessions:
            parts.append(f"{len(sessions)} BGP sessions across planes, e.g. {sessions[0]}")
        if failed:
            parts.append(f"{len(failed)}/{len(controls)} controls not delivered (the check proves nothing until "
                         f"they are), e.g. {failed[0]}")
        reason = "NOT isolated: " + " | ".join(parts) + f"; {figures}"
    return IsolationResult(
        reason=reason, seconds=seconds, problems=problems, probes=len(probes), negatives=negatives,
        controls=len(controls), controls_delivered=len(delivered_controls), probes_per_kind=kinds,
        frames_sent=frames, controls_resent=resent, leaks=tuple(leaks), leaked_routes=tuple(leaked_routes),
        cross_plane_sessions=tuple(sessions), failed_controls=failed, nodes_scanned=len(fibs),
        routes_scanned=sum(len(f) for f in fibs.values()), sessions_scanned=sum(len(s) for s in peers.values()),
        probe_seconds=round(probe_seconds, 2), scan_seconds=round(scan_seconds, 2))


def _scan(lab, plan: Plan) -> tuple[dict[str, dict[IPv4Network, Route]], dict[str, tuple]]:
    nodes = [h.name for h in plan.hosts] + [s.name for s in plan.switches]
    # each read is a process or a vtysh round trip: a few at once
    with ThreadPoolExecutor(max_workers=8) as pool:
        fibs = dict(zip(nodes, pool.map(lab.routes, nodes)))
        peers = dict(zip([s.name for s in plan.switches], pool.map(lab.bgp_peers, [s.name for s in plan.switches])))
    return fibs, peers


def _leaks(lab, by_id: dict[int, Probe], arrivals: list[Arrival]) -> list[Leak]:
    where: dict[int, list[Arrival]] = defaultdict(list)
    for a in arrivals:
        p = by_id[a.probe]
        if not p.expect_delivery and a.node != p.src_node:
            where[a.probe].append(a)
    if not where:
        return []
    leaks = []
    with Fib(lab) as fib:
        for pid, got in sorted(where.items()):
            p = by_id[pid]
            arrived = tuple(sorted({f"{a.node}:{fib.interfaces(a.node).get(a.ifindex, a.ifindex)}" for a in got}))
            leaks.append(Leak(p.kind, p.source, f"{p.next_hop_node}:{p.next_hop_port}", f"{p.dst_node} ({p.dst_addr})",
                              arrived, len(got), _path(fib, p)))
    return leaks


def _path(fib: Fib, p: Probe) -> tuple[str, ...]:
    if p.next_hop_port != MGMT_PORT:
        return trace(fib, p.src_node, p.src_port, p.dst_addr)
    # into a switch's management port across the OOB bridge, then on through its FIB
    head = (p.source, f"{p.next_hop_node}:{MGMT_PORT}")
    if owner_of(fib.lab.plan, p.dst_addr) == p.next_hop_node:
        return head + (p.next_hop_node,)
    oif = fib.oif(p.next_hop_node, p.dst_addr)
    if oif is None:
        return head + ("(no route)",)
    return head + trace(fib, p.next_hop_node, oif, p.dst_addr)
