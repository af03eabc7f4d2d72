"""The ECMP verdict's statistics and bookkeeping: no root, no lab."""
from __future__ import annotations

import dataclasses
import json

import pytest

from harness.checks.ecmp import EcmpResult, PathCount, default_pair, distinct_sport_qpns, ports_seen
from harness.checks.common.bounds import FALSE_FAIL, MISS, band, bound, qps_for
from harness.core.errors import HarnessError
from harness.observe.flowcount import FlowCounters, FlowPorts, paths_of
from harness.traffic.roce import roce_sport


@pytest.mark.parametrize("k", [2, 3, 8, 16])
def test_band_holds_a_fair_hash_at_the_stated_rate(k):
    from scipy.stats import binom

    n = qps_for(k)
    low, high = band(n, k)
    per_path = binom.cdf(low - 1, n, 1 / k) + binom.sf(high, n, 1 / k)
    assert k * per_path <= FALSE_FAIL  # Bonferroni over the k paths
    # and it is not looser than it needs to be: one step in on either side breaks the tail budget
    assert binom.cdf(low, n, 1 / k) > FALSE_FAIL / (2 * k) or binom.sf(high - 1, n, 1 / k) > FALSE_FAIL / (2 * k)


@pytest.mark.parametrize("k", [2, 8, 16])
def test_qps_chosen_from_uplinks_catch_a_double_weight_and_l3_hashing(k):
    n = qps_for(k)
    b = bound(n, k)
    assert n % k == 0
    assert b.skew_power >= 1 - MISS
    assert b.low >= 1 and b.high < n  # all on one path: others at 0 < low, that one at n > high
    assert bound(n - k, k).skew_power < 1 - MISS  # the fewest that do


def test_qps_grow_with_uplinks():
    assert [qps_for(k) for k in (2, 8, 16)] == [380, 712, 1328]


def test_simulated_multinomial_false_fail_is_below_the_design():
    import numpy as np

    rng = np.random.default_rng(7)
    draws_n = 200_000
    slack = 4 * (FALSE_FAIL / draws_n) ** 0.5  # four standard errors of the simulated rate
    for k in (2, 8, 16):
        b = bound(qps_for(k), k)
        draws = rng.multinomial(b.qps, [1 / k] * k, size=draws_n)
        fails = ((draws < b.low) | (draws > b.high)).any(axis=1).mean()
        assert FALSE_FAIL / 4 < fails <= FALSE_FAIL + slack  # Bonferroni is near tight: paths rarely fail together


@pytest.mark.parametrize("kwargs, field", [
    ({"qps": 10, "uplinks": 1}, "uplinks=1"),
    ({"qps": 1, "uplinks": 2}, "qps=1"),
    ({"qps": 100, "uplinks": 2, "false_fail": 0}, "false_fail=0"),
])
def test_bound_refuses_bad_input_naming_the_field(kwargs, field):
    with pytest.raises(HarnessError, match=field):
        bound(**kwargs)


def test_qps_for_refuses_a_weight_that_is_no_skew():
    with pytest.raises(HarnessError, match="skew_weight=1"):
        qps_for(4, skew_weight=1)


def test_qpns_have_distinct_source_ports():
    qpns = distinct_sport_qpns(1328)
    assert len({roce_sport(q, q) for q in qpns}) == 1328 == len(set(qpns))


def test_paths_of_names_a_split_flow():
    counted = {("Ethernet4", 50001): 3, ("Ethernet8", 50001): 1, ("Ethernet8", 50002): 4, ("Ethernet4", 50003): 0}
    assert paths_of(counted) == {50001: ("Ethernet4", "Ethernet8"), 50002: ("Ethernet8",)}


def test_ports_seen_keeps_each_port_and_names_a_split_flow():
    counted = {("Ethernet4", 50001): 3, ("Ethernet8", 50001): 1, ("Ethernet8", 50002): 4, ("Ethernet4", 50003): 0}
    seen = ports_seen("be-g1-r0", ["Ethernet4", "Ethernet8", "Ethernet12"], counted)
    assert seen.flows == {"Ethernet4": (50001,), "Ethernet8": (50001, 50002), "Ethernet12": ()}
    assert seen.packets == {"Ethernet4": 3, "Ethernet8": 5, "Ethernet12": 0}
    assert seen.on() == {50001: ("Ethernet4", "Ethernet8"), 50002: ("Ethernet8",)}
    assert [seen.count(p) for p in seen.flows] == [1, 2, 0]


def test_flow_counters_ruleset_is_one_rule_and_one_set():
    text = FlowCounters(None, "leaf", ["Ethernet4", "Ethernet8"], [50002, 50001]).ruleset()
    assert text.count("update @flows") == 1 and "counter" in text and "flags dynamic" in text
    assert "elements = { 50001, 50002 }" in text and 'oifname { "Ethernet4", "Ethernet8" }' in text
    # every pair made up front: the packet path then never allocates an element (or its counter)
    assert ('elements = { "Ethernet4" . 50001, "Ethernet4" . 50002, "Ethernet8" . 50001, "Ethernet8" . 50002 }'
            in text and "size 4\n" in text)
    anything = FlowCounters(None, "leaf", ["Ethernet4"]).ruleset()
    assert '"Ethernet4" .' not in anything and "size 65536\n" in anything and "@wanted" not in anything


@pytest.mark.parametrize("kwargs, field", [({"ports": []}, "ports is empty"), ({"sports": [0]}, "not UDP ports")])
def test_flow_counters_refuse_bad_input(kwargs, field):
    with pytest.raises(HarnessError, match=field):
        FlowCounters(None, "leaf", **{"ports": ["Ethernet4"], **kwargs})


def test_flow_ports_let_the_packet_path_add_flows_without_a_counter_each():
    """Too many (port, flow) pairs to make up front (a spine of 64 links, 97,280 QPs): the set of
    flows seen has no counter (no per-CPU allocation in the packet path), its table is sized up
    front, packets are counted per port on elements made up front, and the ports are matched
    with an anonymous set (a lookup in the counted set would count each packet twice)."""
    text = FlowPorts(None, "spine", ["Ethernet64", "Ethernet72"], "10.1.0.1", ["10.2.0.9", "10.2.0.1"], 1000).ruleset()
    seen = text[text.index("set seen"):text.index("set packets")]
    assert "counter" not in seen and "flags dynamic" in seen and "size 2002\n" in seen
    counted = text[text.index("set packets"):text.index("chain")]
    assert 'counter\n    elements = { "Ethernet64", "Ethernet72" }' in counted
    assert ('oifname { "Ethernet64", "Ethernet72" } ip saddr 10.1.0.1 ip daddr { 10.2.0.1, 10.2.0.9 } udp dport 4791 '
            "update @seen { oifname . ip daddr . udp sport } update @packets { oifname }") in text
    assert "@packets {" in text and "oifname @packets" not in text


@pytest.mark.parametrize("kwargs", [{"ports": []}, {"destinations": []}, {"flows": 0}])
def test_flow_ports_refuse_bad_input(kwargs):
    with pytest.raises(HarnessError, match="needs ports, destinations and flows"):
        FlowPorts(None, "spine", **{"ports": ["Ethernet64"], "source": "10.1.0.1", "destinations": ["10.2.0.1"],
                                    "flows": 10, **kwargs})


def _result(counts, low=156, high=224, problems=()):
    paths = tuple(PathCount(f"Ethernet{4 * (i + 1)}", n, n * 4, sum(counts) / len(counts), low, high)
                  for i, n in enumerate(counts))
    return EcmpResult("gpu01:rail0", "gpu05:rail0 (10.0.1.0)", "be-g1-r0", sum(counts), 3, paths,
                      sum(counts) / len(counts), low, high, FALSE_FAIL, 2, 0.999, 0, 0, 1.0, 0.5, 0, 0, 1,
                      {"Ethernet4": 1, "Ethernet8": 1}, seconds=3.0, problems=tuple(problems))


def test_result_serialises_and_says_why(tmp_path):
    ok = _result([197, 183])
    assert ok.passed and ok.reason.startswith("spread: 380 QPs")
    json.dumps(dataclasses.asdict(ok), default=str)
    bad = _result([380, 0], problems=("be-g1-r0:Ethernet4 carried 380 QPs",))
    assert not bad.passed and "Ethernet4 carried 380" in bad.reason
    assert [p.within for p in bad.paths] == [False, False]


def test_plot_ecmp_writes_a_png(tmp_path):
    from harness.checks.ecmp import plot_ecmp

    path = plot_ecmp(_result([263, 117], problems=("skewed",)), tmp_path / "ecmp.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_default_pair_crosses_the_spines(ai_plan):
    (src, _), (dst, _) = default_pair(ai_plan)
    assert ai_plan.host(src).group != ai_plan.host(dst).group


def test_too_few_gpus_in_other_pods_for_the_qps_is_refused_by_name():
    from harness.checks.ecmp_superspine import far_peers
    from harness.core.model import build
    from harness.core.plan import make_plan
    from topologies.pods import pods

    plan = make_plan(build(pods()))
    assert len(far_peers(plan, "gpu01", "rail0", 8)) == 8  # the other pod's 8 nodes, the control
    with pytest.raises(HarnessError, match="8 GPUs on rail 0 outside pod 1: the QPs need 9 destinations"):
        far_peers(plan, "gpu01", "rail0", 9)


def test_qps_to_several_receivers_are_sent_in_turn():
    """Each receiver gets a packet every few sends, not all its QPs at once and then a wait
    longer than its quiet_s while the sender serves the others."""
    from harness.checks.ecmp.measure import interleaved
    from harness.traffic.flows import RoceFlow

    batches = [[RoceFlow(flow_id=10 * d + i, dst=f"10.0.0.{d}", dst_qp=0x100 + i, src_qp=0x100 + i) for i in range(n)]
               for d, n in ((1, 3), (2, 3), (3, 2))]
    assert [q.flow_id for q in interleaved(batches)] == [10, 20, 30, 11, 21, 31, 12, 22]
    assert interleaved([batches[0]]) == tuple(batches[0])
