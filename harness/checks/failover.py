"""The fabric fails over, and heals, within the loss windows the user declared.

Constant-rate RoCEv2 QPs cross the spine tier from one GPU NIC to the same rail in another
group. One element then fails and comes back; each case is one kind of failure:

- local: a leaf–spine link loses its carrier (the spine end goes down): the leaf repairs it
  by itself, at once.
- remote: a spine loses the link to the far leaf: the spine cannot reroute (the other
  spines share its ASN), so the source leaf must learn it by a BGP withdrawal.
- gray: a leaf–spine link stays up and drops everything both ways: only BFD can tell.
- spine: every link of one spine loses its carrier.
- superspine-link, superspine (a 5-stage BE only; the QPs then cross to another pod): a
  spine's link to a super-spine, or every link of a super-spine, loses its carrier; the
  spines above the source leaf reroute by themselves over their other super-spine links.

Every case ends with the element restored, and the loss that costs is judged too.

The objectives are absolute and declared with the cluster (`Cluster.objectives`: hard_ms
for local, spine and the super-spine cases, remote_ms, gray_ms, restore_ms), never derived from the configuration
under test. A QP's loss window is measured on the sender's clock: for each gap in its
sequence numbers, the send time of the first packet after the gap minus that of the last
before it (all namespaces share one clock). If the sender itself fell more than one packet
slot behind its schedule within a measured interval, the window says as much about the
sender as about the fabric: the case is then "not measurable" (passed None), unless the
window minus the lag still exceeds the objective (the fabric fails whatever the lag), or
the window plus all that a stalled sender could have hidden is still within it (see `judge`).

QPs are picked by the path they take: a burst of candidate QPs is counted per QP and per
egress port (nftables counters on the source leaf, and on the spines towards the far leaf),
the failed element is the one that carries the most, and at least `k` QPs on it (plus
controls elsewhere, which must lose nothing) are chosen, whatever the uplink count.
The results and their plot: harness/checks/failover_result.py.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from functools import partial

from harness.checks.base import Case, Check, needs_spine_tier, needs_superspine_tier, needs_two_groups_in_a_pod
from harness.checks.converged import wait_routed
from harness.checks.ecmp import _far_peer, first_gpu_nic
from harness.checks.failover_elements import SUPERSPINE_CASES, Element, element_of, observation_points, pick
from harness.checks.failover_result import FailoverCase, FailoverResult, plot_failover
from harness.checks.failover_windows import judge, measure
from harness.core.errors import HarnessError
from harness.plumbing.labview import LabView
from harness.core.model import Objectives, Role
from harness.observe.flowcount import FlowCounters
from harness.observe.route_watch import route_change_ms
from harness.plumbing.priority import realtime
from harness.traffic.flows import ReceiveSpec, RoceFlow, SendSpec
from harness.traffic.roce import roce_sport
from harness.traffic.runner import start_receiver, start_sender
from harness.plumbing.wait import pause_until, within

CASES = ("local", "remote", "gray", "spine", *SUPERSPINE_CASES)
HARD_CASES = ("local", "remote", "spine", *SUPERSPINE_CASES)
_PROBE_PACKETS = 3  # per candidate QP when learning paths (plus the sender's priming probe)


# ---------------------------------------------------------------------------- learning paths


def _learn_paths(lab: LabView, src: tuple[str, str], src_addr: str, dst_addr: str, points: dict[str, list[str]],
                 qps: list[int]) -> dict[int, set[tuple[str, str]]]:
    """Send a few packets on each candidate QP and read, per QP, which (switch, port) carried it."""
    sports = {qp: roce_sport(qp, qp) for qp in qps}
    flows = tuple(RoceFlow(flow_id=i + 1, dst=dst_addr, dst_qp=qp, src_qp=qp, src=src_addr)
                  for i, qp in enumerate(qps))
    counters = [FlowCounters(lab, node, ports, sorted(set(sports.values()))) for node, ports in points.items()]
    seen: dict[int, set[tuple[str, str]]] = {qp: set() for qp in qps}
    installed: list[FlowCounters] = []
    try:
        for c in counters:
            installed.append(c.install())
        start_sender(lab.namespace(src[0]), SendSpec(flows=flows, packets=_PROBE_PACKETS, device=src[1])).result(60)
        for c in counters:
            counts = c.read()
            for qp, sport in sports.items():
                for port in c.ports:
                    if counts.get(f"{port}/{sport}", 0):
                        seen[qp].add((c.node, port))
    finally:
        _remove(installed)
    return seen


# ---------------------------------------------------------------------------- one case


def check_failover_case(lab: LabView, case: str, *, src: tuple[str, str] | None = None,
                        element: tuple[str, str] | None = None, k: int = 4, controls: int | None = None,
                        rate_pps: float = 1000.0, objectives: Objectives | None = None, before_s: float = 1.5,
                        failed_s: float = 2.5, after_s: float = 15.0, settle_s: float = 1.0, detect_s: float = 10.0,
                        first_qp: int = 0x300,
                        max_candidates: int = 1024, converge_s: float = 90.0,
                        while_failed: Callable[[], object] | None = None) -> FailoverCase:
    """One failure and its restore. element: (switch, port) to fail instead of the busiest one
    (a leaf uplink; for `remote` a spine's port to the far leaf; for `spine` any uplink to it).
    failed_s: how long the element stays failed at least. detect_s: how long the source leaf's
    route may take to drop the element; the element stays failed until it has. Restoring an
    element the control plane has not yet seen fail tests a flap, not a restore: the kernel
    revives a dead next hop with its carrier, before zebra has removed it and re-learned its
    neighbour (xlarge: zebra took over 2.5 s to rewrite 1,100 routes, the QPs moved back lost
    1 s each). after_s: how long the element may take to carry traffic again after the
    restore; traffic then runs settle_s more. while_failed runs right after the failure,
    before the restore: what else goes wrong while the element is down (a negative control
    of the restore)."""
    if case not in CASES:
        raise HarnessError(f"failover case {case!r}: valid cases are {', '.join(CASES)}")
    if rate_pps < 1000:
        raise HarnessError(f"rate_pps {rate_pps:g}: use >= 1000 per QP, or one packet slot hides more than 1 ms")
    if k < 1:
        raise HarnessError(f"k {k}: at least one QP must cross the failed element")
    t0 = time.monotonic()
    plan = lab.plan
    objectives = objectives or plan.fabric.cluster.objectives
    objective = {"gray": objectives.gray_ms, "remote": objectives.remote_ms}.get(case, objectives.hard_ms)
    src = src or first_gpu_nic(plan)
    src_nic = plan.host(src[0]).nic(src[1])
    leaf = src_nic.peer
    # remote: a spine's link to the far leaf fails, so the far leaf sits under the same spines
    dst = _far_peer(plan, src[0], src_nic, "pod" if case in SUPERSPINE_CASES else "group", same_pod=case == "remote")
    dst_nic = plan.host(dst[0]).nic(dst[1])
    far_leaf = dst_nic.peer
    src_addr, dst_addr = str(src_nic.address.ip), str(dst_nic.address.ip)
    uplinks = [p.name for p in plan.switch(leaf).fabric_ports]
    if not uplinks:
        raise HarnessError(f"{leaf} has no uplinks: there is nothing to fail over to")
    controls = max(k, len(uplinks) - 1) if controls is None else controls
    _wait_routed(lab, converge_s)

    # Learn each candidate QP's path; add candidates until the element carries k of them.
    points = observation_points(lab, case, leaf, far_leaf)
    seen: dict[int, set[tuple[str, str]]] = {}
    batch = max(16, 4 * k * len(uplinks))
    qp, sports_used = first_qp, set()
    while True:
        new = []
        while len(new) < batch:  # QPs whose source ports collide could not be told apart by the counters
            if roce_sport(qp, qp) not in sports_used:
                sports_used.add(roce_sport(qp, qp))
                new.append(qp)
            qp += 1
        seen.update(_learn_paths(lab, src, src_addr, dst_addr, points, new))
        choice, on = pick(case, leaf, seen, element)
        if len(on) >= k or len(seen) >= max_candidates:
            break
    if len(on) < k:
        raise HarnessError(f"only {len(on)} of {len(seen)} candidate QPs crossed {choice[0]}:{choice[1]}; "
                           f"{k} are needed: is the element on the path from {src[0]}:{src[1]} to {dst[0]}:{dst[1]}?")
    el = element_of(lab, case, leaf, far_leaf, choice)
    on_set = set(el.counted_at)
    chosen_on = sorted(on)[:2 * k]
    off = [qp for qp in sorted(seen) if seen[qp] and not seen[qp] & on_set]
    chosen_off = _spread(off, seen, leaf, controls)
    chosen = chosen_on + chosen_off
    flows = tuple(RoceFlow(flow_id=i + 1, dst=dst_addr, dst_qp=qp, src_qp=qp, src=src_addr)
                  for i, qp in enumerate(chosen))
    sports = {f.flow_id: roce_sport(f.src_qp, f.dst_qp) for f in flows}
    result = _run(lab, case, el, leaf, src, dst, far_leaf, flows, sports, points, rate_pps, objective,
                  objectives.restore_ms, before_s, failed_s, max(failed_s, detect_s), after_s, settle_s,
                  while_failed)
    return FailoverCase(case=case, element=el.name, objective_ms=objective, restore_objective_ms=objectives.restore_ms,
                        qps=len(flows), min_on_element=k, candidates=len(seen), rate_pps=rate_pps,
                        seconds=round(time.monotonic() - t0, 2), **result)


def _spread(off: list[int], seen: dict[int, set[tuple[str, str]]], leaf: str, n: int) -> list[int]:
    """n control QPs, round-robin over the leaf uplinks they use, so every other path carries some."""
    by_port: dict[str, list[int]] = {}
    for qp in off:
        port = next((p for node, p in sorted(seen[qp]) if node == leaf), "?")
        by_port.setdefault(port, []).append(qp)
    picked: list[int] = []
    while len(picked) < n and any(by_port.values()):
        for port in sorted(by_port):
            if by_port[port] and len(picked) < n:
                picked.append(by_port[port].pop(0))
    return picked


def _wait_routed(lab: LabView, timeout: float) -> None:
    """Every BGP session up and every prefix at its width (harness.checks.converged: once a run)."""
    wait_routed(lab, timeout, "the fabric to converge before the failure")


def _run(lab: LabView, case, el: Element, leaf, src, dst, far_leaf, flows, sports, points, rate_pps, objective,
         restore_objective, before_s, failed_s, detect_s, after_s, settle_s, while_failed=None) -> dict:
    """detect_s: at least failed_s (the caller sees to it)."""
    duration = before_s + detect_s + after_s + settle_s  # the longest it runs; stopped once traffic returned
    prefix = lab.plan.route_prefix(lab.plan.host(dst[0]).nic(dst[1]))  # its /31, or its leaf's summary
    sport_list = sorted(set(sports.values()))
    counters: list[FlowCounters] = []
    drops_before = _session_drops(lab)
    try:
        for node, ports in points.items():
            counters.append(FlowCounters(lab, node, ports, sport_list).install())
        # Both ends under SCHED_FIFO: where the lab's daemons keep both cores busy (xlarge) an
        # ordinary sender started seconds late and a receiver fell silent for longer than quiet_s.
        # Both wake once a millisecond, not once a packet: at SCHED_FIFO, 23 QPs' wake-ups
        # took the CPU zebra needed to reroute (xlarge: no route change 10 s after a failure).
        # Windows come from the senders' timestamps, so batched receipt changes none.
        receiver = start_receiver(lab.namespace(dst[0]), ReceiveSpec(duration_s=duration + 30, quiet_s=1.5,
                                                                     bucket_ms=10.0, coalesce_ms=1.0),
                                  realtime=True)
        with receiver:
            start_ns = time.time_ns() + 700_000_000  # the sender primes first, then starts here
            sender = start_sender(lab.namespace(src[0]), SendSpec(flows=flows, rate_pps=rate_pps, duration_s=duration,
                                                                  device=src[1], start_at_ns=start_ns,
                                                                  realtime=True, per_slot=True))
            with sender, realtime():  # the check's own polls and actions on time too
                try:
                    # The timeline starts when the sender does, however late that is.
                    sender.wait_ready(30.0, marker=b"SENDING")
                    pause_until(time.monotonic() + max(0, start_ns - time.time_ns()) / 1e9 + before_s)
                    before = _read(counters)
                    fail_at, fail_ns = time.monotonic(), time.time_ns()
                    el.fail()
                    if while_failed is not None:
                        while_failed()
                    detected_ms = route_change_ms(lab, el.watch, prefix, el.route_ports, present=False, since=fail_at,
                                                  deadline=time.monotonic() + detect_s)
                    pause_until(fail_at + failed_s)
                    at_restore = _read(counters)
                finally:
                    restore_at, restore_ns = time.monotonic(), time.time_ns()
                    el.restore()
                restored_ms = route_change_ms(lab, el.watch, prefix, el.route_ports, present=True, since=restore_at,
                                              deadline=time.monotonic() + after_s)
                if restored_ms is not None:
                    # Traffic moves back onto the element some time after its route returns (at
                    # `large` BGP takes seconds to come back over a whole spine): wait for it, then
                    # keep sending for settle_s, so any loss the move back costs is seen.
                    within(lambda: _returned(counters, at_restore, el) > 0,
                           max(0.0, after_s - (time.monotonic() - restore_at)))
                    pause_until(time.monotonic() + settle_s)
                sender.stop()
                sent = sender.result(duration + 30)
            received = receiver.result(60)
        after = _read(counters)
    finally:
        _remove(counters)

    slot_ns = 1e9 / rate_pps
    on_points = {f"{n}:{p}" for n, p in el.counted_at}
    path_of = {}
    for fid, sport in sports.items():
        where = [f"{n}:{p}" for n, ports in points.items() for p in ports if before.get(f"{n}:{p}/{sport}", 0)]
        on = [w for w in where if w in on_points]
        path_of[fid] = on[0] if on else next((w for w in where if w.startswith(leaf + ":")), "?")
    per_qp, lost_before = measure(flows, sports, path_of, on_points, sent, received, fail_ns, restore_ns,
                                  objective, restore_objective, rate_pps)
    on_qps = [q for q in per_qp if q.on_element]
    worst = max((q.window_ms for q in on_qps), default=0.0)
    worst_back = max((q.restore_window_ms for q in per_qp), default=0.0)
    lost_elsewhere = sum(q.lost for q in per_qp if not q.on_element)
    lag_ms = max((q.lag_ms for q in per_qp), default=0.0)
    problems, unsure = judge(per_qp, objective, restore_objective, slot_ns / 1e6, el.rehashed)
    dropped = _dropped_elsewhere(lab, drops_before, el)
    if dropped:
        problems.append(f"{len(dropped)} BGP session(s) away from {el.name} went down during the case (hold timers "
                        f"expiring on a machine the failure or restore overloaded?): {', '.join(dropped[:8])}"
                        + (" ..." if len(dropped) > 8 else ""))
    if not on_qps:
        problems.append(f"no chosen QP crossed {el.name} before the failure (paths changed since they were "
                        "learned): the case proves nothing")
    if lost_before:
        problems.append(f"{lost_before} packets lost before the failure: the fabric (or this machine) was not "
                        "carrying the load cleanly")
    if detected_ms is None:
        hint = " (is BFD on for this link?)" if case == "gray" else ""
        problems.append(f"{el.watch} still routed over {el.name} {detect_s:g} s after the failure: nothing detected it"
                        + hint)
    if restored_ms is None:
        problems.append(f"{el.name} did not return to {el.watch}'s route within {after_s:g} s of the restore")
    returned = _returned(counters, at_restore, el, after)
    if restored_ms is not None and returned == 0:
        problems.append(f"no traffic returned to {el.name} after the restore")
    not_measurable = ""
    if unsure and not problems:
        q = max(unsure, key=lambda x: x.lag_ms)
        not_measurable = (f"the sender fell {q.lag_ms:.1f} ms behind its schedule (slot {slot_ns / 1e6:g} ms) "
                          f"around the failure or restore of QP 0x{q.qp:x} (window {q.window_ms:.1f} ms, restore "
                          f"{q.restore_window_ms:.1f} ms): the verdict cannot be told from sender lag")
    totals = _buckets(received)
    timeline = {"bucket_ms": received.bucket_ns / 1e6, "received": totals,
                "failure_ms": (fail_ns - received.origin_ns) / 1e6, "restore_ms": (restore_ns - received.origin_ns) / 1e6,
                "offered_pps": rate_pps * len(flows), "per_qp_pps": rate_pps, "lanes": _lanes(received, per_qp)}
    return dict(qps_on_element=len(on_qps), worst_window_ms=worst, worst_restore_ms=worst_back,
                lost_elsewhere=lost_elsewhere, lost_before=lost_before, detected_ms=detected_ms,
                restored_ms=restored_ms, returned_packets=returned, sender_lag_ms=lag_ms,
                sessions_dropped_elsewhere=tuple(dropped),
                not_measurable=not_measurable, per_qp=tuple(per_qp), timeline=timeline, problems=tuple(problems),
                sender_realtime=sent.realtime)


def _session_drops(lab: LabView) -> dict[tuple[str, str], int]:
    """(switch, peer) -> times that BGP session went down, over every switch of the lab."""
    return {(sw.name, p.peer): p.drops for sw in lab.plan.switches for p in lab.bgp_peers(sw.name)}


def _dropped_elsewhere(lab: LabView, before: dict[tuple[str, str], int], el: Element) -> list[str]:
    """Sessions that went down since `before` on no cable the element failed: a failure or
    restore must cost only its own sessions (at xlarge with software bfdd, a restore under
    traffic once let hold timers expire fabric-wide)."""
    now = _session_drops(lab)
    own = set(el.ends)
    return [f"{sw}:{peer}" for (sw, peer), n in sorted(now.items())
            if n > before.get((sw, peer), 0) and (sw, peer) not in own]


def _returned(counters: list[FlowCounters], at_restore: dict[str, int], el: Element,
              now: dict[str, int] | None = None) -> int:
    """Packets counted on the element since the restore."""
    now = _read(counters) if now is None else now
    on = tuple(f"{n}:{p}/" for n, p in el.counted_at)
    return sum(n - at_restore.get(key, 0) for key, n in now.items() if key.startswith(on))


def _remove(counters: list[FlowCounters]) -> None:
    for c in counters:
        try:
            c.remove()
        except HarnessError:
            pass  # the lab is going away, or the table is gone already: nothing left to count


def _read(counters: list[FlowCounters]) -> dict[str, int]:
    out = {}
    for c in counters:
        out.update({f"{c.node}:{key}": n for key, n in c.read().items()})
    return out


# ---------------------------------------------------------------------------- every case


def check_failover(lab: LabView, cases: tuple[str, ...] | None = None, mode: str | None = None,
                   **options) -> FailoverResult:
    """Every case, one after the other, each with its restore; one result for `fablab check`.
    options go to check_failover_case. mode ("hard": local, "gray") is the older call's name."""
    t0 = time.monotonic()
    if mode is not None:
        if mode not in ("hard", "gray"):
            raise HarnessError(f"failover mode {mode!r}: valid modes are hard, gray (or pass cases={CASES})")
        cases = ("local",) if mode == "hard" else ("gray",)
    if cases is None:  # every case the fabric has: the super-spine ones on a 5-stage BE only
        cases = tuple(c for c in CASES if c not in SUPERSPINE_CASES or not needs_superspine_tier(lab.plan))
    unknown = [c for c in cases if c not in CASES]
    if unknown:
        raise HarnessError(f"failover cases {unknown}: valid cases are {', '.join(CASES)}")
    objectives = options.pop("objectives", None) or lab.plan.fabric.cluster.objectives
    if not any(s.role is Role.BE_SPINE for s in lab.plan.switches):
        return FailoverResult((), objectives, not_applicable="the backend has no spine tier (rail-only): "
                              "no path to fail over to")
    results = tuple(check_failover_case(lab, case, objectives=objectives, **options) for case in cases)
    return FailoverResult(results, objectives, seconds=round(time.monotonic() - t0, 2),
                          problems=tuple(f"{c.case}: {p}" for c in results for p in c.problems))


LANES_ON, LANES_OFF = 24, 6  # QPs drawn one lane each: those on the element first, then a few others


def _lanes(received, per_qp) -> list[dict]:
    """Per QP, packets received per bucket: the plot's lanes (every QP on the failed element up
    to LANES_ON, its worst first, then LANES_OFF of the others, the untouched)."""
    by_flow = {f.flow_id: list(f.buckets) for f in received.flows}
    on = sorted((q for q in per_qp if q.on_element), key=lambda q: -q.window_ms)[:LANES_ON]
    off = [q for q in per_qp if not q.on_element][:LANES_OFF]
    return [{"qp": q.qp, "on_element": q.on_element, "path": q.path, "window_ms": q.window_ms,
             "buckets": by_flow.get(q.flow_id, [])} for q in on + off]


def _buckets(received) -> list[int]:
    width = max((len(f.buckets) for f in received.flows), default=0)
    totals = [0] * width
    for f in received.flows:
        for i, n in enumerate(f.buckets):
            totals[i] += n
    return totals


CHECK = Check("failover", "loss windows of a local, remote, gray and whole-spine failure and of each restore, "
              "against the cluster's objectives",
              tuple(Case(f"failover-{c}", partial(check_failover_case, case=c), plot_failover,
                         needs_superspine_tier if c in SUPERSPINE_CASES else
                         needs_two_groups_in_a_pod if c == "remote" else None) for c in CASES),
              needs_spine_tier)
