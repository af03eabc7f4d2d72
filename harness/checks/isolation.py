"""FE, BE and mgmt are isolated: no route and no packet between them.

Three kinds of evidence, gathered in one run:
- routes: no switch of one data plane holds a prefix of the other, and no host would send
  another plane's address out of this plane's NIC;
- probes: frames put on each FE NIC (to its leaf) for every BE address, on each BE NIC for
  every FE address, on each mgmt port (to every switch's management port) for BE
  addresses, and in a rail-only BE on rail r for rail s: none may arrive;
- controls, in the same run: same-plane probes that must arrive, so that the check cannot
  pass because nothing works at all.
A leak is reported with the path it takes, walked hop by hop through the kernel FIBs.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from ipaddress import IPv4Network

from harness.model import FE_NIC, Plane, Role
from harness.observe.paths import Fib, trace
from harness.traffic.probe import Probe, ProbeSession, frame

COPIES = 2  # each probe is sent twice: one lost frame must not hide a delivery


@dataclass(frozen=True)
class Leak:
    kind: str
    source: str
    destination: str
    delivered: int
    path: tuple[str, ...]

    def __str__(self) -> str:
        return f"{self.kind}: {self.source} -> {self.destination} delivered {self.delivered}/{COPIES} via {' -> '.join(self.path)}"


@dataclass(frozen=True)
class IsolationResult:
    probes: int
    negatives: int
    controls: int
    controls_delivered: int
    leaks: tuple[Leak, ...]
    leaked_routes: tuple[str, ...]
    failed_controls: tuple[str, ...]
    seconds: float
    figures: dict = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return not self.leaks and not self.leaked_routes and not self.failed_controls

    @property
    def reason(self) -> str:
        if self.passed:
            return (f"isolated: {self.negatives} cross-plane probes, 0 delivered; "
                    f"{self.controls_delivered}/{self.controls} same-plane controls delivered")
        parts = []
        if self.leaks:
            parts.append(f"{len(self.leaks)} cross-plane probes delivered, e.g. " + "; ".join(str(k) for k in self.leaks[:3]))
        if self.leaked_routes:
            parts.append("routes across planes: " + "; ".join(self.leaked_routes[:6])
                         + (f" (+{len(self.leaked_routes) - 6} more)" if len(self.leaked_routes) > 6 else ""))
        if self.failed_controls:
            parts.append("positive controls not delivered (the check proves nothing until they are): "
                         + ", ".join(self.failed_controls[:5]))
        return "NOT isolated: " + " | ".join(parts)


def _probes(lab) -> list[Probe]:
    plan = lab.plan
    probes: list[Probe] = []

    def add(src_host: str, nic_name: str, hop: tuple[str, str], dst_node: str, dst_addr: str,
            expect: bool, kind: str) -> None:
        nic = plan.host(src_host).nic(nic_name)
        probes.append(Probe(len(probes) + 1, src_host, nic_name, str(nic.address.ip), hop[0], hop[1],
                            dst_node, dst_addr, expect, kind))

    gpus = [h for h in plan.hosts if h.role is Role.GPU]
    fe_hosts = [h for h in plan.hosts if any(n.name == FE_NIC for n in h.nics)]
    be_nics = [(h, n) for h in gpus for n in h.nics if n.plane is Plane.BE]
    fe_nics = [(h, h.nic(FE_NIC)) for h in fe_hosts]
    rail_only = plan.fabric.cluster.backend.kind == "rail-only"

    for h, nic in fe_nics:
        for dst_host, dst_nic in be_nics:
            add(h.name, FE_NIC, (nic.peer, nic.peer_port), dst_host.name, str(dst_nic.address.ip), False, "fe->be")
    for h, nic in be_nics:
        for dst_host, dst_nic in fe_nics:
            add(h.name, nic.name, (nic.peer, nic.peer_port), dst_host.name, str(dst_nic.address.ip), False, "be->fe")
        if rail_only:
            for dst_host, dst_nic in be_nics:
                if dst_nic.rail != nic.rail and dst_host.name != h.name:
                    add(h.name, nic.name, (nic.peer, nic.peer_port), dst_host.name, str(dst_nic.address.ip),
                        False, f"rail{nic.rail}->rail{dst_nic.rail}")
    # mgmt: through every switch's management port, towards one address per rail
    one_per_rail = {}
    for dst_host, dst_nic in be_nics:
        one_per_rail.setdefault(dst_nic.rail, (dst_host, dst_nic))
    for h in plan.hosts:
        for sw in plan.switches:
            for dst_host, dst_nic in one_per_rail.values():
                add(h.name, h.mgmt.name, (sw.name, "eth0"), dst_host.name, str(dst_nic.address.ip), False, "mgmt->be")

    # controls: the same planes must work
    for i, (h, nic) in enumerate(fe_nics):
        dst_host, dst_nic = fe_nics[(i + 1) % len(fe_nics)]
        add(h.name, FE_NIC, (nic.peer, nic.peer_port), dst_host.name, str(dst_nic.address.ip), True, "fe control")
    for h, nic in be_nics:
        same_rail = [(d, n) for d, n in be_nics if n.rail == nic.rail and d.name != h.name]
        if not same_rail:
            continue
        other_group = [(d, n) for d, n in same_rail if d.group != h.group] or same_rail
        dst_host, dst_nic = other_group[0]
        add(h.name, nic.name, (nic.peer, nic.peer_port), dst_host.name, str(dst_nic.address.ip), True, "be control")
    hosts = list(plan.hosts)
    for i, h in enumerate(hosts):
        dst = hosts[(i + 1) % len(hosts)]
        add(h.name, h.mgmt.name, (dst.name, dst.mgmt.name), dst.name, str(dst.mgmt.address.ip), True, "mgmt control")
    return probes


def _leaked_routes(lab, fib: Fib) -> list[str]:
    """Prefixes of the other data plane in a switch's FIB; a host routing another plane's
    address out of this plane's NIC."""
    plan = lab.plan
    c = plan.fabric.cluster
    ranges = {Plane.BE: IPv4Network(c.addressing.be), Plane.FE: IPv4Network(c.addressing.fe)}
    found = []
    for sw in plan.switches:
        other = ranges[Plane.FE if sw.plane is Plane.BE else Plane.BE]
        leaked = [(prefix, route) for prefix, route in sorted(lab.routes(sw.name).items()) if prefix.overlaps(other)]
        if leaked:
            prefix, route = leaked[0]
            found.append(f"{sw.name} ({sw.plane.value.upper()}) has a route to {len(leaked)} prefixes of {other}, "
                         f"e.g. {prefix} via {', '.join(route.interfaces)}")
    for host in plan.hosts:
        for nic in host.nics:
            if nic.plane is Plane.MGMT:
                targets = [ranges[Plane.BE], ranges[Plane.FE]]
            else:
                targets = [ranges[Plane.FE if nic.plane is Plane.BE else Plane.BE]]
            for net in targets:
                probe = str(net.network_address + 1)
                if fib.oif(host.name, probe) == nic.name:
                    found.append(f"{host.name} routes {net} out of {nic.name} ({nic.plane.value})")
    return found


def check_isolation(lab, timeout: float = 5.0) -> IsolationResult:
    t0 = time.monotonic()
    probes = _probes(lab)
    hosts = [h.name for h in lab.plan.hosts]
    macs: dict[tuple[str, str], bytes] = {}
    with Fib(lab) as fib, ProbeSession(hosts, lab.in_namespace) as session:
        def mac(node: str, port: str) -> bytes:
            if (node, port) not in macs:
                macs[(node, port)] = fib.mac(node, port)
            return macs[(node, port)]


        for p in probes:
            data = frame(mac(p.src_node, p.src_nic), mac(p.next_hop_node, p.next_hop_port), p.src_addr,
                         p.dst_addr, p.id)
            sock = session.sender(p.src_node, p.src_nic)
            for _ in range(COPIES):
                sock.send(data)
        expected = {p.id for p in probes if p.expect_delivery}
        arrivals = session.collect(expected, time.monotonic() + timeout)
        got: dict[int, int] = {}
        for a in arrivals:
            got[a.probe] = got.get(a.probe, 0) + 1
        by_id = {p.id: p for p in probes}
        leaks = []
        for pid, count in sorted(got.items()):
            p = by_id.get(pid)
            if p is None or p.expect_delivery:
                continue
            path = trace(fib, p.src_node, p.src_nic, p.dst_addr) if p.next_hop_port != "eth0" else \
                (f"{p.src_node}:{p.src_nic}", f"{p.next_hop_node}:eth0", p.dst_node)
            leaks.append(Leak(p.kind, f"{p.src_node}:{p.src_nic}", f"{p.dst_node} ({p.dst_addr})", count, path))
        leaked_routes = _leaked_routes(lab, fib)
    controls = [p for p in probes if p.expect_delivery]
    failed = [f"{p.kind} {p.src_node}:{p.src_nic} -> {p.dst_node} ({p.dst_addr})" for p in controls if p.id not in got]
    negatives = len(probes) - len(controls)
    kinds: dict[str, int] = {}
    for p in probes:
        kinds[p.kind] = kinds.get(p.kind, 0) + 1
    return IsolationResult(
        probes=len(probes), negatives=negatives, controls=len(controls),
        controls_delivered=len(controls) - len(failed), leaks=tuple(leaks),
        leaked_routes=tuple(leaked_routes), failed_controls=tuple(failed),
        seconds=round(time.monotonic() - t0, 2),
        figures={"probes_per_kind": kinds, "frames_sent": len(probes) * COPIES,
                 "cross_plane_delivered": sum(count for pid, count in got.items() if not by_id[pid].expect_delivery)})
