"""A BE port's lossless program is read from what its config does, whatever it calls its maps
and profiles (harness.core.asic), and the lossless data plane's files say exactly that."""
from __future__ import annotations

import dataclasses

import copy
from dataclasses import replace

import pytest

from harness.catalog import load_cluster
from harness.core.asic import DEFAULT_POOL, nic_program, switch_programs
from harness.core.lossless_counters import from_status
from harness.core.model import Dcqcn, Ecn, Lossless, build
from harness.core.plan import make_plan
from harness.render.sonic import config_db, pg_headroom
from harness.runtime import lossless_dp
from corpus.styles import running_config_db, sonic_config_db


@pytest.fixture(scope="module")
def plan():
    return make_plan(build(load_cluster("ai-cluster")))


@pytest.fixture(scope="module")
def leaf(plan):
    sw = next(s for s in plan.switches if s.name == "be-g1-r0")
    return sw, config_db(plan, sw)


def test_fablab_s_render_makes_the_declared_contract(leaf):
    sw, db = leaf
    port = sw.ports[0].name
    p = switch_programs(db, [port])[port]
    assert p.queue_of(26) == 3 and p.queue_of(48) == 6 and p.queue_of(0) == 0 and p.queue_of(10) == 0
    assert p.pfc == {3} and p.ecn_queues == {3} and p.strict_queues == {6}
    assert (p.wred.min_bytes, p.wred.max_bytes, p.wred.probability_pct) == (5000, 200000, 1)  # topologies/roce.py
    assert p.xoff_bytes == DEFAULT_POOL // 9  # dynamic_th -3: alpha 1/8, one congested PG holds alpha/(1+alpha)
    # Mellanox's xon (the hysteresis); the headroom its PG profile's, by the port's speed and cable
    assert sw.ports[0].speed == 800 and db["CABLE_LENGTH"]["AZURE"][port] == "40m"
    assert (p.xon_bytes, p.headroom_bytes) == (p.xoff_bytes - 18432, 366776)
    assert p.lossless_limit == p.xoff_bytes + 366776 and p.lossy_limit == p.xoff_bytes
    host = next(x.name for x in sw.ports if x.speed == 400)
    assert switch_programs(db, [host])[host].headroom_bytes == 165888 == pg_headroom(400, "5m")
    assert p.watchdog.priorities == {3} and (p.watchdog.detect_ms, p.watchdog.restore_ms) == (200, 200)


@pytest.mark.parametrize("style", [sonic_config_db, running_config_db])
def test_the_same_settings_under_other_names_make_the_same_program(leaf, style):
    sw, db = leaf
    ports = [p.name for p in sw.ports]
    assert switch_programs(style(copy.deepcopy(db)), ports) == switch_programs(db, ports)


def _pg(db, port):
    return next(v["profile"] for k, v in db["BUFFER_PG"].items() if k.startswith(f"{port}|"))


def _with(db, table, key, **fields):
    db = copy.deepcopy(db)
    db.setdefault(table, {}).setdefault(key, {}).update(fields)
    return db


@pytest.mark.parametrize("change, expect", [
    (lambda db, port: _with(db, "PORT_QOS_MAP", port, pfc_enable="4"), lambda p: p.pfc == {4}),
    (lambda db, port: _with(db, "PORT_QOS_MAP", port, pfc_enable="3,4"), lambda p: p.pfc == {3, 4}),
    (lambda db, port: _with(db, "DSCP_TO_TC_MAP", "AI_ROCE", **{"26": "0"}), lambda p: p.queue_of(26) == 0),
    (lambda db, port: _with(db, "BUFFER_PROFILE", _pg(db, port), static_th="500000"),
     lambda p: p.xoff_bytes == 500000),
    (lambda db, port: _with(db, "BUFFER_PROFILE", _pg(db, port), xon_offset="100000"),
     lambda p: p.xon_bytes == p.xoff_bytes - 100000),
    (lambda db, port: _with(db, "WRED_PROFILE", "AI_LOSSLESS", ecn="ecn_none"), lambda p: not p.ecn_queues),
    (lambda db, port: _with(db, "PFC_WD", port, detection_time="400"), lambda p: p.watchdog.detect_ms == 400),
    (lambda db, port: {k: v for k, v in db.items() if k != "PORT_QOS_MAP"},
     lambda p: p.pfc == frozenset() and p.queue_of(26) == 0),
])
def test_a_changed_field_changes_what_the_port_does(leaf, change, expect):
    sw, db = leaf
    port = sw.ports[0].name
    assert expect(switch_programs(change(db, port), [port])[port])
    assert not expect(switch_programs(db, [port])[port])  # the control: the render does not already


def test_the_declared_ecn_profile_is_what_every_be_switch_marks_by(plan):
    """Lossless(ecn=...) is rendered as each switch's WRED_PROFILE and read back as its program;
    the controls: the default declaration's is SONiC's, ai-cluster's Zhu et al.'s (topologies/roce.py)."""
    declared = make_plan(build(replace(load_cluster("ai-cluster"), lossless=Lossless(ecn=Ecn(150000, 1500000, 100)))))
    default = make_plan(build(replace(load_cluster("ai-cluster"), lossless=Lossless())))
    for p_, want in ((declared, (150000, 1500000, 100)), (default, (250000, 2097152, 5)), (plan, (5000, 200000, 1))):
        for sw in (s for s in p_.switches if s.lossless):
            port = sw.ports[0].name
            wred = switch_programs(config_db(p_, sw), [port])[port].wred
            assert (wred.min_bytes, wred.max_bytes, wred.probability_pct) == want


def test_a_nic_trusts_dscp_honours_pause_and_paces_its_cnps_scaled():
    q = Lossless(roce_priority=4, roce_dscp=30, cnp_priority=7, cnp_dscp=46, time_scale=1000,
                 dcqcn=Dcqcn(cnp_interval_us=5.0))
    p = nic_program("rail0", q)
    assert p.host and p.pfc == {4} and p.queue_of(30) == 4 and p.queue_of(46) == 7 and p.queue_of(26) == 0
    assert p.cnp_interval_ns == 5_000_000 and p.cnp_dscp == 46


def test_every_be_cable_is_served_at_both_ends_with_its_peer(plan):
    specs = lossless_dp.port_specs(plan)
    be_cables = sum(len(s.ports) for s in plan.switches if s.lossless)
    switch_to_switch = sum(1 for s in plan.switches if s.lossless for p in s.ports
                           if p.peer in {x.name for x in plan.switches})
    assert len(specs) == be_cables + (be_cables - switch_to_switch)  # a GPU NIC has one end, a switch cable two
    for s in specs:
        assert specs[s.peer].peer == s.id and specs[s.peer].node != s.node
    locals_ = {}
    for s in specs:
        locals_.setdefault(s.node, []).append(s.local)
    assert all(sorted(v) == list(range(len(v))) for v in locals_.values())


def test_the_data_plane_s_config_carries_each_port_s_program_scaled(plan):
    dbs = {sw.name: config_db(plan, sw) for sw in plan.switches if sw.lossless}
    text = lossless_dp.config_text(plan, "t", dbs)
    lines = [line for line in text.splitlines() if line.startswith("port ")]
    assert len(lines) == len(lossless_dp.port_specs(plan))
    leaf = next(line for line in lines if " be-g1-r0 Ethernet256 " in line)
    assert " pfc=8 " in leaf and " ecn=8 " in leaf and " wd=8 " in leaf and " scale=2000 " in leaf
    nic = next(line for line in lines if " gpu01 rail0 " in line)
    assert " 1 400 " in nic and " cnp_interval_ns=100000000 " in nic  # 50 us (topologies/roce.py) x 2000
    batch = lossless_dp.qdisc_batch([s for s in lossless_dp.port_specs(plan) if s.node == "gpu01"],
                                    lossless_dp.programs(plan, dbs), 2000)
    assert "htb rate 200000000bit ceil 200000000bit" in batch  # 400G / 2000
    assert "classid fb:16 htb" in batch and "prio 0" in batch.split("classid fb:16")[1].splitlines()[0]
    # a class only for the queues the program uses: RoCE 3, CNPs 6, and queue 0 (htb's default)
    assert {line.split("classid fb:")[1].split()[0] for line in batch.splitlines() if "parent fb:1 " in line} \
        == {"10", "13", "16"}


def test_a_port_s_classes_follow_its_dscp_and_pfc_maps(plan):
    dbs = {sw.name: config_db(plan, sw) for sw in plan.switches if sw.lossless}
    prog = lossless_dp.programs(plan, dbs)[("be-g1-r0", "Ethernet256")]
    assert lossless_dp.queues_of(prog) == {0, 3, 6}
    remapped = dataclasses.replace(prog, dscp_tc=tuple(1 if d == 10 else t for d, t in enumerate(prog.dscp_tc)))
    assert lossless_dp.queues_of(remapped) == {0, 1, 3, 6}  # DSCP 10 now reaches queue 1
    paused = dataclasses.replace(prog, pfc=prog.pfc | {4})
    assert lossless_dp.queues_of(paused) == {0, 3, 4, 6}  # PFC on priority 4 pauses queue 4, so it needs a class


def test_counters_between_two_reads():
    def doc(enq, rx, peak):
        q = [{"enq_pkts": 0}] * 8
        q[3] = {"enq_pkts": enq, "drop_pkts": 0, "peak_bytes": peak, "paused": 1, "paused_ms": 10.0 * enq}
        pr = [{"pfc_rx": 0}] * 8
        pr[3] = {"pfc_rx": rx, "pfc_tx": 0, "holding_peer": 1}
        return {"ports": [{"node": "be-s1", "port": "Ethernet0", "rate_bps": 400000000, "pfc": 8,
                           "priorities": pr, "queues": q}], "cpu_s": enq / 100}
    before, after = from_status(doc(10, 2, 100)), from_status(doc(30, 7, 500))
    d = after.minus(before).port("be-s1", "Ethernet0")
    assert d.pfc == {3} and d.queues[3].enq_pkts == 20 and d.priorities[3].pfc_rx == 5
    assert d.queues[3].peak_bytes == 500 and d.queues[3].paused and d.queues[3].paused_ms == 200.0
    assert d.priorities[3].holding_peer
