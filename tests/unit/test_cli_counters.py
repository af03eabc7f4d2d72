"""`fablab counters`: its tables on counters built by hand (SONiC's show pfc counters and show
queue counters, what is scaled said in the footer), the difference of two reads for --watch, and
its argument errors (an unknown node, a node with no BE port, a lab without the lossless data
plane: exit 2, naming what there is). No lab, no root."""
from __future__ import annotations

import json
from dataclasses import dataclass, field, replace

import pytest
from rich.console import Console

from harness.catalog import load_fabric
from harness.cli import counters as cli
from harness.cli.main import main
from harness.core.capabilities import Feature
from harness.core.lossless_counters import LosslessCounters, PortCounters, PriorityCounters, QueueCounters
from harness.core.model import Plane
from harness.core.plan import Plan, make_plan

IDLE_P = PriorityCounters()
IDLE_Q = QueueCounters()


def port(node: str, name: str, rate: int = 200_000_000, prio3: PriorityCounters = IDLE_P,
         q3: QueueCounters = IDLE_Q, **kw) -> PortCounters:
    return PortCounters(node, name, rate, frozenset({3}), tuple(prio3 if i == 3 else IDLE_P for i in range(8)),
                        tuple(q3 if i == 3 else IDLE_Q for i in range(8)), **kw)


# be-g1-r0 just after a 7->1 incast into Ethernet256: it paused its GPU-facing senders and its
# uplinks (PFC Tx on priority 3), its queue to gpu01 is deep and past xoff.
RECORDED = LosslessCounters((
    port("be-g1-r0", "Ethernet256", q3=QueueCounters(enq_pkts=5200, enq_bytes=21_600_000, deq_pkts=5100,
                                                     drop_pkts=3, drop_bytes=12_345, marked=77, peak_bytes=1_580_430,
                                                     depth_bytes=400_000, xoff=True)),
    port("be-g1-r0", "Ethernet0", rate=400_000_000, prio3=PriorityCounters(pfc_tx=3592, holding_peer=True)),
    port("be-g1-r0", "Ethernet260", prio3=PriorityCounters(pfc_tx=2776, in_drops=14),
         q3=QueueCounters(paused_ms=263.4, paused=True, storms=1, wd_drops=2)),
    port("be-g1-r0", "Ethernet8", rate=400_000_000, prio3=PriorityCounters(pfc_tx=1240, pfc_rx=5)),
    port("gpu01", "rail0", cnp_tx=9, ce_rx=77),
), cpu_s=1.5)


def text(c: cli.NodeCounters, pfc: bool = True, queues: bool = True) -> str:
    console = Console(record=True, width=220, color_system=None)
    cli.print_to(console, c, pfc, queues)
    return console.export_text()


def rows(out: str, head: str) -> list[list[str]]:
    """The rows of the table headed `head` (up to the next blank line), split on spaces."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.split()[:len(head.split())] == head.split())
    body = []
    for line in lines[start + 2:]:
        if not line.strip():
            break
        body.append(line.split())
    return body


def test_pfc_tables_are_sonics_port_rx_and_port_tx_with_ports_in_number_order():
    out = text(cli.node_counters("ct34", "be-g1-r0", 2000, RECORDED), queues=False)
    header = next(line for line in out.splitlines() if "Port Rx" in line).split()
    assert header == ["Port", "Rx", *(f"PFC{i}" for i in range(8))]
    tx = rows(out, "Port Tx")
    assert [r[0] for r in tx] == ["Ethernet0", "Ethernet8", "Ethernet256", "Ethernet260"]  # not text order
    assert tx[0][1:] == ["0", "0", "0", "3,592", "0", "0", "0", "0"]  # SONiC's thousands separator
    assert rows(out, "Port Rx")[1][4] == "5"
    assert rows(out, "In drops")[3][4] == "14"  # shown because a packet was dropped
    assert "holding its peer paused now: Ethernet0 (PFC3)" in out
    assert "UC3" not in out  # --pfc alone: no queues


def test_tables_only_counted_somewhere_stay_away():
    idle = LosslessCounters((port("be-s1", "Ethernet0"),))
    out = text(cli.node_counters("ct34", "be-s1", 2000, idle))
    assert "In drops" not in out and "Rx ignored" not in out and "holding" not in out
    assert "Port Rx" in out and "UC7" in out  # neither flag: both


def test_queue_table_is_show_queue_counters_with_ecn_depth_pause_and_watchdog():
    out = text(cli.node_counters("ct34", "be-g1-r0", 2000, RECORDED), pfc=False)
    assert "Port Rx" not in out
    q = rows(out, "Port TxQ")
    assert len(q) == 4 * 8
    uc3 = next(r for r in q if r[:2] == ["Ethernet256", "UC3"])
    # packets sent, bytes sent (in minus still queued), drops, ECN marks, watchdog drops,
    # depth, peak, paused ms, storms, state
    assert uc3[2:] == ["5,100", "21,200,000", "3", "12,345", "77", "0", "400,000", "1,580,430", "0.0", "0", "xoff"]
    paused = next(r for r in q if r[:2] == ["Ethernet260", "UC3"])
    assert paused[-3:] == ["263.4", "1", "paused"]
    assert paused[7] == "2"  # watchdog drops
    ports = rows(out, "Port Rate (scaled)")
    assert ports[0][:4] == ["Ethernet0", "400", "Mbit/s", "800G"]  # 400 Mbit/s is 800G / 2000


def test_footer_says_what_is_scaled_with_the_nodes_own_speeds():
    out = text(cli.node_counters("ct34", "be-g1-r0", 2000, RECORDED))
    footer = out.strip().splitlines()[-1]
    assert "time_scale 2000" in footer and "800G → 400 Mbit/s" in footer and "400G → 200 Mbit/s" in footer
    assert "packets, bytes and queue depths are real" in footer


def test_gpu_nic_shows_its_cnps():
    out = text(cli.node_counters("ct34", "gpu01", 2000, RECORDED), pfc=False)
    assert rows(out, "Port Rate (scaled)")[0] == ["rail0", "200", "Mbit/s", "400G", "3", "9", "77"]


def test_watch_shows_what_was_counted_between_two_reads():
    later = LosslessCounters(tuple(
        replace(p, priorities=tuple(replace(x, pfc_tx=x.pfc_tx + 10) for x in p.priorities),
                queues=tuple(replace(q, enq_pkts=q.enq_pkts + 4, enq_bytes=q.enq_bytes + 4000, deq_pkts=q.deq_pkts + 4,
                                     depth_bytes=0, xoff=False) for q in p.queues))
        for p in RECORDED.ports), cpu_s=2.0)
    c = cli.node_counters("ct34", "be-g1-r0", 2000, later, RECORDED, 2.0)
    assert c.interval_s == 2.0 and "in the last 2.0 s" in cli.title(c)
    assert all(r.frames[3] == 10 for r in c.pfc_tx)
    q = next(r for r in c.queues if (r.port, r.queue) == ("Ethernet256", 3))
    # 4000 bytes in, and the 400,000 that were queued left too; nothing is queued now
    assert (q.tx_pkts, q.tx_bytes, q.depth_bytes, q.states) == (4, 404_000, 0, ())
    assert q.peak_bytes == 1_580_430  # a watermark is the later read's, never a difference


def test_json_document_carries_the_rows():
    doc = json.loads(json.dumps(cli.document(cli.node_counters("ct34", "be-g1-r0", 2000, RECORDED), True, True)))
    assert doc["pfc"]["tx"][0] == {"port": "Ethernet0", "frames": [0, 0, 0, 3592, 0, 0, 0, 0]}
    assert {q["port"] for q in doc["queues"]} == {"Ethernet0", "Ethernet8", "Ethernet256", "Ethernet260"}
    assert "xoff" in next(q["states"] for q in doc["queues"] if q["port"] == "Ethernet256" and q["queue"] == 3)
    assert "queues" not in cli.document(cli.node_counters("ct34", "be-g1-r0", 2000, RECORDED), True, False)


# ------------------------------------------------------------------------------ argument errors

@dataclass
class _State:
    runtime: str = "netns"


@dataclass
class _Lab:
    """What `fablab counters` reads of a lab, without one."""

    plan: Plan
    why: str | None = None
    name: str = "ct34"
    state: _State = field(default_factory=_State)

    def nodes(self, plane: Plane | None = None) -> list[str]:
        if plane is None:
            return [n.name for n in self.plan.fabric.nodes]
        return sorted({c.a_node for c in self.plan.cables if c.plane is plane}
                      | {c.b_node for c in self.plan.cables if c.plane is plane})

    def lacks(self, feature: Feature) -> str | None:
        return self.why if feature is Feature.LOSSLESS_DATA_PATH else None

    def lossless_counters(self) -> LosslessCounters:
        if self.why:
            raise AssertionError("read although the lab has no lossless data plane")
        return RECORDED


@pytest.fixture(scope="module")
def plan() -> Plan:
    return make_plan(load_fabric("ai-cluster"))


def _attach(monkeypatch, lab: _Lab) -> None:
    monkeypatch.setattr(cli.Lab, "attach", classmethod(lambda cls, name: lab))


@pytest.mark.parametrize("node, said", [("nosuch", "lab ct34 has no node 'nosuch'"),
                                        ("fe-l1", "'fe-l1' has no BE port"), ("oob1", "'oob1' has no BE port")])
def test_a_node_that_is_not_on_the_be_is_exit_2_with_the_be_nodes_listed(node, said, plan, monkeypatch, capsys):
    _attach(monkeypatch, _Lab(plan))
    assert main(["counters", "ct34", node]) == 2
    err = capsys.readouterr().err
    assert said in err and "BE nodes (switches and GPU nodes): be-g1-r0," in err and "gpu08" in err


def test_a_lab_without_the_lossless_data_plane_says_why_exit_2(plan, monkeypatch, capsys):
    _attach(monkeypatch, _Lab(plan, why="docker-sonic-vs copies frames raw", state=_State("clab")))
    assert main(["counters", "ct34", "be-g1-r0", "--json"]) == 2
    captured = capsys.readouterr()
    assert "has no lossless data plane to count: docker-sonic-vs copies frames raw" in captured.err
    assert json.loads(captured.out)["exit"] == 2


def test_a_be_node_prints_its_tables(plan, monkeypatch, capsys):
    _attach(monkeypatch, _Lab(plan))
    assert main(["counters", "ct34", "be-g1-r0", "--pfc"]) == 0
    out = capsys.readouterr().out
    assert "Port Tx" in out and "3,592" in out and "UC3" not in out and "time_scale 2000" in out


@pytest.mark.parametrize("argv, said", [(["--json", "--watch"], "--json prints one document"),
                                        (["--watch", "0"], "more than 0")])
def test_watch_options_that_cannot_be_are_exit_2(argv, said, plan, monkeypatch, capsys):
    _attach(monkeypatch, _Lab(plan))
    assert main(["counters", "ct34", "be-g1-r0", *argv]) == 2
    assert said in capsys.readouterr().err


def test_watch_seconds_must_be_a_number():
    with pytest.raises(SystemExit) as e:
        main(["counters", "ct34", "be-g1-r0", "--watch", "soon"])
    assert e.value.code == 2


def test_an_unknown_lab_is_exit_2(capsys):
    assert main(["counters", "nolab-x9", "be-s1"]) == 2
    assert "'nolab-x9'" in capsys.readouterr().err
