"""The incast measurement refuses bad arguments before it touches a lab (one test per error)."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from harness.checks.collectives import measure_incast
from harness.checks.collectives.incast import _wire_bytes
from harness.core.errors import HarnessError
from harness.core.model import build
from harness.core.plan import make_plan
from topologies import BUILTINS


def _planned():
    # Only the plan is read before anything is sent: a real plan, no lab.
    return SimpleNamespace(plan=make_plan(build(BUILTINS["ai-cluster"]())))


def test_capacity_must_be_positive():
    with pytest.raises(HarnessError, match="capacity 0"):
        measure_incast(None, capacity=0)


def test_too_few_packets():
    with pytest.raises(HarnessError, match="packets 10"):
        measure_incast(None, packets=10)


def test_fan_in_beyond_the_rail():
    with pytest.raises(HarnessError, match=r"fan_ins \[8\]: rail 0 has 7 possible senders"):
        measure_incast(_planned(), fan_ins=(1, 8))


def test_wire_size_of_a_write_only_packet():
    # Ethernet 14 + IPv4 20 + UDP 8 + BTH 12 + RETH 16 + payload + ICRC 4
    assert _wire_bytes(1024) == 1098
