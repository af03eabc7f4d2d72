"""Ctrl-C and SIGTERM that cannot be lost.

Python turns a signal into an exception in whatever code runs when it arrives. If that code
is a finaliser or an at-fork hook (logging releases its lock after every fork, and pyroute2
forks to open sockets in a namespace), the exception is printed as "ignored" and the program
carries on: CI once saw `fablab up` finish booting after its SIGINT. So the handler also
records the signal, and long steps call `checkpoint()` to raise it again where it cannot be
swallowed. A signal is process-wide state, hence the module-level record.
"""
from __future__ import annotations

import contextlib
import os
import signal
import sys
from collections.abc import Callable, Iterator

_pending: list[int] = []
_main_pid = os.getpid()
_deferring: list[bool] = []


def handler(signum: int, frame: object) -> None:
    # Helper processes forked by libraries inherit this handler: they must just exit,
    # never run the runner's cleanup.
    if os.getpid() != _main_pid:
        os._exit(128 + signum)
    _pending.append(signum)
    if not _deferring:
        raise KeyboardInterrupt


@contextlib.contextmanager
def deferred() -> Iterator[None]:
    """A signal arriving inside is raised when the block ends, not in it. For imports: a
    package whose import is interrupted half-way cannot be imported again in that process
    (asyncio's `NameError: base_events`), and the teardown that follows needs it."""
    _deferring.append(True)
    try:
        yield
    finally:
        _deferring.pop()
    checkpoint()


def install() -> None:
    """Route SIGINT and SIGTERM through `handler` (the CLI calls this; a library user need not)."""
    global _main_pid
    _main_pid = os.getpid()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, handler)


def run_main(main: Callable[[], int]) -> int:
    """A script's main with Ctrl-C and SIGTERM routed as the CLI routes them: a lab it was
    booting or had up is torn down on the way out (Lab.up, `with Lab`), then "interrupted" and
    exit code 130, no traceback. A script started in the background by a shell has SIGINT
    ignored; installing the handler undoes that, as `fablab` does."""
    install()
    try:
        return main()
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


def checkpoint() -> None:
    """Raise KeyboardInterrupt if a signal arrived, even one whose first raise was swallowed;
    inside `deferred()`, not yet (its end raises it)."""
    if _pending and not _deferring and os.getpid() == _main_pid:
        _pending.clear()
        raise KeyboardInterrupt


def handled() -> None:
    """The interrupt is being acted on (a boot is tearing down): later checkpoints must not
    raise it again in the middle of that teardown."""
    _pending.clear()


def pending() -> bool:
    return bool(_pending)
