"""Mystery mode: one hidden fault (or none), chosen by a seed, for a learner to find with
`fablab check`, `show`, `vtysh` and `shell`; hints one at a time; the answer on request.

The fault goes in as `fablab break` would put it, marked hidden (the lab's faults.json says a
mystery is in place, not which); `fablab fix LAB --all` takes it out like any other and ends
the mystery (harness.faults.store removes mystery.json).
"""
from __future__ import annotations

import json
import random
from dataclasses import dataclass

from harness.core.codec import from_plain, to_plain
from harness.core.errors import InputError
from harness.faults.protocol import Fault
from harness.faults.store import MYSTERY, break_, in_place
from harness.faults.table import BY_NAME, check_of
from harness.plumbing.labview import LabView

STORE = MYSTERY
NONE_WEIGHT = 1  # "nothing is wrong" is one of the answers, as often as any one fault
# The faults a mystery draws from, in the order a seed indexes them: a seed keeps choosing the
# same answer (docs/learn/12-mystery.md relies on seed 1), so faults added to the table later
# are not drawn from until a lesson says so.
DRAWN = ("swapped-cables", "rogue-cable", "stray-cable", "route-leak", "l3-hashing", "bfd-off", "slow-bfd",
         "gray-link", "small-mtu", "pfc-priority", "dscp-map", "acl-flip", "wrong-vlan", "tenant-routed")


@dataclass(frozen=True)
class Mystery:
    seed: int
    fault: str | None  # None: nothing is wrong
    on: str | None
    description: str
    hints: int = 0  # how many were given


def candidates(lab: LabView) -> list[Fault | None]:
    """The faults this lab has a place for, and None (no fault)."""
    return [BY_NAME[n] for n in DRAWN if BY_NAME[n].default(lab.plan) is not None] + [None] * NONE_WEIGHT


def _load(lab: LabView) -> Mystery | None:
    path = lab.run_dir / STORE
    return from_plain(Mystery, json.loads(path.read_text())) if path.exists() else None


def _save(lab: LabView, m: Mystery) -> None:
    (lab.run_dir / STORE).write_text(json.dumps(to_plain(m), indent=2))


def start(lab: LabView, seed: int | None = None) -> Mystery:
    if _load(lab) is not None:
        raise InputError(f"a mystery is already in place in {lab.name}: `fablab mystery {lab.name} --reveal`, "
                         f"then `fablab fix {lab.name} --all`")
    if in_place(lab):
        raise InputError(f"{lab.name} has faults in place: `fablab fix {lab.name} --all` first, so that only the "
                         "mystery is wrong")
    seed = random.SystemRandom().randrange(10 ** 6) if seed is None else seed
    chosen = random.Random(seed).choice(candidates(lab))
    m = Mystery(seed, None, None, "nothing: the lab is as declared")
    if chosen is not None:
        entry = break_(lab, chosen.name, hidden=True)
        m = Mystery(seed, chosen.name, entry["on"], entry["description"])
    _save(lab, m)
    return m


def hint(lab: LabView) -> str:
    m = reveal(lab)
    f = BY_NAME.get(m.fault) if m.fault else None
    if f is None:
        hints = [f"run every check: fablab check {lab.name}; a mystery may also be that nothing is wrong",
                 "every check passed? then nothing is wrong: fablab mystery --reveal"]
    else:
        where = f.target(m.on).nodes()[0]
        hints = [f"run every check: fablab check {lab.name}; the one that fails names where to look",
                 f"what breaks is {f.teaches}: fablab check {lab.name} --only {check_of(f.caught_by)}",
                 f"look at {where}: fablab vtysh / fablab shell {lab.name} {where}"]
    given = min(m.hints, len(hints) - 1)
    _save(lab, Mystery(m.seed, m.fault, m.on, m.description, given + 1))
    return f"hint {given + 1}/{len(hints)}: {hints[given]}"


def reveal(lab: LabView) -> Mystery:
    m = _load(lab)
    if m is None:
        raise InputError(f"no mystery in {lab.name}: fablab mystery {lab.name} [--seed N] starts one")
    return m
