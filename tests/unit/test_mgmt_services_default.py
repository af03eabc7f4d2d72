"""Who gets the mgmt services (sshd, lldpd, a station) when a boot does not say: a lab of up to
64 nodes on a machine that has both daemons; $FABLAB_MGMT_SERVICES (make test's lab phase sets
off) or the boot's own choice decides otherwise."""
from __future__ import annotations

import pytest

from harness.runtime import mgmt_services


@pytest.fixture
def installed(monkeypatch):
    monkeypatch.setattr(mgmt_services.os, "access", lambda path, mode: True)


@pytest.mark.parametrize("default, choice, want", [
    ("auto", None, True), (None, None, True), ("off", None, False), ("OFF ", None, False),
    ("on", None, True), ("off", True, True), ("on", False, False), ("auto", False, False),
])
def test_a_small_lab_gets_them_unless_told(ai_plan, installed, monkeypatch, default, choice, want):
    monkeypatch.delenv(mgmt_services.DEFAULT_ENV, raising=False)
    assert mgmt_services.wanted(ai_plan, choice, default) is want


def test_the_environment_decides_where_the_call_does_not(ai_plan, installed, monkeypatch):
    monkeypatch.setenv(mgmt_services.DEFAULT_ENV, "off")
    assert mgmt_services.wanted(ai_plan, None) is False
    assert mgmt_services.wanted(ai_plan, True) is True  # the boot's own choice wins


def test_a_large_lab_or_a_machine_without_them_does_not(ai_plan, monkeypatch):
    monkeypatch.delenv(mgmt_services.DEFAULT_ENV, raising=False)
    monkeypatch.setattr(mgmt_services, "AUTO_UP_TO", len(ai_plan.fabric.nodes) - 1)
    monkeypatch.setattr(mgmt_services.os, "access", lambda path, mode: True)
    assert mgmt_services.wanted(ai_plan, None) is False
    monkeypatch.setattr(mgmt_services, "AUTO_UP_TO", 64)
    monkeypatch.setattr(mgmt_services.os, "access", lambda path, mode: path != mgmt_services.LLDPD)
    assert mgmt_services.wanted(ai_plan, None) is False  # lldpd missing: booted without, not refused
