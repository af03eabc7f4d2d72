"""parallel.map_all: results in order; an exception (Ctrl-C) drops the calls not started and
does not wait for those running."""
from __future__ import annotations

import threading
import time

import pytest

from harness.plumbing import parallel


def test_results_come_back_in_the_order_of_the_items():
    assert parallel.map_all(lambda x: x * x, range(20), workers=3) == [x * x for x in range(20)]


def test_an_interrupt_drops_what_has_not_started_and_does_not_wait_for_what_runs():
    started: list[int] = []
    release = threading.Event()

    def look(i: int) -> int:
        started.append(i)
        if i == 0:
            raise KeyboardInterrupt
        release.wait(5)  # a slow read, as vtysh under load
        return i

    t = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        parallel.map_all(look, range(100), workers=4)
    took = time.monotonic() - t
    release.set()
    assert took < 2.0  # not the 5 s of the reads still running
    assert len(started) <= 8  # the other ~92 never ran
    # the control: without the interrupt every item runs
    release.clear()
    assert parallel.map_all(lambda i: i, range(100), workers=4) == list(range(100))
