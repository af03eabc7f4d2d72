"""Network namespaces: made, listed, entered, removed, and commands and threads run inside them.

Plumbing any layer may use: the runtime creates and removes a lab's namespaces; traffic
generators open sockets in many namespaces from one process. Nothing here touches the root
namespace.

A socket belongs for life to the namespace its creator was in when it was made, so one
process can serve many namespaces: enter one, open its sockets, come back. setns(2) moves
only the calling thread, which is why the way back is this thread's own namespace. Sysctls
are written the same way, from a short-lived thread that has joined the namespace (so
/proc/sys/net shows its values): no `ip netns exec sysctl` process per node.
"""
from __future__ import annotations

import contextlib
import ctypes
import functools
import os
import re
import subprocess
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, TypeVar

from harness.plumbing import wait
from harness.core.errors import LabError, NamespaceError

if TYPE_CHECKING:
    from pyroute2 import IPRoute

NETNS_DIR = "/run/netns"
_CLONE_NEWNET = 0x40000000
T = TypeVar("T")


# ---------------------------------------------------------------------------- entering one from this thread


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


def _check_name(ns: str) -> None:
    if not ns or "/" in ns or ns in (".", ".."):
        raise NamespaceError(f"invalid namespace name {ns!r}")


@contextmanager
def entered(ns: str | None) -> Iterator[None]:
    """Run the body in network namespace `ns` (None: where this thread already is). Not in a
    main thread whose signal handlers raise: a KeyboardInterrupt between the switch and the
    way back would leave it in `ns` (see `create`)."""
    if ns is None:
        yield
        return
    _check_name(ns)
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


def run_in(ns: str, fn: Callable[[], T]) -> T:
    """Run fn in a thread that has joined namespace `ns`; return its result or raise its error."""
    box: dict[str, object] = {}

    def target() -> None:
        try:
            with entered(ns):
                box["result"] = fn()
        except BaseException as e:  # carried to the caller's thread
            box["error"] = e

    t = threading.Thread(target=target, name=f"netns-{ns}")
    t.start()
    t.join()
    if "error" in box:
        raise LabError(f"in namespace {ns}: {box['error']}") from box["error"]  # type: ignore[misc]
    return box.get("result")  # type: ignore[return-value]


# ---------------------------------------------------------------------------- making and removing them


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
    back left the boot's teardown running in the new namespace. Any failure is a LabError."""
    try:
        _create(ns)
    except (OSError, NamespaceError) as e:
        raise LabError(f"cannot create network namespace {ns}: {e}") from e


def _create(ns: str) -> None:
    _check_name(ns)
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
        with contextlib.suppress(FileNotFoundError):  # removed meanwhile by another hand: say why the bind failed
            os.unlink(path)
        raise NamespaceError(failure[0])
    if interrupted is not None:
        raise interrupted


def list_namespaces() -> list[str]:
    try:
        return sorted(os.listdir(NETNS_DIR))
    except FileNotFoundError:
        return []


def remove(name: str) -> bool:
    """Unbind and remove namespace `name` as `ip netns del` does; False if it was not there
    (never there, or removed first by another teardown or `fablab clean`). No listing of
    /run/netns first: a teardown removes every namespace of its lab, and at gpu4096's 893 one
    listing each took 0.27 s."""
    _check_name(name)
    path = f"{NETNS_DIR}/{name}"
    _libc().umount2(path.encode(), _MNT_DETACH)  # fails harmlessly where nothing is bound
    try:
        os.unlink(path)
    except FileNotFoundError:
        return False
    return True


def wait_gone(names: Iterable[str], timeout: float = 10.0) -> list[str]:
    """Poll until none of `names` is listed; return those still present at the deadline."""
    names = set(names)
    left: list[str] = []

    def gone() -> bool:
        nonlocal left
        left = sorted(names & set(list_namespaces()))
        return not left

    wait.within(gone, timeout, interval=0.02)
    return left


# ---------------------------------------------------------------------------- what runs inside them


def exec_argv(ns: str, argv: Sequence[str]) -> list[str]:
    """argv that runs `argv` in namespace `ns` (nsenter(1) execs: the process keeps its pid)."""
    return ["nsenter", f"--net={NETNS_DIR}/{ns}", "--", *argv]


def write_sysctls(ns: str, values: dict[str, str | int]) -> None:
    def write() -> None:
        for key, value in values.items():
            with open("/proc/sys/" + key.replace(".", "/"), "w") as f:
                f.write(str(value))

    run_in(ns, write)


def read_sysctl(ns: str, key: str) -> str:
    return run_in(ns, lambda: open("/proc/sys/" + key.replace(".", "/")).read().strip())


def ipr(ns: str) -> IPRoute:
    """A netlink socket bound to namespace `ns` (close it when done). pyroute2 opens it in a
    forked helper, slow as that is: its IPRoute opens one socket per thread that uses it, so
    one opened from a thread that had entered `ns` would act on the root namespace when used
    from another thread."""
    from pyroute2 import IPRoute

    return IPRoute(netns=ns)


def ip_batch(ns: str, lines: list[str]) -> None:
    """iproute2's commands in namespace `ns`, in one `ip -batch` (a C process, where each of
    pyroute2's requests costs Python about a millisecond: xlarge's addresses took 3.2 s of CPU).
    It stops at the first command the kernel refuses, which the error quotes."""
    if not lines:
        return
    run = subprocess.run(["ip", "-n", ns, "-batch", "-"], input="\n".join(lines) + "\n", capture_output=True,
                         text=True)
    if run.returncode != 0:
        failed = re.search(r"Command failed -:(\d+)", run.stderr)
        where = f" at `{lines[int(failed.group(1)) - 1]}`" if failed and int(failed.group(1)) <= len(lines) else ""
        error = " ".join(x for x in run.stderr.strip().splitlines() if not x.startswith("Command failed"))
        raise LabError(f"ip in {ns}{where}: {error or run.stderr.strip()}")


def nft(ns: str, ruleset: str) -> None:
    """Apply an nftables ruleset in namespace `ns` with the host's nft (images may lack it)."""
    run = subprocess.run(exec_argv(ns, ["nft", "-f", "-"]), input=ruleset, capture_output=True, text=True)
    if run.returncode != 0:
        raise LabError(f"nft in {ns}: {run.stderr.strip()}")
