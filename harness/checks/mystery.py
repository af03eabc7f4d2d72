"""Mystery mode: one hidden fault (or none), chosen by a seed, for a learner to find with
`fablab check`, `show`, `vtysh` and `shell`; hints one at a time; the answer on request.

The fault goes in as `fablab break` would put it, marked hidden (the lab's faults.json says a
mystery is in place, not which); `fablab fix LAB --all` takes it out like any other.
"""
from __future__ import annotations

import json
import random

from harness.checks.faults import FAULTS, Fault, break_, in_place
from harness.core.errors import InputError
from harness.plumbing.labview import LabView

STORE = "mystery.json"
NONE_WEIGHT = 1  # "nothing is wrong" is one of the answers, as often as any one fault


def candidates(lab: LabView) -> list[Fault | None]:
    """The faults this lab has a place for, and None (no fault)."""
    return [f for f in FAULTS if f.default(lab.plan) is not None] + [None] * NONE_WEIGHT


def _load(lab: LabView) -> dict | None:
    path = lab.run_dir / STORE
    return json.loads(path.read_text()) if path.exists() else None


def _save(lab: LabView, doc: dict) -> None:
    (lab.run_dir / STORE).write_text(json.dumps(doc, indent=2))


def start(lab: LabView, seed: int | None = None) -> dict:
    if _load(lab) is not None:
        raise InputError(f"a mystery is already in place in {lab.name}: `fablab mystery {lab.name} --reveal`, "
                         f"then `fablab fix {lab.name} --all`")
    if in_place(lab):
        raise InputError(f"{lab.name} has faults in place: `fablab fix {lab.name} --all` first, so that only the "
                         "mystery is wrong")
    seed = random.SystemRandom().randrange(10 ** 6) if seed is None else seed
    chosen = random.Random(seed).choice(candidates(lab))
    doc = {"seed": seed, "fault": None, "on": None, "description": "nothing: the lab is as declared", "hints": 0}
    if chosen is not None:
        entry = break_(lab, chosen.name, hidden=True)
        doc.update(fault=chosen.name, on=entry["on"], description=entry["description"])
    _save(lab, doc)
    return doc


def hint(lab: LabView) -> str:
    doc = _current(lab)
    f = next((x for x in FAULTS if x.name == doc["fault"]), None)
    hints = ([f"run every check: fablab check {lab.name}; a mystery may also be that nothing is wrong",
              "every check passed? then nothing is wrong: fablab mystery --reveal"] if f is None else
             [f"run every check: fablab check {lab.name}; the one that fails names where to look",
              f"what breaks is {f.teaches}: fablab check {lab.name} --only {f.caught_by}",
              f"look at {doc['on'].split(',')[0].split(':')[0]}: fablab vtysh / fablab shell {lab.name} "
              f"{doc['on'].split(',')[0].split(':')[0]}"])
    given = min(doc["hints"], len(hints) - 1)
    doc["hints"] = given + 1
    _save(lab, doc)
    return f"hint {given + 1}/{len(hints)}: {hints[given]}"


def reveal(lab: LabView) -> dict:
    return _current(lab)


def _current(lab: LabView) -> dict:
    doc = _load(lab)
    if doc is None:
        raise InputError(f"no mystery in {lab.name}: fablab mystery {lab.name} [--seed N] starts one")
    return doc


def clear(lab: LabView) -> None:
    """The mystery is over (its fault undone by `fix`)."""
    (lab.run_dir / STORE).unlink(missing_ok=True)
