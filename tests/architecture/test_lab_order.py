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
