"""Switch configs compared by meaning, not by text: `fablab diff TOPOLOGY DIR`.

An frr.conf becomes a set of statements, each under its context (`router bgp`, an address
family, a route-map entry, a BFD profile, an interface): order, indentation, comments and
blank lines do not count, and neither do the ways FRR accepts the same thing written twice
(a neighbour's settings given on it or on its peer-group: each neighbour is compared with
what it inherits). The ASN is a statement of `router bgp`, so a wrong ASN is one difference,
not a different section. A config_db.json becomes (table, key, field) -> value; the mgmt
addresses (MGMT_INTERFACE), which fablab moves per lab, are left out.

Each difference names the switch, its area (BGP neighbours, prefix lists, route maps,
multipath, BFD, QoS, ports, ...), what fablab renders and what the directory holds.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass

# Blocks of frr.conf: what opens one at the top, what opens one inside another, what closes one.
_TOP = ("router ", "interface ", "route-map ", "bfd", "vrf ", "line ", "key chain ", "ip route-map")
_NESTED = ("address-family ", "profile ", "peer ", "vni ")
_CLOSE = ("exit", "exit-address-family", "exit-vrf", "exit-vni", "end", "quit")
_SKIP = ("!", "#")
# Statements that only exist at the top: unindented, they end any block left open (a config
# written without `exit`s).
_GLOBAL = ("ip prefix-list ", "ipv6 prefix-list ", "hostname ", "log ", "service ", "frr ", "ip route ",
           "ipv6 route ", "agentx", "password ", "enable ", "zebra ", "no zebra ", "ip nht ", "ipv6 nht ")
_NEIGHBOR = re.compile(r"^neighbor (\S+) (.+)$")


@dataclass(frozen=True)
class Difference:
    switch: str
    file: str  # frr.conf | config_db.json
    area: str
    where: str  # the context (router bgp › address-family ipv4 unicast) or table|key
    fablab: str  # what fablab renders here ("" when it renders nothing)
    theirs: str  # what the directory holds ("" when nothing)

    def __str__(self) -> str:
        return (f"{self.switch} {self.file} [{self.area}] {self.where}: fablab {self.fablab or '(nothing)'}, "
                f"theirs {self.theirs or '(nothing)'}")


def frr_statements(text: str) -> dict[tuple[str, ...], set[str]]:
    """context -> statements; `router bgp N` is the context `router bgp` with `asn N` in it."""
    out: dict[tuple[str, ...], set[str]] = {}
    stack: list[str] = []
    for raw in text.splitlines():
        line = " ".join(raw.split())
        if not line or line.startswith(_SKIP):
            continue
        if line in _CLOSE:
            if stack:
                stack.pop()
            continue
        if not raw[:1].isspace() and line.startswith(_TOP + _GLOBAL):
            stack = []
        if line.startswith(_TOP) and not stack:
            context = line
            if line.startswith("router bgp "):
                context, asn = "router bgp", line.split()[2]
                out.setdefault((context,), set()).add(f"asn {asn}")
            stack = [context]
            out.setdefault(tuple(stack), set())
            continue
        if line.startswith(_NESTED) and stack:
            stack = stack[:1] + [line]
            out.setdefault(tuple(stack), set())
            continue
        out.setdefault(tuple(stack), set()).add(line)
    return _inherit(_lists(out))


_PREFIX_LIST = re.compile(r"^(ip|ipv6) prefix-list (\S+) (?:seq (\d+) )?(.+)$")


def _lists(model: dict[tuple[str, ...], set[str]]) -> dict[tuple[str, ...], set[str]]:
    """Each prefix list as one statement, its entries in sequence order: first match wins, so
    the order is the meaning and the sequence numbers are not."""
    top = model.get((), set())
    entries: dict[tuple[str, str], list[tuple[int, str]]] = {}
    rest = set()
    for s in top:
        m = _PREFIX_LIST.match(s)
        if m:
            entries.setdefault((m.group(1), m.group(2)), []).append((int(m.group(3) or 0), m.group(4)))
        else:
            rest.add(s)
    for (family, name), items in entries.items():
        rest.add(f"{family} prefix-list {name}: " + "; ".join(e for _, e in sorted(items)))
    return {**model, (): rest} if entries else model


def _inherit(model: dict[tuple[str, ...], set[str]]) -> dict[tuple[str, ...], set[str]]:
    """Each neighbour with its peer-group's settings, wherever they were written."""
    bgp = model.get(("router bgp",), set())
    groups = {m.group(1) for s in bgp if (m := _NEIGHBOR.match(s)) and m.group(2) == "peer-group"}
    member = {}
    for s in bgp:
        m = _NEIGHBOR.match(s)
        if m and (g := re.fullmatch(r"(?:interface )?peer-group (\S+)", m.group(2))) and g.group(1) in groups:
            member[m.group(1)] = g.group(1)
    if not groups:
        return model
    out = {}
    for context, statements in model.items():
        if context[:1] != ("router bgp",):
            out[context] = statements
            continue
        settings: dict[str, set[str]] = {}
        rest = set()
        for s in statements:
            m = _NEIGHBOR.match(s)
            if m and not re.fullmatch(r"(?:interface )?peer-group(?: \S+)?", m.group(2)):
                settings.setdefault(m.group(1), set()).add(m.group(2))
            else:
                rest.add(s)
        for name, group in member.items():
            settings.setdefault(name, set()).update(settings.get(group, set()))
        for name in groups:
            settings.pop(name, None)  # its settings live on in its members
        if len(context) == 1:
            rest = {s for s in rest if not ((m := _NEIGHBOR.match(s)) and m.group(1) in groups)}
            rest |= {f"neighbor {n}" for n in member}  # membership, written either way
        out[context] = rest | {f"neighbor {n} {v}" for n, vs in settings.items() for v in vs}
    return out


def _frr_area(statement: str, context: tuple[str, ...]) -> str:
    head = context[0] if context else ""
    if "bfd" in statement or head == "bfd":
        return "BFD"
    if head.startswith("route-map") or "route-map" in statement:
        return "route maps"
    if "prefix-list" in statement:
        return "prefix lists"
    if "maximum-paths" in statement or "multipath" in statement:
        return "multipath"
    if statement.startswith("neighbor") or statement.startswith("asn"):
        return "BGP neighbours"
    if head.startswith("interface"):
        return "interfaces"
    return "routing" if head.startswith("router") else "other"


def diff_frr(switch: str, ours: str, theirs: str) -> list[Difference]:
    a, b = frr_statements(ours), frr_statements(theirs)
    out = []
    for context in sorted(set(a) | set(b)):
        where = " › ".join(context) or "(top level)"
        mine, yours = a.get(context, set()) - b.get(context, set()), b.get(context, set()) - a.get(context, set())
        # one setting changed reads as one difference: a statement each side under one key
        by_key: dict[str, tuple[list[str], list[str]]] = {}
        for side, statements in ((0, mine), (1, yours)):
            for st in statements:
                by_key.setdefault(_key(st), ([], []))[side].append(st)
        for key in sorted(by_key):
            ours_, theirs_ = by_key[key]
            if len(ours_) == 1 and len(theirs_) == 1:
                out.append(Difference(switch, "frr.conf", _frr_area(ours_[0], context), where, ours_[0], theirs_[0]))
                continue
            out += [Difference(switch, "frr.conf", _frr_area(st, context), where, st, "") for st in sorted(ours_)]
            out += [Difference(switch, "frr.conf", _frr_area(st, context), where, "", st) for st in sorted(theirs_)]
    return out


def _key(statement: str) -> str:
    """What a statement sets: a prefix list's name, else all but its value (the last word)."""
    if ": " in statement and "prefix-list" in statement:
        return statement.split(": ", 1)[0]
    return statement.rsplit(" ", 1)[0] if " " in statement else statement


# --------------------------------------------------------------------------- config_db.json

_SKIPPED_TABLES = ("MGMT_INTERFACE",)  # the mgmt addresses move per lab
_QOS = ("DSCP_TO_TC_MAP", "TC_TO_QUEUE_MAP", "TC_TO_PRIORITY_GROUP_MAP", "MAP_PFC_PRIORITY_TO_QUEUE", "WRED_PROFILE",
        "SCHEDULER", "PORT_QOS_MAP", "QUEUE", "PFC_WD", "BUFFER_POOL", "BUFFER_PROFILE", "BUFFER_PG", "BUFFER_QUEUE",
        "CABLE_LENGTH")


def _db_area(table: str, field: str) -> str:
    if table in _QOS:
        return "QoS"
    if table == "PORT":
        return "MTUs" if field == "mtu" else "ports"
    if table in ("INTERFACE", "LOOPBACK_INTERFACE", "VRF"):
        return "addresses"
    if table.startswith(("VLAN", "VXLAN", "ACL")):
        return "tenants"
    return "device"


def _flat(db: dict) -> dict[tuple[str, str, str], str]:
    out = {}
    for table, rows in db.items():
        if table in _SKIPPED_TABLES or not isinstance(rows, dict):
            continue
        for key, fields in rows.items():
            if isinstance(fields, dict) and fields:
                for f, v in fields.items():
                    out[(table, key, f)] = json.dumps(v) if not isinstance(v, str) else v
            else:
                out[(table, key, "")] = "(present)"
    return out


def diff_config_db(switch: str, ours: dict, theirs: dict) -> list[Difference]:
    a, b = _flat(ours), _flat(theirs)
    out = []
    for k in sorted(set(a) | set(b)):
        if a.get(k) != b.get(k):
            table, key, f = k
            out.append(Difference(switch, "config_db.json", _db_area(table, f), f"{table}|{key}" + (f" {f}" if f else ""),
                                  a.get(k, ""), b.get(k, "")))
    return out
