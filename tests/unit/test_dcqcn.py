"""DCQCN's reaction point (harness.traffic.dcqcn) on made-up timelines: no clock, no sockets.

Rules and their sources are in the module's docstring ([Z] the SIGCOMM 2015 paper, [mlx5]
ConnectX's documented roce_rp parameters)."""
from __future__ import annotations

import random
import socket
from dataclasses import replace

import pytest

from harness.core.declarations import Dcqcn
from harness.traffic.dcqcn import (CNP_OPCODE, DcqcnParams, RateTrace, ReactionPoint, cnp_packet, jain,
                                   parse_cnp)
from harness.traffic.flows import RoceFlow, SendGroupSpec, SendSpec, SpecError, UdpFlow, from_json, to_json
from harness.traffic.results import FlowDcqcn, FlowSent, SendResult
from harness.traffic.roce import RoceShape, frame, verify_icrc

LINE = 200e6  # a 400G NIC at the default time scale of 2000
MS = 1_000_000


def params(**changes) -> DcqcnParams:
    """ConnectX's defaults, scaled as the lab runs them, with `changes` on top."""
    return replace(DcqcnParams.of(Dcqcn(), 2000, LINE), **changes)


# ---------------------------------------------------------------------------- scaling


@pytest.mark.parametrize("field, expected", [
    ("line_rate_bps", 200e6),
    ("min_rate_bps", 500.0),  # 1 Mbit/s / 2000
    ("ai_rate_bps", 2500.0),  # 5 Mbit/s / 2000
    ("hai_rate_bps", 25_000.0),  # 50 Mbit/s / 2000
    ("time_reset_ns", 600 * MS),  # 300 us x 2000
    ("alpha_update_ns", 2 * MS),  # 1 us x 2000
    ("byte_reset", 32767),  # bytes are real
    ("threshold", 1),
    ("min_dec_fac_pct", 50),
    ("alpha_g", 1019 / 1024),
    ("initial_alpha", 1023 / 1024),
    ("time_scale", 2000),
])
def test_params_scale_rates_down_and_times_up(field, expected):
    assert getattr(DcqcnParams.of(Dcqcn(), 2000, LINE), field) == pytest.approx(expected)


@pytest.mark.parametrize("dcqcn, time_scale, problem", [
    (Dcqcn(enabled=False), 2000, "disabled"),
    (Dcqcn(), 0, "time_scale"),
])
def test_params_refuse_what_has_no_reaction_point(dcqcn, time_scale, problem):
    with pytest.raises(SpecError, match=problem):
        DcqcnParams.of(dcqcn, time_scale, LINE)


@pytest.mark.parametrize("changes, problem", [
    ({"line_rate_bps": 0.0}, "line_rate_bps"),
    ({"min_rate_bps": 300e6}, "above line_rate_bps"),
    ({"threshold": 0}, "threshold"),
    ({"min_dec_fac_pct": 0}, "min_dec_fac_pct"),
    ({"alpha_g": 1.0}, "alpha_g"),
])
def test_params_are_validated(changes, problem):
    with pytest.raises(SpecError, match=problem):
        params(**changes)


# ---------------------------------------------------------------------------- the cut


@pytest.mark.parametrize("initial_alpha, min_dec_fac_pct, share", [
    (1023 / 1024, 50, 1 - 1023 / 2048),  # ConnectX: the first CNP about halves the rate
    (0.5, 50, 0.75),
    (0.2, 50, 0.9),
    (1.0, 60, 0.6),  # rpg_min_dec_fac: no CNP takes more than 40 %
    (0.0, 50, 1.0),
])
def test_a_cnp_cuts_the_rate_by_alpha_over_two(initial_alpha, min_dec_fac_pct, share):
    rp = ReactionPoint(params(initial_alpha=initial_alpha, min_dec_fac_pct=min_dec_fac_pct))
    rp.on_cnp(5 * MS)
    assert rp.rate_bps == pytest.approx(LINE * share)
    assert rp.target_bps == LINE  # [Z] Rt <- Rc before the cut
    assert rp.cnps == 1 and rp.lowest_bps == rp.rate_bps


@pytest.mark.parametrize("min_rate_bps", [500.0, 1e6, 50e6])
def test_the_rate_never_falls_below_the_minimum(min_rate_bps):
    rp = ReactionPoint(params(min_rate_bps=min_rate_bps))
    for k in range(60):  # back to back, faster than any recovery
        rp.on_cnp(k)
        assert rp.rate_bps >= min_rate_bps
    assert rp.rate_bps == rp.lowest_bps == min_rate_bps


def test_a_qp_that_never_saw_a_cnp_stays_at_line_rate_and_runs_no_timer():
    rp = ReactionPoint(params())
    for k in range(1, 1000):
        rp.on_sent(4096, k * MS)
    rp.advance(10**12)
    assert rp.rate_bps == rp.target_bps == rp.lowest_bps == LINE and not rp.active


# ---------------------------------------------------------------------------- alpha


@pytest.mark.parametrize("periods", [1, 2, 10, 1000])
def test_alpha_decays_by_g_each_period_without_cnps(periods):
    p = params(time_reset_ns=10**15)  # no rate increase in the way
    rp = ReactionPoint(p)
    rp.on_cnp(0)
    rp.advance(periods * p.alpha_update_ns)
    assert rp.alpha == pytest.approx(p.initial_alpha * p.alpha_g ** periods)


def test_alpha_rises_in_a_period_with_a_cnp_and_the_next_cut_uses_it():
    p = params(time_reset_ns=10**15, byte_reset=10**12)
    rp = ReactionPoint(p)
    rp.on_cnp(0)  # alpha = initial; that CNP is not counted again
    rp.advance(3 * p.alpha_update_ns)  # three quiet periods
    quiet = p.initial_alpha * p.alpha_g ** 3
    assert rp.alpha == pytest.approx(quiet)
    before = rp.rate_bps
    rp.on_cnp(3 * p.alpha_update_ns + 1)  # a CNP inside the fourth period: the cut uses alpha as it is
    assert rp.rate_bps == pytest.approx(before * (1 - quiet / 2))
    rp.advance(4 * p.alpha_update_ns)  # the period ends: g alpha + (1 - g)
    assert rp.alpha == pytest.approx(p.alpha_g * quiet + 1 - p.alpha_g)
    rp.advance(5 * p.alpha_update_ns)  # and the next quiet one decays it again
    assert rp.alpha == pytest.approx(p.alpha_g * (p.alpha_g * quiet + 1 - p.alpha_g))


# ---------------------------------------------------------------------------- recovery


@pytest.mark.parametrize("threshold", [1, 3, 5])
def test_fast_recovery_halves_the_distance_to_the_target_for_threshold_steps(threshold):
    p = params(threshold=threshold, byte_reset=10**12)  # the timer alone
    rp = ReactionPoint(p)
    rp.on_cnp(0)
    cut = rp.rate_bps
    for step in range(1, threshold + 1):
        rp.advance(step * p.time_reset_ns)
        assert rp.target_bps == LINE  # fast recovery leaves the target
        assert rp.rate_bps == pytest.approx(LINE - (LINE - cut) / 2 ** step)
    rp.advance((threshold + 1) * p.time_reset_ns)  # then additive increase moves the target
    assert rp.target_bps == LINE  # ... capped at line rate


def send_for(rp: ReactionPoint, start: int, seconds: float, chunk: int = 4096) -> int:
    """Send `chunk`-byte frames back to back at whatever rate the QP has; returns the time after."""
    t = start
    while t < start + seconds * 1e9:
        t += int(chunk * 8e9 / rp.rate_bps)
        rp.on_sent(chunk, t)
    return t


def test_recovery_reaches_the_target():
    rp = ReactionPoint(params())
    rp.on_cnp(0)
    target = rp.target_bps
    send_for(rp, 0, 0.05)  # 50 ms scaled: a few byte periods of fast and additive recovery
    assert rp.rate_bps == pytest.approx(target, rel=0.01)


def test_recovery_goes_on_to_line_rate_and_stops_there():
    p = params()
    rp = ReactionPoint(p)
    rp.on_cnp(0)
    rp.on_cnp(1)  # a quarter of line rate, the target half of it
    t = send_for(rp, 1, 10.0, chunk=32767)  # hyper increase once the timer has passed the threshold too
    assert rp.rate_bps == LINE and rp.target_bps == LINE
    rp.advance(t + 10 * p.time_reset_ns)
    assert rp.next_increase_ns > 10**15  # back at line rate: the timer stopped


# (event, T after it, BC after it, increase of the target) with rpg_threshold 2
STAGES = [
    ("bytes", 0, 1, 0.0),  # fast recovery: neither counter past the threshold
    ("bytes", 0, 2, 0.0),
    ("bytes", 0, 3, "ai"),  # additive: one past it
    ("bytes", 0, 4, "ai"),
    ("timer", 1, 4, "ai"),
    ("timer", 2, 4, "ai"),
    ("timer", 3, 4, "hai"),  # hyper: both past it, by hai x (min(T, BC) - threshold)
    ("timer", 4, 4, "2hai"),
    ("bytes", 4, 5, "2hai"),
    ("timer", 5, 5, "3hai"),
]


def test_additive_and_hyper_increase_follow_the_two_counters():
    p = params(threshold=2, byte_reset=1000, time_reset_ns=100 * MS, line_rate_bps=1e12, min_rate_bps=1.0)
    rp = ReactionPoint(p)
    rp.on_cnp(0)
    rp.target_bps = 1e9  # well below line rate: no cap in the way
    amount = {"ai": p.ai_rate_bps, "hai": p.hai_rate_bps, "2hai": 2 * p.hai_rate_bps, "3hai": 3 * p.hai_rate_bps}
    timer = 0
    for event, t_stage, bc_stage, rise in STAGES:
        before = rp.target_bps
        if event == "bytes":
            rp.on_sent(1000, timer * p.time_reset_ns + 1)
        else:
            timer += 1
            rp.advance(timer * p.time_reset_ns)
        assert (rp.time_stage, rp.byte_stage) == (t_stage, bc_stage), event
        assert rp.target_bps - before == pytest.approx(amount.get(rise, rise)), (event, t_stage, bc_stage)


def test_a_cut_restarts_the_counters():
    p = params(byte_reset=1000)
    rp = ReactionPoint(p)
    rp.on_cnp(0)
    rp.on_sent(5500, 1)
    rp.advance(p.time_reset_ns)
    assert (rp.time_stage, rp.byte_stage) == (1, 5)
    rp.on_cnp(p.time_reset_ns + 1)
    assert (rp.time_stage, rp.byte_stage) == (0, 0)
    rp.on_sent(999, p.time_reset_ns + 2)  # the half-counted bytes went with the cut
    assert rp.byte_stage == 0


# ---------------------------------------------------------------------------- fairness


def bottleneck(line_bps: float, seconds: float, kmin: int, kmax: int, pmax: float, seed: int) -> list[list[float]]:
    """Two QPs of one NIC speed into one port of that speed. The port's queue grows by what
    exceeds its rate; WRED marks each packet with a probability rising from 0 at kmin to pmax
    at kmax; the receiving NIC sends a QP at most one CNP per cnp_interval when any of its
    packets was marked: so CNPs fall to each QP in proportion to its packets. One step per
    CNP interval. The second QP starts cut to 1/16 of line rate. Returns the rates per step."""
    dq = Dcqcn()
    p = DcqcnParams.of(dq, 2000, line_bps)
    step = int(dq.cnp_interval_us * 1000 * 2000)
    rng = random.Random(seed)
    qps = [ReactionPoint(p), ReactionPoint(p)]
    for _ in range(4):
        qps[1].on_cnp(0)
    queue = 0.0
    history = []
    for k in range(1, int(seconds * 1e9 / step) + 1):
        now = k * step
        rates = [qp.rate_bps for qp in qps]
        queue = max(0.0, queue + (sum(rates) - line_bps) * step / 8e9)
        mark = 0.0 if queue <= kmin else 1.0 if queue >= kmax else pmax * (queue - kmin) / (kmax - kmin)
        for qp, rate in zip(qps, rates):
            sent = rate * step / 8e9
            qp.on_sent(int(sent), now)
            if mark and rng.random() < 1 - (1 - mark) ** (sent / 4096):
                qp.on_cnp(now)
            qp.advance(now)
        history.append([qp.rate_bps for qp in qps])
    return history


@pytest.mark.parametrize("kmin, kmax, pmax", [
    (250_000, 2_097_152, 0.05),  # the WRED profile fablab renders for the RoCE queue
    (20_000, 200_000, 0.2),  # marking early and hard
])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_two_qps_sharing_cnps_in_proportion_converge_to_a_fair_share(kmin, kmax, pmax, seed):
    line = 20e6  # a 40G NIC at time scale 2000 (at 400G the same takes ten times longer: the report)
    history = bottleneck(line, 120.0, kmin, kmax, pmax, seed)
    assert jain(history[0]) < 0.7  # the control: they start far apart
    tail = history[-len(history) // 5:]
    means = [sum(rates[i] for rates in tail) / len(tail) for i in range(2)]
    assert jain(means) >= 0.9, [round(m / 1e6, 2) for m in means]
    assert sum(means) <= line * 1.05  # and together they do not overrun the port for long


@pytest.mark.parametrize("values, expected", [
    ([1.0, 1.0], 1.0),
    ([1.0, 0.0], 0.5),
    ([3.0, 1.0], 0.8),
    ([0.0, 0.0, 0.0], 1.0),
])
def test_jain(values, expected):
    assert jain(values) == pytest.approx(expected)


# ---------------------------------------------------------------------------- trace


@pytest.mark.parametrize("events, limit", [(10, 200), (1000, 200), (100_000, 200), (5000, 10)])
def test_the_rate_trace_keeps_at_most_its_limit_spread_over_the_run_and_ends_at_the_end(events, limit):
    trace = RateTrace(limit, step_ns=1000)
    for k in range(events):
        trace.add(k * 700, float(k))
    samples = trace.close(events * 700, -1.0)
    assert 1 <= len(samples) <= limit and samples[-1] == (events * 700, -1.0)
    times = [t for t, _ in samples]
    assert times == sorted(set(times)) and times[0] == 0
    if events * 700 > limit * 1000:  # a long run is covered evenly, not just its start
        assert times[len(times) // 2] > events * 700 // 4


# ---------------------------------------------------------------------------- CNP packets


def test_a_cnp_is_built_as_the_lab_data_plane_sends_it():
    packet = cnp_packet("10.0.0.2", "10.0.0.1", 0x123456, dscp=48)
    assert len(packet) == 20 + 8 + 12 + 16 + 4 and verify_icrc(packet)
    assert packet[1] == 48 << 2  # DSCP 48, not ECN-capable
    assert packet[8] == 64 and packet[9] == socket.IPPROTO_UDP
    assert packet[12:16] == socket.inet_aton("10.0.0.2") and packet[16:20] == socket.inet_aton("10.0.0.1")
    assert int.from_bytes(packet[20:22], "big") == 0xC000 | 0x3456 and int.from_bytes(packet[22:24], "big") == 4791
    bth = packet[28:40]
    assert bth[0] == CNP_OPCODE and bth[2:4] == b"\xff\xff" and bth[4] == 0x40
    assert int.from_bytes(bth[5:8], "big") == 0x123456
    assert packet[40:56] == bytes(16)
    assert parse_cnp(packet) == (socket.inet_aton("10.0.0.2"), 0x123456)


def test_parse_cnp_refuses_what_is_not_a_cnp():
    data = frame(RoceShape(src="10.0.0.1", dst="10.0.0.2", dst_qp=7), psn=0)
    assert parse_cnp(data) is None  # RoCE data
    cnp = bytearray(cnp_packet("10.0.0.2", "10.0.0.1", 7))
    other_port = bytearray(cnp)
    other_port[22:24] = (4792).to_bytes(2, "big")
    assert parse_cnp(other_port) is None
    fragment = bytearray(cnp)
    fragment[6:8] = (0x2001).to_bytes(2, "big")
    assert parse_cnp(fragment) is None
    assert parse_cnp(cnp[:30]) is None
    assert parse_cnp(cnp, 30) is None


# ---------------------------------------------------------------------------- specs and results


def flow(flow_id: int, dst: str = "10.0.0.2", qp: int = 0x100) -> RoceFlow:
    return RoceFlow(flow_id=flow_id, dst=dst, dst_qp=qp, src_qp=qp)


@pytest.mark.parametrize("kwargs, problem", [
    ({"flows": (flow(1),), "duration_s": 1.0, "rate_pps": 100.0}, "no rate_pps"),
    ({"flows": (flow(1),)}, "packets or duration_s"),
    ({"flows": (flow(1), UdpFlow(2, "10.0.0.2")), "duration_s": 1.0}, "RoCEv2 flows only"),
    ({"flows": (flow(1), flow(2)), "duration_s": 1.0}, "distinct"),
    ({"flows": (replace(flow(1), omit=(3,)),), "duration_s": 1.0}, "omit/late need packets"),
])
def test_a_dcqcn_send_spec_is_validated(kwargs, problem):
    with pytest.raises(SpecError, match=problem):
        SendSpec(dcqcn=params(), **kwargs)


def test_dcqcn_send_specs_are_fine_by_packets_or_duration_and_travel_as_json():
    for spec in (SendSpec(flows=(flow(1), flow(2, qp=0x101)), duration_s=2.0, dcqcn=params()),
                 SendSpec(flows=(replace(flow(1), omit=(3,)),), packets=100, duration_s=2.0, dcqcn=params())):
        assert from_json(SendSpec, to_json(spec)) == spec
    assert from_json(SendSpec, to_json(SendSpec(flows=(flow(1),), packets=5))).dcqcn is None


def test_a_send_group_uses_dcqcn_everywhere_or_nowhere():
    with_cc = SendSpec(flows=(flow(1),), duration_s=1.0, dcqcn=params())
    without = SendSpec(flows=(flow(2),), duration_s=1.0, rate_pps=10.0)
    with pytest.raises(SpecError, match="dcqcn or none"):
        SendGroupSpec(("a", "b"), (with_cc, without))


def test_send_results_read_old_json_and_carry_the_dcqcn_outcome():
    old = '{"flows": [{"flow_id": 1, "dst_qp": 7, "sport": 1, "packets": 3, "last_seq": 2, "first_ns": 0, ' \
          '"last_ns": 9}], "start_ns": 0, "end_ns": 10}'
    result = from_json(SendResult, old)
    assert result.flows[0].dcqcn is None and result.cnps_unmatched == 0
    outcome = FlowDcqcn(cnps=4, rate_end_bps=5e6, rate_min_bps=1e6, line_rate_bps=20e6, time_scale=2000,
                        trace=((0, 20e6), (1000, 1e6), (3000, 5e6)))
    new = SendResult((FlowSent(1, 7, 1, 3, 2, 0, 9, dcqcn=outcome),), 0, 10, cnps_unmatched=2)
    assert from_json(SendResult, to_json(new)) == new
    assert outcome.mean_rate_bps() == pytest.approx((20e6 * 1000 + 1e6 * 2000) / 3000)
    assert outcome.mean_rate_bps(since_ns=1000) == pytest.approx(1e6)
