"""The layers of harness/ look only down, and no module imports itself round a circle.

Every import counts, the ones inside functions too (a late import is still a dependency), and
those under `if TYPE_CHECKING:` as well: a type named from a floor above is a dependency on it
all the same (the value types of what a lab shows live in core/observed.py for that reason).
The layers, lowest first (docs/architecture.md):

0 core/      declarations, validation, plan, addressing, tenancy, ACL, HwSKU tables: no I/O
1 plumbing/  waiting, signals, namespaces, scheduling priority; LabView, the typed protocol
             of a running lab (it names only core's types, so any layer may use it)
2 render/    artifacts from a plan; catalog.py, finding a declaration
3 observe/   what a running lab shows (FIBs, sessions, counters); traffic/, the generators
4 runtime/   netns and containerlab
5 lab.py     the door to a running lab
6 rdma/      the microVM lane
7 checks/    one plug-in per check: measure, then judge; remote/, a fabric reached over SSH as a LabView
8 faults/    what breaks a lab on purpose, and undoes it; each names the check that catches it
9 report/    results, JUnit, HTML, provenance; recorded observations judged again
10 cli/      the fablab command; pytest_plugin.py
"""
from __future__ import annotations

import ast
import functools
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HARNESS = ROOT / "harness"

LAYERS: tuple[tuple[str, ...], ...] = (  # a package or a module each; the longest name that fits decides
    ("harness", "harness.core"),
    ("harness.plumbing",),
    ("harness.render", "harness.catalog", "topologies"),
    ("harness.observe", "harness.traffic"),
    ("harness.runtime",),
    ("harness.lab",),
    ("harness.rdma",),
    ("harness.checks", "harness.remote"),
    ("harness.faults",),
    ("harness.report",),
    ("harness.cli", "harness.pytest_plugin"),
)


def layer_of(module: str) -> int | None:
    best, found = -1, None
    for i, names in enumerate(LAYERS):
        for name in names:
            if (module == name or module.startswith(name + ".")) and len(name) > best:
                best, found = len(name), i
    return found


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path, here: str | None = None) -> set[str]:
    """Every fablab module `path` (module `here`, by default its name in the tree) imports,
    at any depth of its code."""
    here = here or module_name(path)
    package = here if path.name == "__init__.py" else here.rpartition(".")[0]
    found: set[str] = set()
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(up + ([base] if base else []))
            for alias in node.names:  # `from harness import wait` names a module
                candidate = f"{base}.{alias.name}"
                found.add(candidate if _is_module(candidate) else base)
    return {m for m in found if m.split(".")[0] in ("harness", "topologies")}


def _is_module(name: str) -> bool:
    path = ROOT.joinpath(*name.split("."))
    return path.with_suffix(".py").exists() or (path / "__init__.py").exists()


@functools.cache
def graph() -> dict[str, set[str]]:
    modules = {module_name(p): p for p in sorted(HARNESS.rglob("*.py"))}
    return {name: {m for m in imports_of(path) if m != name} for name, path in modules.items()}


def test_every_module_has_a_layer():
    assert [m for m in graph() if layer_of(m) is None] == []


def test_imports_only_look_down():
    upward = [f"{m} (layer {layer_of(m)}) imports {d} (layer {layer_of(d)})"
              for m, deps in graph().items() for d in sorted(deps)
              if d != "harness" and layer_of(d) is not None and layer_of(d) > layer_of(m)]
    assert upward == []


def test_no_import_cycle():
    g = graph()
    assert cycles({m: {d for d in deps if d in g} for m, deps in g.items()}) == []


def cycles(g: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), each sorted. The
    package face `harness` (harness/__init__.py re-exports the core) is left out: importing
    any `harness.x` runs it, which is no dependency of x on what it re-exports."""
    g = {m: {d for d in deps if d != "harness"} for m, deps in g.items() if m != "harness"}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in g.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(g):
        if v not in index:
            visit(v)
    return found


def test_the_scan_sees_late_imports_and_cycles(tmp_path):
    # Positive controls: a function-level import and a TYPE_CHECKING one are found, and a
    # circle of two is one.
    f = tmp_path / "probe.py"
    f.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from harness.lab import Lab\n"
                 "def f():\n    from harness.checks import registry\n")
    assert imports_of(f, "harness.probe") == {"harness.checks.registry", "harness.lab"}
    assert cycles({"a": {"b"}, "b": {"a"}, "c": set()}) == [["a", "b"]]
    assert layer_of("harness.checks.ecmp") > layer_of("harness.lab") > layer_of("harness.runtime.netns")


def test_checks_and_plumbing_never_import_the_lab_or_a_runtime():
    """They see a running lab through LabView only (DESIGN: "the Lab is the only door")."""
    door = [f"{m} imports {d}" for m, deps in graph().items() for d in sorted(deps)
            if m.startswith(("harness.checks", "harness.plumbing"))
            and (d == "harness.lab" or d.startswith("harness.runtime"))]
    assert door == []


def test_no_function_over_100_lines():
    long = [f"{p.relative_to(ROOT)}:{n.lineno} {n.name} ({n.end_lineno - n.lineno + 1} lines)"
            for p in sorted(HARNESS.rglob("*.py")) for n in ast.walk(ast.parse(p.read_text()))
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.end_lineno - n.lineno >= 100]
    assert long == []


def test_no_module_over_450_lines():
    long = {str(p.relative_to(ROOT)): n for p in HARNESS.rglob("*.py")
            if (n := len(p.read_text().splitlines())) > 450}
    assert long == {}


def test_no_test_module_name_is_used_twice():
    """pytest imports tests/ and labs/ by basename (no packages): a name in both stops
    `pytest tests labs` at collection."""
    names = [p.name for d in ("tests", "labs") for p in (ROOT / d).rglob("test_*.py")]
    assert sorted({n for n in names if names.count(n) > 1}) == []
