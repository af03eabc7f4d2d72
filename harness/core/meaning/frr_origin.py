"""Which line of an engineer's frr.conf each line of FRR's own form of it came from.

FRR's `show running-config` of a file (harness.plumbing.frr_reader) is what is judged, but a
difference is said at the engineer's line. A line of FRR's form is found back in the file within
the same node (the same BGP instance, address family, interface, route-map entry, ... by what
it is, not by how its header was worded): the same statement, else the one with the same first
words (FRR rewords `ipv6 nd ra-interval msec 10000` as `ipv6 nd ra-interval 10`), else the line
that opened the node. A later line wins, as it does in FRR. Lines FRR adds itself (`frr
version`, defaults it prints) come from no line: 0.
"""
from __future__ import annotations

from harness.core.meaning.frr import trace

_WORDS = (4, 3, 2)  # how many first words still name the same setting


def origins(canonical: str, original: str) -> tuple[int, ...]:
    """For each line of `canonical` (FRR's form of `original`), the line of `original` it came
    from, 0 where none."""
    exact: dict[tuple, int] = {}
    by_words: dict[tuple, int] = {}
    opened: dict[tuple, int] = {}
    for no, path, text in trace(original):
        exact[(path, text)] = no
        words = tuple(text.split())
        for k in _WORDS:
            by_words[(path, words[:k])] = no
        opened.setdefault(path, 0)
    # the line that opened each node: the statement run one level up that the next one ran under
    steps = trace(original)
    for (no, path, _), (_, after, _) in zip(steps, steps[1:]):
        if len(after) == len(path) + 1 and after[:len(path)] == path and not opened.get(after):
            opened[after] = no
    out = [0] * len(canonical.splitlines())
    for no, path, text in trace(canonical):
        words = tuple(text.split())
        found = exact.get((path, text))
        for k in _WORDS:
            if found is None:
                found = by_words.get((path, words[:k]))
        if found is None:
            found = opened.get(path) or 0
        out[no - 1] = found
    return tuple(out)
