"""Timed experiments of labs side by side take turns (harness/plumbing/priority.timed_turn): a
second process waits while one holds the turn, gets it once the holder lets go or dies, and a
nested turn in one process shares the first. No root needed: the lock is a flock on a directory."""
from __future__ import annotations

import subprocess
import sys
import textwrap
import time

import pytest

from harness.core.errors import LabError
from harness.plumbing.priority import timed_turn

HOLDER = textwrap.dedent("""
    import sys
    from pathlib import Path
    from harness.plumbing.priority import timed_turn
    with timed_turn(Path(sys.argv[1])):
        print("held", flush=True)
        sys.stdin.readline()
""")


def _holder(run_dir) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(run_dir)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    return proc


def test_a_second_lab_waits_for_the_turn_and_gets_it_once_released(tmp_path):
    root = tmp_path / "run"
    (root / "labA").mkdir(parents=True)
    (root / "labB").mkdir()
    holder = _holder(root / "labA")
    try:
        with pytest.raises(LabError, match="held the machine for 0.3 s"):
            with timed_turn(root / "labB", wait_s=0.3):
                pass
        assert holder.stdin is not None
        holder.stdin.write("\n")
        holder.stdin.flush()
        t0 = time.monotonic()
        with timed_turn(root / "labB", wait_s=10) as waited:  # the control: the turn comes once let go
            assert waited < 10
        assert time.monotonic() - t0 < 10
    finally:
        holder.kill()
        holder.wait()


def test_a_holder_that_dies_gives_the_turn_back(tmp_path):
    (tmp_path / "labA").mkdir()
    holder = _holder(tmp_path / "labA")
    with pytest.raises(LabError):
        with timed_turn(tmp_path / "labA", wait_s=0.2):
            pass
    holder.kill()
    holder.wait()
    with timed_turn(tmp_path / "labA", wait_s=5) as waited:
        assert waited < 5


PROBE = textwrap.dedent("""
    import sys
    from pathlib import Path
    from harness.core.errors import LabError
    from harness.plumbing.priority import timed_turn
    try:
        with timed_turn(Path(sys.argv[1]), wait_s=0.3):
            print("got it")
    except LabError:
        print("waited")
""")


def _probe(run_dir) -> str:
    return subprocess.run([sys.executable, "-c", PROBE, str(run_dir)], capture_output=True, text=True,
                          timeout=60).stdout.strip()


def test_a_nested_turn_shares_the_first_and_the_turn_ends_with_the_outer(tmp_path):
    (tmp_path / "lab").mkdir()
    with timed_turn(tmp_path / "lab"):
        with timed_turn(tmp_path / "lab", wait_s=0.2) as inner:  # would time out if it took a lock of its own
            assert inner == 0.0
        assert _probe(tmp_path / "lab") == "waited"  # the inner turn's end did not let go
    assert _probe(tmp_path / "lab") == "got it"


SHARED = textwrap.dedent("""
    import sys
    from pathlib import Path
    from harness.core.errors import LabError
    from harness.plumbing.priority import timed_turn
    try:
        with timed_turn(Path(sys.argv[1]), shared=sys.argv[2] == "shared", wait_s=0.3):
            print("got it")
    except LabError:
        print("waited")
""")


def test_light_turns_share_the_machine_and_a_heavy_one_waits_for_them(tmp_path):
    (tmp_path / "lab").mkdir()

    def probe(kind: str) -> str:
        return subprocess.run([sys.executable, "-c", SHARED, str(tmp_path / "lab"), kind], capture_output=True,
                              text=True, timeout=60).stdout.strip()

    with timed_turn(tmp_path / "lab", shared=True):
        assert probe("shared") == "got it"  # another failover beside this one
        assert probe("exclusive") == "waited"  # an incast waits
    assert probe("exclusive") == "got it"  # the control: once the light ones are done
    with timed_turn(tmp_path / "lab"):
        assert probe("shared") == "waited"  # nothing beside a heavy one
