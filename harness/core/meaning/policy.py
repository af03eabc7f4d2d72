"""Prefix lists, access lists and route maps evaluated on a prefix, as FRR 8.4 applies them: a
prefix list in seq order, first match wins, implicit deny; a list a neighbour names that does
not exist, or that has no entry (only a description), denies everything (lib/plist.c
prefix_list_apply on NULL; measured on FRR 8.4.4: a leaf's sessions then received 0 of 36
prefixes either way), and `match ... prefix-list X` on such an X never matches; a route map in seq order, an entry without `match` matches everything, `call`,
`on-match` and `continue` followed, an undefined map denies."""
from __future__ import annotations

import ipaddress
from dataclasses import dataclass

from harness.core.meaning.frr import FrrConfig, Statement

Prefix = ipaddress.IPv4Network | ipaddress.IPv6Network


@dataclass(frozen=True)
class Decision:
    permit: bool
    lines: tuple[int, ...]  # the statements that decided
    sets: tuple[str, ...] = ()  # what a route map changed on the way (set ...)


class Lists:
    """The lists and maps of one parsed config (`cfg`), evaluated."""

    cfg: FrrConfig

    def prefix_list(self, family: str, name: str, prefix: Prefix) -> Decision:
        plist = self.cfg.prefix_lists.get((family, name))
        if plist is None or not plist.entries:
            return Decision(False, ())
        permit, line = plist.decide(prefix)
        return Decision(permit, (line,) if line else tuple(e.line for e in plist.entries))

    def access_list(self, name: str, prefix: Prefix) -> Decision:
        entries = self.cfg.access_lists.get(name)
        if entries is None:
            return Decision(False, ())
        for e in entries:
            if e.matches(prefix):
                return Decision(e.permit, (e.line,))
        return Decision(False, tuple(e.line for e in entries))

    def route_map(self, name: str, prefix: Prefix, depth: int = 0) -> Decision:
        entries = self.cfg.route_map(name)
        if entries is None or depth > 8:
            return Decision(False, ())  # FRR denies through a route map that does not exist
        lines: list[int] = []
        sets: list[str] = []
        matched = False  # a permit entry matched and said to go on
        i = 0
        while i < len(entries):
            e = entries[i]
            if not all(self._match(m, prefix) for m in e.matches):
                i += 1
                continue
            lines += [e.line] + [m.line for m in e.matches]
            if not e.permit:
                return Decision(False, tuple(lines))
            sets += [s.text for s in e.sets]
            lines += [s.line for s in e.sets]
            following = None
            for f in e.flow:
                w = f.words
                if w[0] == "call" and len(w) > 1:
                    called = self.route_map(w[1], prefix, depth + 1)
                    if not called.permit:
                        return Decision(False, tuple(lines + list(called.lines)))
                    sets += list(called.sets)
                elif w[0] in ("on-match", "continue"):
                    target = w[-1] if w[-1].isdigit() else None
                    if w[0] == "on-match" and w[1:2] == ["next"]:
                        target = None
                    following = (int(target) if target else e.seq + 1)
            if following is None:
                return Decision(True, tuple(lines), tuple(sets))
            matched = True
            i = next((k for k, x in enumerate(entries) if x.seq >= following and k > i), len(entries))
        if matched:
            return Decision(True, tuple(lines), tuple(sets))
        return Decision(False, tuple(lines) or tuple(e.line for e in entries))

    def _match(self, m: Statement, prefix: Prefix) -> bool:
        w = m.words
        if w[1:4] in (["ip", "address", "prefix-list"], ["ipv6", "address", "prefix-list"]) and len(w) > 4:
            if (prefix.version == 4) != (w[1] == "ip"):
                return False
            plist = self.cfg.prefix_lists.get((w[1], w[4]))
            return plist is not None and bool(plist.entries) and plist.decide(prefix)[0]
        if w[1:3] in (["ip", "address"], ["ipv6", "address"]) and len(w) > 3:
            entries = self.cfg.access_lists.get(w[3])
            if entries is None:
                return False
            return next((e.permit for e in entries if e.matches(prefix)), False)
        return False  # communities, tags, AS paths, interfaces: a bare probe carries none

    def canonical_route_map(self, name: str) -> str:
        """A route map by what it says, its name and its lists' names left out: for statements
        that only name one (`ip protocol bgp route-map X`)."""
        entries = self.cfg.route_map(name)
        if entries is None:
            return "(no such route map: denies)"
        out = []
        for e in entries:
            matches = []
            for m in e.matches:
                w = m.words
                if w[2:4] == ["address", "prefix-list"] and len(w) > 4:
                    plist = self.cfg.prefix_lists.get((w[1], w[4]))
                    body = ", ".join(map(str, plist.ordered())) if plist else "(none)"
                    matches.append(f"{w[1]} prefixes [{body}]")
                else:
                    matches.append(m.text)
            out.append(f"{'permit' if e.permit else 'deny'} {' and '.join(sorted(matches)) or 'all'}"
                       + (f" then {'; '.join(sorted(st.text for st in e.sets))}" if e.sets else "")
                       + (f" ({'; '.join(st.text for st in e.flow)})" if e.flow else ""))
        return " | ".join(out)

    def opaque_matches(self) -> tuple[str, ...]:
        """Route-map clauses a prefix probe cannot evaluate: compared as written."""
        out = set()
        for name, entries in self.cfg.route_maps.items():
            for e in entries:
                for m in e.matches:
                    if not (m.words[1:3] in (["ip", "address"], ["ipv6", "address"])):
                        out.add(m.text)
        return tuple(sorted(out))
