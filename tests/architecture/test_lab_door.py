"""The Lab is the only door: nothing outside harness/runtime/ imports a runtime module.

Checks, traffic, observers, labs and the CLI reach a running lab through `Lab` and the
`Runtime` protocol, so they run unchanged on every runtime (DESIGN.md)."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# The interface: the registry (`harness.runtime`), the protocol (`base`), the lab's state on disk,
# and the traffic testbed (two namespaces without a plan, for the generators' own tests and bench).
ALLOWED = {"harness.runtime", "harness.runtime.base", "harness.runtime.state", "harness.runtime.testbed"}


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


# ---------------------------------------------------------------------- LabView: what a check may use

# The layers `Lab` may stand on: the pure core, the runtimes behind it and the observers.
LAB_MAY_IMPORT = ("harness.core.capabilities", "harness.core.errors", "harness.core.inventory", "harness.core.lossless_counters",
                  "harness.core.model", "harness.core.observed",
                  "harness.core.plan", "harness.core.switchconfigs",
                  "harness.plumbing.labview", "harness.runtime", "harness.observe")
# Where a lab is seen through LabView only: neither its state on disk nor its runtime.
VIEWERS = ("harness/checks", "harness/observe", "harness/traffic", "harness/rdma", "docs/examples")


def harness_imports(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            found += [node.module] + ([f"harness.{a.name}" for a in node.names] if node.module == "harness" else [])
    return [n for n in found if n.startswith("harness.")]


def outside_the_door(path: Path) -> list[str]:
    return [n for n in harness_imports(path) if not any(n == m or n.startswith(f"{m}.") for m in LAB_MAY_IMPORT)]


def test_the_lab_stands_on_core_runtime_and_observe_only():
    assert outside_the_door(ROOT / "harness" / "lab.py") == []


def test_the_door_scan_sees_a_higher_layer(tmp_path):
    for source in ("from harness.rdma.session import run_rdma\n", "from harness import rdma\n",
                   "import harness.checks.cabling\n"):
        f = tmp_path / "x.py"
        f.write_text(source)
        assert outside_the_door(f), source


def _lab_stand_in(plan):
    from harness.lab import Lab
    from harness.runtime import get_runtime
    from harness.runtime.state import LabState

    state = LabState(lab="door", runtime="netns", topology="ai-cluster", cluster={}, namespaces=())
    return Lab(state, plan, get_runtime("netns"))  # nothing booted: only its shape is looked at


def test_a_lab_is_a_labview_with_the_same_signatures(ai_plan):
    import inspect

    from harness.lab import Lab
    from harness.plumbing.labview import LabView

    lab = _lab_stand_in(ai_plan)
    assert isinstance(lab, LabView)
    members = [name for name, v in vars(LabView).items() if not name.startswith("_") and callable(v)]
    assert {"ns_exec", "netlink", "cabling_scope", "kernel_port_names", "shortfalls"} <= set(members)
    for name in members:
        want, have = inspect.signature(getattr(LabView, name)), inspect.signature(getattr(Lab, name))
        assert [(p.name, p.default, p.kind) for p in want.parameters.values()] == \
            [(p.name, p.default, p.kind) for p in have.parameters.values()], name
    assert lab.run_dir.name == "door"


def test_something_short_of_a_lab_is_no_labview(ai_plan):
    from harness.plumbing.labview import LabView

    class NoScope:  # the control: every member of a Lab but one
        def __getattr__(self, name):
            if name == "cabling_scope":
                raise AttributeError(name)
            return getattr(lab, name)

    lab = _lab_stand_in(ai_plan)
    assert not isinstance(NoScope(), LabView)


def lab_internals_used(path: Path) -> list[str]:
    """`lab.state` or `lab.runtime` (also `self.lab.…`) in a module that sees labs as LabView."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Attribute) and node.attr in ("state", "runtime"):
            owner = node.value
            if (isinstance(owner, ast.Name) and owner.id == "lab") or \
                    (isinstance(owner, ast.Attribute) and owner.attr == "lab"):
                found.append(f"{path.name}:{node.lineno}: lab.{node.attr}")
    return found


def test_checks_see_neither_the_lab_state_nor_its_runtime():
    used = [u for folder in VIEWERS for path in sorted((ROOT / folder).rglob("*.py")) for u in lab_internals_used(path)]
    assert used == [], used


def test_the_internals_scan_sees_lab_state(tmp_path):
    f = tmp_path / "x.py"
    f.write_text("def check(lab):\n    return lab.state.runtime == 'clab' or self.lab.runtime\n")
    assert len(lab_internals_used(f)) == 2


def test_the_unit_tests_fake_lab_is_a_labview_with_the_same_signatures(ai_plan):
    import inspect

    from fakelab import FakeLab, NotScripted
    from harness.plumbing.labview import LabView

    fake = FakeLab(ai_plan, mtus={"gpu01": {"eth1": 9000}})
    assert isinstance(fake, LabView)
    members = [name for name, v in vars(LabView).items() if not name.startswith("_") and callable(v)]
    for name in members:
        want, have = inspect.signature(getattr(LabView, name)), inspect.signature(getattr(FakeLab, name))
        assert [(p.name, p.default, p.kind) for p in want.parameters.values()] == \
            [(p.name, p.default, p.kind) for p in have.parameters.values()], name
    assert fake.mtus("gpu01") == {"eth1": 9000}
    with pytest.raises(NotScripted, match=r"FakeLab.mtus\('gpu02',\)"):  # the control: what was not scripted
        fake.mtus("gpu02")


def test_a_fabric_over_ssh_is_a_labview_with_the_same_signatures(ai_plan):
    """`fablab check --via ssh` hands the checks a RemoteView: the same face, every member."""
    import inspect

    from harness.core.inventory import Inventory, Reach
    from harness.plumbing.labview import LabView
    from harness.remote.view import RemoteView

    view = RemoteView(ai_plan, Reach(Inventory("inventory.yml", "ai-cluster", ())), "staged")
    assert isinstance(view, LabView)
    members = [name for name, v in vars(LabView).items() if not name.startswith("_") and callable(v)]
    for name in members:
        want, have = inspect.signature(getattr(LabView, name)), inspect.signature(getattr(RemoteView, name))
        assert [(p.name, p.default, p.kind) for p in want.parameters.values()] == \
            [(p.name, p.default, p.kind) for p in have.parameters.values()], name
