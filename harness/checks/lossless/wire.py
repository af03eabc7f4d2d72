"""RoCE frames at the declared RoCE MTU, and their DSCP, on the wire of every BE path: the
`lossless-wire` case of the lossless check.

`fablab audit` reads what the tables say; this sends what a job sends. From the first GPU NIC
of every rail, RDMA WRITE packets carrying a full `roce_mtu` payload (so the IP packet is
`roce_frame_bytes`, DF set) and marked with the RoCE DSCP go to a GPU NIC behind every leaf
of that rail, on enough QPs (source ports) to cross every uplink. `measure_wire` records, per
path, what was sent and what the receiver's capture saw (DSCPs, sizes), every ICMP
"fragmentation needed" the sources got and the switch ports that dropped frames meanwhile;
`judge_wire` wants every packet to arrive with the declared size and DSCP. A hop whose MTU is
too small is named: a router that cannot forward a DF packet says so in an ICMP
"fragmentation needed" to the source (its address names the switch, the message its MTU),
and a link end that drops frames larger than its MTU shows in its drop counters.
"""
from __future__ import annotations

import socket
import struct
from dataclasses import dataclass

from harness.checks.base import Observation, Outcome
from harness.core.errors import HarnessError
from harness.core.plan import Plan
from harness.plumbing.labview import LabView
from harness.traffic.flows import ReceiveSpec, RoceFlow, SendSpec
from harness.traffic.runner import start_receivers, start_senders

_FIRST_QP = 0x400
_ICMP_UNREACH, _ICMP_FRAG_NEEDED = 3, 4


@dataclass(frozen=True)
class PathProbe:
    """Packets from one GPU NIC to one other, on `qps` QPs."""

    source: str  # node:nic
    destination: str
    qps: int
    sent: int  # as the source's own kernel took them
    received: int
    dscps: tuple[int, ...]  # the DSCPs the receiver's capture saw on this path's packets
    sizes: tuple[int, ...]  # their IP total lengths


@dataclass(frozen=True)
class FragNeeded:
    """ICMP "fragmentation needed" the sources got from one router address."""

    address: str
    mtu: int  # the next-hop MTU the message gave
    reports: int


@dataclass(frozen=True)
class JumboSeen(Observation):
    packets: int  # sent on every QP
    paths: tuple[PathProbe, ...]
    frag_needed: tuple[FragNeeded, ...]
    drops: dict[str, int]  # "switch:port" -> frames the port dropped meanwhile


@dataclass(frozen=True)
class TooSmall:
    """A hop that told a source the frame did not fit (ICMP fragmentation needed)."""

    node: str
    address: str
    mtu: int
    reports: int


@dataclass(frozen=True)
class JumboResult(Outcome):
    roce_mtu: int
    frame_bytes: int
    dscp: int
    paths: tuple[PathProbe, ...]
    too_small: tuple[TooSmall, ...]
    drops: dict[str, int]  # "switch:port" -> frames the port dropped meanwhile

    held = "every path carries them"

    def sentence(self) -> str:
        sent = sum(p.sent for p in self.paths)
        got = sum(p.received for p in self.paths)
        return (f"{len(self.paths)} paths, {sent} RoCE frames of {self.frame_bytes} bytes "
                f"(RoCE MTU {self.roce_mtu}) at DSCP {self.dscp}: {got} received")


def probe_pairs(plan) -> list[tuple[tuple[str, str, int], tuple[str, str]]]:
    """(source (node, nic, rail), destination (node, nic)) for every rail: the rail's first GPU
    NIC to one GPU NIC behind every leaf of that rail (its own leaf too)."""
    by_rail: dict[int, list[tuple[str, str, str]]] = {}
    for host in plan.hosts:
        for nic in host.nics:
            if nic.rail is not None:
                by_rail.setdefault(nic.rail, []).append((host.name, nic.name, nic.peer))
    pairs = []
    for rail, nics in sorted(by_rail.items()):
        src = nics[0]
        for leaf in sorted({n[2] for n in nics}):
            dst = next((n for n in nics if n[2] == leaf and n[0] != src[0]), None)
            if dst is not None:
                pairs.append(((src[0], src[1], rail), (dst[0], dst[1])))
    return pairs


def _owners(plan: Plan) -> dict[str, str]:
    """IPv4 address -> the switch that holds it (loopbacks and host-facing ports)."""
    out = {}
    for sw in plan.switches:
        out[str(sw.loopback.ip)] = sw.name
        for p in sw.ports:
            if p.address is not None:
                out[str(p.address.ip)] = sw.name
    return out


def _icmp_socket() -> socket.socket:
    s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
    s.setblocking(False)
    return s


def _frag_needed(sock: socket.socket) -> list[tuple[str, int]]:
    """(router address, next-hop MTU) of every "fragmentation needed" queued on the socket."""
    found = []
    while True:
        try:
            data, (addr, _) = sock.recvfrom(65535)
        except BlockingIOError:
            return found
        ihl = (data[0] & 0x0F) * 4
        icmp_type, code = data[ihl], data[ihl + 1]
        if icmp_type == _ICMP_UNREACH and code == _ICMP_FRAG_NEEDED:
            found.append((addr, struct.unpack("!H", data[ihl + 6: ihl + 8])[0]))


def _port_drops(lab: LabView, switches: list[str]) -> dict[str, int]:
    out = {}
    for sw in switches:
        for name, c in lab.counters(sw).items():
            out[f"{sw}:{name}"] = c.rx_dropped + c.tx_dropped
    return out


def _probes(lab: LabView) -> list[tuple[tuple[str, str], tuple[str, str], list[RoceFlow]]]:
    """(source, destination, its flows) per probe pair: 4 QPs per uplink of the source's leaf,
    so that a fair hash leaves an uplink unused with probability (1-1/k)^4k < 2 %."""
    plan = lab.plan
    q = plan.fabric.cluster.lossless
    pairs = probe_pairs(plan)
    if not pairs:
        raise HarnessError("the cluster has no two GPU NICs on one rail: nothing to send between")
    probes: list[tuple[tuple[str, str], tuple[str, str], list[RoceFlow]]] = []
    next_id = 1
    for (src, nic, rail), dst in pairs:
        qps = max(1, 4 * len(plan.switch(plan.host(src).nic(nic).peer).fabric_ports))
        flows = []
        for i in range(qps):
            qp = _FIRST_QP + rail * 0x1000 + len(probes) * 0x40 + i
            # RDMA WRITE ONLY: IP 20 + UDP 8 + BTH 12 + RETH 16 + payload + ICRC 4
            flows.append(RoceFlow(flow_id=next_id, dst=lab.address(*dst), dst_qp=qp, src_qp=qp,
                                  src=lab.address(src, nic), payload_len=q.roce_mtu, dscp=q.roce_dscp))
            next_id += 1
        probes.append(((src, nic), dst, flows))
    return probes


def measure_wire(lab: LabView, packets: int = 3) -> JumboSeen:
    """Full-size RoCE frames at the RoCE DSCP on every probe path; what arrived, as the
    receivers' captures saw it, and what the sources heard back."""
    probes = _probes(lab)
    flows_by_src: dict[str, list[RoceFlow]] = {}
    for (src, nic), _, flows in probes:
        flows_by_src.setdefault(f"{src}|{nic}", []).extend(flows)
    dst_nodes = sorted({dst[0] for _, dst, _ in probes})
    expect = {n: sum(len(f) for _, d, f in probes if d[0] == n) * packets for n in dst_nodes}
    switches = [s.name for s in lab.plan.switches if s.lossless]
    before = _port_drops(lab, switches)
    icmp = {key: lab.in_namespace(key.split("|")[0], _icmp_socket) for key in flows_by_src}
    try:
        receivers = start_receivers([(lab.namespace(n), ReceiveSpec(expect_packets=expect[n], quiet_s=1.0,
                                                                     duration_s=120.0,
                                                                     capture=min(expect[n], 4096)))
                                     for n in dst_nodes])
        with receivers:
            senders = start_senders([(lab.namespace(key.split("|")[0]),
                                      SendSpec(flows=tuple(flows), packets=packets, device=key.split("|")[1]))
                                     for key, flows in flows_by_src.items()])
            with senders:
                sent = senders.result(120)
            receivers.stop()
            received = receivers.result(60)
        reports = [r for s in icmp.values() for r in _frag_needed(s)]
    finally:
        for s in icmp.values():
            s.close()
    after = _port_drops(lab, switches)
    small: dict[tuple[str, int], int] = {}
    for addr, mtu in reports:
        small[(addr, mtu)] = small.get((addr, mtu), 0) + 1
    return JumboSeen(packets, _paths(probes, dst_nodes, sent, received),
                     tuple(FragNeeded(a, m, n) for (a, m), n in sorted(small.items())),
                     {k: after.get(k, 0) - v for k, v in before.items() if after.get(k, 0) > v})


def _paths(probes, dst_nodes, sent, received) -> tuple[PathProbe, ...]:
    """Per probe path: packets sent and received, and the DSCPs and sizes its captured packets
    had (a packet is the path's by its BTH destination QP at its receiver)."""
    got_by_id = {}
    captured_by_qp: dict[tuple[str, int], list[tuple[int, int]]] = {}
    for node, result in zip(dst_nodes, received.results):
        for f in result.flows:
            got_by_id[f.flow_id] = f.unique
        for raw in result.captured:
            pkt = bytes.fromhex(raw)
            length = struct.unpack("!H", pkt[2:4])[0]
            ihl = (pkt[0] & 0x0F) * 4
            dqpn = int.from_bytes(pkt[ihl + 8 + 5: ihl + 8 + 8], "big")  # BTH's destination QP
            captured_by_qp.setdefault((node, dqpn), []).append((pkt[1] >> 2, length))
    sent_by_id = {f.flow_id: f.packets for r in sent.results for f in r.flows}
    paths = []
    for (src, nic), dst, flows in probes:
        seen = [c for f in flows for c in captured_by_qp.get((dst[0], f.dst_qp), [])]
        paths.append(PathProbe(f"{src}:{nic}", f"{dst[0]}:{dst[1]}", len(flows),
                               int(sum(sent_by_id.get(f.flow_id, 0) for f in flows)),
                               int(sum(got_by_id.get(f.flow_id, 0) for f in flows)),
                               tuple(sorted({d for d, _ in seen})), tuple(sorted({n for _, n in seen}))))
    return tuple(paths)


def judge_wire(plan: Plan, seen: JumboSeen) -> JumboResult:
    """Every frame sent and received, at the declared size and DSCP; every hop that said it
    could not forward one named."""
    q = plan.fabric.cluster.lossless
    owners = _owners(plan)
    too_small = tuple(TooSmall(owners.get(f.address, "?"), f.address, f.mtu, f.reports) for f in seen.frag_needed)
    problems = []
    for p in seen.paths:
        if p.sent < p.qps * seen.packets:
            problems.append(f"{p.source} -> {p.destination}: the source's own kernel sent {p.sent} of "
                            f"{p.qps * seen.packets} (its NIC's MTU below {q.roce_frame_bytes}?)")
        if p.received < p.sent:
            problems.append(f"{p.source} -> {p.destination}: {p.sent - p.received} of {p.sent} frames of "
                            f"{q.roce_frame_bytes} bytes lost")
        wrong = [d for d in p.dscps if d != q.roce_dscp]
        if wrong:
            problems.append(f"{p.source} -> {p.destination}: received with DSCP {wrong} (sent {q.roce_dscp})")
        short = [n for n in p.sizes if n != q.roce_frame_bytes]
        if short:
            problems.append(f"{p.source} -> {p.destination}: received as {short} bytes (sent {q.roce_frame_bytes})")
        if p.received and not p.dscps:
            problems.append(f"{p.source} -> {p.destination}: no packet captured to read its DSCP")
    for t in too_small:
        problems.append(f"{t.node} ({t.address}) could not forward a {q.roce_frame_bytes}-byte frame: "
                        f"its next hop's MTU is {t.mtu} ({t.reports} ICMP fragmentation-needed)")
    if seen.drops and any(p.received < p.sent for p in seen.paths):
        problems.append("ports that dropped frames meanwhile: "
                        + ", ".join(f"{k} {v}" for k, v in sorted(seen.drops.items())))
    return JumboResult(q.roce_mtu, q.roce_frame_bytes, q.roce_dscp, seen.paths, too_small, dict(seen.drops),
                       seconds=seen.seconds, problems=tuple(problems))
