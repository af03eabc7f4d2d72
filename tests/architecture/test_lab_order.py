"""make test hands the longest lab files out first (tests/integration/conftest.py): each file
it names must exist, or the order would quietly fall back to the alphabet."""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_every_file_named_longest_first_exists():
    tree = ast.parse((ROOT / "tests/integration/conftest.py").read_text())
    listed = next(ast.literal_eval(n.value) for n in tree.body if isinstance(n, ast.Assign)
                  and any(getattr(t, "id", "") == "LONGEST_FIRST" for t in n.targets))
    assert len(listed) >= 4 and len(set(listed)) == len(listed)
    assert [p for p in listed if not (ROOT / p).is_file()] == []


def test_make_test_keeps_the_order_it_is_given():
    """xdist's --dist loadfile sorts files by how many tests each holds unless told not to; the
    order above went unused that way until 2026-12-05."""
    labs = next(line for line in (ROOT / "Makefile").read_text().splitlines() if "--dist loadfile" in line)
    assert "--no-loadscope-reorder" in labs.split()
