"""Processes a lab starts, ended by pid only after checking they are still ours.

A pid is ours when its command line still names the lab's namespace: this guards against
pid reuse, and it is how `fablab clean` finds the FRR daemons of a lab whose runner died.
"""
from __future__ import annotations

import os
import signal
from collections.abc import Collection
from pathlib import Path

from harness.plumbing import wait

NETNS_DIR = Path("/run/netns")


def cmdline(pid: int) -> list[str]:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return []
    return [part.decode(errors="replace") for part in raw.split(b"\0") if part]


def is_ours(pid: int, tag: str) -> bool:
    """The process still names `tag`: an FRR daemon's -N pathspace (the namespace), or a
    microVM's QEMU -name; or it runs in the namespace `tag` (sshd and lldpd, whose process
    titles name nothing)."""
    args = cmdline(pid)
    if any(a in ("-N", "-name") and b == tag for a, b in zip(args, args[1:])):
        return True
    inode = _namespace_inode(tag)
    return inode is not None and _net_inode(pid) == inode


def pids_in_namespaces(prefix: str, programs: tuple[str, ...]) -> dict[int, str]:
    """Every process of `programs` (executable paths) whose network namespace is one under
    /run/netns whose name starts with `prefix`: pid -> that namespace."""
    inodes = {}
    try:
        names = [n for n in os.listdir(NETNS_DIR) if n.startswith(prefix)]
    except FileNotFoundError:
        return {}
    for name in names:
        inode = _namespace_inode(name)
        if inode is not None:
            inodes[inode] = name
    found: dict[int, str] = {}
    for entry in os.listdir("/proc") if inodes else ():
        if not entry.isdigit():
            continue
        try:
            exe = os.readlink(f"/proc/{entry}/exe")
        except OSError:
            continue
        if exe in programs and (ns := inodes.get(_net_inode(int(entry)))) is not None:
            found[int(entry)] = ns
    return found


def pids_naming_path(programs: tuple[str, ...], mark: str) -> list[int]:
    """Every process of `programs` whose process title, or a unix socket bound in its network
    namespace (/proc/PID/net/unix), names a path containing `mark`: sshd's title keeps its
    config file, lldpd's namespace holds its control socket. Found even once that namespace's
    name under /run/netns is gone, which the namespace scan cannot."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            if os.readlink(f"/proc/{entry}/exe") not in programs:
                continue
            title = Path(f"/proc/{entry}/cmdline").read_bytes().decode(errors="replace")
            sockets = "" if mark in title else Path(f"/proc/{entry}/net/unix").read_text(errors="replace")
        except OSError:
            continue
        if mark in title or mark in sockets:
            found.append(int(entry))
    return found


def _namespace_inode(name: str) -> int | None:
    if "/" in name:
        return None
    try:
        return os.stat(NETNS_DIR / name).st_ino
    except OSError:
        return None


def _net_inode(pid: int) -> int | None:
    try:
        return os.stat(f"/proc/{pid}/ns/net").st_ino
    except OSError:
        return None


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def start_time(pid: int) -> int:
    """Clock ticks after boot when pid started: with the pid, it names one process for good."""
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return -1


def same_process(pid: int, started: int) -> bool:
    return pid > 0 and alive(pid) and (started <= 0 or start_time(pid) == started)


def frr_pids_by_namespace(prefix: str) -> dict[int, str]:
    """Every FRR daemon whose -N pathspace starts with `prefix`: pid -> namespace."""
    return _pids_naming(lambda exe: exe.startswith("/usr/lib/frr/"), "-N", prefix)


def vm_pids_by_tag(prefix: str) -> dict[int, str]:
    """Every QEMU whose -name starts with `prefix` (a lab's microVMs): pid -> name."""
    return _pids_naming(lambda exe: "qemu-system" in os.path.basename(exe), "-name", prefix)


def dataplane_pids_by_tag(prefix: str) -> dict[int, str]:
    """Every lab data plane (fablab-bfd-dp, fablab-lossless-dp) whose -N tag starts with `prefix`: pid -> tag."""
    return _pids_naming(lambda exe: os.path.basename(exe) in ("fablab-bfd-dp", "fablab-lossless-dp"), "-N", prefix)


def _pids_naming(is_program, flag: str, prefix: str) -> dict[int, str]:
    """pid -> the value after `flag`, for every process of the program whose value starts with `prefix`."""
    found: dict[int, str] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        args = cmdline(int(entry))
        if not args or not is_program(args[0]):
            continue
        for a, b in zip(args, args[1:]):
            if a == flag and b.startswith(prefix):
                found[int(entry)] = b
    return found


def terminate(pids: dict[int, str], timeout: float = 5.0, kill: Collection[int] = ()) -> list[int]:
    """SIGTERM each pid that is still ours (SIGKILL those in `kill`), poll until gone, SIGKILL
    what lingers. Returns the pids that were signalled."""
    mine = [pid for pid, ns in pids.items() if is_ours(pid, ns)]
    for pid in mine:
        _signal(pid, signal.SIGKILL if pid in kill else signal.SIGTERM)

    def gone() -> bool:
        if not any(alive(p) for p in mine):
            return True
        _reap(mine)
        return False

    wait.within(gone, timeout, interval=0.02)
    for pid in mine:
        if alive(pid) and is_ours(pid, pids[pid]):
            _signal(pid, signal.SIGKILL)
    wait.within(gone, timeout, interval=0.02)
    return mine


def _signal(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass


def _reap(pids: list[int]) -> None:
    # Daemons started by this very process stay zombies until waited for; others are not
    # our children (ChildProcessError) and init reaps them.
    for pid in pids:
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            pass
