"""The example fault of docs/architecture.md ("Adding a fault") is a fault of the one protocol:
its case is a registered one, its target parses and prints back, its state round-trips the
codec, and it has a place on a plan. tests/integration/test_check_example.py puts it into a
real lab, where its case fails, and takes it out, where the case passes again."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from harness.checks.registry import case
from harness.core.codec import from_plain, to_plain
from harness.core.errors import InputError
from harness.faults.targets import Nic

EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "examples" / "fault_example.py"


def _fault():
    spec = importlib.util.spec_from_file_location("fault_example", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.NIC_DOWN


def test_the_example_fault_follows_the_protocol(ai_plan):
    fault = _fault()
    assert case(fault.caught_by).name == "cabling"
    target = fault.target("gpu01:rail0")
    assert target == Nic("gpu01", "rail0") and str(target) == "gpu01:rail0"
    assert from_plain(fault.state, to_plain(fault.state())) == fault.state()
    assert isinstance(fault.default(ai_plan), Nic)


def test_the_example_fault_refuses_a_target_of_another_kind(ai_plan):
    from fakelab import FakeLab
    from harness.faults.targets import Switch

    with pytest.raises(InputError, match="goes on a nic"):
        _fault().apply(FakeLab(ai_plan), Switch("be-g1-r0"))
    with pytest.raises(InputError, match="has no node 'gpu99'"):  # the control: the right kind, no such node
        _fault().apply(FakeLab(ai_plan), Nic("gpu99", "rail0"))
