"""A check is a plug-in (harness/checks/base.py): the registry loads each module's CHECK late,
every result is an Outcome whose reason is built one way, and the example of
docs/adding-a-check.md is a real check. No root: the labs here are stand-ins."""
from __future__ import annotations

import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from harness.checks.base import Case, Check, Outcome
from harness.checks.registry import MODULES, NAMES, load, run_checks, select
from harness.core.errors import InputError
from harness.core.model import Plane

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "docs" / "examples" / "check_example.py"


def test_the_doc_shows_the_example_as_it_is():
    doc = (ROOT / "docs" / "adding-a-check.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", doc, re.S)
    assert EXAMPLE.read_text() in blocks


def test_every_registered_module_exports_its_check():
    checks = select(None)
    assert [c.name for c in checks] == list(NAMES) == [name for name, _ in MODULES]
    for check in checks:
        assert isinstance(check, Check) and check.claim and check.cases
        assert all(isinstance(case, Case) and callable(case.run) for case in check.cases)
    cases = [case.name for check in checks for case in check.cases]
    assert len(cases) == len(set(cases))  # each case has a name of its own in the reports


def test_the_loader_takes_a_path_or_a_module_and_refuses_a_module_without_a_check():
    assert load(str(EXAMPLE)).name == "host-mtu"
    assert load("harness.checks.cabling").name == "cabling"
    with pytest.raises(InputError, match="exports CHECK"):
        load("harness.checks.ecmp_bound")
    with pytest.raises(InputError, match="no such check module"):
        load(str(ROOT / "docs" / "examples" / "missing.py"))


def _imported(*args: str) -> set[str]:
    run = subprocess.run([sys.executable, "-X", "importtime", *args], capture_output=True, text=True, timeout=120,
                         cwd=ROOT)
    return set(re.findall(r"\|\s+([\w.]+)\s*$", run.stderr, re.M))


def test_the_cli_loads_no_check_and_no_scipy_or_matplotlib():
    modules = _imported("-m", "harness.cli", "check", "--help")
    assert not {m for m in modules if m.split(".")[0] in ("scipy", "matplotlib")}
    checks = {m for m in modules if m.startswith("harness.checks.")}
    assert checks <= {"harness.checks.base", "harness.checks.registry"}, checks


@dataclass(frozen=True)
class _Spread(Outcome):
    flows: int
    per_path: dict

    held, broken = "spread", "NOT spread"
    shown = 2

    def sentence(self) -> str:
        return f"{self.flows} flows: " + ", ".join(f"{k} {v}" for k, v in self.per_path.items())


def test_one_way_to_word_a_verdict():
    ok = _Spread(8, {"a": 4, "b": 4}, seconds=1.0)
    assert ok.passed is True and ok.reason == "spread: 8 flows: a 4, b 4"
    bad = _Spread(8, {"a": 8, "b": 0}, problems=("a carried 8", "b carried 0", "1 lost"))
    assert bad.passed is False and bad.reason == "NOT spread: a carried 8; b carried 0 (+1 more) | 8 flows: a 8, b 0"
    assert bad.figures() == {"seconds": 0.0, "flows": 8, "per_path": {"a": 8, "b": 0}}
    assert _Spread(1, {}, seconds=2.5).seconds == 2.5 and _Spread(1, {}).problems == ()


@dataclass(frozen=True)
class _Lab:  # what the example reads: the plan, and each node's kernel MTUs
    plan: object
    lowered: tuple[str, str, int] | None = None

    def mtus(self, node: str) -> dict[str, int]:
        out = {n.name: n.mtu for n in self.plan.host(node).nics}
        if self.lowered and self.lowered[0] == node:
            out[self.lowered[1]] = self.lowered[2]
        return out


def test_the_example_judges_the_kernel_by_the_plan(ai_plan):
    check = load(str(EXAMPLE))
    (clean,) = run_checks(_Lab(ai_plan), (check,))
    assert clean.passed is True and clean.reason.startswith("every host NIC at its planned MTU")
    host = next(h for h in ai_plan.hosts if any(n.rail == 1 for n in h.nics))
    nic = next(n for n in host.nics if n.rail == 1 and n.plane is Plane.BE)
    (lowered,) = run_checks(_Lab(ai_plan, (host.name, nic.name, 1500)), (check,))
    assert lowered.passed is False
    assert lowered.problems == (f"{host.name}:{nic.name} has MTU 1500, the plan's is {nic.mtu}",)
    assert lowered.reason.startswith("NOT at the planned MTU: ") and lowered.result.differ == {
        f"{host.name}:{nic.name}": 1500}


def test_tally_names_how_many_and_the_first():
    from harness.checks.base import tally

    assert tally((), "leaks") == ()
    assert tally(("a->b", "c->d"), "controls not delivered", 7, then=" (proves nothing)") == (
        "2/7 controls not delivered (proves nothing), e.g. a->b",)
    assert tally(["x"], "routes missing") == ("1 routes missing, e.g. x",)
