"""What every check result shares: it passes when it found no problem."""
from __future__ import annotations


class Outcome:
    """Mixin for frozen result dataclasses that carry `problems: tuple[str, ...]`."""

    problems: tuple[str, ...]

    @property
    def passed(self) -> bool:
        return not self.problems
