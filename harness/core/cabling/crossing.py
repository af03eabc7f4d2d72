"""Cables that join the frontend to the backend, found from the graph alone.

The planes are told apart as the parts the switch-to-switch cables make (infer.py); one stray
cable between an FE and a BE switch makes them one part, and a plan without roles would then
be read as one odd fabric, every later problem a consequence. So before the split:

- a cable between two leaves, or two spines, is never part of a Clos: it is left out of the
  split (and named where it is checked);
- a leaf–spine cable that is a bridge of the switch graph, with two or more switches on either
  side of it, joins two fabrics: a leaf's own uplinks all reach one fabric, so a leaf whose
  side has other switches reaches them through another plane's spines.

A spine–super-spine bridge is not one: a pod with one uplink to the super-spines is a fabric.
"""
from __future__ import annotations

from collections import defaultdict

from harness.core.cabling.plan import CableRow


def crossing(cables: list[CableRow], tier: dict[str, str]) -> tuple[CableRow, ...]:
    """The switch-to-switch cables of `cables` (ends in `tier`: 'leaf', 'spine', 'superspine')
    that no Clos has: same tier at both ends, or a leaf–spine bridge between two fabrics."""
    links = [c for c in cables if c.a.device in tier and c.b.device in tier]
    same = [c for c in links if tier[c.a.device] == tier[c.b.device]]
    rest = [c for c in links if tier[c.a.device] != tier[c.b.device]]
    out = list(same)
    for i, side, part in _bridges(rest):
        c = rest[i]
        if {tier[c.a.device], tier[c.b.device]} == {"leaf", "spine"} and 2 <= len(side) <= len(part) - 2:
            out.append(c)
    return tuple(out)


def _bridges(links: list[CableRow]) -> list[tuple[int, frozenset[str], frozenset[str]]]:
    """Each bridge of the multigraph `links` (by index), the switches on its far side from
    where the search met it, and the switches of its part (Tarjan's low-link, iterative:
    plans have thousands of cables)."""
    adj: dict[str, list[tuple[str, int]]] = defaultdict(list)
    for i, c in enumerate(links):
        adj[c.a.device].append((c.b.device, i))
        adj[c.b.device].append((c.a.device, i))
    order: dict[str, int] = {}
    low: dict[str, int] = {}
    below: dict[str, set[str]] = {}
    found: list[tuple[int, frozenset[str], frozenset[str]]] = []
    for root in sorted(adj):
        here: list[tuple[int, frozenset[str]]] = []
        if root in order:
            continue
        order[root] = low[root] = len(order)
        below[root] = {root}
        stack = [(root, -1, iter(adj[root]))]
        while stack:
            node, via, it = stack[-1]
            step = next(((m, e) for m, e in it if e != via), None)
            if step is not None:
                m, e = step
                if m in order:
                    low[node] = min(low[node], order[m])
                else:
                    order[m] = low[m] = len(order)
                    below[m] = {m}
                    stack.append((m, e, iter(adj[m])))
                continue
            stack.pop()
            if stack:
                parent = stack[-1][0]
                low[parent] = min(low[parent], low[node])
                below[parent] |= below[node]
                if low[node] > order[parent]:
                    here.append((via, frozenset(below[node])))
        part = frozenset(below[root])
        found += [(i, side, part) for i, side in here]
    return found
