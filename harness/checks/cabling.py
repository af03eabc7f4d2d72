"""The cabling audit: every cable the kernel carries, compared with the plan (cabling.csv).

A check that only sends what the plan declares cannot see a cable nobody declared, so this
one starts from the running system: in every node's namespace it lists the veth ends, and
for each the other end as the kernel knows it (IFLA_LINK, the peer's ifindex, in the
namespace named by IFLA_LINK_NETNSID, resolved by asking the kernel which id that namespace
has here). It never reads fablab's own record of what it cabled (`Lab.extra_cables`): a
fault made from outside fablab is recorded nowhere. Findings, in the terms of cabling.csv
(node, port, expected peer, actual peer):

- missing: a planned cable that is absent, or present but down;
- swapped: a planned end that lands on another planned end (two cables exchanged);
- miswired: a planned end that lands on a port the plan does not use, or outside the lab;
- unknown: a cable between ports the plan does not use;
- not bridged: a mgmt cable whose OOB end is not in the OOB switch's bridge;
each with notes when it joins two planes (FE–BE, data–mgmt), puts a GPU NIC of rail r on a
leaf that does not carry rail r, or (on a leaf of several rails) in another rail's port group. This is the first check a pre-deployment engineer runs.
The kernel's view (measure_cabling) and the audit (judge_cabling, pure) are apart, so that the
audit is tested on views recorded on real labs (tests/observations/cabling/).
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from harness.checks.base import Case, Check, Observation, Outcome, Table
from harness.checks.cabling_kernel import End, KernelPort, kernel_ports
from harness.checks.cabling_lldp import NO_LLDP, live_ports, lldp_ports, read_links, settled_lldp
from harness.plumbing.labview import LabView
from harness.core.model import Plane, Role
from harness.core.observed import LldpNeighbour, PortState
from harness.core.plan import Plan



@dataclass(frozen=True)
class CablingSeen(Observation):
    """Every veth end in the namespaces the runtime lets the audit read, as the kernel has it."""

    ports: tuple[KernelPort, ...]
    planes: tuple[Plane, ...]  # the planes whose cables this runtime's kernel can show (clab: no mgmt)
    scope: str  # the same, in words
    # node -> the LLDP neighbours it heard, for each node whose LLDP agent answered; None: none did
    lldp: dict[str, tuple[LldpNeighbour, ...]] | None = None
    # node -> its interfaces, where no kernel view of the veth ends is had (a fabric over SSH)
    links: dict[str, tuple[PortState, ...]] | None = None


@dataclass(frozen=True)
class CableFinding:
    kind: str  # missing | swapped | miswired | unknown | not bridged
    node: str
    port: str
    expected_peer: str  # "node:port"; "" when the plan has no cable on this port
    actual_peer: str  # "node:port", or where it leads; "" when there is no cable
    notes: tuple[str, ...] = ()

    def __str__(self) -> str:
        text = (f"{self.kind}: {self.node}:{self.port} expected {self.expected_peer or 'no cable'}, "
                f"actual {self.actual_peer or 'no cable'}")
        return text + (f" ({'; '.join(self.notes)})" if self.notes else "")


@dataclass(frozen=True)
class CablingResult(Outcome):
    planned: int  # cables in the plan (in scope)
    observed: int  # veth pairs found in the lab's namespaces
    matched: int  # planned cables present, up, and where the plan puts them
    findings: tuple[CableFinding, ...]
    scope: str
    lldp_matched: int | None = None  # planned cables LLDP shows where the plan puts them; None: no LLDP seen
    lldp_silent: int = 0  # live ports of nodes with an LLDP agent that heard no neighbour
    unseen: int = 0  # planned cables neither of whose nodes answered (over SSH): not judged, not counted as planned

    held = "cabled as planned"
    shown = 4

    @property
    def broken(self) -> str:
        kinds: dict[str, int] = {}
        for f in self.findings:
            kinds[f.kind] = kinds.get(f.kind, 0) + 1
        return f"NOT cabled as planned ({', '.join(f'{n} {k}' for k, n in sorted(kinds.items()))})"

    def sentence(self) -> str:
        figures = f"{self.matched}/{self.planned} planned cables as planned"
        if self.observed:
            figures += f", {self.observed} veth pairs in the kernel"
        if self.lldp_matched is not None:
            figures += f", {self.lldp_matched} confirmed by LLDP"
        if self.unseen:
            figures += f" ({self.unseen} between nodes not reached, not seen)"
        return figures + (", none unknown" if self.passed else "")

    def findings_table(self) -> Table:
        return Table(("finding", "node", "port", "expected peer", "actual peer", "notes"),
                     tuple((f.kind, f.node, f.port, f.expected_peer or "—", f.actual_peer or "—", "; ".join(f.notes))
                           for f in self.findings))


# --------------------------------------------------------------------------- the audit (pure)


def audit(plan: Plan, ports: list[KernelPort], planes: tuple[Plane, ...] = tuple(Plane)) -> list[CableFinding]:
    """Compare the kernel's veth ends with the plan's cables of `planes`."""
    cables = [c for c in plan.cables if c.plane in planes]
    planned: dict[End, End] = {}
    for c in cables:
        planned[(c.a_node, c.a_port)] = (c.b_node, c.b_port)
        planned[(c.b_node, c.b_port)] = (c.a_node, c.a_port)
    actual = {(p.node, p.port): p for p in ports}
    kinds = _Kinds(plan)
    findings: list[CableFinding] = []
    for c in cables:
        a, b = (c.a_node, c.a_port), (c.b_node, c.b_port)
        pa, pb = actual.get(a), actual.get(b)
        if pa is not None and pb is not None and pa.peer == b:
            findings += _state(pa, pb, a, b, kinds)
            continue
        if pa is None and pb is None:
            findings.append(CableFinding("missing", *a, _name(b), "", ("neither end has an interface",)))
            continue
        for end, mine, other in ((a, pa, b), (b, pb, a)):
            if mine is None:
                findings.append(CableFinding("missing", *end, _name(other), "", (f"no interface {end[1]} on {end[0]}",)))
            elif mine.peer is None and mine.outside == NO_LLDP:
                why = "" if mine.up and mine.carrier else f" ({'administratively down' if not mine.up else 'no carrier'})"
                findings.append(CableFinding("missing", *end, _name(other), "", (f"{NO_LLDP} on {_name(end)}{why}",)))
            elif mine.peer != other:
                kind = "swapped" if mine.peer in planned else "miswired"
                findings.append(CableFinding(kind, *end, _name(other), _actual(mine), kinds.notes(end, mine.peer)))
    reported: set[frozenset] = set()
    for p in ports:
        end = (p.node, p.port)
        if end in planned or (p.peer is not None and p.peer in planned):
            continue  # a planned end: reported above, from its own side
        if p.peer is None and p.outside == NO_LLDP:
            continue  # a port that hears nothing shows no cable
        key = frozenset((end, p.peer or ("", p.outside)))
        if key in reported:
            continue
        reported.add(key)
        findings.append(CableFinding("unknown", *end, "", _actual(p), kinds.notes(end, p.peer)))
    return findings


def matched_cables(plan: Plan, ports: list[KernelPort], findings: list[CableFinding],
                   planes: tuple[Plane, ...] = tuple(Plane)) -> int:
    faulty = {(f.node, f.port) for f in findings}
    actual = {(p.node, p.port): p for p in ports}
    count = 0
    for c in plan.cables:
        a, b = (c.a_node, c.a_port), (c.b_node, c.b_port)
        if c.plane in planes and a not in faulty and b not in faulty and a in actual and actual[a].peer == b:
            count += 1
    return count


def _state(pa: KernelPort, pb: KernelPort, a: End, b: End, kinds: _Kinds) -> list[CableFinding]:
    """A cable where the plan puts it: it must also be up (and bridged on the OOB switch)."""
    out = []
    down = [end for end, p in ((a, pa), (b, pb)) if not p.up]
    if down:
        end = down[0]
        other = b if end == a else a
        out.append(CableFinding("missing", *end, _name(other), _name(other),
                                (f"{_name(end)} is administratively down",)))
    elif not (pa.carrier and pb.carrier):
        out.append(CableFinding("missing", *a, _name(b), _name(b), ("no carrier",)))
    for end, p, other in ((a, pa, b), (b, pb, a)):
        if kinds.is_oob(end[0]) and (p.bridge is None or not p.bridge_up):
            why = f"not a member of {end[0]}'s bridge" if p.bridge is None else f"bridge {p.bridge} is down"
            out.append(CableFinding("not bridged", *end, _name(other), _name(other),
                                    (f"{why}: {other[0]} has no mgmt connectivity",)))
    return out


class _Kinds:
    """What the plan says about an end: its plane, the rail of a GPU NIC, the rails a leaf
    carries and the rail whose port group holds a leaf's host port."""

    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        self.role = {n.name: n.role for n in plan.fabric.nodes}
        self.leaf_rails = {s.name: s.rails for s in plan.switches if s.rails}
        self.group_rail = {(s.name, p.name): p.rail for s in plan.switches if s.rails for p in s.host_ports}
        self.end_plane: dict[End, Plane] = {}
        self.nic_rail: dict[End, int] = {}
        for c in plan.cables:
            self.end_plane[(c.a_node, c.a_port)] = c.plane
            self.end_plane[(c.b_node, c.b_port)] = c.plane
            if c.rail is not None and self.role.get(c.a_node) is Role.GPU:
                self.nic_rail[(c.a_node, c.a_port)] = c.rail

    def is_oob(self, node: str) -> bool:
        return self.role.get(node) is Role.OOB

    def plane(self, end: End) -> Plane | None:
        if end in self.end_plane:
            return self.end_plane[end]
        role = self.role.get(end[0])
        if role is not None and role.is_routed and end[1] == "eth0":
            return Plane.MGMT  # a switch's management port (SONiC's eth0)
        return role.plane if role is not None else None  # a host's unplanned port: no plane known

    def notes(self, end: End, peer: End | None) -> tuple[str, ...]:
        if peer is None:
            return ()
        notes = []
        mine, theirs = self.plane(end), self.plane(peer)
        if mine is not None and theirs is not None and mine is not theirs:
            notes.append(f"joins {mine.value.upper()} and {theirs.value.upper()}")
        for nic, leaf in ((end, peer), (peer, end)):
            rail, rails = self.nic_rail.get(nic), self.leaf_rails.get(leaf[0])
            if rail is None or rails is None:
                continue
            if rail not in rails:
                carried = f"is a rail-{rails[0]} leaf" if len(rails) == 1 else f"carries rails {rails[0]}-{rails[-1]}"
                notes.append(f"{_name(nic)} is rail {rail}, {leaf[0]} {carried}")
            elif (group := self.group_rail.get(leaf)) is not None and group != rail:
                notes.append(f"{_name(nic)} is rail {rail}, {_name(leaf)} is in rail {group}'s port group")
        return tuple(notes)


def _name(end: End) -> str:
    return f"{end[0]}:{end[1]}"


def _actual(p: KernelPort) -> str:
    return _name(p.peer) if p.peer is not None else f"outside the lab ({p.outside})"


# --------------------------------------------------------------------------- the case


def measure_cabling(lab: LabView) -> CablingSeen:
    scope = lab.cabling_scope()  # what this runtime's kernel can show (clab: no mgmt cables)
    ports = kernel_ports(lab, list(scope.nodes), scope.skip_interfaces) if scope.veth else []
    links = None if scope.veth else read_links(lab, scope.nodes)
    live = live_ports(ports, links, scope.skip_interfaces)
    lldp = settled_lldp(lab, scope.nodes, live, ports)
    return CablingSeen(tuple(ports), tuple(scope.planes), scope.text, lldp, links)


def judge_cabling(plan: Plan, seen: CablingSeen) -> CablingResult:
    ports, planes = list(seen.ports), seen.planes
    findings = audit(plan, ports, planes) if ports else []
    pairs = {frozenset(((p.node, p.port), p.peer or ("", p.outside))) for p in ports}
    matched = matched_cables(plan, ports, findings, planes) if ports else 0
    lldp_matched, silent, unseen = None, 0, set()
    if seen.lldp is not None:
        heard = lldp_ports(plan, seen.lldp, live_ports(ports, seen.links, frozenset()))
        silent = sum(1 for p in heard if p.peer is None and p.outside == NO_LLDP and p.up and p.carrier)
        by_lldp = audit(plan, heard, planes)
        if not ports:  # LLDP is the only evidence (a fabric over SSH): a cable neither of whose nodes answered is unseen
            unseen = {(c.a_node, c.a_port) for c in plan.cables if c.plane in planes
                      and c.a_node not in seen.lldp and c.b_node not in seen.lldp}
            by_lldp = [f for f in by_lldp if (f.node, f.port) not in unseen]
        lldp_matched = matched_cables(plan, heard, by_lldp, planes)
        known = {(f.kind, f.node, f.port) for f in findings}
        findings += [replace(f, notes=f.notes + ("seen by LLDP",)) for f in by_lldp
                     if (f.kind, f.node, f.port) not in known]
        if not ports:
            matched = lldp_matched
    return CablingResult(
        planned=sum(1 for c in plan.cables if c.plane in planes) - len(unseen), observed=len(pairs),
        matched=matched, findings=tuple(findings), scope=seen.scope,
        seconds=seen.seconds, problems=tuple(str(f) for f in findings), lldp_matched=lldp_matched,
        lldp_silent=silent, unseen=len(unseen))


CHECK = Check("cabling", "every cable in the kernel against the plan (cabling.csv)",
              (Case("cabling", measure_cabling, judge_cabling),))
