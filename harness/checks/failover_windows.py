"""Loss windows of one failover case, from what the sender sent and the receiver saw.

Pure accounting, no lab: `measure` turns each QP's sequence gaps (send timestamps either
side) and the sender's lag into a QpLoss; `judge` holds them against the objectives. Kept
apart from harness.checks.failover, which runs the experiment, so both read in one sitting
and the arithmetic is tested on its own (tests/test_failover_windows.py).
"""
from __future__ import annotations

from dataclasses import dataclass


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

    @property
    def lag_ms(self) -> float:
        return max(self.edge_lag_ms, self.hidden_lag_ms, self.restore_hidden_lag_ms)


def measure(flows, sports: dict[int, int], path_of: dict[int, str], on_points: set[str], sent, received,
            fail_ns: int, restore_ns: int, objective_ms: float, restore_objective_ms: float,
            rate_pps: float) -> tuple[list[QpLoss], int]:
    """Each QP's loss while failed and after the restore, from the receiver's gaps (send
    timestamps either side) and the sender's account, and the sender's lag where it matters:
    across each gap, and, for QPs on the element, right after the failure and the restore
    (where a stalled sender could hide a loss). Also packets lost before the failure."""
    slot_ns = 1e9 / rate_pps
    sent_by = {f.flow_id: f for f in sent.flows}
    got_by = {f.flow_id: f for f in received.flows}
    per_qp: list[QpLoss] = []
    lost_before = 0
    for flow in flows:
        fid = flow.flow_id
        s, got = sent_by[fid], got_by.get(fid)
        on_element = path_of[fid] in on_points
        gaps = got.gaps if got else ()
        fail_gaps = [g for g in gaps if g.tx_after_ns > fail_ns and g.tx_before_ns < restore_ns]
        back_gaps = [g for g in gaps if g.tx_before_ns >= restore_ns]
        lost_before += sum(g.missing for g in gaps if g.tx_after_ns <= fail_ns)
        window = sum(g.window_ns for g in fail_gaps)
        back = sum(g.window_ns for g in back_gaps)
        lost = sum(g.missing for g in fail_gaps)
        back_lost = sum(g.missing for g in back_gaps)
        if got is None or got.max_seq < s.last_seq:  # the tail never arrived: lost until the end
            last_rx = got.last_ns if got else s.first_ns
            tail = s.last_seq - (got.max_seq if got else -1)
            if last_rx < restore_ns:
                window += s.last_ns - last_rx
                lost += tail
            else:
                back += s.last_ns - last_rx
                back_lost += tail
        edges = [e for g in fail_gaps + back_gaps
                 for e in ((g.tx_before_ns, g.tx_before_ns + slot_ns), (g.tx_after_ns - slot_ns, g.tx_after_ns))]
        edge_lag = max((sent.lagged_during(int(a), int(b)) for a, b in edges), default=0)
        inside = [(g.tx_before_ns, g.tx_after_ns) for g in fail_gaps + back_gaps]

        def hidden(t0: float, t1: float) -> int:
            return max((b - a for a, b in sent.lag_spans
                        if a <= t1 and b >= t0 and not any(g0 <= a and b <= g1 for g0, g1 in inside)), default=0)

        hid = hidden(fail_ns - slot_ns, fail_ns + objective_ms * 1e6) if on_element else 0
        hid_back = hidden(restore_ns - slot_ns, restore_ns + restore_objective_ms * 1e6)
        per_qp.append(QpLoss(fid, flow.src_qp, sports[fid], path_of[fid], on_element, lost, round(window / 1e6, 2),
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
    delivered, so the loss lies between them; sender lag at its edges only inflates it. So a
    window fails only if it exceeds the objective even without that lag. A pass needs the
    window, plus any loss a stalled sender could have hidden (its stall and one slot), to be
    within the objective. Anything in between is not measurable: never a pass."""
    problems: list[str] = []
    unsure: list[QpLoss] = []
    for q in per_qp:
        hidden = q.hidden_lag_ms + slot_ms if q.hidden_lag_ms else 0.0
        hidden_back = q.restore_hidden_lag_ms + slot_ms if q.restore_hidden_lag_ms else 0.0
        held = q.on_element or rehashed
        if held and q.window_ms - q.edge_lag_ms > objective_ms:
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
