"""docs/declaration.md is what scripts/gen_declaration_ref.py writes from the code now: every
declaration class and field, its type, default and limits."""
from __future__ import annotations

import dataclasses
import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def generator():
    spec = importlib.util.spec_from_file_location("gen_declaration_ref", ROOT / "scripts" / "gen_declaration_ref.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_page_is_what_the_generator_writes_now():
    gen = generator()
    assert gen.PAGE.read_text() == gen.reference(), (
        "docs/declaration.md is stale: run .venv/bin/python scripts/gen_declaration_ref.py")


def test_every_field_of_every_declaration_class_is_on_the_page():
    gen = generator()
    page = gen.reference()
    listed = {cls for cls, _ in gen.classes()}
    from harness.core.declarations import DECLARATIONS

    assert listed == set(DECLARATIONS)
    for cls in listed:
        section = page.split(f"## {cls.__name__}\n", 1)[1].split("\n## ", 1)[0]
        for f in dataclasses.fields(cls):
            assert f"| `{f.name}` |" in section, (cls.__name__, f.name)


def test_limits_and_defaults_come_from_the_code():
    page = generator().reference()
    backend = page.split("## Backend\n", 1)[1].split("\n## ", 1)[0]
    assert "| `rails` | `int` | `4` | ≤ 16 |" in backend  # declcheck.LIMITS
    assert "| `kind` | `str` | `'rail-optimized'` | one of `rail-only`, `rail-optimized` |" in backend  # CHOICES
    assert "| `spines` | `int \\| None` | `None` | ≤ 128; None: follows the rest (below) |" in backend
    assert "## Defaults that follow the rest" in page and "non-blocking" in page
    tenant = page.split("## Tenant\n", 1)[1].split("\n## ", 1)[0]
    assert "| `vni` | `int` | required |" in tenant


def test_a_stale_page_is_found(tmp_path, monkeypatch):
    gen = generator()
    monkeypatch.setattr(gen, "PAGE", tmp_path / "declaration.md")
    monkeypatch.setattr(gen, "ROOT", tmp_path)
    monkeypatch.setattr("sys.argv", ["gen", "--check"])
    assert gen.main() == 1  # missing
    monkeypatch.setattr("sys.argv", ["gen"])
    assert gen.main() == 0 and gen.PAGE.read_text() == gen.reference()
    monkeypatch.setattr("sys.argv", ["gen", "--check"])
    assert gen.main() == 0  # the control: written, up to date
    gen.PAGE.write_text(gen.reference().replace("≤ 16", "≤ 17", 1))
    assert gen.main() == 1
