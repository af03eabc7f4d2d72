"""KSM for bgpd's zeroed rings: only for labs that need it, ksmd's settings raised while one runs
(at the boot rate while any boots, the resting rate after), put back by the last lab to go."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.catalog import load_fabric
from harness.core.plan import make_plan
from harness.runtime import bgpd_rings, ksm

ORIGINAL = {"run": 0, "use_zero_pages": 0, "pages_to_scan": 100, "sleep_millisecs": 20}


@pytest.fixture
def root(tmp_path: Path) -> Path:
    path = tmp_path / "ksm"
    path.mkdir()
    for key, value in ORIGINAL.items():
        (path / key).write_text(f"{value}\n")
    return path


@pytest.fixture(autouse=True)
def no_preload(monkeypatch):
    # KSM is the fallback for a bgpd that the ring preload cannot reach (harness/runtime/bgpd_rings.py)
    monkeypatch.setattr(bgpd_rings, "applies", lambda: False)


@pytest.fixture(scope="module")
def xlarge():
    return make_plan(load_fabric("xlarge"))


def _values(root: Path) -> dict[str, int]:
    return {k: int((root / k).read_text()) for k in ORIGINAL}


def test_where_bgpds_rings_are_preloaded_away_no_lab_needs_ksm(xlarge, root, tmp_path, monkeypatch):
    assert ksm.wanted(xlarge, rings_preloaded=False)  # the control
    assert not ksm.wanted(xlarge, rings_preloaded=True)
    monkeypatch.setattr(bgpd_rings, "applies", lambda: True)
    assert ksm.hold("big", xlarge, lambda *a: None, root, tmp_path / "run") == []
    assert _values(root) == ORIGINAL


def test_a_small_lab_changes_nothing(ai_plan, root, tmp_path):
    assert not ksm.wanted(ai_plan)
    assert ksm.hold("small", ai_plan, lambda *a: None, root, tmp_path / "run") == []
    assert _values(root) == ORIGINAL and not (tmp_path / "run" / "small" / ksm.RECORD).exists()


def test_a_large_lab_runs_ksmd_while_it_lives_and_the_last_puts_it_back(xlarge, root, tmp_path):
    run = tmp_path / "run"
    said = []
    assert ksm.wanted(xlarge)
    changes = ksm.hold("a", xlarge, lambda phase, text: said.append(text), root, run)
    assert {c.key for c in changes} == {"run", "use_zero_pages", "pages_to_scan"}
    assert _values(root) == ksm.SETTINGS and "put back when the last lab goes" in said[0]
    ksm.hold("b", xlarge, lambda *a: None, root, run)  # a second lab boots meanwhile
    ksm.rest("a", root, run)
    assert _values(root)["pages_to_scan"] == ksm.SETTINGS["pages_to_scan"]  # b still boots: no rest yet
    ksm.rest("b", root, run)
    assert _values(root)["pages_to_scan"] == ksm.RESTING
    assert ksm.release("a", root, run) == [] and _values(root)["run"] == 1  # b still runs
    back = ksm.release("b", root, run)
    assert _values(root) == ORIGINAL and back[0].key == "run"  # ksmd stopped first
    assert ksm.release("b", root, run) == []  # twice is harmless


def test_processes_started_in_the_block_are_mergeable_and_this_one_is_not_after():
    code = ("from harness.runtime import ksm; import subprocess, ctypes\n"
            "with ksm.mergeable(True):\n"
            "    p = subprocess.Popen(['sleep', '5'])\n"
            "print(open(f'/proc/{p.pid}/ksm_stat').read().split('ksm_merge_any: ')[1].split()[0],"
            " ctypes.CDLL(None).prctl(68, 0, 0, 0, 0))\n"
            "p.kill()\n")
    if not Path("/proc/self/ksm_stat").exists():
        pytest.skip("this kernel has no per-process KSM (Linux 6.4)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30,
                          cwd=Path(__file__).resolve().parents[2], env={**os.environ, "PYTHONPATH": "."})
    assert done.stdout.split() == ["yes", "0"], done.stderr
