"""docs/architecture.md held to the code: every module of harness/ is named in its package's
section (a module of a sub-package in that sub-package's row), and the layer table is the one
tests/architecture/test_layers.py enforces. A module added without a line in the map fails here."""
from __future__ import annotations

import fnmatch
import importlib.util
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HARNESS = ROOT / "harness"
DOC = ROOT / "docs" / "architecture.md"


def _sections(doc: str) -> dict[str, list[str]]:
    """`### harness/<pkg>/` sections by package ('' for the top level), their lines."""
    out: dict[str, list[str]] = {}
    current = None
    for line in doc.splitlines():
        m = re.match(r"### `harness/([\w/]*)`", line)
        if m:
            current = m.group(1).rstrip("/")
            out[current] = []
        elif line.startswith("#"):
            current = None
        elif current is not None:
            out[current].append(line)
    return out


def _named(name: str, tokens: list[str]) -> bool:
    return any(t == name or t.endswith("/" + name) or ("*" in t and fnmatch.fnmatch(name, t)) for t in tokens)


def unnamed(doc: str, modules: list[Path]) -> list[str]:
    """The modules (paths under harness/) the map does not name where they live."""
    sections = _sections(doc)
    missing = []
    for rel in modules:
        parts = rel.parts
        section = sections.get("" if len(parts) == 1 else parts[0])
        if section is None:
            missing.append(f"{rel}: docs/architecture.md has no section `harness/{parts[0]}/`")
            continue
        if len(parts) <= 2:
            if rel.name == "__init__.py" and len(parts) == 2:
                continue  # a package's face: its section is its description
            if not _named(rel.name, re.findall(r"`([^`]+)`", "\n".join(section))):
                missing.append(f"{rel}: not named in the section of harness/{parts[0] if len(parts) == 2 else ''}")
            continue
        sub = "/".join(parts[1:-1]) + "/"
        rows = [line for line in section if f"`{sub}`" in line or sub in line]
        if rel.name == "__init__.py":
            if not rows:
                missing.append(f"{rel.parent}/: no row for the package `{sub}`")
            continue
        tokens = [t for line in rows for t in re.findall(r"`([^`]+)`", line) + re.findall(r"\b([\w*]+\.py)\b", line)]
        if not _named(rel.name, tokens):
            missing.append(f"{rel}: not named in the row of `{sub}`")
    return missing


def _modules() -> list[Path]:
    return sorted(p.relative_to(HARNESS) for p in HARNESS.rglob("*.py"))


def test_every_module_is_named_in_the_map():
    missing = unnamed(DOC.read_text(), _modules())
    assert missing == [], "\n".join(missing)


def test_the_map_check_can_fail():
    """The positive control: a module the map does not name, at each depth, is found."""
    fake = [Path("core/nowhere.py"), Path("checks/ecmp/nowhere.py"), Path("nowhere/x.py"),
            Path("checks/newcheck/__init__.py")]
    found = unnamed(DOC.read_text(), _modules() + fake)
    assert len(found) == 4 and all("nowhere" in f or "newcheck" in f for f in found), found


def _layers_enforced() -> tuple[tuple[str, ...], ...]:
    spec = importlib.util.spec_from_file_location("layers_enforced", Path(__file__).with_name("test_layers.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.LAYERS


def test_the_layer_table_is_the_one_enforced():
    table: dict[int, set[str]] = {}
    for m in re.finditer(r"(?m)^\| (\d+) \| ([^|]+) \|", DOC.read_text()):
        names = re.findall(r"`([^`]+)`", m.group(2))
        table[int(m.group(1))] = {"harness." + n.removesuffix("/").removesuffix(".py") for n in names}
    enforced = {i: set(names) - {"harness", "topologies"} for i, names in enumerate(_layers_enforced())}
    assert table == enforced
