"""Waiting the one way fablab waits: poll a condition until a deadline."""
from __future__ import annotations

import time
from collections.abc import Callable

from harness import interrupt
from harness.errors import HarnessError


class Timeout(HarnessError):
    """A condition did not hold before its deadline."""


def until(condition: Callable[[], object], timeout: float, what: str | Callable[[], str],
          interval: float = 0.05) -> object:
    """Return condition()'s first truthy value; raise Timeout saying `what` at the deadline.
    A KeyError from the condition (state not there yet) counts as false."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            value = condition()
        except KeyError:
            value = None
        if value:
            return value
        interrupt.checkpoint()
        if time.monotonic() > deadline:
            text = what() if callable(what) else what
            raise Timeout(f"timed out after {timeout:g} s waiting for: {text}")
        time.sleep(interval)
