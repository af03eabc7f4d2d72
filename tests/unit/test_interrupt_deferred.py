"""A Ctrl-C or SIGTERM inside `interrupt.deferred()` is raised when the block ends, not in it: an
import it interrupted half-way could not be done again by the teardown that follows (asyncio's
`NameError: base_events`, seen when `fablab up` was interrupted 0.5 s in)."""
from __future__ import annotations

import os
import signal

import pytest

from harness.plumbing import interrupt


@pytest.fixture
def installed():
    saved = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)}
    interrupt.install()
    yield
    for s, h in saved.items():
        signal.signal(s, h)
    interrupt.handled()


def _spin() -> int:
    return sum(range(200_000))  # bytecodes for the handler to run between


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_in_a_deferred_block_is_raised_when_it_ends(installed, sig):
    finished = False
    with pytest.raises(KeyboardInterrupt):
        with interrupt.deferred():
            os.kill(os.getpid(), sig)
            _spin()
            finished = True  # the block ran to its end
    assert finished and not interrupt.pending()
    # the control: outside such a block the same signal interrupts at once
    finished = False
    with pytest.raises(KeyboardInterrupt):
        os.kill(os.getpid(), sig)
        _spin()
        finished = True
    assert not finished
