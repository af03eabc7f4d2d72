"""Waiting the one way fablab waits: poll a condition until a deadline."""
from __future__ import annotations

import time
from collections.abc import Callable

from harness.plumbing import interrupt
from harness.core.errors import HarnessError


class Timeout(HarnessError):
    """A condition did not hold before its deadline."""


def until(condition: Callable[[], object], timeout: float, what: str | Callable[[], str],
          interval: float = 0.05, *, error: Callable[[], Exception] | None = None,
          clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep) -> object:
    """Return condition()'s first truthy value; raise Timeout saying `what` at the deadline,
    or error() where the caller has its own error for it (a type the callers catch, the state
    left). A KeyError from the condition (state not there yet) counts as false; anything else
    it raises ends the wait. clock and sleep: a test's fake time."""
    deadline = clock() + timeout
    while True:
        try:
            value = condition()
        except KeyError:
            value = None
        if value:
            return value
        interrupt.checkpoint()
        if clock() > deadline:
            if error is not None:
                raise error()
            text = what() if callable(what) else what
            raise Timeout(f"timed out after {timeout:g} s waiting for: {text}")
        sleep(interval)


def within(condition: Callable[[], object], timeout: float, since: float | None = None,
           interval: float = 0.02) -> float | None:
    """Seconds from `since` (time.monotonic(); default now) until condition() first held, or
    None if it did not by `timeout` after `since`: the measuring variant of `until`, for "how
    long until the port left the route", where not happening is a finding, not an error.
    A KeyError from the condition counts as false, as in `until`. A window already over when
    called (`since` + `timeout` past, or timeout < 0) is None without a look: what a look then
    saw came too late. interval 0 suits a condition that blocks a moment itself (a select on
    its sockets, which returns as soon as one has data)."""
    start = time.monotonic() if since is None else since
    deadline = start + timeout
    if timeout < 0 or (since is not None and time.monotonic() > deadline):
        return None
    while True:
        try:
            held = condition()
        except KeyError:
            held = None
        now = time.monotonic()
        if held:
            return now - start
        interrupt.checkpoint()
        if now > deadline:
            return None
        time.sleep(min(interval, max(0.0, deadline - now)))


def pause_until(moment: float) -> None:
    """Sleep until time.monotonic() reaches `moment`: a schedule's next step (fail at 1.5 s,
    restore 1 s later), not a wait for a condition; interruptible."""
    while (left := moment - time.monotonic()) > 0:
        interrupt.checkpoint()
        time.sleep(min(left, 0.1))
