"""The Lab is the only door: nothing outside harness/runtime/ imports a runtime module.

Checks, traffic, observers, labs and the CLI reach a running lab through `Lab` and the
`Runtime` protocol, so they run unchanged on every runtime (DESIGN.md)."""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# The interface: the registry (`harness.runtime`), the protocol (`base`) and the lab's state on disk.
ALLOWED = {"harness.runtime", "harness.runtime.base", "harness.runtime.state"}


def imported_runtime_modules(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            if node.module == "harness.runtime":
                names = [f"harness.runtime.{a.name}" for a in node.names
                         if a.name not in ("get_runtime", "RUNTIMES", "Runtime")]
        else:
            continue
        found += [n for n in names if n.startswith("harness.runtime") and n not in ALLOWED
                  and not any(n.startswith(f"{a}.") and a != "harness.runtime" for a in ALLOWED)]
    return found


def test_only_harness_runtime_imports_a_runtime_module():
    offenders = {}
    for folder in ("harness", "labs", "scripts"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            if path.is_relative_to(ROOT / "harness" / "runtime"):
                continue
            bad = imported_runtime_modules(path)
            if bad:
                offenders[str(path.relative_to(ROOT))] = bad
    assert not offenders, f"runtime modules imported outside harness/runtime/: {offenders}"


def test_the_scan_sees_an_offending_import(tmp_path):
    # Positive control: the scanner must flag each form of import, or the test above proves nothing.
    for source in ("from harness.runtime.netns import observe\n", "import harness.runtime.nsutil\n",
                   "from harness.runtime import nsutil\n"):
        f = tmp_path / "x.py"
        f.write_text(source)
        assert imported_runtime_modules(f), source
    f.write_text("from harness.runtime import get_runtime\nfrom harness.runtime.base import quiet\n")
    assert not imported_runtime_modules(f)
