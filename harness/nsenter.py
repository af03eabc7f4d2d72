"""Open sockets in other network namespaces from one process.

A socket belongs for life to the namespace its creator was in when it was made, so one
process can serve many namespaces: enter one, open its sockets, come back. setns(2) moves
only the calling thread, which is why the way back is this thread's own namespace.
"""
from __future__ import annotations

import ctypes
import functools
import os
from collections.abc import Iterator
from contextlib import contextmanager

from harness.errors import NamespaceError

NETNS_DIR = "/run/netns"
_CLONE_NEWNET = 0x40000000


@functools.cache
def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _setns(fd: int) -> None:
    if hasattr(os, "setns"):  # Python >= 3.12
        os.setns(fd, _CLONE_NEWNET)
        return
    if _libc().setns(fd, _CLONE_NEWNET) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))


@contextmanager
def entered(ns: str | None) -> Iterator[None]:
    """Run the body in network namespace `ns` (None: where this thread already is)."""
    if ns is None:
        yield
        return
    if not ns or "/" in ns or ns in (".", ".."):
        raise NamespaceError(f"invalid namespace name {ns!r}")
    home = os.open("/proc/thread-self/ns/net", os.O_RDONLY | os.O_CLOEXEC)
    try:
        try:
            target = os.open(f"{NETNS_DIR}/{ns}", os.O_RDONLY | os.O_CLOEXEC)
        except FileNotFoundError:
            raise NamespaceError(f"network namespace {ns!r} does not exist") from None
        try:
            _setns(target)
        except OSError as exc:
            raise NamespaceError(f"cannot enter network namespace {ns!r}: {exc}") from exc
        finally:
            os.close(target)
        try:
            yield
        finally:
            _setns(home)
    finally:
        os.close(home)
