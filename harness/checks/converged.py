"""A converged fabric, waited for once per run of the checks.

Cases that need a converged fabric (every BGP session up, every prefix at its width) wait for
it before they measure. On a lab that never converged every such case used to wait its full
budget and fail alike (failover: 4 × 90 s of "timed out waiting for the fabric to converge").
Within `one_wait_per_run()` (what `run_checks` runs the checks in) the first wait that times
out is remembered: its case fails, once, with what the fabric lacked (a fabric that never
converged is a finding, so the run does not pass); every later case that needs convergence is
not measurable at once, naming that first wait. Outside a run (a
pytest lab calling one case) each call waits as before.
"""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from harness.checks.base import NotMeasurable
from harness.core.errors import LabError
from harness.plumbing.labview import LabView
from harness.plumbing.wait import until

SHOWN = 4  # switches named in the message


@dataclass
class _Run:
    failed: str = ""  # what the first wait that timed out found, in short, once one has


_RUN: ContextVar[_Run | None] = ContextVar("fablab_converged_run", default=None)


@contextmanager
def one_wait_per_run() -> Iterator[None]:
    token = _RUN.set(_Run())
    try:
        yield
    finally:
        _RUN.reset(token)


def routed_shortfalls(lab: LabView) -> list:
    """The switches short of a session or a route. BFD sessions are not required: a negative
    control may have turned BFD off on purpose."""
    return [s for s in lab.shortfalls() if s.missing_routes or s.sessions_up < s.sessions_expected]


def not_converged(shortfalls: list, timeout: float) -> str:
    shown = "; ".join(str(s) for s in shortfalls[:SHOWN])
    more = f" (+{len(shortfalls) - SHOWN} more switches)" if len(shortfalls) > SHOWN else ""
    return (f"the fabric did not converge within {timeout:g} s ({len(shortfalls)} switches short: {shown}{more}); "
            "every case that needs a converged fabric is not measurable in this run")


def wait_routed(lab: LabView, timeout: float, what: str = "the fabric to converge") -> None:
    """Every BGP session up and every prefix at its width, within `timeout`; LabError when not
    (the case fails, saying so), NotMeasurable at once when an earlier wait of this run did."""
    run = _RUN.get()
    if run is not None and run.failed:
        raise NotMeasurable(f"{run.failed}, seen by an earlier case of this run: not waited for again")
    short: list = []

    def routed() -> bool:
        short[:] = routed_shortfalls(lab)
        return not short

    def failed() -> LabError:
        if run is not None:
            run.failed = f"the fabric did not converge within {timeout:g} s ({len(short)} switches short)"
        return LabError(not_converged(short, timeout))

    until(routed, timeout, what, error=failed)
