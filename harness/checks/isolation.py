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
Which probes, from where to where: harness/checks/isolation_probes.py; what is seen on the lab
(deliveries, FIBs, sessions, the paths of strays): harness/checks/isolation_measure.py; the
verdict, from the plan and that observation only: judge_isolation, here.
"""
from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass
from ipaddress import IPv4Network

from harness.checks.base import Case, Check, Outcome, Table, tally
from harness.checks.isolation_measure import COPIES, IsolationSeen, measure_isolation
from harness.checks.isolation_probes import MGMT_PORT, plan_probes
from harness.core.model import Plane
from harness.core.plan import Plan, SwitchPlan
from harness.traffic.probe import NONCE_BYTES, Probe

__all__ = ["MGMT_PORT", "CHECK", "IsolationResult", "IsolationSeen", "Leak",
           "cross_plane_sessions", "judge_isolation", "measure_isolation", "plan_probes", "route_leaks"]


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
    mismatch: str | None = None  # why the observation is not of this plan's probes, None where it is
    unprobed: str = ""  # why no probe was sent (over SSH): only routes and sessions were judged

    held, broken = "isolated", "NOT isolated"

    def sentence(self) -> str:
        scanned = (f"{self.routes_scanned} routes on {self.nodes_scanned} nodes and "
                   f"{self.sessions_scanned} BGP sessions scanned in {self.scan_seconds:.1f} s")
        if self.unprobed:
            return (("no route or session across planes; " if self.passed else "")
                    + f"{scanned}; no probe sent ({self.unprobed.split(':')[0]})")
        figures = (f"{self.probes} probes ({self.negatives} cross-plane, {self.controls} controls) in "
                   f"{self.probe_seconds:.1f} s; {scanned}")
        if not self.passed:
            return figures
        return (f"0/{self.negatives} cross-plane probes delivered, {self.controls_delivered}/{self.controls} controls "
                f"delivered, no route or session across planes; {figures}")

    def named(self) -> tuple[str, ...]:
        return (((self.mismatch,) if self.mismatch else ())
                + tally(self.leaks, "cross-plane probes delivered")
                + tally(self.leaked_routes, "nodes route across planes")
                + tally(self.cross_plane_sessions, "BGP sessions across planes")
                + tally(self.failed_controls, "controls not delivered", self.controls,
                        then=" (the check proves nothing until they are)"))

    def findings_table(self) -> Table | None:
        if not self.leaks:
            return None
        return Table(("kind", "from", "to", "path"),
                     tuple((k.kind, k.source, k.destination, " → ".join(k.path)) for k in self.leaks))


# --------------------------------------------------------------------------- routes and sessions


def _ranges(plan: Plan) -> dict[Plane, tuple[IPv4Network, ...]]:
    """Each plane's address space as the plan numbered it (fablab's ranges or the engineer's own)."""
    return {Plane.BE: plan.plane_nets[Plane.BE], Plane.FE: plan.plane_nets[Plane.FE], Plane.MGMT: (plan.mgmt_network,)}


def route_leaks(plan: Plan, fibs: dict[str, dict[str, tuple[str, ...]]]) -> list[str]:
    """Routes out of a port of one plane into another plane's range, in every FIB given
    (node -> prefix -> the ports of its next hops): a host's NIC by its plane (a rail-only BE
    NIC also by its rail), a switch's `eth0` as mgmt and every other port as the switch's plane."""
    ranges = _ranges(plan)
    rail_only = plan.fabric.cluster.backend.kind == "rail-only"
    switches = {s.name: s for s in plan.switches}
    found = []
    for node, fib in fibs.items():
        label = switches[node].plane.value.upper() if node in switches else "host"
        forbidden: dict[str, list[tuple[str, IPv4Network, int, int]]] = {}
        bad: dict[str, list[tuple[IPv4Network, tuple[str, ...]]]] = defaultdict(list)
        for prefix, devs in sorted((IPv4Network(p), devs) for p, devs in fib.items()):
            lo, hi = int(prefix.network_address), int(prefix.broadcast_address)
            for dev in devs:
                if dev not in forbidden:  # ipaddress's overlaps() is slow: compare integers, per port once
                    forbidden[dev] = [(name, net, int(net.network_address), int(net.broadcast_address))
                                      for name, net in _forbidden(plan, switches, ranges, rail_only, node, dev)]
                for name, net, a, z in forbidden[dev]:
                    if lo <= z and a <= hi:
                        bad[f"{name} {net}"].append((prefix, devs))
        for what, leaked in bad.items():
            prefix, devs = leaked[0]
            found.append(f"{node} ({label}) has a route to {len(leaked)} prefixes of {what}, "
                         f"e.g. {prefix} via {', '.join(devs)}")
    return found


def _forbidden(plan: Plan, switches: dict[str, SwitchPlan], ranges: dict[Plane, tuple[IPv4Network, ...]], rail_only: bool,
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
    out = [(p.value.upper(), net) for p, nets in ranges.items() if p is not plane or tenant is not None for net in nets]
    out += [(f"tenant {t.name}", t.subnet) for t in plan.tenants if t.name != tenant]
    if plane is None:
        return [(f"{n} (via {dev}, a port the plan does not have)", net) for n, net in out]
    if plane is Plane.BE and rail_only and rail is not None:
        out += [(f"rail {s}", blk) for s, nets in enumerate(plan.rail_nets) if s != rail for blk in nets]
    return out


def cross_plane_sessions(plan: Plan, peers: dict[str, tuple]) -> list[str]:
    """Established BGP sessions (each with .peer, .remote_as, .established) whose peer AS belongs
    to another plane (or to no node of the plan: a switch, or a dual-homed host, whose plane is the FE)."""
    owners: dict[int, list[tuple[str, Plane]]] = defaultdict(list)
    for s in plan.switches:
        owners[s.asn].append((s.name, s.plane))
    for h in plan.hosts:
        if h.routed:
            owners[h.asn].append((h.name, Plane.FE))
    found = []
    for node, sessions in peers.items():
        plane = plan.switch(node).plane if node in {s.name for s in plan.switches} else Plane.FE
        for p in sessions:
            if not p.established:
                continue
            theirs = owners.get(p.remote_as, [])
            if theirs and all(o_plane is plane for _, o_plane in theirs):
                continue
            who = (f"{theirs[0][1].value.upper()} AS {p.remote_as} ({', '.join(o for o, _ in theirs[:3])})"
                   if theirs else f"AS {p.remote_as}, which no node of the plan has")
            found.append(f"{node}:{p.peer} ({plane.value.upper()}) has a BGP session with {who}: "
                         "packets cross between planes on that port")
    return found


# --------------------------------------------------------------------------- the verdict


def _no_nonce() -> bytes:
    return bytes(NONCE_BYTES)  # the judge rebuilds the probes to know them, never to send them


def judge_isolation(plan: Plan, seen: IsolationSeen) -> IsolationResult:
    probes = [] if seen.unprobed else plan_probes(plan, _no_nonce)
    by_id = {p.id: p for p in probes}
    controls = [p for p in probes if p.expect_delivery]
    at_destination = {h.probe for h in seen.heard if h.probe in by_id and h.node == by_id[h.probe].dst_node}
    delivered = at_destination & {p.id for p in controls}
    failed = tuple(str(p) for p in controls if p.id not in delivered)
    leaks = _leaks(by_id, seen)
    leaked_routes = route_leaks(plan, seen.fibs)
    sessions = cross_plane_sessions(plan, seen.sessions)
    mismatch = None if seen.probes == len(probes) else (
        f"{seen.probes} probes were sent, this plan makes {len(probes)}: the observation is of another "
        "version of the check's probes (record it again)")
    problems = (((mismatch,) if mismatch else ()) + tuple(str(k) for k in leaks) + tuple(leaked_routes)
                + tuple(sessions) + tuple(f"control not delivered: {f}" for f in failed))
    return IsolationResult(
        seconds=seen.seconds, problems=problems, probes=len(probes), negatives=len(probes) - len(controls),
        controls=len(controls), controls_delivered=len(delivered),
        probes_per_kind=dict(Counter(p.kind for p in probes)), frames_sent=seen.frames_sent, controls_resent=seen.controls_resent, leaks=tuple(leaks),
        leaked_routes=tuple(leaked_routes), cross_plane_sessions=tuple(sessions), failed_controls=failed,
        nodes_scanned=len(seen.fibs), routes_scanned=sum(len(f) for f in seen.fibs.values()),
        sessions_scanned=sum(len(s) for s in seen.sessions.values()), probe_seconds=seen.probe_seconds,
        scan_seconds=seen.scan_seconds, mismatch=mismatch, unprobed=seen.unprobed)


def _leaks(by_id: dict[int, Probe], seen: IsolationSeen) -> list[Leak]:
    """Every probe not meant to arrive that a node other than its sender heard."""
    where: dict[int, list[tuple[str, int]]] = defaultdict(list)
    for h in seen.heard:
        p = by_id.get(h.probe)
        if p is not None and not p.expect_delivery and h.node != p.src_node:
            where[h.probe].append((f"{h.node}:{h.port}", h.copies))
    return [Leak(p.kind, p.source, f"{p.next_hop_node}:{p.next_hop_port}", f"{p.dst_node} ({p.dst_addr})",
                 tuple(sorted({at for at, _ in got})), sum(n for _, n in got), seen.paths.get(pid, ()))
            for pid, got in sorted(where.items()) for p in [by_id[pid]]]


CHECK = Check("isolation", "no packet or route between FE, BE and mgmt, with same-plane controls",
              (Case("isolation", measure_isolation, judge_isolation),))
