"""What a topology file or a Python user imports comes from `harness`: every name docs/python.md
lists imports from it (and nothing is exported that the page does not list), and every module
path that moved still imports, as the same module, with a DeprecationWarning naming the new path."""
from __future__ import annotations

import importlib
import re
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

import harness
from harness.moved import MOVED

ROOT = Path(__file__).resolve().parents[2]


def listed() -> set[str]:
    page = (ROOT / "docs" / "python.md").read_text()
    table = page.split("<!-- public-surface -->")[1].split("<!-- /public-surface -->")[0]
    return {name for row in table.splitlines()[2:] for name in re.findall(r"`(\w+)`", row.split("|")[2])}


def test_every_listed_name_imports_from_harness_and_nothing_else_is_exported():
    names = listed()
    assert len(names) > 30
    assert names == set(harness.__all__)
    for name in sorted(names):
        assert getattr(harness, name) is not None, name
    with pytest.raises(ImportError):  # the control: a name the page does not list
        exec("from harness import NoSuchThing", {})


def test_import_harness_stays_light():
    code = "import harness, sys; print(sorted(sys.modules)); harness.Cluster; print(sorted(sys.modules))"
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    loaded, named = run.stdout.splitlines()
    # every traffic process in a lab namespace imports the package: it loads only the errors
    for heavy in ("harness.core.model", "harness.lab", "pyroute2", "harness.checks.base", "scapy", "numpy"):
        assert f"'{heavy}'" not in loaded, heavy
    assert "'harness.core.errors'" in loaded
    assert "'harness.core.model'" in named  # the control: naming a declaration loads them


@pytest.mark.parametrize("old", sorted(MOVED))
def test_a_moved_path_still_imports_with_a_warning(old):
    sys.modules.pop(old, None)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        module = importlib.import_module(old)
    assert module is importlib.import_module(MOVED[old])
    assert module.__spec__.name == MOVED[old]  # the module keeps its own name
    assert any(issubclass(w.category, DeprecationWarning) and MOVED[old] in str(w.message) for w in caught)


def test_the_readme_shape_of_import_works():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from harness.model import Cluster
    assert Cluster is harness.Cluster
    with pytest.raises(ModuleNotFoundError):  # the control: a path that never existed
        importlib.import_module("harness.no_such_module")
