"""The fabric fails over within budget, and heals without loss.

Constant-rate RoCEv2 flows (>= 1000 pps each) cross the spine tier from one GPU to another
group. One leaf-spine link then fails: *hard* (carrier loss, seen by the kernel at once)
or *gray* (link up, every frame dropped both ways: only BFD notices). Per flow, the loss
window is lost packets / rate. Budgets: hard <= 50 ms; gray <= BFD detect time + 200 ms.
Flows that did not use the failed link must lose nothing. Then the link is restored, and
traffic must return to it without loss. Which flow used which link is counted in the
kernel (nftables counters on the leaf, per egress port and QP source port).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

from harness.checks.ecmp import _far_peer, first_gpu_nic
from harness.checks.result import Outcome
from harness.errors import HarnessError
from harness.observe.flowcount import FlowCounters
from harness.traffic.flows import ReceiveSpec, RoceFlow, SendSpec, losses
from harness.traffic.roce import roce_sport
from harness.traffic.runner import start_receiver, start_sender
from harness.wait import Timeout, until

HARD_BUDGET_MS = 50.0
GRAY_MARGIN_MS = 200.0


@dataclass(frozen=True)
class FlowLoss:
    flow_id: int
    sport: int
    path: str  # uplink before the failure
    on_failed_link: bool
    lost: int
    lost_after_restore: int
    window_ms: float


@dataclass(frozen=True)
class FailoverResult(Outcome):
    mode: str  # hard | gray
    link: str
    flows: int
    rate_pps: float
    budget_ms: float
    bfd_detect_ms: int
    worst_window_ms: float
    flows_on_failed_link: int
    lost_elsewhere: int
    lost_after_restore: int
    detected_ms: float | None  # failure -> the leaf's route lost the path (control plane)
    restored_ms: float | None  # restore -> the route has the path again
    returned_packets: int  # carried by the restored link afterwards
    per_flow: tuple[FlowLoss, ...]
    timeline: dict  # for plots: bucket_ms, received per bucket, failure/restore offsets
    seconds: float
    problems: tuple[str, ...] = field(default=())

    @property
    def reason(self) -> str:
        figures = (f"{self.mode} failure of {self.link}: worst loss window {self.worst_window_ms:.1f} ms "
                   f"(budget {self.budget_ms:.0f} ms) over {self.flows_on_failed_link}/{self.flows} flows on it; "
                   f"other flows lost {self.lost_elsewhere}; after restore lost {self.lost_after_restore}, "
                   f"{self.returned_packets} packets back on the link")
        return ("within budget: " if self.passed else "FAILED: " + "; ".join(self.problems) + " | ") + figures


def check_failover(lab, mode: str = "hard", leaf: str | None = None, spine: str | None = None,
                   src: tuple[str, str] | None = None, flows: int = 16, rate_pps: float = 1000.0,
                   before_s: float = 1.5, failed_s: float = 2.5, after_s: float = 5.0,
                   first_qp: int = 0x300) -> FailoverResult:
    if mode not in ("hard", "gray"):
        raise HarnessError(f"failover mode {mode!r}: valid modes are hard, gray")
    if rate_pps < 1000:
        raise HarnessError(f"rate_pps {rate_pps:g}: use >= 1000 per flow, or one lost packet hides a 1 ms window")
    t0 = time.monotonic()
    plan = lab.plan
    src = src or first_gpu_nic(plan)
    src_nic = plan.host(src[0]).nic(src[1])
    leaf = leaf or src_nic.peer
    leaf_plan = plan.switch(leaf)
    uplinks = {p.name: p.peer for p in leaf_plan.fabric_ports}
    spine = spine or leaf_plan.fabric_ports[0].peer
    link = lab.link(leaf, spine)
    failed_port = link.cable.a_port if link.cable.a_node == leaf else link.cable.b_port
    dst = _far_peer(plan, src[0], src_nic)
    dst_addr = str(plan.host(dst[0]).nic(dst[1]).address.ip)
    qps = [RoceFlow(flow_id=i + 1, dst=dst_addr, dst_qp=first_qp + i, src_qp=first_qp + i,
                    src=str(src_nic.address.ip)) for i in range(flows)]
    sports = {q.flow_id: roce_sport(q.src_qp) for q in qps}
    duration = before_s + failed_s + after_s
    bfd = plan.fabric.cluster.bfd
    budget = HARD_BUDGET_MS if mode == "hard" else bfd.detect_ms + GRAY_MARGIN_MS
    probe_prefix = plan.host(dst[0]).nic(dst[1]).address.network

    def paths() -> tuple[str, ...]:
        route = lab.routes(leaf).get(probe_prefix)
        return route.interfaces if route else ()

    problems: list[str] = []
    with FlowCounters(lab, leaf, list(uplinks), sorted(set(sports.values()))) as counters:
        receiver = start_receiver(lab.namespace(dst[0]), ReceiveSpec(duration_s=duration + 30, quiet_s=1.5,
                                                                     bucket_ms=10.0))
        with receiver:
            start_ns = time.time_ns() + 700_000_000  # the sender primes first, then starts here
            sender = start_sender(lab.namespace(src[0]), SendSpec(flows=tuple(qps), rate_pps=rate_pps,
                                                                  duration_s=duration, device=src[1],
                                                                  start_at_ns=start_ns))
            with sender:
                _sleep_until(start_ns + before_s * 1e9)
                before = counters.read()
                fail_ns = time.time_ns()
                link.down() if mode == "hard" else link.gray()
                detected_ms = _timed(lambda: failed_port not in paths(), fail_ns, failed_s)
                _sleep_until(fail_ns + failed_s * 1e9)
                at_restore = counters.read()
                restore_ns = time.time_ns()
                link.up() if mode == "hard" else link.heal()
                restored_ms = _timed(lambda: failed_port in paths(), restore_ns, after_s)
                sent = sender.result(duration + 30)
            received = receiver.result(60)
        after = counters.read()

    path_of = {}
    for fid, sport in sports.items():
        carried = {p: before.get(f"{p}/{sport}", 0) for p in uplinks}
        path_of[fid] = max(carried, key=carried.get) if any(carried.values()) else "?"
    lost = losses(sent, received)
    by_flow = {f.flow_id: f for f in received.flows}
    per_flow = []
    for q in qps:
        got = by_flow.get(q.flow_id)
        late_gaps = sum(g.missing for g in (got.gaps if got else ()) if g.tx_before_ns >= restore_ns)
        per_flow.append(FlowLoss(q.flow_id, sports[q.flow_id], path_of[q.flow_id], path_of[q.flow_id] == failed_port,
                                 max(0, lost.get(q.flow_id, 0)), late_gaps,
                                 round(max(0, lost.get(q.flow_id, 0)) / rate_pps * 1000, 1)))
    on_failed = [f for f in per_flow if f.on_failed_link]
    worst = max((f.window_ms for f in on_failed), default=0.0)
    lost_elsewhere = sum(f.lost for f in per_flow if not f.on_failed_link)
    lost_after = sum(f.lost_after_restore for f in per_flow)
    returned = sum(after.get(f"{failed_port}/{s}", 0) - at_restore.get(f"{failed_port}/{s}", 0) for s in sports.values())

    if not on_failed:
        problems.append(f"no flow used {leaf}:{failed_port} before the failure: the test proves nothing; "
                        "use more flows")
    if worst > budget:
        problems.append(f"loss window {worst:.1f} ms exceeds the {mode} budget of {budget:.0f} ms"
                        + (f" (BFD detect time {bfd.detect_ms} ms + {GRAY_MARGIN_MS:.0f} ms)" if mode == "gray" else ""))
    if detected_ms is None:
        problems.append(f"{leaf} still routed over {failed_port} {failed_s:g} s after the failure: nothing "
                        "detected it" + (" (is BFD on for this link?)" if mode == "gray" else ""))
    if lost_elsewhere:
        problems.append(f"flows not on the failed link lost {lost_elsewhere} packets")
    if restored_ms is None:
        problems.append(f"{leaf}:{failed_port} did not return to the route within {after_s:g} s of the restore")
    if lost_after:
        problems.append(f"{lost_after} packets lost after the restore")
    if restored_ms is not None and returned == 0:
        problems.append(f"no traffic returned to {leaf}:{failed_port} after the restore")
    totals = _buckets(received)
    bucket_ms = received.bucket_ns / 1e6
    timeline = {"bucket_ms": bucket_ms, "received": totals,
                "failure_ms": (fail_ns - received.origin_ns) / 1e6, "restore_ms": (restore_ns - received.origin_ns) / 1e6,
                "offered_pps": rate_pps * flows}
    return FailoverResult(
        mode=mode, link=f"{leaf}:{failed_port}-{spine}", flows=flows, rate_pps=rate_pps, budget_ms=budget,
        bfd_detect_ms=bfd.detect_ms, worst_window_ms=worst, flows_on_failed_link=len(on_failed),
        lost_elsewhere=lost_elsewhere, lost_after_restore=lost_after, detected_ms=detected_ms,
        restored_ms=restored_ms, returned_packets=returned, per_flow=tuple(per_flow), timeline=timeline,
        seconds=round(time.monotonic() - t0, 2), problems=tuple(problems))


def _buckets(received) -> list[int]:
    width = max((len(f.buckets) for f in received.flows), default=0)
    totals = [0] * width
    for f in received.flows:
        for i, n in enumerate(f.buckets):
            totals[i] += n
    return totals


def _sleep_until(when_ns: float) -> None:
    # The experiment's timeline, not a wait for a condition: fail and restore at set offsets.
    delay = (when_ns - time.time_ns()) / 1e9
    if delay > 0:
        time.sleep(delay)


def _timed(condition, since_ns: int, timeout: float) -> float | None:
    try:
        until(condition, timeout, "route change", interval=0.005)
    except Timeout:
        return None
    return round((time.time_ns() - since_ns) / 1e6, 1)
