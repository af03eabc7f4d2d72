"""Network-namespace plumbing: create, enter, remove. Nothing here touches the root namespace.

Sysctls are written from a short-lived thread that has joined the namespace with setns(2),
which only moves that thread: /proc/sys/net then shows the namespace's values. This avoids
one `ip netns exec sysctl` process per node.
"""
from __future__ import annotations

import os
import subprocess
import threading
from collections.abc import Callable, Iterable
from typing import TypeVar

from pyroute2 import IPRoute, netns

from harness import wait
from harness.errors import NamespaceError, LabError
from harness.nsenter import NETNS_DIR, entered
from harness.nsenter import create as create_netns

T = TypeVar("T")


def list_namespaces() -> list[str]:
    try:
        return sorted(os.listdir(NETNS_DIR))
    except FileNotFoundError:
        return []


def create(name: str) -> None:
    try:
        create_netns(name)
    except (OSError, NamespaceError) as e:
        raise LabError(f"cannot create network namespace {name}: {e}") from e


def remove(name: str) -> bool:
    if name not in list_namespaces():
        return False
    netns.remove(name)
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


def nsenter(ns: str, argv: list[str]) -> list[str]:
    return ["nsenter", f"--net={NETNS_DIR}/{ns}", "--", *argv]


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
    return IPRoute(netns=ns)


def nft(ns: str, ruleset: str) -> None:
    """Apply an nftables ruleset in namespace `ns` with the host's nft (images may lack it)."""
    run = subprocess.run(nsenter(ns, ["nft", "-f", "-"]), input=ruleset, capture_output=True, text=True)
    if run.returncode != 0:
        raise LabError(f"nft in {ns}: {run.stderr.strip()}")
