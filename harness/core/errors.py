"""The exception tree. The library raises these; only the CLI turns them into messages."""
from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a declaration: where, what, and how to fix it."""

    field: str
    message: str
    hint: str = ""

    def __str__(self) -> str:
        text = f"{self.field}: {self.message}"
        return f"{text} (hint: {self.hint})" if self.hint else text


class HarnessError(Exception):
    """Base of every error fablab raises on purpose."""


class InputError(HarnessError):
    """What the user gave is wrong: a name, a path, a file, a declaration, an option. The CLI
    exits 2 for it (1 is kept for fablab's own failures, 3 for a check that found a problem)."""


class UnknownLab(InputError):
    """No running lab has this name."""


class TopologyError(InputError):
    """A declaration is invalid. Carries every problem found, not just the first; says them
    summarised when there are many (one problem on thousands of rows is said once, counted)."""

    def __init__(self, problems: list[Problem] | tuple[Problem, ...], source: str = "", what: str = "declaration") -> None:
        self.problems = tuple(problems)
        self.source = source
        head = f"{source}: " if source else ""
        count = len(self.problems)
        lines = [f"{head}{count:,} problem{'s' if count != 1 else ''} in the {what}:"]
        for kind in kinds_of(self.problems):
            lines += [f"  - {p}" for p in kind.shown]
            if kind.count > len(kind.shown):
                lines.append(f"    ... and {kind.count - len(kind.shown):,} more like these ({kind.count:,} in all)")
        said = sum(k.count for k in kinds_of(self.problems))
        if said < count:
            lines.append(f"  ... and {count - said:,} more problems of other kinds: fix these and run it again")
        super().__init__("\n".join(lines))


MAX_PROBLEMS = 1000  # a reader stops at this many problems in one file, and says where it stopped
STOPPED = "reading stopped here"
LISTED = 30  # up to this many problems are each said; more are said by kind
SHOWN = 3  # examples of one kind of problem
KINDS = 20  # kinds said, the rest counted: the message stays under 100 lines


@dataclass(frozen=True)
class ProblemKind:
    """Problems that differ only in names, numbers and lines: the first few, and how many."""

    shown: tuple[Problem, ...]
    count: int


def kinds_of(problems: tuple[Problem, ...]) -> tuple[ProblemKind, ...]:
    """`problems` as they are said: each its own kind when few, else grouped by shape (a message
    and hint with every word holding a digit, and every quoted value, set aside)."""
    if len(problems) <= LISTED:
        return tuple(ProblemKind((p,), 1) for p in problems)
    groups: dict[str, list[Problem]] = {}
    for p in problems:
        groups.setdefault(_shape(f"{p.message}\0{p.hint}"), []).append(p)
    kinds = [ProblemKind(tuple(g[:SHOWN]), len(g)) for g in groups.values()]
    stop = [k for k in kinds[KINDS:] if k.shown[0].message.startswith(STOPPED)]
    return tuple(kinds[:KINDS] + stop)


def too_many(problems: list[Problem], where: str) -> bool:
    """True once a reader has found MAX_PROBLEMS in one file: it stops there (a plan of repeated
    rows answers in seconds, not minutes), and the problems say where."""
    if len(problems) < MAX_PROBLEMS:
        return False
    problems.append(Problem(where, f"{STOPPED}, after {len(problems):,} problems", "fix those and run it again"))
    return True


_VARYING = re.compile(r"'[^']*'|\"[^\"]*\"|[\w.:/-]*\d[\w.:/-]*|did you mean \S+")


def _shape(text: str) -> str:
    return _VARYING.sub("#", text)


class DeclarationArgumentError(TopologyError, TypeError):
    """A declaration class was called with a field it does not have, without one it needs, or
    with more values by position than it has fields. A TopologyError, so the CLI reports it as
    a bad declaration; still a TypeError, as Python's own error for such a call is."""


class RenderError(HarnessError):
    """An artifact could not be produced from a valid plan."""


class MgmtNetworkError(HarnessError):
    """No mgmt subnet is free for a lab, or a plan's mgmt addresses do not fit the one given."""


class NamespaceError(HarnessError):
    """A network namespace is missing or cannot be entered."""


class LabError(HarnessError):
    """Booting, driving or tearing down a lab failed."""


class PrerequisiteError(LabError):
    """Something the runtime needs is missing on this machine (root, a package, a kernel feature)."""
