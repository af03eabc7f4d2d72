"""The faults in place in a running lab, kept in its run directory (faults.json): `fablab break
LAB FAULT [--on TARGET]` applies one and records what its undo needs, `fablab fix LAB [FAULT
| --all]` undoes it from that record, from another process, later.

Each entry holds the fault's name, its target as `--on` writes it, what was done, and the
fault's state as plain data (harness.core.codec); `fix` reads the state back as the fault's
own type before it undoes.
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass

from harness.core.codec import CodecError, from_plain, to_plain
from harness.core.errors import HarnessError, InputError, LabError
from harness.faults.protocol import Fault
from harness.faults.table import BY_NAME, FAULTS, fault
from harness.faults.targets import Target
from harness.plumbing import wait
from harness.plumbing.labview import LabView

__all__ = ["BY_NAME", "FAULTS", "MYSTERY", "SETTLE_S", "STORE", "Entry", "Fault", "break_", "entries", "fault",
           "fix", "in_place", "shown"]

STORE = "faults.json"
MYSTERY = "mystery.json"  # harness.faults.mystery's; `fix --all` ends a mystery too
SETTLE_S = 90.0  # a healed link's BGP session back (BFD, then BGP's connect retry), with room on a busy machine


@dataclass(frozen=True)
class Entry:
    fault: str
    on: str  # the target, as --on writes it
    description: str
    state: dict  # the fault's state, plain: from_plain(fault.state, state) gives it back
    at: float  # when it went in (epoch seconds)
    hidden: bool = False  # a mystery's: listings do not name it


def entries(lab: LabView) -> tuple[Entry, ...]:
    path = lab.run_dir / STORE
    if not path.exists():
        return ()
    try:
        return tuple(from_plain(Entry, e) for e in json.loads(path.read_text()))
    except (CodecError, ValueError, TypeError) as e:
        raise HarnessError(f"{path}: not a faults record this fablab reads ({e}); undo its faults by hand "
                           "(fablab down and up again is the sure way) and remove the file") from None


def in_place(lab: LabView) -> list[dict]:
    """The entries as plain data (fault, on, description, state, at, hidden)."""
    return [to_plain(e) for e in entries(lab)]


def _save(lab: LabView, kept: list[Entry] | tuple[Entry, ...]) -> None:
    path = lab.run_dir / STORE
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps([to_plain(e) for e in kept], indent=2))
    tmp.replace(path)


def break_(lab: LabView, name: str, on: str | Target | None = None, hidden: bool = False) -> dict:
    """Apply fault `name` on `on` (`--on` text or a target; its default for the lab's plan when
    None); the entry kept for `fix`. `hidden`: a mystery's, which listings do not name."""
    f = fault(name)
    target = f.default(lab.plan) if on is None else on if isinstance(on, Target) else f.target(on)
    if target is None:
        raise InputError(f"{name}: {lab.plan.name} has nowhere to put it by default; give --on {f.on}")
    text = str(target)
    if any(e.fault == name and e.on == text for e in entries(lab)):
        raise InputError(f"{name} on {text} is already in place: `fablab fix {lab.name} {name}` first")
    try:
        done = f.apply(lab, target)
    except KeyError as e:
        raise InputError(f"--on {text}: {lab.plan.name} has no {e.args[0]!r}") from None
    entry = Entry(name, text, done.description, to_plain(done.state), time.time(), hidden)
    _save(lab, (*entries(lab), entry))
    return to_plain(entry)


def _undo(lab: LabView, entry: Entry) -> None:
    f = BY_NAME.get(entry.fault)
    if f is None:
        raise HarnessError(f"{entry.fault} is no fault this fablab has; undo it by hand")
    try:
        state = from_plain(f.state, entry.state)
    except CodecError as e:
        raise HarnessError(f"its record does not read as {f.state.__name__}: {e}") from None
    f.undo(lab, f.target(entry.on), state)


def fix(lab: LabView, name: str | None = None, settle_s: float = SETTLE_S) -> list[dict]:
    """Undo fault `name` wherever it is (every fault for None), newest first, then wait until
    the fabric has converged again (every session up, every route at its width), so that a
    check run next judges the lab, not its recovery; what was undone."""
    if name is not None:
        fault(name)
    kept, undone = list(entries(lab)), []
    for entry in reversed(tuple(kept)):
        if name is not None and entry.fault != name:
            continue
        try:
            _undo(lab, entry)
        except HarnessError as e:
            _save(lab, kept)
            raise HarnessError(f"undoing {entry.fault} on {entry.on} failed: {e}") from e
        kept.remove(entry)
        undone.append(entry)
    _save(lab, kept)
    if name is None or not any(e.hidden for e in kept):
        (lab.run_dir / MYSTERY).unlink(missing_ok=True)
    if undone and not kept:
        _converged(lab, settle_s)
    return [to_plain(e) for e in undone]


def _converged(lab: LabView, settle_s: float) -> None:
    missing: list = []

    def converged() -> bool:
        missing[:] = lab.shortfalls()
        return not missing

    wait.until(converged, settle_s, "convergence after fix", interval=0.5,
               error=lambda: LabError(f"undone, but the lab has not converged {settle_s:.0f} s later: "
                                      + "; ".join(str(m) for m in missing[:3])))


def shown(lab: LabView) -> list[dict]:
    """The faults in place as a listing may show them (fault, on, description): a mystery's as
    such, unnamed, and a mystery that hides nothing listed the same way (were it missing, the
    listing would give "nothing is wrong" away)."""
    hidden = {"fault": "mystery", "on": "?", "description": "a hidden fault (or none)"}
    found = entries(lab)
    rows = [{"fault": e.fault, "on": e.on, "description": e.description} if not e.hidden else hidden for e in found]
    if (lab.run_dir / MYSTERY).exists() and not any(e.hidden for e in found):
        rows.append(hidden)
    return rows
