"""The machine-wide neighbour-table limits: raised while labs need more, put back after the last."""
from __future__ import annotations

from pathlib import Path

import pytest

from harness.runtime import neighbours


@pytest.fixture
def sysctls(tmp_path: Path) -> Path:
    root = tmp_path / "sys"
    for key in neighbours.KEYS:
        (root / key).parent.mkdir(parents=True, exist_ok=True)
        (root / key).write_text("1024\n" if key.endswith("3") else "512\n")
    return root


def _values(root: Path) -> dict[str, int]:
    return {k: int((root / k).read_text()) for k in neighbours.KEYS}


def _quiet(phase: str, message: str) -> None:
    pass


def test_a_small_lab_changes_nothing(sysctls, tmp_path):
    assert neighbours.hold("small", 88, _quiet, sysctls, tmp_path / "run") == []
    assert _values(sysctls)["ipv6/neigh/default/gc_thresh3"] == 1024
    assert neighbours.release("small", sysctls, tmp_path / "run") == []


def test_a_large_lab_raises_then_puts_back(sysctls, tmp_path):
    said = []
    changes = neighbours.hold("big", 2426, lambda p, m: said.append(m), sysctls, tmp_path / "run")
    need = neighbours.need_of(2426)
    assert _values(sysctls)["ipv6/neigh/default/gc_thresh3"] == 2 * need
    assert _values(sysctls)["ipv4/neigh/default/gc_thresh2"] == need
    assert {c.key for c in changes} == set(neighbours.KEYS)
    assert "ipv6.neigh.default.gc_thresh3 1024 -> " in said[0]
    neighbours.release("big", sysctls, tmp_path / "run")
    assert _values(sysctls) == {k: 1024 if k.endswith("3") else 512 for k in neighbours.KEYS}


def test_two_labs_add_up_and_the_last_restores(sysctls, tmp_path):
    run = tmp_path / "run"
    neighbours.hold("a", 1000, _quiet, sysctls, run)
    neighbours.hold("b", 1000, _quiet, sysctls, run)
    both = neighbours.need_of(1000) * 2
    assert _values(sysctls)["ipv6/neigh/default/gc_thresh3"] == 2 * both
    neighbours.release("a", sysctls, run)
    assert _values(sysctls)["ipv6/neigh/default/gc_thresh3"] == 2 * neighbours.need_of(1000)
    neighbours.release("b", sysctls, run)
    assert _values(sysctls)["ipv6/neigh/default/gc_thresh3"] == 1024  # what the first lab found


def test_a_limit_already_high_enough_is_left_alone(sysctls, tmp_path):
    for key in neighbours.KEYS:
        (sysctls / key).write_text("100000\n")
    assert neighbours.hold("big", 2426, _quiet, sysctls, tmp_path / "run") == []
    assert neighbours.release("big", sysctls, tmp_path / "run") == []
    assert _values(sysctls)["ipv4/neigh/default/gc_thresh3"] == 100000
