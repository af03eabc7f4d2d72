"""What the isolation check sees on a running lab, and nothing it concludes (its judge:
harness/checks/isolation.py).

It sends every probe of plan_probes(plan) (each twice, a control lost once gets another go),
notes which node's IP stack handed which probe to the listener and on which port, walks the
kernel FIBs for the path of every probe that a node other than its sender heard although
none should have, and reads every node's FIB and every BGP speaker's sessions.
"""
from __future__ import annotations

import time
from collections import Counter, defaultdict
from dataclasses import dataclass

from harness.checks.base import Observation
from harness.checks.isolation_probes import MGMT_PORT, plan_probes
from harness.core.capabilities import Feature
from harness.core.plan import Plan
from harness.observe.paths import Fib, owner_of, trace
from harness.plumbing import parallel
from harness.plumbing.labview import LabView
from harness.traffic.probe import Arrival, Probe, ProbeSession

COPIES = 2  # each probe is sent twice: one lost frame must not hide a delivery


@dataclass(frozen=True)
class Heard:
    """Copies of one probe a node's IP stack handed to the check's listener."""

    probe: int  # its id in plan_probes(plan)
    node: str
    port: str  # the port the node's stack received it on
    copies: int


@dataclass(frozen=True)
class Session:
    """One BGP session of a speaker, as FRR shows it."""

    peer: str  # the interface, for an unnumbered session
    state: str
    remote_as: int

    @property
    def established(self) -> bool:
        return self.state == "Established"


@dataclass(frozen=True)
class IsolationSeen(Observation):
    probes: int  # probes sent: plan_probes(plan), ids 1..probes
    heard: tuple[Heard, ...]  # every delivery of a probe, sorted
    paths: dict[int, tuple[str, ...]]  # probe id -> its hops through the FIBs, for each probe that was not
    # meant to arrive and that a node other than its sender heard
    frames_sent: int
    controls_resent: int
    fibs: dict[str, dict[str, tuple[str, ...]]]  # node -> prefix -> the ports of its next hops
    sessions: dict[str, tuple[Session, ...]]  # BGP speaker -> its sessions
    probe_seconds: float
    scan_seconds: float
    # why no probe was sent (a fabric reached over SSH, which fablab sends nothing into); "" where they were
    unprobed: str = ""


def measure_isolation(lab: LabView, timeout: float = 5.0, resend: int = 2) -> IsolationSeen:
    t0 = time.monotonic()
    unprobed = lab.lacks(Feature.OWN_TRAFFIC) or ""
    probes = [] if unprobed else plan_probes(lab.plan)
    arrivals, frames, resent = _send(lab, probes, timeout, resend) if probes else ([], 0, 0)
    probe_seconds = time.monotonic() - t0
    t1 = time.monotonic()
    fibs, sessions = _scan(lab, lab.plan)
    scan_seconds = time.monotonic() - t1
    heard, paths = _heard(lab, {p.id: p for p in probes}, arrivals)
    return IsolationSeen(
        probes=len(probes), heard=heard, paths=paths, frames_sent=frames, controls_resent=resent, fibs=fibs,
        sessions=sessions, probe_seconds=round(probe_seconds, 2), scan_seconds=round(scan_seconds, 2),
        seconds=round(time.monotonic() - t0, 2), unprobed=unprobed)


def _send(lab: LabView, probes: list[Probe], timeout: float, resend: int) -> tuple[list[Arrival], int, int]:
    """Every probe sent, COPIES times; the controls not yet heard at their destination again,
    up to `resend` times. The arrivals, the frames sent and the controls sent again."""
    by_id = {p.id: p for p in probes}
    nonces = {p.id: p.nonce for p in probes}
    controls = [p for p in probes if p.expect_delivery]
    control_ids = {p.id for p in controls}
    send_ports: dict[str, set[str]] = defaultdict(set)
    mac_ports: dict[str, set[str]] = defaultdict(set)
    for p in probes:
        send_ports[p.src_node].add(p.src_port)
        mac_ports[p.next_hop_node].add(p.next_hop_port)
    listen = [h.name for h in lab.plan.hosts] + [s.name for s in lab.plan.switches]

    def delivered(got: list[Arrival]) -> set[int]:
        return {a.probe for a in got if a.node == by_id[a.probe].dst_node}

    arrivals: list[Arrival] = []
    frames = resent = 0
    with ProbeSession(lab.in_namespace, listen, send_ports, mac_ports) as session:
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
    return arrivals, frames, resent


def _scan(lab: LabView, plan: Plan) -> tuple[dict[str, dict[str, tuple[str, ...]]], dict[str, tuple[Session, ...]]]:
    nodes = [h.name for h in plan.hosts] + [s.name for s in plan.switches]
    speakers = [s.name for s in plan.switches] + [h.name for h in plan.hosts if h.routed]
    # each read is a process or a vtysh round trip: a few at once
    routes = dict(zip(nodes, parallel.map_all(lab.routes, nodes)))
    peers = dict(zip(speakers, parallel.map_all(lab.bgp_peers, speakers)))
    fibs = {node: {str(prefix): tuple(route.interfaces) for prefix, route in sorted(fib.items())}
            for node, fib in routes.items()}
    sessions = {node: tuple(Session(p.peer, p.state, int(p.remote_as)) for p in found)
                for node, found in peers.items()}
    return fibs, sessions


def _heard(lab: LabView, by_id: dict[int, Probe], arrivals: list[Arrival]
           ) -> tuple[tuple[Heard, ...], dict[int, tuple[str, ...]]]:
    """The arrivals by probe, node and port (named as the node's kernel names it), and the
    path of every probe heard away from its sender that no node was meant to hear."""
    with Fib(lab) as fib:
        copies = Counter((a.probe, a.node, a.port or fib.interfaces(a.node).get(a.ifindex, str(a.ifindex)))
                         for a in arrivals)
        stray = sorted({a.probe for a in arrivals
                        if not by_id[a.probe].expect_delivery and a.node != by_id[a.probe].src_node})
        paths = {pid: _path(fib, by_id[pid]) for pid in stray}
    heard = tuple(Heard(probe, node, port, n) for (probe, node, port), n in sorted(copies.items()))
    return heard, paths


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
