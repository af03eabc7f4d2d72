"""The exception tree. The library raises these; only the CLI turns them into messages."""
from __future__ import annotations

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
    """A declaration is invalid. Carries every problem found, not just the first."""

    def __init__(self, problems: list[Problem] | tuple[Problem, ...], source: str = "", what: str = "declaration") -> None:
        self.problems = tuple(problems)
        self.source = source
        head = f"{source}: " if source else ""
        count = len(self.problems)
        lines = [f"{head}{count} problem{'s' if count != 1 else ''} in the {what}:"]
        lines += [f"  - {p}" for p in self.problems]
        super().__init__("\n".join(lines))


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
