"""A lab that never converged is waited for once per run of the checks: the first case that
needs convergence says so (not measurable, with what the fabric lacks), every later one is not
measurable at once. Judged on recorded observations (Shortfall), without a lab."""
from __future__ import annotations

import time

import pytest

from harness.checks.base import Case, Check, NotMeasurable, Observation, Outcome
from harness.core.errors import LabError
from harness.checks.converged import one_wait_per_run, wait_routed
from harness.checks.registry import run_checks
from harness.observe.convergence import Shortfall

from fakelab import FakeLab

# What a switch whose sessions never came up showed (as `fablab up --configs` records it).
STUCK = [Shortfall("be-s1", 0, 8, 0, 8, ("10.0.0.3/32 (0/1 paths)",), ("Ethernet0: BGP Idle (no peer address learned)",)),
         Shortfall("be-g1-r0", 0, 2, 0, 2, (), ())]


def RecordedLab(looks):
    """A lab whose shortfalls() sees each of `looks` in turn (the last one for ever)."""
    return FakeLab(None, shortfalls=looks)


def asked(lab) -> int:
    return lab.asked.count("shortfalls")


class Measured(Outcome):
    pass


def needs_convergence(lab):
    wait_routed(lab, 0.3)
    return Observation()


CHECK = Check("failover-like", "needs a converged fabric",
              tuple(Case(f"case-{i}", needs_convergence, lambda plan, seen: Measured()) for i in range(4)))


def test_one_wait_one_failure_then_every_case_not_measurable_at_once():
    lab = RecordedLab([STUCK])
    said = []
    verdicts = run_checks(lab, (CHECK,), progress=lambda phase, detail: said.append((phase, detail)))
    assert [v.passed for v in verdicts] == [False, None, None, None]  # the run fails, once
    first, *rest = verdicts
    assert first.reason.startswith("could not run: the fabric did not converge within 0.3 s (2 switches short: "
                                   "be-s1: 0/8 BGP sessions")
    assert all("not waited for again" in v.reason and v.seconds < 0.1 for v in rest)
    assert asked(lab) >= 2  # the one wait polled; the other cases did not look
    assert sum("did not converge within" in v.reason and "not waited" not in v.reason for v in verdicts) == 1
    assert [d.split(" in ")[0] for _, d in said if d.startswith("not ")] == ["not measurable"] * 3


def test_a_converged_fabric_is_measured_and_a_new_run_waits_again():
    lab = RecordedLab([[]])
    assert [v.passed for v in run_checks(lab, (CHECK,))] == [True] * 4
    stuck = RecordedLab([STUCK])
    run_checks(stuck, (CHECK,))
    before = asked(stuck)
    t = time.monotonic()
    again = run_checks(stuck, (CHECK,))  # another run: it looks again, once
    assert asked(stuck) > before and time.monotonic() - t >= 0.3
    assert "not waited for again" not in again[0].reason


def test_a_fabric_that_converges_late_passes_the_first_wait():
    lab = RecordedLab([STUCK, STUCK, []])
    assert [v.passed for v in run_checks(lab, (CHECK,))] == [True] * 4


def test_outside_a_run_every_call_waits():
    lab = RecordedLab([STUCK])
    for _ in range(2):
        with pytest.raises(LabError, match="did not converge within 0.3 s"):
            wait_routed(lab, 0.3)
    with one_wait_per_run():
        with pytest.raises(LabError):
            wait_routed(lab, 0.3)
        looked = asked(lab)
        with pytest.raises(NotMeasurable, match="not waited for again"):
            wait_routed(lab, 0.3)
        assert asked(lab) == looked
