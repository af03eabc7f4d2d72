"""Node names found in free text (a verdict's sentence, a log line) as whole words: be-s1 is
not found in be-s10, nor fe-l1 in fe-l1-old."""
from __future__ import annotations

import re
from collections.abc import Collection


def pattern(names: Collection[str]) -> re.Pattern[str]:
    """Any of `names` as a whole word; the longest first, so that a name holding another wins."""
    alternatives = "|".join(re.escape(n) for n in sorted(set(names), key=len, reverse=True))
    return re.compile(r"(?<![\w-])(?:" + (alternatives or r"(?!)") + r")(?![\w-])")


def named_in(text: str, names: Collection[str]) -> tuple[str, ...]:
    """The names that `text` mentions, sorted."""
    return tuple(sorted(set(pattern(names).findall(text))))
