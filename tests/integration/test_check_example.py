"""The example check of docs/adding-a-check.md, loaded through the registry's loader, on a
booted rail-only lab: it passes on the lab as booted, and names a GPU NIC whose MTU was
lowered by hand (then put back)."""
from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from harness.checks.registry import load, run_checks
from harness.lab import Lab
from topologies import BUILTINS

from .conftest import leftovers_of

EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "examples" / "check_example.py"


@pytest.fixture(scope="module")
def lab():
    name = f"plug{uuid.uuid4().hex[:6]}"
    with Lab.up(BUILTINS["rail-only"](), name=name, timeout=90) as running:
        yield running
    assert leftovers_of(name) == []


def test_the_example_check_passes_and_catches_a_lowered_mtu(lab):
    check = load(str(EXAMPLE))
    (clean,) = run_checks(lab, (check,))
    assert clean.passed is True, clean.reason
    assert clean.result.nics >= 8  # every GPU NIC at least

    host = next(h for h in lab.plan.hosts if any(n.rail is not None for n in h.nics))
    nic = next(n for n in host.nics if n.rail is not None)
    lab.ns_exec(host.name, ["ip", "link", "set", nic.name, "mtu", "1500"], check=True)
    try:
        (lowered,) = run_checks(lab, (check,))
    finally:
        lab.ns_exec(host.name, ["ip", "link", "set", nic.name, "mtu", str(nic.mtu)], check=True)
    assert lowered.passed is False
    assert lowered.problems == (f"{host.name}:{nic.name} has MTU 1500, the plan's is {nic.mtu}",)
    (again,) = run_checks(lab, (check,))
    assert again.passed is True, again.reason  # the control: put back, clean again


FAULT_EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "examples" / "fault_example.py"


def test_the_example_fault_is_caught_by_its_case_and_undone(lab):
    import importlib.util

    from harness.checks.registry import case, run_case
    from harness.faults.protocol import applied

    spec = importlib.util.spec_from_file_location("fault_example", FAULT_EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    fault = module.NIC_DOWN
    assert run_case(case(fault.caught_by), lab).passed  # the positive control
    with applied(lab, fault) as a:
        broken = run_case(case(fault.caught_by), lab)
    assert broken.passed is False and a.target.host in broken.reason, broken.reason
    assert run_case(case(fault.caught_by), lab).passed  # undone: clean again
