"""rdma-gray: an RC queue pair survives a gray uplink, its data verified.

rping -V runs across the spines; once its QP's packets show on an uplink of the source leaf,
that cable fails gray (both ends drop, carriers stay up) until the transfer ends. RC must
retransmit, every ping-pong complete with its data verified, and the leaf's route drop the
uplink (BFD); healed, the cable must carry the route again with both its BGP sessions back
before the case returns (the next check finds the fabric as this one did). The stall and the
detection time are figures: rxe's retry timer (about 0.5 s, then doubling) adds to BFD's
detection, so the gray objective is enforced by the failover check, not here.
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass

from harness import rdma
from harness.checks import sessions_back
from harness.checks.base import Observation, Outcome
from harness.checks.ecmp import default_pair
from harness.checks.rdma.lane import leaf_of, require_lane, uplinks_of
from harness.core.errors import HarnessError
from harness.core.plan import Plan
from harness.observe.counters import interface_counters
from harness.observe.flowcount import FlowCounters
from harness.observe.route_watch import route_change_ms
from harness.plumbing import wait
from harness.plumbing.labview import LabView
from harness.rdma.session import RdmaResult

TIMELINE_POINTS = 400  # of the responder's delivered-packets curve kept for the plot


@dataclass(frozen=True)
class RdmaGraySeen(Observation):
    transfer: RdmaResult
    leaf: str  # the source leaf
    port: str  # its uplink that carried the QP, failed gray
    element: str  # that cable
    prefix: str  # the destination's prefix, whose route was watched
    detect_s: float  # how long the route was watched for
    detected_ms: float | None  # from the failure until the route no longer used the port; None: not within detect_s
    stall_ms: float  # longest time the responder's leaf delivered nothing to it, from the failure on
    sample_ms: float  # median time between two samples of that counter (the stall's resolution)
    timeline: tuple[tuple[float, int], ...] = ()  # (ms from the failure, packets delivered so far)
    after_s: float = 0.0  # how long the cable may take to carry the route again once healed (0: not watched) ...
    back_ms: float | None = None  # ... and how long it took (None: not within after_s)
    sessions_not_back: tuple[str, ...] = ()  # the cable's own BGP sessions still down after that


@dataclass(frozen=True)
class RdmaGrayResult(Outcome):
    """rping -V across the spines while the uplink carrying its QP fails gray: RC must
    retransmit, and the transfer complete with its data verified once BFD moved the flow."""

    transfer: RdmaResult
    element: str  # the cable that failed gray
    detected_ms: float | None  # from the failure until the leaf's route no longer used that uplink; None: never
    stall_ms: float  # longest time the responder's leaf delivered nothing to it, from the failure on
    sample_ms: float  # median time between two samples of that counter (the stall's resolution)
    objective_ms: float  # the declared gray-failure objective (for scale: rxe's retry timer is longer)
    timeline: tuple[tuple[float, int], ...] = ()  # (ms from the failure, packets delivered so far)
    back_ms: float | None = None  # from the heal until the route used the cable again

    held = "recovered"

    def sentence(self) -> str:
        t = self.transfer
        done = f"{t.rping.completed} ping-pongs, data {'verified' if t.rping.verified else 'NOT verified'}" \
            if t.rping else "no figures"
        moved = "never moved" if self.detected_ms is None else f"moved {self.detected_ms:.0f} ms after it"
        return (f"gray failure of {self.element}: route {moved} "
                f"(objective {self.objective_ms:.0f} ms); RDMA stalled {self.stall_ms:.0f} ms "
                f"(sampled every {self.sample_ms:.0f} ms); rxe retransmissions {t.retransmissions}, "
                f"retries exhausted {t.retry_exceeded}; {done}"
                + ("" if self.back_ms is None else f"; the cable back in the route {self.back_ms:.0f} ms after the heal"))


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

    def timeline(self, since: float) -> tuple[tuple[float, int], ...]:
        base = self.samples[0][1] if self.samples else 0
        step = max(1, len(self.samples) // TIMELINE_POINTS)
        return tuple((round((t - since) * 1000, 1), int(n - base)) for t, n in self.samples[::step])


def measure_gray(lab: LabView, src: tuple[str, str] | None = None, dst: tuple[str, str] | None = None,
                 iterations: int = 300, detect_s: float = 10.0, after_s: float = 15.0) -> RdmaGraySeen:
    """rping -V from src to dst (default: the ECMP check's pair); the uplink its QP leaves by
    fails gray until the transfer ends, while the responder's leaf port is sampled and the
    source leaf's route to the responder watched. 300 ping-pongs take ~15 s under TCG: the
    failure comes after the first few, BFD and rxe's retries have recovered within ~3 s.
    Healed, the cable must carry the route again and both its BGP sessions be back within
    after_s: BGP waits out its connect-retry timer after BFD comes up, and a check that returned
    before then left the next one (a second `fablab check`) a fabric short of a session."""
    require_lane()
    if src is None or dst is None:
        src, dst = default_pair(lab.plan)
    leaf = leaf_of(lab, *src)
    uplinks = uplinks_of(lab, leaf)
    dst_nic = lab.plan.host(dst[0]).nic(dst[1])
    prefix = lab.plan.route_prefix(dst_nic)
    with FlowCounters(lab, leaf, list(uplinks)) as counter, \
            rdma.start(lab, src[0], src[1], dst[0], dst[1], test="rping", iterations=iterations) as run:
        run.wait_for_client()
        port = _wait_uplink(counter, 30.0)
        cable = next(c for c in lab.cables(leaf, uplinks[port]) if port in (c.a_port, c.b_port)
                     and leaf in (c.a_node, c.b_node))
        link = lab.link(leaf, uplinks[port], lab.cables(leaf, uplinks[port]).index(cable))
        with _Sampler(lab, dst_nic.peer, dst_nic.peer_port) as sampler:
            failed_at = time.monotonic()
            link.gray()
            try:
                detected = route_change_ms(lab, leaf, prefix, port, present=False, since=failed_at,
                                           deadline=time.monotonic() + detect_s, needs_route=True)
                transfer = run.result()
            finally:
                link.heal()
                healed_at = time.monotonic()
    back_ms = route_change_ms(lab, leaf, prefix, port, present=True, since=healed_at, deadline=healed_at + after_s)
    return RdmaGraySeen(transfer, leaf, port, str(link), str(prefix), detect_s,
                        None if detected is None else round(detected, 1), round(sampler.longest_gap_ms(failed_at), 1),
                        round(sampler.median_interval_ms(), 1), sampler.timeline(failed_at), after_s, back_ms,
                        sessions_back.not_back(lab, link.ends, after_s) if back_ms is not None
                        else sessions_back.sessions_of(lab, link.ends))


def judge_gray(plan: Plan, seen: RdmaGraySeen) -> RdmaGrayResult:
    """RC retransmitted, every ping-pong completed with its data verified, the leaf's route
    dropped the uplink within the time watched, and once healed the cable carried the route
    again with both its BGP sessions back (where the heal was watched)."""
    transfer = seen.transfer
    problems = []
    if seen.detected_ms is None:
        problems.append(f"{seen.leaf}'s route to {seen.prefix} still used {seen.port} {seen.detect_s:.0f} s after "
                        "the failure")
    if not transfer.ok:
        problems.append(f"the transfer did not complete: {transfer.error}")
    if transfer.retransmissions == 0:
        problems.append("rxe did not retransmit: the failure did not touch the QP's path")
    if seen.after_s and seen.back_ms is None:
        problems.append(f"{seen.element} did not return to {seen.leaf}'s route to {seen.prefix} within "
                        f"{seen.after_s:g} s of the heal: {', '.join(seen.sessions_not_back) or 'no session named'}")
    elif seen.sessions_not_back:
        problems.append(f"{seen.element} back in the route, yet {len(seen.sessions_not_back)} of its BGP sessions "
                        f"still not Established {seen.after_s:g} s after the heal: {', '.join(seen.sessions_not_back)}")
    return RdmaGrayResult(transfer, seen.element, seen.detected_ms, seen.stall_ms, seen.sample_ms,
                          float(plan.fabric.cluster.objectives.gray_ms), seen.timeline,
                          back_ms=seen.back_ms, seconds=seen.seconds, problems=tuple(problems))
