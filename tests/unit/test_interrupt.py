"""A signal whose KeyboardInterrupt was swallowed is raised again at the next checkpoint."""
from __future__ import annotations

import signal

import pytest

from harness.plumbing import interrupt, wait


def _swallowed_signal() -> None:
    try:
        interrupt.handler(signal.SIGTERM, None)
    except KeyboardInterrupt:
        pass


def test_checkpoint_is_quiet_without_a_signal():
    interrupt.checkpoint()


def test_a_swallowed_signal_ends_a_wait():
    _swallowed_signal()
    with pytest.raises(KeyboardInterrupt):
        wait.until(lambda: False, timeout=5, what="never")
    assert not interrupt.pending()


def test_checkpoint_raises_once():
    _swallowed_signal()
    with pytest.raises(KeyboardInterrupt):
        interrupt.checkpoint()
    interrupt.checkpoint()


def test_handled_forgets_the_signal():
    _swallowed_signal()
    interrupt.handled()
    interrupt.checkpoint()
