"""Claims about real RDMA (rdma_rxe) across the fabric, judged from the switches' counters.

The endpoints' own figures (perftest, rxe counters) say that the transfer ran; the
switches say where it went: nftables counts UDP 4791 per (egress port, UDP source port)
in the forward hook of the switches on the path (`FlowCounters`), so a packet counted on
a spine crossed that spine, and a source port names its QP.
"""
from __future__ import annotations

import threading
import time
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

from harness import rdma

from harness.plumbing import wait
from harness.checks.ecmp import default_pair
from harness.checks.ecmp_bound import FALSE_FAIL, band
from harness.checks.base import Outcome, pyplot, save
from harness.core.errors import HarnessError
from harness.plumbing.labview import LabView
from harness.observe.counters import interface_counters
from harness.observe.flowcount import FlowCounters
from harness.observe.route_watch import route_change_ms
from harness.rdma.session import RdmaResult
from harness.traffic.roce import roce_sport


def _leaf(lab: LabView, node: str, nic: str) -> str:
    return lab.plan.host(node).nic(nic).peer


def _uplinks(lab: LabView, leaf: str) -> dict[str, str]:
    """Port -> spine, for a leaf's fabric ports."""
    return {p.name: p.peer for p in lab.plan.switch(leaf).fabric_ports}


@dataclass(frozen=True)
class SpinePath:
    spine: str
    ports: tuple[str, ...]  # its ports toward the destination leaf
    packets: int  # UDP 4791 from the test's QPs, out of those ports


@dataclass(frozen=True)
class RdmaPathResult(Outcome):
    """ib_write_bw between GPU NICs behind different leaves: did its packets cross spines?"""

    transfer: RdmaResult
    source_leaf: str
    destination_leaf: str
    spines: tuple[SpinePath, ...]
    crossed: int  # packets from the QPs' source ports counted on spine links to the destination leaf
    other_sports: int  # UDP 4791 packets there from source ports of no QP of the test

    held = "crossed the spines"

    def sentence(self) -> str:
        t = self.transfer
        src, dst = t.counters.get("src", {}), t.counters.get("dst", {})
        return (f"{t.spec.test} {t.spec.src_node}:{t.spec.src_nic} -> {t.spec.dst_node}:{t.spec.dst_nic}, "
                f"{len(t.qps)} QPs: rxe sent {src.get('sent_pkts', 0)}, received {dst.get('rcvd_pkts', 0)}; "
                f"UDP 4791 on spine links to {self.destination_leaf}: "
                + ", ".join(f"{s.spine} {s.packets}" for s in self.spines))


def check_rdma_path(lab: LabView, src: tuple[str, str] | None = None, dst: tuple[str, str] | None = None, qps: int = 4,
                    duration: float = 3.0) -> RdmaPathResult:
    """ib_write_bw from src to dst (default: the ECMP check's pair, same rail in another group)
    while every spine counts UDP 4791 toward the destination leaf. Passes when the transfer
    completed, every packet the responder's rxe received was counted crossing a spine, and
    every QP was seen there."""
    if src is None or dst is None:
        src, dst = default_pair(lab.plan)
    src_leaf, dst_leaf = _leaf(lab, *src), _leaf(lab, *dst)
    spines = sorted(set(_uplinks(lab, src_leaf).values()))
    toward = {s: [p.name for p in lab.plan.switch(s).fabric_ports if p.peer == dst_leaf] for s in spines}
    with ExitStack() as stack:
        counters = {s: stack.enter_context(FlowCounters(lab, s, ports)) for s, ports in toward.items() if ports}
        transfer = rdma.run(lab, src[0], src[1], dst[0], dst[1], test="write_bw", qps=qps, duration=duration)
        flows = {s: c.read_flows() for s, c in counters.items()}
    sports = {q.sport for q in transfer.qps}
    paths = tuple(SpinePath(s, tuple(toward[s]), sum(n for (_, sp), n in flows.get(s, {}).items() if sp in sports))
                  for s in spines)
    crossed = sum(p.packets for p in paths)
    other = sum(n for f in flows.values() for (_, sp), n in f.items() if sp not in sports)
    seen = {sp for f in flows.values() for (_, sp), n in f.items() if n}
    received = transfer.counters.get("dst", {}).get("rcvd_pkts", 0)
    problems = []
    if not transfer.ok:
        problems.append(f"the transfer failed: {transfer.error}")
    if not spines or not any(toward.values()):
        problems.append(f"{src_leaf} and {dst_leaf} share no spine: choose NICs whose traffic crosses the spines")
    if received == 0:
        problems.append("the responder's rxe received nothing")
    elif crossed < received:
        problems.append(f"the responder received {received} packets but only {crossed} crossed a spine")
    missing = sorted(sports - seen)
    if missing:
        problems.append(f"QPs with source ports {missing[:8]} never seen on a spine")
    return RdmaPathResult(transfer, src_leaf, dst_leaf, paths, crossed, other, problems=tuple(problems))


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
class RdmaSpreadResult(Outcome):
    transfer: RdmaResult
    leaf: str
    rows: tuple[QpRow, ...]
    per_uplink: dict  # uplink -> QPs
    low: int
    high: int
    false_fail: float
    stray_sports: tuple[int, ...]  # source ports seen on the uplinks that no QP's rule gives

    held = "spread, ports as the rule says"

    def sentence(self) -> str:
        return (f"{len(self.rows)} rxe QPs over {len(self.per_uplink)} uplinks of {self.leaf}, fair band "
                f"{self.low}..{self.high} ({self.false_fail:.1%} false-fail): "
                + ", ".join(f"{u} {n}" for u, n in self.per_uplink.items())
                + f"; {sum(1 for r in self.rows if len(r.uplinks) > 1)} split, "
                f"{sum(1 for r in self.rows if not r.uplinks)} unseen, {len(self.stray_sports)} stray ports")


def check_rdma_spread(lab: LabView, qps: int = 64, src: tuple[str, str] | None = None,
                      dst: tuple[str, str] | None = None, messages: int = 20,
                      false_fail: float = FALSE_FAIL) -> RdmaSpreadResult:
    """`qps` rxe QPs from src to dst, `messages` each; the source leaf counts packets per
    (uplink, source port).
    Passes when every QP's packets carry the source port rxe's rule gives it, the rule the
    scapy generator follows (`roce_sport`: every such port seen, no other), each QP leaves by exactly one uplink, and QPs per uplink stay
    in the band a fair hash keeps to at `false_fail` (the ECMP check's rule)."""
    if src is None or dst is None:
        src, dst = default_pair(lab.plan)
    leaf = _leaf(lab, *src)
    uplinks = list(_uplinks(lab, leaf))
    with FlowCounters(lab, leaf, uplinks) as counter:
        transfer = rdma.run(lab, src[0], src[1], dst[0], dst[1], test="write_bw", qps=qps, size=4096, duration=0,
                            iterations=messages)
        flows = counter.read_flows()
    rows = []
    for qp in transfer.qps:
        sport = roce_sport(qp.qpn, qp.remote_qpn)
        seen = tuple(sorted(port for (port, sp), n in flows.items() if sp == sport and n))
        rows.append(QpRow(qp.qpn, qp.remote_qpn, sport, seen, sum(n for (_, sp), n in flows.items() if sp == sport)))
    formula = {r.formula_sport for r in rows}
    stray = tuple(sorted({sp for (_, sp), n in flows.items() if n and sp not in formula}))
    per_uplink = {u: sum(1 for r in rows if r.uplinks == (u,)) for u in uplinks}
    low, high = band(len(rows), len(uplinks), false_fail) if len(rows) >= len(uplinks) > 1 else (0, len(rows))
    problems = []
    if not transfer.ok:
        problems.append(f"the transfer failed: {transfer.error}")
    if len(rows) != qps:
        problems.append(f"perftest reported {len(rows)} QPs, {qps} asked")
    unseen = [f"{r.qpn:#x}" for r in rows if not r.uplinks]
    if unseen:
        problems.append(f"QPs never seen with their rule's source port: {', '.join(unseen[:8])}")
    split = [f"{r.qpn:#x} on {'+'.join(r.uplinks)}" for r in rows if len(r.uplinks) > 1]
    if split:
        problems.append(f"QPs on more than one uplink: {', '.join(split[:8])}")
    if stray:
        problems.append(f"source ports no QP's rule gives: {list(stray[:8])}")
    outside = [f"{u} {n}" for u, n in per_uplink.items() if not low <= n <= high]
    if outside:
        problems.append(f"uplinks outside the fair band {low}..{high}: {', '.join(outside)}")
    return RdmaSpreadResult(transfer, leaf, tuple(rows), per_uplink, low, high, false_fail, stray,
                            problems=tuple(problems))


@dataclass(frozen=True)
class RdmaRailsResult(Outcome):
    """A rail-only BE: RDMA within a rail works (control); across rails it finds no path,
    neither as the plan routes the host nor with the host routing the other rail into its
    own rail leaf (the fabric must drop it)."""

    control: RdmaResult  # same rail, another node
    as_planned: RdmaResult  # another rail, the host's planned routes
    forced: RdmaResult  # another rail, routed into the source's rail leaf
    forced_prefix: str

    held = "rails separate"

    def sentence(self) -> str:
        def line(r: RdmaResult) -> str:
            c = r.counters
            return (f"{r.spec.src_node}:{r.spec.src_nic} -> {r.spec.dst_node}:{r.spec.dst_nic} "
                    f"{'completed' if r.ok else 'failed'} (sent {c.get('src', {}).get('sent_pkts', 0)}, "
                    f"received {c.get('dst', {}).get('rcvd_pkts', 0)})")
        return (f"control {line(self.control)}; cross-rail {line(self.as_planned)}; "
                f"cross-rail routed via the rail leaf ({self.forced_prefix}) {line(self.forced)}")


def check_rdma_rails(lab: LabView, duration: float = 2.0) -> RdmaRailsResult:
    gpus = [h for h in lab.plan.hosts if any(n.rail is not None for n in h.nics)]
    a, b = gpus[0], gpus[1]
    rails = sorted({n.rail for n in a.nics if n.rail is not None})
    nic0 = next(n for n in a.nics if n.rail == rails[0])
    same = next(n for n in b.nics if n.rail == rails[0])
    other = next(n for n in b.nics if n.rail == rails[1])
    prefix = str(lab.plan.route_prefix(other))
    control = rdma.run(lab, a.name, nic0.name, b.name, same.name, duration=duration)
    as_planned = rdma.run(lab, a.name, nic0.name, b.name, other.name, duration=duration)
    forced = rdma.run(lab, a.name, nic0.name, b.name, other.name, duration=duration, force_route=True)
    problems = []
    if not control.ok or control.counters.get("dst", {}).get("rcvd_pkts", 0) == 0:
        problems.append(f"control: RDMA within rail {rails[0]} did not complete: {control.error or 'nothing received'}")
    for label, r in (("as planned", as_planned), ("routed via the rail leaf", forced)):
        got = r.counters.get("dst", {}).get("rcvd_pkts", 0)
        if r.ok or got:
            problems.append(f"cross-rail {label}: {b.name}:{other.name} received {got} packets"
                            f"{' and the transfer completed' if r.ok else ''}")
    if forced.counters.get("src", {}).get("sent_pkts", 0) == 0:
        problems.append("cross-rail routed via the rail leaf: the requester sent nothing, so the fabric was not tried")
    return RdmaRailsResult(control, as_planned, forced, prefix, problems=tuple(problems))


@dataclass(frozen=True)
class RdmaGrayResult(Outcome):
    """rping -V across the spines while the uplink carrying its QP fails gray: RC must
    retransmit, and the transfer complete with its data verified once BFD moved the flow."""

    transfer: RdmaResult
    element: str  # the cable that failed gray
    detected_ms: float  # from the failure until the leaf's route no longer used that uplink
    stall_ms: float  # longest time the responder's leaf delivered nothing to it, from the failure on
    sample_ms: float  # median time between two samples of that counter (the stall's resolution)
    objective_ms: float  # the declared gray-failure objective (for scale: rxe's retry timer is longer)
    timeline: tuple[tuple[float, int], ...] = ()  # (ms from the failure, packets delivered so far)

    held = "recovered"

    def sentence(self) -> str:
        t = self.transfer
        done = f"{t.rping.completed} ping-pongs, data {'verified' if t.rping.verified else 'NOT verified'}" \
            if t.rping else "no figures"
        return (f"gray failure of {self.element}: route moved {self.detected_ms:.0f} ms after it "
                f"(objective {self.objective_ms:.0f} ms); RDMA stalled {self.stall_ms:.0f} ms "
                f"(sampled every {self.sample_ms:.0f} ms); rxe retransmissions {t.retransmissions}, "
                f"retries exhausted {t.retry_exceeded}; {done}")


def _wait_uplink(counter: FlowCounters, timeout: float, packets: int = 20) -> str:
    """The uplink of the busiest source port once it has `packets`: the data QP's, not the
    connection manager's few packets (QP1, another source port) that come first."""

    def busiest() -> str | None:
        flows = counter.read_flows()
        if flows:
            (port, _), n = max(flows.items(), key=lambda item: item[1])
            if n >= packets:
                return port
        return None

    return wait.until(busiest, timeout, "the RDMA transfer's QP on an uplink", interval=0.05,
                      error=lambda: HarnessError(f"no QP of the RDMA transfer sent {packets} packets over the "
                                                 f"source leaf's uplinks within {timeout:.0f} s"))


class _Sampler:
    """Samples one interface's tx packets every few ms, in a thread."""

    def __init__(self, lab: LabView, node: str, port: str) -> None:
        self.lab, self.node, self.port = lab, node, port
        self.samples: list[tuple[float, int]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"rdma-sampler-{node}", daemon=True)

    def _run(self) -> None:
        with self.lab.netlink(self.node) as sock:  # one socket: opening one per sample costs a fork
            while not self._stop.wait(0.005):
                c = interface_counters(sock, self.port)[self.port]
                self.samples.append((time.monotonic(), c.tx_packets))

    def __enter__(self) -> _Sampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def longest_gap_ms(self, since: float) -> float:
        """Longest time without a new packet, over the samples from `since` on."""
        last_change, longest, prev = since, 0.0, None
        for t, n in self.samples:
            if prev is not None and n != prev:
                if t >= since:
                    longest = max(longest, t - last_change)
                last_change = max(t, since)
            prev = n
        return longest * 1000

    def median_interval_ms(self) -> float:
        gaps = sorted(b[0] - a[0] for a, b in zip(self.samples, self.samples[1:]))
        return gaps[len(gaps) // 2] * 1000 if gaps else 0.0


def check_rdma_gray(lab: LabView, src: tuple[str, str] | None = None, dst: tuple[str, str] | None = None,
                    iterations: int = 1000, detect_s: float = 10.0) -> RdmaGrayResult:
    """rping -V from src to dst (default: the ECMP check's pair); once its QP's packets show on
    an uplink of the source leaf, that cable fails gray (both ends drop, carriers stay up) until
    the transfer ends. Passes when RC retransmitted, every ping-pong completed with its data
    verified, and the leaf's route dropped the uplink (BFD). The stall and the detection time
    are figures: rxe's retry timer (about 0.5 s, then doubling) adds to BFD's detection."""
    if src is None or dst is None:
        src, dst = default_pair(lab.plan)
    leaf = _leaf(lab, *src)
    uplinks = _uplinks(lab, leaf)
    dst_nic = lab.plan.host(dst[0]).nic(dst[1])
    prefix = lab.plan.route_prefix(dst_nic)
    objective = float(lab.plan.fabric.cluster.objectives.gray_ms)
    with FlowCounters(lab, leaf, list(uplinks)) as counter, \
            rdma.start(lab, src[0], src[1], dst[0], dst[1], test="rping", iterations=iterations) as run:
        run.wait_for_client()
        port = _wait_uplink(counter, 30.0)
        cable = next(c for c in lab.cables(leaf, uplinks[port]) if port in (c.a_port, c.b_port)
                     and leaf in (c.a_node, c.b_node))
        index = lab.cables(leaf, uplinks[port]).index(cable)
        link = lab.link(leaf, uplinks[port], index)
        with _Sampler(lab, dst_nic.peer, dst_nic.peer_port) as sampler:
            failed_at = time.monotonic()
            link.gray()
            try:
                detected = route_change_ms(lab, leaf, prefix, port, present=False, since=failed_at,
                                           deadline=time.monotonic() + detect_s, needs_route=True)
                detected_ms = detected if detected is not None else float("nan")
                transfer = run.result()
            finally:
                link.heal()
        stall = sampler.longest_gap_ms(failed_at)
        sample = sampler.median_interval_ms()
        base = sampler.samples[0][1] if sampler.samples else 0
        step = max(1, len(sampler.samples) // 1000)
        timeline = tuple((round((t - failed_at) * 1000, 1), n - base) for t, n in sampler.samples[::step])
    problems = []
    if detected_ms != detected_ms:  # NaN: never
        problems.append(f"{leaf}'s route to {prefix} still used {port} {detect_s:.0f} s after the failure")
    if not transfer.ok:
        problems.append(f"the transfer did not complete: {transfer.error}")
    if transfer.retransmissions == 0:
        problems.append("rxe did not retransmit: the failure did not touch the QP's path")
    return RdmaGrayResult(transfer, str(link), round(detected_ms, 1), round(stall, 1), round(sample, 1), objective,
                          timeline, problems=tuple(problems))


# --------------------------------------------------------------------------- plots


def plot_rdma_spread(result: RdmaSpreadResult, path: Path) -> Path:
    """rxe QPs per uplink of the source leaf against the fair band, and their source ports."""
    plt = pyplot()
    fig, (ax, ports) = plt.subplots(1, 2, figsize=(10, 3.5), gridspec_kw={"width_ratios": [1, 2]})
    names = list(result.per_uplink)
    counts = [result.per_uplink[n] for n in names]
    ax.bar(names, counts, color=["#1f77b4" if result.low <= c <= result.high else "#d62728" for c in counts])
    ax.axhspan(result.low, result.high, color="green", alpha=0.12,
               label=f"fair band {result.low}..{result.high} ({result.false_fail:.1%} false-fail)")
    ax.set_ylabel("rxe QPs per uplink (nftables)")
    ax.set_title(f"{len(result.rows)} rdma_rxe QPs on {result.leaf}" + ("" if result.passed else " — FAIL"),
                 fontsize=10)
    ax.legend(loc="lower right", fontsize=7)
    for name in names:
        rows = [r for r in result.rows if r.uplinks == (name,)]
        ports.scatter([r.qpn for r in rows], [r.formula_sport for r in rows], s=8, label=name)
    ports.set_xlabel("QPN (perftest)")
    ports.set_ylabel("UDP source port seen (= roce_sport)")
    ports.legend(fontsize=7, title="left by", title_fontsize=7)
    return save(fig, path)


def plot_rdma_gray(result: RdmaGrayResult, path: Path) -> Path:
    """Packets delivered to the RDMA responder over time, the gray failure and the route change marked."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(8, 3.2))
    xs = [t / 1000 for t, _ in result.timeline]
    ax.plot(xs, [n for _, n in result.timeline], linewidth=1, color="#1f77b4" if result.passed else "#d62728",
            label="delivered to the responder (leaf port tx)")
    ax.axvline(0, color="#d62728", label="gray failure")
    if result.detected_ms == result.detected_ms:
        ax.axvline(result.detected_ms / 1000, color="#ff7f0e", linestyle="--",
                   label=f"route moved ({result.detected_ms:.0f} ms)")
    ax.set_xlabel("seconds from the failure")
    ax.set_ylabel("packets")
    t = result.transfer
    ax.set_title(f"rping -V over {result.element}: stall {result.stall_ms:.0f} ms, "
                 f"{t.retransmissions} RC retransmissions" + ("" if result.passed else " — FAIL"), fontsize=10)
    ax.legend(loc="upper left", fontsize=7)
    return save(fig, path)
