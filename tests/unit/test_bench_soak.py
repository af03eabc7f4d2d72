"""scripts/bench_soak.py, the soak of issue 37, without a lab: what each case runs and what a
failing run keeps."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from harness.faults.table import FAULTS, check_of
from harness.runtime import state

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("bench_soak", ROOT / "scripts" / "bench_soak.py")
soak = importlib.util.module_from_spec(spec)
sys.modules.setdefault("bench_soak", soak)  # its dataclasses look their module up
spec.loader.exec_module(soak)


def test_the_break_fix_loop_is_the_lessons_own():
    (loop,) = soak.sequence("break-fix", "ai-cluster")
    assert [s.argv for s in loop] == [("break", "bfd-off"), ("check", "failover"), ("fix",), ("check", "failover")]
    assert [s.want for s in loop] == [0, soak.FAIL, 0, soak.PASS]  # caught, then fixed


def test_every_fault_is_broken_caught_and_fixed_by_its_own_check():
    loops = soak.sequence("faults", "ai-cluster")
    assert [loop[0].argv[1] for loop in loops] == [f.name for f in FAULTS]
    for f, loop in zip(FAULTS, loops):
        assert loop[1].argv == ("check", check_of(f.caught_by)) == loop[3].argv
        assert (loop[1].want, loop[3].want) == (soak.FAIL, soak.PASS)


def test_a_failing_run_keeps_its_results_output_and_the_labs_logs(tmp_path, monkeypatch):
    monkeypatch.setattr(state, "RUN_ROOT", tmp_path / "run")
    (tmp_path / "run" / "lab1" / "be-s1").mkdir(parents=True)
    (tmp_path / "run" / "lab1" / "be-s1" / "bgpd.log").write_text("ADJCHANGE\n")
    (tmp_path / "run" / "lab1" / "bfd-dp.log").write_text("be-s1 Ethernet0: up -> down\n")
    (tmp_path / "run" / "lab1" / "state.json").write_text("{}")
    results = tmp_path / "results"
    (results / "r1").mkdir(parents=True)
    (results / "r1" / "failover-spine.json").write_text("{}")
    log = tmp_path / "output.txt"
    log.write_text("$ fablab check\n")
    soak.keep(tmp_path / "kept", "lab1", results, log)
    kept = tmp_path / "kept"
    assert (kept / "results" / "r1" / "failover-spine.json").exists() and (kept / "output.txt").exists()
    assert (kept / "logs" / "be-s1" / "bgpd.log").read_text() == "ADJCHANGE\n"
    assert (kept / "logs" / "bfd-dp.log").exists() and not (kept / "logs" / "state.json").exists()


def test_the_tally_counts_each_step_and_its_mean_time():
    tally = soak.Tally()
    tally.count("failover", True, 40.0)
    tally.count("failover", False, 60.0)
    tally.count("bfd-off: caught", True, 10.0)
    assert tally.passed == {"failover": 1, "bfd-off: caught": 1} and tally.failed == {"failover": 1}
    assert tally.mean_s("failover") == 50.0 and tally.mean_s("never") == 0.0


def test_minutes_stop_the_soak_between_whole_runs(tmp_path, monkeypatch, capsys):
    ran = []
    monkeypatch.setattr(soak, "run", lambda argv, log, timeout=0: ran.append(argv[3:5]) or soak.PASS)
    monkeypatch.setattr(soak.time, "monotonic", lambda: 100.0 if len(ran) >= 2 else 0.0)  # past it after run 2
    args = type("Args", (), {"runs": 5, "topology": "ai-cluster", "minutes": 1.0})()
    soak.soak_case("failover", args, soak.Tally(), tmp_path, deadline=60.0)
    assert ran == [["check", "soak"]] * 2  # two whole runs of `fablab check soak --only failover`, no third
    assert "2 of 5 runs done by --minutes 1" in capsys.readouterr().err


def test_frr_debugs_go_to_the_switch_in_one_vtysh_call_after_configure_terminal():
    argv = soak.frr_debug_argv("soak", "be-s1")
    assert argv[argv.index("vtysh") + 1:argv.index("vtysh") + 3] == ["soak", "be-s1"]
    commands = [argv[i + 1] for i, a in enumerate(argv) if a == "-c"]
    assert commands == ["configure terminal", *soak.FRR_DEBUGS] and "debug bgp zebra" in commands
