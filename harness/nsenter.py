"""Open sockets in other network namespaces from one process.

A socket belongs for life to the namespace its creator was in when it was made, so one
process can serve many namespaces: enter one, open its sockets, come back. setns(2) moves
only the calling thread, which is why the way back is this thread's own namespace.
"""
from __future__ import annotations

import ctypes
import functools
import os
import threading
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
    """Run the body in network namespace `ns` (None: where this thread already is). Not in a
    main thread whose signal handlers raise: a KeyboardInterrupt between the switch and the
    way back would leave it in `ns` (see `create`)."""
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


_MS_BIND, _MS_REC, _MS_SHARED = 0x1000, 0x4000, 1 << 20
_MNT_DETACH = 2


def _mount(source: bytes, target: bytes, flags: int) -> int:
    return _libc().mount(source, target, b"none", flags, None)


def _share_rundir() -> None:
    """/run/netns as iproute2 leaves it: a shared mount point, so that the namespaces bound
    under it are seen by every mount namespace (a container's too)."""
    os.makedirs(NETNS_DIR, exist_ok=True)
    rundir = NETNS_DIR.encode()
    if _mount(b"", rundir, _MS_SHARED | _MS_REC) == 0:
        return
    if _mount(rundir, rundir, _MS_BIND | _MS_REC) != 0 or _mount(b"", rundir, _MS_SHARED | _MS_REC) != 0:
        err = ctypes.get_errno()
        raise NamespaceError(f"cannot make {NETNS_DIR} a shared mount point: {os.strerror(err)}")


def create(ns: str) -> None:
    """Create network namespace `ns` under /run/netns, as `ip netns add` does, without a helper
    process (pyroute2's netns.create forks one for each): a short-lived thread unshares its
    network namespace and binds it to the name. A thread, because Python raises
    KeyboardInterrupt only in the main thread: one raised there between unshare and the way
    back left the boot's teardown running in the new namespace."""
    if not ns or "/" in ns or ns in (".", ".."):
        raise NamespaceError(f"invalid namespace name {ns!r}")
    _share_rundir()
    path = f"{NETNS_DIR}/{ns}"
    try:
        os.close(os.open(path, os.O_RDONLY | os.O_CREAT | os.O_EXCL, 0))
    except FileExistsError:
        raise NamespaceError(f"network namespace {ns!r} exists already") from None
    failure: list[str] = []

    def bind() -> None:  # the thread ends in the new namespace: nothing else runs in it
        if _libc().unshare(_CLONE_NEWNET) != 0:
            failure.append(f"cannot create network namespace {ns!r}: {os.strerror(ctypes.get_errno())}")
        elif _mount(b"/proc/thread-self/ns/net", path.encode(), _MS_BIND) != 0:
            failure.append(f"cannot bind network namespace {ns!r} to {path}: {os.strerror(ctypes.get_errno())}")

    worker = threading.Thread(target=bind, name=f"netns-create-{ns}")
    worker.start()
    interrupted: BaseException | None = None
    while worker.is_alive():  # an interrupt waits for the bind: the namespace is then whole, or not made
        try:
            worker.join()
        except BaseException as exc:  # re-raised below
            interrupted = exc
    if failure:
        _libc().umount2(path.encode(), _MNT_DETACH)
        os.unlink(path)
        raise NamespaceError(failure[0])
    if interrupted is not None:
        raise interrupted
