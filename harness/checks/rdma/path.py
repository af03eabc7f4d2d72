"""rdma-path: rxe's RC queue pairs cross leaf -> spine -> leaf, each on the UDP source port
fablab's generator gives a QP, spread over the source leaf's uplinks as a fair hash would.

The endpoints' own figures (perftest, rxe counters) say that the transfer ran; the switches
say where it went: nftables counts UDP 4791 per (egress port, UDP source port) in the
forward hook (`FlowCounters`) of the source leaf (its uplinks) and of every spine above it
(its ports toward the destination leaf), so a packet counted on a spine crossed that spine,
and a source port names its QP. One transfer answers both (a microVM boot costs ~40 s).
"""
from __future__ import annotations

from contextlib import ExitStack
from dataclasses import dataclass

from harness import rdma
from harness.checks.base import Observation, Outcome
from harness.checks.ecmp import default_pair
from harness.checks.common.bounds import FALSE_FAIL, band
from harness.checks.rdma.lane import PortFlow, flows_of, leaf_of, require_lane, uplinks_of
from harness.core.plan import Plan
from harness.observe.flowcount import FlowCounters
from harness.plumbing.labview import LabView
from harness.rdma.session import RdmaResult
from harness.traffic.roce import roce_sport


@dataclass(frozen=True)
class SpineSeen:
    """One spine above the source leaf: its ports toward the destination leaf and what it
    counted leaving by them."""

    spine: str
    ports: tuple[str, ...]  # none: the spine has no cable to the destination leaf
    flows: tuple[PortFlow, ...]


@dataclass(frozen=True)
class RdmaPathSeen(Observation):
    transfer: RdmaResult
    source_leaf: str
    destination_leaf: str
    uplinks: tuple[str, ...]  # the source leaf's
    leaf_flows: tuple[PortFlow, ...]  # what the source leaf counted leaving by its uplinks
    spines: tuple[SpineSeen, ...]


@dataclass(frozen=True)
class SpinePath:
    spine: str
    ports: tuple[str, ...]  # its ports toward the destination leaf
    packets: int  # UDP 4791 from the test's QPs, out of those ports


@dataclass(frozen=True)
class QpRow:
    """One QP: its numbers from perftest, the UDP source port rxe's rule gives it (the rule
    the scapy generator uses, `roce_sport`), and where the source leaf saw that port leave."""

    qpn: int
    remote_qpn: int
    formula_sport: int
    uplinks: tuple[str, ...]
    packets: int


@dataclass(frozen=True)
class RdmaPathResult(Outcome):
    transfer: RdmaResult
    source_leaf: str
    destination_leaf: str
    spines: tuple[SpinePath, ...]
    crossed: int  # packets from the QPs' source ports counted on spine links to the destination leaf
    other_sports: int  # UDP 4791 packets there from source ports of no QP of the test
    rows: tuple[QpRow, ...]
    per_uplink: dict[str, int]  # uplink of the source leaf -> QPs that left by it alone
    low: int  # the fair band of QPs per uplink
    high: int
    false_fail: float
    stray_sports: tuple[int, ...]  # source ports seen on the uplinks that no QP's rule gives

    held = "crossed the spines, ports as the rule says, spread"

    def sentence(self) -> str:
        t = self.transfer
        src, dst = t.counters.get("src", {}), t.counters.get("dst", {})
        return (f"{t.spec.test} {t.spec.src_node}:{t.spec.src_nic} -> {t.spec.dst_node}:{t.spec.dst_nic}, "
                f"{len(t.qps)} QPs: rxe sent {src.get('sent_pkts', 0)}, received {dst.get('rcvd_pkts', 0)}; "
                f"UDP 4791 on spine links to {self.destination_leaf}: "
                + ", ".join(f"{s.spine} {s.packets}" for s in self.spines)
                + f"; QPs per uplink of {self.source_leaf}, fair band {self.low}..{self.high} "
                f"({self.false_fail:.1%} false-fail): " + ", ".join(f"{u} {n}" for u, n in self.per_uplink.items())
                + f"; {sum(1 for r in self.rows if len(r.uplinks) > 1)} split, "
                f"{sum(1 for r in self.rows if not r.uplinks)} unseen, {len(self.stray_sports)} stray ports")


def measure_path(lab: LabView, src: tuple[str, str] | None = None, dst: tuple[str, str] | None = None,
                 qps: int = 64, messages: int = 20) -> RdmaPathSeen:
    """ib_write_bw from src to dst (default: the ECMP check's pair, same rail in another group),
    `qps` QPs of `messages` 4 KiB writes each, while the source leaf counts UDP 4791 per
    (uplink, source port) and every spine above it the same toward the destination leaf."""
    require_lane()
    if src is None or dst is None:
        src, dst = default_pair(lab.plan)
    src_leaf, dst_leaf = leaf_of(lab, *src), leaf_of(lab, *dst)
    uplinks = uplinks_of(lab, src_leaf)
    spines = sorted(set(uplinks.values()))
    toward = {s: tuple(p.name for p in lab.plan.switch(s).fabric_ports if p.peer == dst_leaf) for s in spines}
    with ExitStack() as stack:
        leaf = stack.enter_context(FlowCounters(lab, src_leaf, list(uplinks)))
        counters = {s: stack.enter_context(FlowCounters(lab, s, list(ports))) for s, ports in toward.items() if ports}
        transfer = rdma.run(lab, src[0], src[1], dst[0], dst[1], test="write_bw", qps=qps, size=4096, duration=0,
                            iterations=messages)
        leaf_flows = leaf.read_flows()
        flows = {s: c.read_flows() for s, c in counters.items()}
    return RdmaPathSeen(transfer, src_leaf, dst_leaf, tuple(uplinks), flows_of(leaf_flows),
                        tuple(SpineSeen(s, toward[s], flows_of(flows.get(s, {}))) for s in spines))


def judge_path(plan: Plan, seen: RdmaPathSeen) -> RdmaPathResult:
    """The transfer completed; every packet the responder's rxe received was counted crossing a
    spine, and every QP was seen there; every QP's packets carry the source port rxe's rule
    gives it, the rule the scapy generator follows (`roce_sport`: every such port seen, no
    other), each QP leaves by exactly one uplink, and QPs per uplink stay in the band a fair
    hash keeps to (the ECMP check's rule, from the number of QPs and uplinks)."""
    transfer = seen.transfer
    problems = []
    if not transfer.ok:
        problems.append(f"the transfer failed: {transfer.error}")
    if len(transfer.qps) != transfer.spec.qps:
        problems.append(f"perftest reported {len(transfer.qps)} QPs, {transfer.spec.qps} asked")
    spines, crossed, other = _crossing(seen, problems)
    rows = []
    for qp in transfer.qps:
        sport = roce_sport(qp.qpn, qp.remote_qpn)
        on = tuple(sorted(f.port for f in seen.leaf_flows if f.sport == sport and f.packets))
        rows.append(QpRow(qp.qpn, qp.remote_qpn, sport, on,
                          sum(f.packets for f in seen.leaf_flows if f.sport == sport)))
    formula = {r.formula_sport for r in rows}
    stray = tuple(sorted({f.sport for f in seen.leaf_flows if f.packets and f.sport not in formula}))
    per_uplink = {u: sum(1 for r in rows if r.uplinks == (u,)) for u in seen.uplinks}
    n = len(seen.uplinks)
    low, high = band(len(rows), n, FALSE_FAIL) if len(rows) >= n > 1 else (0, len(rows))
    unseen = [f"{r.qpn:#x}" for r in rows if not r.uplinks]
    if unseen:
        problems.append(f"QPs never seen with their rule's source port: {', '.join(unseen[:8])}")
    split = [f"{r.qpn:#x} on {'+'.join(r.uplinks)}" for r in rows if len(r.uplinks) > 1]
    if split:
        problems.append(f"QPs on more than one uplink: {', '.join(split[:8])}")
    if stray:
        problems.append(f"source ports no QP's rule gives: {list(stray[:8])}")
    outside = [f"{u} {k}" for u, k in per_uplink.items() if not low <= k <= high]
    if outside:
        problems.append(f"uplinks outside the fair band {low}..{high}: {', '.join(outside)}")
    return RdmaPathResult(transfer, seen.source_leaf, seen.destination_leaf, spines, crossed, other, tuple(rows),
                          per_uplink, low, high, FALSE_FAIL, stray, seconds=seen.seconds, problems=tuple(problems))


def _crossing(seen: RdmaPathSeen, problems: list[str]) -> tuple[tuple[SpinePath, ...], int, int]:
    """Per spine, the QPs' packets toward the destination leaf; what did not cross, in `problems`."""
    sports = {q.sport for q in seen.transfer.qps}
    paths = tuple(SpinePath(s.spine, s.ports, sum(f.packets for f in s.flows if f.sport in sports))
                  for s in seen.spines)
    crossed = sum(p.packets for p in paths)
    other = sum(f.packets for s in seen.spines for f in s.flows if f.sport not in sports)
    counted = {f.sport for s in seen.spines for f in s.flows if f.packets}
    received = seen.transfer.counters.get("dst", {}).get("rcvd_pkts", 0)
    if not any(s.ports for s in seen.spines):
        problems.append(f"{seen.source_leaf} and {seen.destination_leaf} share no spine: choose NICs whose traffic "
                        "crosses the spines")
    if received == 0:
        problems.append("the responder's rxe received nothing")
    elif crossed < received:
        problems.append(f"the responder received {received} packets but only {crossed} crossed a spine")
    missing = sorted(sports - counted)
    if missing:
        problems.append(f"QPs with source ports {missing[:8]} never seen on a spine")
    return paths, crossed, other
