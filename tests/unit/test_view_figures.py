"""What `fablab view` shows of the BE's load, from two reads built by hand: per BE link its
scaled rate, load, drops, depth and pause state; per uplink its packets and share (ECMP's
spread); a label beside each busy link that never lies on the line it labels nor on another
label; and the page itself, rendered once. No lab, no root."""
from __future__ import annotations

import random
from dataclasses import replace

import pytest

from harness.catalog import load_fabric
from harness.core.lossless_counters import LosslessCounters, PortCounters, PriorityCounters, QueueCounters
from harness.core.model import Plane
from harness.core.plan import Plan, make_plan
from harness.render.diagram import LinkNote, label_box, label_position, topology_svg
from harness.report.fabric_load import EndReading, PauseState, Reading, link_loads, uplink_spread
from harness.report.live import LinkView, SessionView, Snapshot, page


@pytest.fixture(scope="module")
def plan() -> Plan:
    return make_plan(load_fabric("ai-cluster"))


def _port(node: str, name: str, rate: int, sent: int = 0, depth: int = 0, paused_ms: float = 0.0,
          drops: int = 0, paused: bool = False, holding: bool = False, pfc_tx: int = 0) -> PortCounters:
    q3 = QueueCounters(enq_bytes=sent + depth, depth_bytes=depth, peak_bytes=depth, paused_ms=paused_ms,
                       drop_pkts=drops, paused=paused)
    p3 = PriorityCounters(pfc_tx=pfc_tx, holding_peer=holding)
    return PortCounters(node, name, rate, frozenset({3}), tuple(p3 if i == 3 else PriorityCounters() for i in range(8)),
                        tuple(q3 if i == 3 else QueueCounters() for i in range(8)))


def _reading(plan: Plan, at: float, busy: dict[tuple[str, str], PortCounters], packets: int = 0) -> Reading:
    ports, ends = [], []
    for c in plan.cables:
        if c.plane is not Plane.BE:
            continue
        for node, port in ((c.a_node, c.a_port), (c.b_node, c.b_port)):
            rate = 400_000_000 if c.speed == 800 else 200_000_000
            ports.append(busy.get((node, port), _port(node, port, rate)))
            ends.append(EndReading(node, port, packets, packets))
    return Reading(at, tuple(ends), LosslessCounters(tuple(ports)))


def _incast(plan: Plan) -> tuple[Reading, Reading]:
    """Two reads 2 s apart: gpu01's leaf port sent 50 MB (200 Mbit/s) with 400 kB queued and 3
    drops; gpu02's link was paused for 300 ms in between and is held paused now."""
    before = _reading(plan, 100.0, {("be-g1-r0", "Ethernet256"): _port("be-g1-r0", "Ethernet256", 200_000_000,
                                                                       sent=1_000_000)})
    now = _reading(plan, 102.0, {
        ("be-g1-r0", "Ethernet256"): _port("be-g1-r0", "Ethernet256", 200_000_000, sent=51_000_000, depth=400_000,
                                           drops=3),
        ("gpu02", "rail0"): _port("gpu02", "rail0", 200_000_000, paused_ms=300.0, paused=True),
        ("be-g1-r0", "Ethernet260"): _port("be-g1-r0", "Ethernet260", 200_000_000, holding=True, pfc_tx=40),
    })
    return before, now


def test_a_busy_link_has_its_load_drops_depth_and_pause(plan):
    before, now = _incast(plan)
    loads = {(lv.a, lv.b): lv for lv in link_loads(plan, now, before)}
    assert len(loads) == sum(1 for c in plan.cables if c.plane is Plane.BE)
    gpu01 = loads[("gpu01:rail0", "be-g1-r0:Ethernet256")]
    assert gpu01.rate_bps == 200_000_000
    assert gpu01.b_to_a_bps == pytest.approx(200e6) and gpu01.a_to_b_bps == 0.0  # 50 MB in 2 s
    assert gpu01.load_pct == 100.0 and (gpu01.drops, gpu01.new_drops, gpu01.depth_bytes) == (3, 3, 400_000)
    assert gpu01.label == "100% q400k ✕3" and gpu01.alert
    gpu02 = loads[("gpu02:rail0", "be-g1-r0:Ethernet260")]
    assert gpu02.paused == ("gpu02:rail0",) and gpu02.holding == ("be-g1-r0:Ethernet260",)
    assert gpu02.pause is PauseState.PAUSED and (gpu02.paused_ms_new, gpu02.pfc_new) == (300.0, 40)
    assert "‖" in gpu02.label and gpu02.alert
    idle = loads[("gpu03:rail0", "be-g1-r0:Ethernet264")]
    assert (idle.label, idle.alert, idle.pause) == ("", False, PauseState.NONE)  # the control


def test_a_pause_between_two_looks_still_shows(plan):
    before, now = _incast(plan)
    gone = Reading(104.0, now.ends, LosslessCounters(tuple(
        replace(p, queues=tuple(replace(q, paused=False, depth_bytes=0) for q in p.queues),
                priorities=tuple(replace(x, holding_peer=False, pfc_tx=x.pfc_tx + 5 * (i == 3))
                                 for i, x in enumerate(p.priorities)))
        if p.name in ("be-g1-r0:Ethernet260", "gpu02:rail0") else p for p in now.lossless.ports)))
    lv = next(x for x in link_loads(plan, gone, now) if x.a == "gpu02:rail0")
    assert (lv.paused, lv.holding) == ((), ())  # neither now
    assert lv.pause is PauseState.WAS_PAUSED and lv.pfc_new == 10 and lv.alert  # 5 frames from each end


def test_the_first_look_has_states_but_no_rates(plan):
    _, now = _incast(plan)
    gpu01 = next(x for x in link_loads(plan, now, None) if x.a == "gpu01:rail0")
    assert gpu01.a_to_b_bps is None and gpu01.load_pct is None and gpu01.new_drops == 0
    assert gpu01.label == "q400k ✕3"


def test_without_the_data_plane_no_link_figures(plan):
    _, now = _incast(plan)
    assert link_loads(plan, replace(now, lossless=None), None) == ()


def test_uplink_spread_is_per_switch_share_since_the_last_look(plan):
    before, now = _incast(plan)
    now = replace(now, ends=tuple(
        replace(e, tx_packets=300, rx_packets=50) if (e.node, e.port) == ("be-g1-r0", "Ethernet0")
        else replace(e, tx_packets=100) if (e.node, e.port) == ("be-g1-r0", "Ethernet8") else e for e in now.ends))
    spread = uplink_spread(plan, now, before)
    leaf = [u for u in spread if u.switch == "be-g1-r0"]
    assert [(u.port, u.peer, u.up_packets, u.down_packets, u.share_pct) for u in leaf] == [
        ("Ethernet0", "be-s1:Ethernet0", 300, 50, 75.0), ("Ethernet8", "be-s2:Ethernet0", 100, 0, 25.0)]
    assert {u.switch for u in spread} == {s.name for s in plan.switches if s.name.startswith("be-g")}  # spines: none up
    assert all(u.up_packets is None for u in uplink_spread(plan, now, None))


@pytest.mark.parametrize("seed", range(5))
def test_a_label_never_lies_on_its_line(seed):
    rng = random.Random(seed)
    for _ in range(200):
        x1, y1, x2, y2 = (rng.uniform(0, 800) for _ in range(4))
        if abs(x2 - x1) + abs(y2 - y1) < 20:
            continue
        chars = rng.randint(1, 14)
        for t in (0.5, 0.3, 0.7):
            left, top, right, bottom = label_box(*label_position(x1, y1, x2, y2, chars, t=t), chars)
            # every corner of the box on the same side of the line, at least 2 px from it
            length = ((x2 - x1) ** 2 + (y2 - y1) ** 2) ** 0.5
            side = [((x - x1) * (y2 - y1) - (y - y1) * (x2 - x1)) / length
                    for x in (left, right) for y in (top, bottom)]
            assert all(d > 2 for d in side) or all(d < -2 for d in side), (x1, y1, x2, y2, chars, t)


def _labels(svg: str) -> list[tuple[float, float, str, str]]:
    import re

    return [(float(x), float(y), a, text) for x, y, a, text in
            re.findall(r'<text x="([\d.]+)" y="([\d.]+)" text-anchor="(\w+)"[^>]*class="link-label"[^>]*>([^<]*)</text>',
                       svg)]


def test_labels_in_the_svg_do_not_overlap_each_other(plan):
    before, now = _incast(plan)
    loads = link_loads(plan, now, before)
    # every BE link of rail 0 busy, as in an incast: many labels in one row
    notes = tuple(LinkNote(lv.a, lv.b, lv.label or "55% q108k ‖", lv.alert) for lv in loads
                  if lv.a.endswith("rail0") or lv.a.startswith("be-g"))
    svg = topology_svg(plan, {}, notes)
    placed = _labels(svg)
    assert len(placed) == len(notes)
    boxes = [label_box(x, y, a, len(t)) for x, y, a, t in placed]
    for i, a in enumerate(boxes):
        for b in boxes[i + 1:]:
            assert not (a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]), (a, b)
    assert "beside a BE link" in svg  # the key to the labels
    assert "beside a BE link" not in topology_svg(plan)  # a render has none


def test_the_page_renders_the_be_links_and_the_spread(plan):
    before, now = _incast(plan)
    loads = link_loads(plan, now, before)
    notes = tuple(LinkNote(lv.a, lv.b, lv.label, lv.alert) for lv in loads)
    links = tuple(LinkView(f"{c.a_node}:{c.a_port}", f"{c.b_node}:{c.b_port}", c.plane.value, "up", "", 0, 0, 0, 0)
                  for c in plan.cables if c.plane is not Plane.MGMT)
    snap = Snapshot("ct34", "ai-cluster", "netns", "now", links, (SessionView("be-s1", 8, 8, 8, 8, ()),), (), (), "",
                    topology_svg(plan, {(lv.a, lv.b): "up" for lv in links}, notes), now, 2.0, 2000, "", loads,
                    uplink_spread(plan, now, before))
    html = page(snap)
    assert 'id="be-links"' in html and 'id="uplinks"' in html
    assert '<tr class="failed" data-link="gpu01:rail0 be-g1-r0:Ethernet256">' in html  # drops: marked
    assert "paused: gpu02:rail0" in html and "holding its peer: be-g1-r0:Ethernet260" in html
    assert "time_scale 2000" in html and "over the last 2.0 s" in html
    assert 'id="be-paused" class="fail">1</b>' in html and 'id="be-drops" class="fail">3</b>' in html
    assert 'class="link-label"' in html
    lacking = replace(snap, be_links=(), lossless_why="docker-sonic-vs copies frames raw")
    assert "no lossless data plane: docker-sonic-vs copies frames raw" in page(lacking)
