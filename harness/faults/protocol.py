"""The one protocol every fault follows.

A fault has a name with one meaning, says what it does in one line, what it teaches (the
group it is listed under) and which check case must fail while it is in place (`caught_by`,
a name `harness.checks.registry.case` knows). It takes one kind of target
(harness.faults.targets) and has a default target for a plan (None: no place for it there).

`apply(lab, target) -> Applied` changes the running lab and returns a description and a
*state*: plain, typed, frozen data (harness.core.codec round-trips it) holding what `undo`
needs beyond the plan. `undo(lab, target, state)` puts the lab back from that state alone, so
it works in another process, later (`fablab fix`, from the lab's faults.json).

`applied(lab, fault, target)` is the with-block form of the same protocol, for the labs'
negative controls: it applies at once and undoes on leaving the block (or on `undo()`).
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from harness.core.errors import InputError
from harness.core.plan import Plan
from harness.faults.targets import Target, parse
from harness.plumbing.labview import LabView

S = TypeVar("S")
GROUPS = ("cabling", "isolation", "ecmp", "failover", "lossless", "tenants")  # what faults teach, listed in order


@dataclass(frozen=True)
class NoState:
    """The state of a fault whose undo needs nothing beyond its target and the plan."""


@dataclass(frozen=True)
class Applied(Generic[S]):
    description: str  # what was done, where: for a listing, a figure's title, a learner
    state: S  # what undo needs (a frozen dataclass the codec round-trips)


Apply = Callable[..., Applied]  # (lab, target, **options) -> Applied
Undo = Callable[[LabView, Any, Any], None]  # (lab, target, state)


@dataclass(frozen=True)
class Fault:
    name: str  # one meaning per name: `fablab break LAB NAME`
    teaches: str  # its group in listings: one of GROUPS
    what: str  # one line: what it does to the lab
    caught_by: str  # the check case that fails while it is in place (registry.case name)
    takes: type[Target]
    state: type  # what apply returns for undo: a frozen dataclass
    default: Callable[[Plan], Target | None]  # where it goes by default (None: nowhere in this plan)
    do: Apply = field(repr=False)
    undo_: Undo = field(repr=False)
    options: tuple[tuple[str, object], ...] = ()  # its settings, (name, value), which `but` changes
    measure_with: Callable[[Plan, Target], dict] = field(default=lambda plan, target: {}, repr=False)

    @property
    def on(self) -> str:
        """The form `--on` takes."""
        return self.takes.form

    def but(self, **options: object) -> Fault:
        """The same fault with other settings (a weight, BFD timers, which ACL entry): what it
        means stays; how far it goes changes."""
        have = dict(self.options)
        unknown = sorted(set(options) - set(have))
        if unknown:
            raise TypeError(f"fault {self.name} has no option {unknown[0]!r}; its options: "
                            f"{', '.join(have) or 'none'}")
        return dataclasses.replace(self, options=tuple({**have, **options}.items()))

    def target(self, text: str) -> Target:
        return parse(self.takes, text)

    def apply(self, lab: LabView, target: Target) -> Applied:
        self._fits(lab, target)
        applied = self.do(lab, target, **dict(self.options))
        if not isinstance(applied.state, self.state):
            raise TypeError(f"fault {self.name}: its apply returned a {type(applied.state).__name__} state, "
                            f"not a {self.state.__name__}")
        return applied

    def undo(self, lab: LabView, target: Target, state: object) -> None:
        self._fits(lab, target)
        self.undo_(lab, target, state)

    def _fits(self, lab: LabView, target: Target) -> None:
        if not isinstance(target, self.takes):
            raise InputError(f"{self.name} goes on a {self.takes.__name__.lower()} ({self.on}), "
                             f"not a {type(target).__name__.lower()} ({target})")
        known = {n.name for n in lab.plan.fabric.nodes}
        missing = [n for n in target.nodes() if n not in known]
        if missing:
            raise InputError(f"--on {target}: {lab.plan.name} has no node {missing[0]!r} (cabling.csv lists them)")

    def row(self) -> dict[str, str]:
        return {"name": self.name, "teaches": self.teaches, "what": self.what, "caught_by": self.caught_by,
                "on": self.on}


class InPlace:
    """A fault applied to a lab, until `undo()` (or the end of its with-block) takes it out."""

    def __init__(self, lab: LabView, fault: Fault, target: Target, applied: Applied) -> None:
        self.lab, self.fault, self.target, self.applied = lab, fault, target, applied
        self._done = False

    @property
    def description(self) -> str:
        return self.applied.description

    @property
    def state(self) -> object:
        return self.applied.state

    def undo(self) -> None:
        if not self._done:
            self._done = True
            self.fault.undo(self.lab, self.target, self.applied.state)

    def __enter__(self) -> InPlace:
        return self

    def __exit__(self, *exc: object) -> None:
        self.undo()

    def __repr__(self) -> str:
        return f"<{self.fault.name} on {self.target}: {self.description}>"


def applied(lab: LabView, fault: Fault, target: Target | None = None) -> InPlace:
    """Apply `fault` (on its default target for the lab's plan when None) now; the handle
    undoes it: `with applied(lab, fault, target) as a: ... a.description`."""
    if target is None:
        target = fault.default(lab.plan)
        if target is None:
            raise InputError(f"{fault.name}: {lab.plan.name} has no place for it by default; give a target "
                             f"({fault.on})")
    return InPlace(lab, fault, target, fault.apply(lab, target))


@dataclass(frozen=True)
class Control:
    """A negative control for a plan: `fault` on `target` must fail check case `case`
    (measured with `options`), and the same case pass once the fault is undone."""

    fault: Fault
    target: Target
    case: str
    options: dict = field(default_factory=dict)
