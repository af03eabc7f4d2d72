"""Daemons started are appended to the lab's journal, not written into a whole new state each:
`load` reads them back, each once, in start order; a line cut short by a crash is skipped."""
from __future__ import annotations

from harness.core.kinds import RuntimeName
from harness.runtime import state
from harness.runtime.state import Daemon, LabState


def _state(lab: str) -> LabState:
    return LabState(lab=lab, runtime=RuntimeName.NETNS, topology="ai-cluster", cluster={}, namespaces=("fl_j_a",))


def test_started_daemons_are_read_back_once_in_order(monkeypatch, tmp_path):
    monkeypatch.setattr(state, "RUN_ROOT", tmp_path)
    s = _state("j")
    state.save(s)
    state.record_started("j", (Daemon("be-s1", "zebra", 11), Daemon("be-s1", "bgpd", 12)))
    state.record_started("j", (Daemon("be-s2", "zebra", 13),))
    assert [d.pid for d in state.load("j").daemons] == [11, 12, 13]
    state.save(s.with_(daemons=(Daemon("be-s1", "zebra", 11), Daemon("be-s1", "bgpd", 12))))  # the boot's end
    assert [d.pid for d in state.load("j").daemons] == [11, 12, 13]  # each once


def test_a_line_cut_short_is_skipped_not_an_unreadable_state(monkeypatch, tmp_path):
    monkeypatch.setattr(state, "RUN_ROOT", tmp_path)
    state.save(_state("k"))
    state.record_started("k", (Daemon("be-s1", "zebra", 21),))
    with open(tmp_path / "k" / state.JOURNAL, "a") as f:
        f.write('{"node": "be-s1", "name": "bgp')
    assert [d.pid for d in state.load("k").daemons] == [21]


def test_a_gpu4096_boot_writes_a_line_per_daemon(monkeypatch, tmp_path):
    monkeypatch.setattr(state, "RUN_ROOT", tmp_path)
    state.save(_state("m"))
    for i in range(1098):  # 366 switches × 3 daemons
        state.record_started("m", (Daemon(f"sw{i // 3}", ("zebra", "bgpd", "bfdd")[i % 3], 1000 + i),))
    journal = (tmp_path / "m" / state.JOURNAL).read_text()
    assert journal.count("\n") == 1098 and len(journal) < 100_000
    assert len(state.load("m").daemons) == 1098
