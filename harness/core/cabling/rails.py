"""Which rails each BE leaf of a cabling plan carries, and each GPU NIC on another rail's leaf,
named with the leaf:port it belongs on (astray.py finds that port).

- A GPU node's BE NICs in their names' natural order are its rails 0, 1, ...
- A leaf takes `width` NICs of a node: as many as most (node, leaf) pairs of the plan have (the
  fewer on a tie), so a leaf of two rails on purpose (`rails_per_leaf=2`) is told from a node
  doubled up on one leaf by mistake.
- A leaf carries the `width` rails most of its NICs are. A tie is broken by the rail the leaf's
  name gives (`rtsw-g1-r0`, `rail3`, 0- or 1-based, where every leaf's name gives one); else the
  tie is said, naming every NIC on the leaf.
- Every other NIC on a leaf is astray: named first, with where it belongs.
"""
from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from harness.core.cabling.apply import natural
from harness.core.cabling.astray import Home, homes
from harness.core.cabling.plan import End
from harness.core.errors import Problem


class Wire(Protocol):
    """A GPU NIC's cable as infer.py has it: the NIC end, the leaf end, the plan's row."""

    @property
    def a(self) -> End: ...
    @property
    def b(self) -> End: ...
    @property
    def where(self) -> object: ...


@dataclass(frozen=True)
class Rails:
    of_leaf: dict[str, tuple[int, ...]]
    astray: tuple[Home, ...]  # each NIC on another rail's leaf, with where it belongs
    problems: tuple[Problem, ...]


def leaf_rails(by_leaf: dict[str, list[Wire]], rail_of: dict[End, int], taken: dict[End, End],
               exists: Callable[[str, str], bool]) -> Rails:
    """The rails of each leaf (its GPU NIC cables, host end first), and what does not fit.
    `taken`: every port a cable is on -> its far end; `exists(leaf, port)`: the leaf has it."""
    named = _by_name(by_leaf)
    width = _width(by_leaf)
    problems: list[Problem] = []
    rails: dict[str, tuple[int, ...]] = {}
    tied: set[str] = set()
    for leaf, ws in by_leaf.items():
        count = Counter(rail_of[w.a] for w in ws)
        ranked = sorted(count.items(), key=lambda rc: (-rc[1], rc[0] != named.get(leaf), rc[0]))
        rails[leaf] = tuple(sorted(r for r, _ in ranked[:width]))
        if len(ranked) > width and ranked[width][1] == ranked[width - 1][1] and named.get(leaf) not in rails[leaf]:
            tied.add(leaf)
            ends = ", ".join(f"{w.a} (rail {rail_of[w.a]})" for w in sorted(ws, key=lambda w: natural(str(w.a))))
            problems.append(Problem(str(ws[0].where), f"{leaf} takes NICs of {len(count)} rails, as many of each: "
                                    f"{ends}", "a leaf carries one rail (in a group); cable each NIC to its rail's "
                                    "leaf, or name the leaf for its rail (e.g. ...-r0) so the odd one out can be named"))
    astray = {w.a for leaf, ws in by_leaf.items() if leaf not in tied for w in ws if rail_of[w.a] not in rails[leaf]}
    if not astray:
        return Rails(rails, (), tuple(problems))
    found = homes([(w.a, w.b) for ws in by_leaf.values() for w in ws], rail_of, rails, astray, taken, exists)
    for ws in by_leaf.values():
        for w in ws:
            if w.a in found:
                on = rails[w.b.device]
                problems.append(Problem(str(w.where), f"{w.a} is {w.a.device}'s rail {rail_of[w.a]} NIC (its BE NICs "
                                        f"in name order), but is cabled to {w.b}, and {w.b.device} carries rail"
                                        f"{'s' if len(on) > 1 else ''} {'/'.join(map(str, on))}", found[w.a].hint()))
    return Rails(rails, tuple(found.values()), tuple(problems))


def _width(by_leaf: dict[str, list[Wire]]) -> int:
    """How many NICs of a node a leaf takes: as many as most (node, leaf) pairs have, the fewer on a tie."""
    pairs: Counter[int] = Counter()
    for ws in by_leaf.values():
        pairs.update(Counter(w.a.device for w in ws).values())
    return sorted(pairs, key=lambda k: (-pairs[k], k))[0] if pairs else 1


_RAIL_IN_NAME = re.compile(r"(?:^|[^a-z])r(?:ail)?[-_]?(\d+)$|(?:^|[^a-z])r(?:ail)?[-_]?(\d+)[^0-9]", re.IGNORECASE)


def _by_name(by_leaf: dict[str, list[Wire]]) -> dict[str, int]:
    """The rail each BE leaf's name gives (`-r0`, `rail3`, `r_1`), counted from the lowest such
    number among them (0- or 1-based plans alike); nothing unless every leaf's name gives one."""
    found = {}
    for leaf in by_leaf:
        m = _RAIL_IN_NAME.search(leaf)
        if m is None:
            return {}
        found[leaf] = int(m.group(1) or m.group(2))
    base = min(found.values(), default=0)
    return {leaf: n - base for leaf, n in found.items()}
