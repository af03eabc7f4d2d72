"""What a failover case saw, and how it reads: its observation, its verdict and its plot.

harness/checks/failover.py runs a case on a lab and returns a `FailoverSeen`; `judge_failover`
holds it against the objectives the cluster declares (the plan's) and gives a `FailoverCase`,
with no lab: so the figures and the verdict read in one sitting, and are tested on recorded
observations (tests/judges/test_judge_failover.py).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

from harness.checks.base import Observation, Outcome, caption, pyplot, save
from harness.checks.failover_elements import Failure
from harness.checks.failover_windows import LagSpan, QpLoss, QpSeen, judge, lane, losses
from harness.core.plan import Plan

LANES_ON, LANES_OFF = 24, 6  # QPs drawn one lane each: those on the element first, then a few others


@dataclass(frozen=True, kw_only=True)
class FailoverSeen(Observation):
    """One failure and its restore under constant-rate QPs, as the lab showed it. Times in ns
    count from the receiver's origin (when it became ready: the plot's zero)."""

    case: Failure
    element: str  # what failed
    watch: str  # the switch whose route must drop the element
    rehashed: bool  # several links of one switch's ECMP group failed (failover_windows.judge)
    min_on_element: int  # QPs the element had to carry (the measurement's k)
    candidates: int  # QPs probed to find them
    rate_pps: float  # per QP
    qps: tuple[QpSeen, ...]
    lag_spans: tuple[LagSpan, ...]  # the sender's, more than one slot late
    sender_realtime: bool  # the sender's loop ran under SCHED_FIFO
    failure_ns: int
    restore_ns: int
    detect_s: float  # how long `watch`'s route was watched for the failure ...
    after_s: float  # ... and for the restore
    detected_ms: float | None  # failure -> `watch`'s route dropped the element (None: not within detect_s)
    restored_ms: float | None  # restore -> the route has it again (None: not within after_s)
    returned_packets: int  # counted on the element after the restore
    sessions_dropped_elsewhere: tuple[str, ...]  # switch:peer BGP sessions that went down away from the element
    bucket_ms: float
    received_on: tuple[int, ...]  # packets received per bucket of the QPs on the element ...
    received_off: tuple[int, ...]  # ... and of the others
    # where the element did not return: its own sessions then, each end's BGP and BFD state
    # ("be-s1:Ethernet0 BGP Idle, BFD down"), the evidence a next look starts from
    element_sessions: tuple[str, ...] = ()
    # where the element did return: those of its own sessions still not Established once the
    # restore settled (after_s more), each end's BGP and BFD state
    sessions_not_back: tuple[str, ...] = ()
    # A failure by carrier loss: how long making it took (ms from failure_ns), and when `watch`'s
    # kernel then acted on each of its ports' carrier loss (port, ms from failure_ns; none
    # where it was not watched): what the machine, not the fabric, added to a window
    failed_in_ms: float = 0.0
    carrier_lost_ms: tuple[tuple[str, float], ...] = ()
    # A failure whose reroute is the daemons' work (remote, gray): ("node/daemon", ms it waited
    # for a CPU from the failure until `watch`'s route changed), of the daemons on that chain
    cpu_waited_ms: tuple[tuple[str, float], ...] = ()

    def cpu_wait_ms(self) -> float:
        """What the rerouting daemons waited for a CPU together: an upper bound of what the
        machine added to the reroute (one waiting off the chain's critical path counts too)."""
        return round(sum(ms for _, ms in self.cpu_waited_ms), 1)

    def carrier_acted_ms(self, path: str) -> float | None:
        """When `watch`'s kernel acted on the carrier loss of the port at `path` ("switch:port"),
        ms after the failure began; None where that was not seen."""
        node, _, port = path.partition(":")
        return dict(self.carrier_lost_ms).get(port) if node == self.watch else None

    def kernel_lag_ms(self, qp: QpSeen) -> float:
        """How much of the QP's loss came before `watch`'s kernel acted on its port's carrier
        loss: a switch's ASIC acts as its cables die, together, so all of it is the machine's:
        the kernel's late link-state work, and the cables of a whole switch cut one after the
        other (one netlink call each, 197.5 ms for be-s2's 8 once beside another lab), the
        QP's own perhaps last. 0 where the carrier loss was not seen."""
        acted = self.carrier_acted_ms(qp.path)
        if acted is None:
            return 0.0
        t_acted = self.failure_ns + acted * 1e6
        before = sum(max(0.0, min(g.tx_after_ns, t_acted) - max(g.tx_before_ns, self.failure_ns))
                     for g in qp.gaps if g.tx_after_ns > self.failure_ns and g.tx_before_ns < self.restore_ns)
        return round(before / 1e6, 2)


@dataclass(frozen=True)
class FailoverCase(Outcome):
    case: Failure
    element: str
    objective_ms: float  # the declared one for this kind of failure
    restore_objective_ms: float
    qps: int
    qps_on_element: int
    min_on_element: int
    candidates: int  # QPs probed to find them
    rate_pps: float
    worst_window_ms: float  # over QPs on the element, failure
    worst_restore_ms: float  # over all QPs, restore
    lost_elsewhere: int  # by QPs not on the element, during the failure
    lost_before: int  # before the failure (baseline)
    detected_ms: float | None  # failure -> the source leaf's route dropped the element
    restored_ms: float | None  # restore -> the route has it again
    returned_packets: int  # carried by the element after the restore
    sender_lag_ms: float  # worst, within the measured intervals
    not_measurable: str  # why the windows cannot be judged, or ""
    per_qp: tuple[QpLoss, ...]
    timeline: dict  # for plots
    sender_realtime: bool = False  # the sender's loop ran under SCHED_FIFO
    sessions_dropped_elsewhere: tuple[str, ...] = ()  # switch:peer BGP sessions down away from the element

    held = "within objectives"

    @property
    def passed(self) -> bool | None:
        if self.problems:
            return False
        return None if self.not_measurable else True

    def why_undecided(self) -> str:
        return self.not_measurable

    def sentence(self) -> str:
        return (f"{self.case} failure of {self.element}: worst window {self.worst_window_ms:.1f} ms "
                f"(objective {self.objective_ms:g} ms) over {self.qps_on_element}/{self.qps} QPs on it; "
                f"restore {self.worst_restore_ms:.1f} ms (objective {self.restore_objective_ms:g} ms); "
                f"other QPs lost {self.lost_elsewhere}")


def objective_ms(plan: Plan, case: Failure) -> float:
    """The loss window the cluster declares for this kind of failure."""
    o = plan.fabric.cluster.objectives
    return float({Failure.GRAY: o.gray_ms, Failure.REMOTE: o.remote_ms}.get(case, o.hard_ms))


def judge_failover(plan: Plan, seen: FailoverSeen) -> FailoverCase:
    """Every QP's loss windows against the plan's objectives, then what else must hold: the
    element's route changed both ways, traffic came back to it, nothing else was lost or
    dropped. Not measurable (never a pass) where the sender's own lag leaves it open."""
    objective = objective_ms(plan, seen.case)
    restore_objective = float(plan.fabric.cluster.objectives.restore_ms)
    slot_ns = 1e9 / seen.rate_pps
    per_qp, lost_before = losses(seen.qps, seen.lag_spans, seen.failure_ns, seen.restore_ns, objective,
                                 restore_objective, slot_ns)
    waited = seen.cpu_wait_ms()
    by_flow = {q.flow_id: q for q in seen.qps}
    per_qp = [dataclasses.replace(q, kernel_lag_ms=seen.kernel_lag_ms(by_flow[q.flow_id]), cpu_wait_ms=waited)
              if q.on_element else q for q in per_qp]
    problems, unsure = judge(per_qp, objective, restore_objective, slot_ns / 1e6, seen.rehashed)
    problems += _other_problems(seen, lost_before)
    on_qps = [q for q in per_qp if q.on_element]
    not_measurable = ""
    # over the objective only by what the machine added (the two are never of one case: the
    # kernel's carrier work is a carrier failure's, the daemons' waits a remote or gray one's)
    late = [q for q in unsure if q.on_element and q.window_ms - q.edge_lag_ms > objective]
    if unsure and not problems and any(q.kernel_lag_ms for q in late):
        q = max(late, key=lambda x: x.kernel_lag_ms)
        not_measurable = (f"{q.path.partition(':')[0]}'s kernel acted on the carrier loss of {q.path} "
                          f"{seen.carrier_acted_ms(q.path):.1f} ms after the failure began (making it took "
                          f"{seen.failed_in_ms:.1f} ms; the kernel's link-state work waits for the rtnl lock and a "
                          f"CPU, a switch's ASIC takes microseconds): {q.kernel_lag_ms:.1f} ms of QP 0x{q.qp:x}'s "
                          f"window {q.window_ms:.1f} ms came before that, {q.window_ms - q.kernel_lag_ms:.1f} ms "
                          f"after it, the objective {objective:g} ms: the verdict cannot be told from this machine's "
                          "kernel")
    elif unsure and not problems and any(q.cpu_wait_ms for q in late):
        q = max(late, key=lambda x: x.window_ms)
        who = ", ".join(f"{label} {ms:g} ms" for label, ms in seen.cpu_waited_ms if ms)
        not_measurable = (f"the daemons that reroute a {seen.case} failure waited {q.cpu_wait_ms:.1f} ms for a CPU "
                          f"between the failure and {seen.watch}'s reroute ({who}; a switch's control plane has a "
                          f"CPU of its own): QP 0x{q.qp:x}'s window {q.window_ms:.1f} ms is "
                          f"{q.window_ms - q.cpu_wait_ms:.1f} ms without those waits, the objective {objective:g} ms: "
                          "the verdict cannot be told on this machine as loaded")
    elif unsure and not problems:
        q = max(unsure, key=lambda x: x.lag_ms)
        not_measurable = (f"the sender fell {q.lag_ms:.1f} ms behind its schedule (slot {slot_ns / 1e6:g} ms) "
                          f"around the failure or restore of QP 0x{q.qp:x} (window {q.window_ms:.1f} ms, restore "
                          f"{q.restore_window_ms:.1f} ms): the verdict cannot be told from sender lag")
    return FailoverCase(
        case=seen.case, element=seen.element, objective_ms=objective, restore_objective_ms=restore_objective,
        qps=len(per_qp), qps_on_element=len(on_qps), min_on_element=seen.min_on_element, candidates=seen.candidates,
        rate_pps=seen.rate_pps, worst_window_ms=max((q.window_ms for q in on_qps), default=0.0),
        worst_restore_ms=max((q.restore_window_ms for q in per_qp), default=0.0),
        lost_elsewhere=sum(q.lost for q in per_qp if not q.on_element), lost_before=lost_before,
        detected_ms=seen.detected_ms, restored_ms=seen.restored_ms, returned_packets=seen.returned_packets,
        sender_lag_ms=max((q.lag_ms for q in per_qp), default=0.0), not_measurable=not_measurable,
        per_qp=tuple(per_qp), timeline=_timeline(seen, per_qp), sender_realtime=seen.sender_realtime,
        sessions_dropped_elsewhere=seen.sessions_dropped_elsewhere, seconds=seen.seconds, problems=tuple(problems))


def _other_problems(seen: FailoverSeen, lost_before: int) -> list[str]:
    problems = []
    dropped = seen.sessions_dropped_elsewhere
    if dropped:
        problems.append(f"{len(dropped)} BGP session(s) away from {seen.element} went down during the case (hold "
                        f"timers expiring on a machine the failure or restore overloaded?): {', '.join(dropped[:8])}"
                        + (" ..." if len(dropped) > 8 else ""))
    if not any(q.on_element for q in seen.qps):
        problems.append(f"no chosen QP crossed {seen.element} before the failure (paths changed since they were "
                        "learned): the case proves nothing")
    if lost_before:
        problems.append(f"{lost_before} packets lost before the failure: the fabric (or this machine) was not "
                        "carrying the load cleanly")
    if seen.detected_ms is None:
        hint = " (is BFD on for this link?)" if seen.case == Failure.GRAY else ""
        problems.append(f"{seen.watch} still routed over {seen.element} {seen.detect_s:g} s after the failure: "
                        "nothing detected it" + hint)
    if seen.restored_ms is None:
        then = f"; its sessions then: {', '.join(seen.element_sessions)}" if seen.element_sessions else ""
        problems.append(f"{seen.element} did not return to {seen.watch}'s route within {seen.after_s:g} s of the "
                        f"restore{then}")
    elif seen.returned_packets == 0:
        problems.append(f"no traffic returned to {seen.element} after the restore")
    if seen.sessions_not_back:
        problems.append(f"{seen.element} came back to {seen.watch}'s route, but not every session it took down: "
                        f"{len(seen.sessions_not_back)} still not Established {seen.after_s:g} s after the restore "
                        f"settled: {', '.join(seen.sessions_not_back)}")
    return problems


def _timeline(seen: FailoverSeen, per_qp: list[QpLoss]) -> dict:
    """What the plot draws: the received rate, on the element and off it, and one lane per QP
    (every QP on the element up to LANES_ON, its worst first, then LANES_OFF of the others)."""
    bucket_ns = seen.bucket_ms * 1e6
    width = max(len(seen.received_on), len(seen.received_off))
    on_total = [seen.received_on[i] if i < len(seen.received_on) else 0 for i in range(width)]
    totals = [n + (seen.received_off[i] if i < len(seen.received_off) else 0) for i, n in enumerate(on_total)]
    by_flow = {q.flow_id: q for q in seen.qps}
    on = sorted((q for q in per_qp if q.on_element), key=lambda q: -q.window_ms)[:LANES_ON]
    off = [q for q in per_qp if not q.on_element][:LANES_OFF]
    lanes = [{"qp": q.qp, "on_element": q.on_element, "path": q.path, "window_ms": q.window_ms,
              "buckets": lane(by_flow[q.flow_id], 1e9 / seen.rate_pps, bucket_ns, width)} for q in on + off]
    return {"bucket_ms": seen.bucket_ms, "received": totals, "received_on": on_total,
            "failure_ms": seen.failure_ns / 1e6, "restore_ms": seen.restore_ns / 1e6,
            "offered_pps": seen.rate_pps * len(seen.qps), "per_qp_pps": seen.rate_pps, "lanes": lanes}


def plot_failover(case: FailoverCase, path: Path, sabotage: str | None = None) -> Path:
    """The received rate split into the QPs that crossed the failed element and those that
    did not (the untouched ones are the plateau that stays), then one lane per QP (on the
    element first), with the failure, the route change, the restore and the route's return
    marked. `sabotage`: a negative control's fault, named on the plot."""
    plt = pyplot()
    fig, (rate_ax, lane_ax) = plt.subplots(2, 1, figsize=(11, 5.6), gridspec_kw={"height_ratios": [1, 1.4]})
    t = case.timeline
    width_s = t["bucket_ms"] / 1000
    lanes = t.get("lanes", [])
    xs = [i * width_s for i in range(len(t["received"]))]
    on = [lane for lane in lanes if lane["on_element"]]
    on_counts = t.get("received_on") or [sum(lane["buckets"][i] if i < len(lane["buckets"]) else 0 for lane in on)
                                         for i in range(len(xs))]
    on_total = [n / width_s for n in on_counts]
    total = [n / width_s for n in t["received"]]
    colour = {True: "#1f77b4", False: "#d62728", None: "#ff7f0e"}[case.passed]
    rate_ax.plot(xs, total, linewidth=1, color="#7f7f7f", label=f"all {case.qps} QPs (pps)")
    if on:
        rate_ax.plot(xs, on_total, linewidth=1.2, color=colour, label=f"the {case.qps_on_element} QPs on {case.element}")
        rate_ax.plot(xs, [a - b for a, b in zip(total, on_total)], linewidth=0.8, color="#2ca02c", linestyle="--",
                     label=f"the {case.qps - case.qps_on_element} QPs elsewhere (untouched)")
    rate_ax.axhline(t["offered_pps"], color="grey", linestyle=":", linewidth=0.8, label="offered")
    rate_ax.set_ylabel("packets/s")
    events = _events(case)
    _mark(rate_ax, events)
    rate_ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=6.5)
    verdict = {True: "PASS", False: "FAIL", None: "NOT MEASURABLE"}[case.passed]
    caption(rate_ax, f"{case.case}: {case.element} — worst window {case.worst_window_ms:.1f} ms (objective "
                     f"{case.objective_ms:g}), restore {case.worst_restore_ms:.1f} ms (objective "
                     f"{case.restore_objective_ms:g}) — {verdict}", sabotage)
    if lanes:
        _lanes(plt, lane_ax, lanes, t, len(xs), width_s)
    _mark(lane_ax, events, labels=False)
    lane_ax.set_xlabel("s")
    return save(fig, path)


def _lanes(plt, ax, lanes: list[dict], t: dict, n: int, width_s: float) -> None:
    """What arrived of what was sent, per bucket and QP; blank before the first and after the
    last bucket anything arrived in (nothing was being sent, so nothing could be lost)."""
    busy = [i for i, k in enumerate(t["received"]) if k]
    first, last = (busy[0], busy[-1]) if busy else (0, -1)
    per_bucket = max(1e-9, t["per_qp_pps"] * width_s)
    rows = [[(lane["buckets"][i] if i < len(lane["buckets"]) else 0) / per_bucket if first <= i <= last
             else float("nan") for i in range(n)] for lane in lanes]
    cmap = plt.get_cmap("RdYlGn").with_extremes(bad="#f4f4f4")
    ax.imshow(rows, aspect="auto", interpolation="nearest", cmap=cmap, vmin=0, vmax=1,
              extent=(0, n * width_s, len(lanes), 0))
    ax.set_yticks([i + 0.5 for i in range(len(lanes))])
    ax.set_yticklabels([f"{lane['qp']:#x} on {lane['window_ms']:.0f} ms" if lane["on_element"]
                        else f"{lane['qp']:#x} off" for lane in lanes], fontsize=6)
    ax.set_ylabel("one lane per QP, by send time\n(green: all sent arrived)", fontsize=7)


def _events(case: FailoverCase) -> list[tuple[float, str, str, str]]:
    """(seconds, what, colour, style) of each moment the plot marks."""
    t = case.timeline
    fail_s, restore_s = t["failure_ms"] / 1000, t["restore_ms"] / 1000
    out = [(fail_s, "failure", "#d62728", "-")]
    if case.detected_ms is not None:
        out.append((fail_s + case.detected_ms / 1000, f"detected: route changed (+{case.detected_ms:.0f} ms)", "#ff7f0e",
                    "--"))
    out.append((restore_s, "restore", "#2ca02c", "-"))
    if case.restored_ms is not None:
        out.append((restore_s + case.restored_ms / 1000, f"route back (+{case.restored_ms:.0f} ms)", "#17becf", "--"))
    return out


def _mark(ax, events, labels: bool = True) -> None:
    for x, what, colour, style in events:
        ax.axvline(x, color=colour, linestyle=style, linewidth=1, label=what if labels else None)
