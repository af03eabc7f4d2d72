"""No check imports another: what checks share lives in harness/checks/common/ (issue 69). The
imports between checks that are left are listed here, each to move to common/; a new one fails,
and one that is gone must leave the list, so the list only shrinks."""
from __future__ import annotations

import ast
import importlib
import sys
from pathlib import Path

import pytest

from harness.checks.registry import MODULES
from harness.moved import MOVED

ROOT = Path(__file__).resolve().parents[2]
CHECKS = ROOT / "harness" / "checks"
SHARED = ("harness.checks.base", "harness.checks.registry", "harness.checks.common", "harness.checks.converged",
          "harness.checks.sessions_back")

LEFT = {  # (importer, imported), by check name: what each still takes from another check
    ("dcqcn", "collectives"), ("dcqcn", "pfc"), ("pfc", "collectives"),  # the incast, its flows
    ("deadlock", "cabling"),  # the kernel's veth peers
    ("ecmp-superspine", "ecmp"), ("failover", "ecmp"), ("fe-tcp", "ecmp"), ("rdma", "ecmp"),  # QPs, ports seen
    ("fe-tcp", "failover"),  # the failure elements
}


def check_of(module: str) -> str | None:
    """The registered check a module belongs to: its package, or a flat module of its name
    (`failover_run` is the failover check's); None for what checks share."""
    if not module.startswith("harness.checks.") or any(module == s or module.startswith(s + ".") for s in SHARED):
        return None
    best = None
    for name, path in MODULES:
        if module == path or module.startswith(path + ".") or module.startswith(path + "_"):
            if best is None or len(path) > len(best[1]):
                best = (name, path)
    return best[0] if best else None


def edges(root: Path = CHECKS) -> set[tuple[str, str]]:
    """(importer, imported) of every import between checks in the tree at `root` (harness/checks)."""
    found = set()
    for path in root.rglob("*.py"):
        parts = path.relative_to(root).with_suffix("").parts
        module = ".".join(("harness", "checks", *parts)).removesuffix(".__init__")
        mine = check_of(module)
        if mine is None:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                targets = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
                other = next((c for t in targets if (c := check_of(t)) is not None), None)
                if other is not None and other != mine:
                    found.add((mine, other))
    return found


def test_no_check_imports_another_beyond_those_left_to_move():
    found = edges()
    assert found - LEFT == set(), "a check imports another: move what they share to harness/checks/common/"
    assert LEFT - found == set(), "these no longer import each other: take them off LEFT"


def test_the_import_check_can_fail(tmp_path):
    """The positive control: a check module that imports another check is found (a tree made
    for the purpose), and one that imports what checks share is not."""
    (tmp_path / "routing_probe.py").write_text("from harness.checks.cabling import kernel_ports\n")
    (tmp_path / "pfc").mkdir()
    (tmp_path / "pfc" / "judge.py").write_text("from harness.checks.common.drops import why_dropped\n")
    assert edges(tmp_path) == {("routing", "cabling")}
    assert check_of("harness.checks.failover_run") == "failover" and check_of("harness.checks.common.bounds") is None


def test_what_moved_to_common_still_imports_from_its_old_path_with_a_warning():
    for old in ("harness.checks.ecmp_bound", "harness.checks.lossless_drops"):
        assert not (ROOT / (old.replace(".", "/") + ".py")).exists()  # one copy: the new
        sys.modules.pop(old, None)
        with pytest.warns(DeprecationWarning, match=MOVED[old].replace(".", r"\.")):
            module = importlib.import_module(old)
        assert module is importlib.import_module(MOVED[old])
