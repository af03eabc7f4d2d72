"""Loss windows of one failover case, from what the sender sent and the receiver saw.

Pure accounting, no lab. On the lab's side, `seen` keeps of each QP what the receiver and
the sender saw (its sequence gaps with the send times either side, its first and last
packets): a QpSeen, part of the case's observation. On the judge's side, `losses` turns
those, the sender's lag spans and the objectives into a QpLoss per QP, and `judge` holds
them against the objectives. Kept apart from harness.checks.failover, which runs the
experiment, so the arithmetic is tested on its own (tests/unit/test_failover_windows.py).
"""
from __future__ import annotations

from dataclasses import dataclass

LagSpan = tuple[int, int]  # (due, sent) times of packets that left more than one slot late, ns


@dataclass(frozen=True)
class GapSeen:
    """`missing` sequence numbers never arrived between two that did; the sender's timestamps
    of those two (ns from the observation's origin): the loss window on the sender's clock."""

    missing: int
    tx_before_ns: int
    tx_after_ns: int

    @property
    def window_ns(self) -> int:
        return self.tx_after_ns - self.tx_before_ns


@dataclass(frozen=True)
class QpSeen:
    """One QP as the sender and the receiver saw it (times in ns from the observation's origin)."""

    flow_id: int
    qp: int
    sport: int
    path: str  # where the counters saw it before the failure, e.g. "be-g1-r0:Ethernet16"
    on_element: bool  # that place is one the failed element carries
    gaps: tuple[GapSeen, ...]
    last_seq: int  # the last sequence number sent
    max_seq: int  # the highest one received (-1: none)
    first_sent_ns: int
    last_sent_ns: int
    last_received_ns: int  # receipt of the last packet that arrived (first_sent_ns: none did)


@dataclass(frozen=True)
class QpLoss:
    flow_id: int
    qp: int
    sport: int
    path: str  # where the counters saw it before the failure, e.g. "be-g1-r0:Ethernet16"
    on_element: bool
    lost: int  # packets lost while the element was failed
    window_ms: float  # sum of its gap windows while failed (sender timestamps)
    restore_lost: int
    restore_window_ms: float
    # Sender lag beyond one slot (ms, 0: none). At a gap's edges it can only make the window
    # look longer than the fabric made it; outside any gap, right after the failure or the
    # restore, it could have hidden a loss of up to its length (nothing was sent to lose).
    edge_lag_ms: float = 0.0
    hidden_lag_ms: float = 0.0  # after the failure (QPs on the element)
    restore_hidden_lag_ms: float = 0.0  # after the restore
    # How much of the window came before the watching switch's kernel acted on its port's carrier
    # loss (ms, 0: none or not seen): the machine's (FailoverSeen.kernel_lag_ms), where an ASIC
    # acts in microseconds.
    kernel_lag_ms: float = 0.0
    cpu_wait_ms: float = 0.0  # the rerouting daemons' waits for a CPU (FailoverSeen.cpu_wait_ms)

    @property
    def lag_ms(self) -> float:
        return max(self.edge_lag_ms, self.hidden_lag_ms, self.restore_hidden_lag_ms)


def seen(flows, sports: dict[int, int], path_of: dict[int, str], on_points: set[str], sent, received,
         origin_ns: int = 0) -> tuple[QpSeen, ...]:
    """Each flow as sent (harness.traffic.results.SendResult) and received (ReceiveResult),
    its times counted from origin_ns."""
    sent_by = {f.flow_id: f for f in sent.flows}
    got_by = {f.flow_id: f for f in received.flows}
    out = []
    for flow in flows:
        fid = flow.flow_id
        s, got = sent_by[fid], got_by.get(fid)
        gaps = tuple(GapSeen(g.missing, g.tx_before_ns - origin_ns, g.tx_after_ns - origin_ns)
                     for g in (got.gaps if got else ()))
        out.append(QpSeen(fid, flow.src_qp, sports[fid], path_of[fid], path_of[fid] in on_points, gaps, s.last_seq,
                          got.max_seq if got else -1, s.first_ns - origin_ns, s.last_ns - origin_ns,
                          (got.last_ns if got else s.first_ns) - origin_ns))
    return tuple(out)


def _lagged(spans: tuple[LagSpan, ...], start: float, end: float) -> int:
    """Worst lateness within [start, end] beyond one slot (SendResult.lagged_during)."""
    return max((b - a for a, b in spans if a <= end and b >= start), default=0)


def losses(qps: tuple[QpSeen, ...], lag_spans: tuple[LagSpan, ...], fail_ns: int, restore_ns: int,
           objective_ms: float, restore_objective_ms: float, slot_ns: float) -> tuple[list[QpLoss], int]:
    """Each QP's loss while failed and after the restore, from its gaps, and the sender's lag
    where it matters: across each gap, and, for QPs on the element, right after the failure
    and the restore (where a stalled sender could hide a loss as long as the objective).
    Also packets lost before the failure."""
    per_qp: list[QpLoss] = []
    lost_before = 0
    for q in qps:
        fail_gaps = [g for g in q.gaps if g.tx_after_ns > fail_ns and g.tx_before_ns < restore_ns]
        back_gaps = [g for g in q.gaps if g.tx_before_ns >= restore_ns]
        lost_before += sum(g.missing for g in q.gaps if g.tx_after_ns <= fail_ns)
        window = sum(g.window_ns for g in fail_gaps)
        back = sum(g.window_ns for g in back_gaps)
        lost = sum(g.missing for g in fail_gaps)
        back_lost = sum(g.missing for g in back_gaps)
        if q.max_seq < q.last_seq:  # the tail never arrived: lost until the end
            tail = q.last_seq - q.max_seq
            if q.last_received_ns < restore_ns:
                window += q.last_sent_ns - q.last_received_ns
                lost += tail
            else:
                back += q.last_sent_ns - q.last_received_ns
                back_lost += tail
        edges = [e for g in fail_gaps + back_gaps
                 for e in ((g.tx_before_ns, g.tx_before_ns + slot_ns), (g.tx_after_ns - slot_ns, g.tx_after_ns))]
        edge_lag = max((_lagged(lag_spans, a, b) for a, b in edges), default=0)
        inside = [(g.tx_before_ns, g.tx_after_ns) for g in fail_gaps + back_gaps]

        def hidden(t0: float, t1: float) -> int:
            return max((b - a for a, b in lag_spans
                        if a <= t1 and b >= t0 and not any(g0 <= a and b <= g1 for g0, g1 in inside)), default=0)

        hid = hidden(fail_ns - slot_ns, fail_ns + objective_ms * 1e6) if q.on_element else 0
        hid_back = hidden(restore_ns - slot_ns, restore_ns + restore_objective_ms * 1e6)
        per_qp.append(QpLoss(q.flow_id, q.qp, q.sport, q.path, q.on_element, lost, round(window / 1e6, 2),
                             back_lost, round(back / 1e6, 2), round(edge_lag / 1e6, 2), round(hid / 1e6, 2),
                             round(hid_back / 1e6, 2)))
    return per_qp, lost_before


def judge(per_qp: list[QpLoss], objective_ms: float, restore_objective_ms: float,
          slot_ms: float = 1.0, rehashed: bool = False) -> tuple[list[str], list[QpLoss]]:
    """(problems, QPs whose verdict the sender's lag leaves open).

    rehashed: the element takes several links of one switch's ECMP group down, one after
    the other (a whole super-spine, or a spine with parallel links to the leaf). With each
    one the switch's hash-threshold ECMP remaps flows over the links left, and a QP not on
    the element can be moved onto one that is about to die: such QPs are then held to the
    objective too, instead of to no loss at all.

    A gap's window is an upper bound of the fabric's: the packets either side of it were
    delivered, so the loss lies between them; sender lag at its edges only inflates it, as do
    the kernel's late work on a carrier loss and the rerouting daemons' waits for a CPU. So a
    window fails only if it exceeds the objective even without those. A pass needs the
    window, plus any loss a stalled sender could have hidden (its stall and one slot), to be
    within the objective. Anything in between is not measurable: never a pass."""
    problems: list[str] = []
    unsure: list[QpLoss] = []
    for q in per_qp:
        hidden = q.hidden_lag_ms + slot_ms if q.hidden_lag_ms else 0.0
        hidden_back = q.restore_hidden_lag_ms + slot_ms if q.restore_hidden_lag_ms else 0.0
        held = q.on_element or rehashed
        if held and q.window_ms - q.edge_lag_ms - q.kernel_lag_ms - q.cpu_wait_ms > objective_ms:
            problems.append(f"QP 0x{q.qp:x} (sport {q.sport}) on {q.path}: loss window {q.window_ms:.1f} ms "
                            f"> objective {objective_ms:g} ms")
        elif q.restore_window_ms - q.edge_lag_ms > restore_objective_ms:
            problems.append(f"QP 0x{q.qp:x} on {q.path}: {q.restore_lost} packets, {q.restore_window_ms:.1f} ms "
                            f"lost after the restore > objective {restore_objective_ms:g} ms")
        elif ((held and q.window_ms + hidden > objective_ms)
              or q.restore_window_ms + hidden_back > restore_objective_ms):
            unsure.append(q)
    lost_elsewhere = [] if rehashed else [q for q in per_qp if not q.on_element and q.lost]
    if lost_elsewhere:
        problems.append("QPs not on the failed element lost packets: "
                        + ", ".join(f"0x{q.qp:x} on {q.path} lost {q.lost}" for q in lost_elsewhere))
    return problems, unsure


def lane(q: QpSeen, slot_ns: float, bucket_ns: float, buckets: int) -> list[float]:
    """Packets of one QP sent in each bucket that arrived, by send time: what its gaps and
    its lost tail leave of a steady one per slot (a plot's lane)."""
    lost = [(g.tx_before_ns + slot_ns, g.tx_after_ns) for g in q.gaps]
    if q.max_seq < q.last_seq:
        lost.append((q.last_received_ns + slot_ns, q.last_sent_ns + slot_ns))
    out = []
    for i in range(buckets):
        b0, b1 = i * bucket_ns, (i + 1) * bucket_ns
        sent = _overlap(q.first_sent_ns, q.last_sent_ns + slot_ns, b0, b1)
        gone = sum(_overlap(a, b, b0, b1) for a, b in lost)
        out.append(round(max(0.0, sent - gone) / slot_ns, 1))
    return out


def _overlap(a0: float, a1: float, b0: float, b1: float) -> float:
    return max(0.0, min(a1, b1) - max(a0, b0))
