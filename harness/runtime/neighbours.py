"""The kernel's neighbour tables are one per protocol for the whole machine, not per namespace.

ARP (IPv4) and NDISC (IPv6) entries of every network namespace count against one limit,
`gc_thresh3`, settable only in the root namespace (default 1024). A lab needs an entry per
fabric-port peer (BGP unnumbered next hops, BFD) plus the multicast entries each IPv6 port
uses (RAs to ff02::1, MLD reports, DAD): at 2,000 fabric ports the table is full for good,
every new entry fails, zebra's RAs fail with EINVAL, so BGP never learns most unnumbered
peers and sessions stay Idle (measured: 469,000 `table_fulls` in /proc/net/stat/ndisc_cache,
86-switch fabric stuck at 0/86 converged). Mininet raises the same limits for the same reason.

So a lab whose need exceeds the limit raises it for as long as it runs: each lab records its
need and the values it found in its own run directory; the limit is the larger of the
original and the sum of the running labs' needs, and the last lab to go puts back what it found.
"""
from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from harness.plumbing import priority
from harness.runtime import state as lab_state

SYSCTL_ROOT = Path("/proc/sys/net")
KEYS = tuple(f"{family}/neigh/default/gc_thresh{i}" for family in ("ipv4", "ipv6") for i in (2, 3))
RECORD = "neighbour-limits.json"
# Entries per veth end: the peer, and the multicast groups an IPv6 port sends to, which come
# and go (measured on an 86-switch lab once converged: 4,544 NDISC entries for 4,852 ends).
PER_PORT = 2

Progress = Callable[[str, str], None]


@dataclass(frozen=True)
class Change:
    key: str
    before: int
    after: int


def need_of(veth_pairs: int) -> int:
    return 2 * veth_pairs * PER_PORT


def hold(lab: str, veth_pairs: int, progress: Progress, sysctl_root: Path = SYSCTL_ROOT,
         run_root: Path | None = None) -> list[Change]:
    """Record this lab's need and raise the limits if the running labs need more."""
    run_root = run_root or lab_state.RUN_ROOT
    with locked(run_root):
        current = {k: read_value(sysctl_root, k) for k in KEYS}
        others = records(run_root, exclude=lab)
        original = others[0]["original"] if others else current
        need = need_of(veth_pairs)
        record = {"need": need, "original": original}
        path = run_root / lab / RECORD
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(record))
        changes = _apply(sysctl_root, original, need + sum(r["need"] for r in others))
    if changes:
        progress("kernel", "neighbour tables are shared by every namespace: "
                 + ", ".join(f"{c.key.replace('/', '.')} {c.before} -> {c.after}" for c in changes)
                 + " (put back when the last lab goes)")
    return changes


def release(lab: str, sysctl_root: Path = SYSCTL_ROOT, run_root: Path | None = None) -> list[Change]:
    """Forget this lab's need; with no lab left, put back the values the first one found."""
    with released(lab, RECORD, run_root) as (mine, others):
        if others:
            return _apply(sysctl_root, others[0]["original"], sum(r["need"] for r in others), lower=True)
        if mine is None:
            return []
        return [c for k, v in mine["original"].items() if (c := write_value(sysctl_root, k, int(v)))]


def _apply(sysctl_root: Path, original: dict[str, int], need: int, lower: bool = False) -> list[Change]:
    changes = []
    for key in KEYS:
        floor = int(original[key])
        # twice the need: room for churn and for the ARP entries traffic adds during checks
        target = max(floor, 2 * need if key.endswith("3") else need)
        now = read_value(sysctl_root, key)
        if target > now or (lower and target < now):
            changes.append(write_value(sysctl_root, key, target))
    return [c for c in changes if c]


@contextmanager
def released(lab: str, record: str, run_root: Path | None = None) -> Iterator[tuple[dict | None, list[dict]]]:
    """Under the machine-wide lock: this lab's record of a setting it held, removed (None where
    it had none, or it was unreadable), and every other running lab's; the caller puts the
    setting back to what they still need."""
    run_root = run_root or lab_state.RUN_ROOT
    path = run_root / lab / record
    if not path.exists():
        yield None, []  # it held nothing: nothing to put back
        return
    with locked(run_root):
        try:
            mine = json.loads(path.read_text())
        except ValueError:
            mine = None
        path.unlink()
        yield mine, records(run_root, exclude=lab, record=record)


def records(run_root: Path, exclude: str, record: str = RECORD) -> list[dict]:
    """Every other running lab's record of a machine-wide setting it holds (its need, what it found)."""
    found = []
    if run_root.is_dir():
        for path in sorted(run_root.glob(f"*/{record}")):
            if path.parent.name == exclude:
                continue
            try:
                found.append(json.loads(path.read_text()))
            except ValueError:
                continue
    return found


def read_value(root: Path, key: str) -> int:
    return int((root / key).read_text().split()[0])


def write_value(root: Path, key: str, value: int) -> Change | None:
    """Set one machine-wide value (a sysctl, a sysfs knob); the change, or None where it already was."""
    before = read_value(root, key)
    if before == value:
        return None
    (root / key).write_text(f"{value}\n")
    return Change(key, before, value)


@contextmanager
def locked(run_root: Path):
    if priority.holds_turn(run_root, exclusive=True):
        # A boot or teardown holds the machine's turn, a flock on this same directory: another
        # open of it would wait on this very process. Every other holder is excluded already.
        yield
        return
    run_root.mkdir(parents=True, exist_ok=True)
    fd = os.open(run_root, os.O_RDONLY)  # flock on the directory: no shared file to leave behind
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)
