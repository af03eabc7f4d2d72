"""What a SONiC config_db.json means, and how two of them differ in what they do.

A config becomes facts: per port its settings with SONiC's defaults (an absent mtu is 9100),
its DSCP -> TC -> queue / PG chain, PFC, schedulers, WRED/ECN, buffers and watchdog
(configdb_qos), its ACLs as ordered match -> action (configdb_acl), the VLANs by vlanid and the
VNIs they bridge (configdb_vlan), the addresses of each interface, the device's settings. What
a config names (maps, profiles, rules, tables, VLAN keys) never counts; what it points to does.
Tables nothing here models are compared row by row, values normalised, so nothing differs in
silence. The mgmt tables are left out: the lab chooses them.

A difference names the switch, the port or object, the behaviour, what fablab's render does and
what the engineer's file does, and the lines of that file behind it. A change that touches many
ports alike is one difference naming them all.
"""
from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from ipaddress import ip_interface

from harness.core.inputfile import json_of
from harness.core.errors import TopologyError
from harness.core.meaning import configdb_acl, configdb_qos, configdb_vlan, configdb_yang, unified
from harness.core.meaning.configdb_norm import (ConfigDb, Fact, Row, check_shape, described, fields, metadata_only,
                                                norm, norm_list, rows_of, runs, sonic_defaults)
from harness.core.meaning.difference import Difference

# the lab's, the schema's version, or the cabling (what a port reaches: the cabling check's, not a behaviour)
SKIPPED = ("MGMT_INTERFACE", "MGMT_PORT", "MGMT_VRF_CONFIG", "VERSIONS", "DEVICE_NEIGHBOR",
           # BGP held in CONFIG_DB (unified mode) is judged as the frr.conf frrcfgd writes of it (unified.py)
           *unified.TABLES)
# Where FRR's config is held (frr.conf or CONFIG_DB), not what it does: judged as FRR runs it
DEVICE_LABELS = ("docker_routing_config_mode", "frr_mgmt_framework_config")
# An absent field is SONiC's default: its YANG's (yang_defaults, generated) or, where that states
# none, what its daemons apply (configdb_norm.APPLIED: mtu 9100, tpid 0x8100, pfc_asym off, ...).
PORT_DEFAULTS = sonic_defaults("PORT")
PORT_LABELS = ("alias", "description", "index")
DEVICE_DEFAULTS = sonic_defaults("DEVICE_METADATA")
# Tables of routed interfaces: "name" rows (settings) and "name|prefix" rows (addresses).
ROUTED = {t: sonic_defaults(t) for t in ("INTERFACE", "LOOPBACK_INTERFACE", "PORTCHANNEL_INTERFACE",
                                         "VLAN_SUB_INTERFACE")}
MODELLED = ("PORT", "DEVICE_METADATA", "BREAKOUT_CFG", "ACL_TABLE", "ACL_RULE", *ROUTED, *configdb_qos.TABLES,
            *configdb_vlan.TABLES)
_BREAKOUT = sonic_defaults("BREAKOUT_CFG")
_FIX = "give the switch's config_db.json as SONiC loads it ({TABLE: {KEY: {field: value}}})"


@dataclass(frozen=True)
class Meaning:
    """What one config_db.json does: its facts, its ACL tables and its ports."""
    facts: tuple[Fact, ...]
    acls: tuple[configdb_acl.AclTable, ...]
    ports: tuple[str, ...]

    def fact(self, behaviour: str, subject: str, part: str = "", name: str = "") -> Fact | None:
        return next((f for f in self.facts if f.key == (behaviour, subject, part, name)), None)


def parse(text: str, file: str = "config_db.json") -> dict:
    """A config_db.json's text as SONiC's tables; InputError naming the file otherwise."""
    db = json_of(text, file, _FIX)
    check_shape(file, db)
    refused = configdb_yang.problems(db, text, file)
    if refused:
        raise TopologyError(refused, source=file, what="config_db.json (values SONiC's YANG refuses)")
    return db


def meaning(db: ConfigDb) -> Meaning:
    found = [*_ports(db), *_device(db), *_addresses(db), *configdb_qos.facts(db), *configdb_vlan.facts(db),
             *_unmodelled(db)]
    return Meaning(tuple(found), configdb_acl.acl_tables(db), tuple(str(p) for p in rows_of(db, "PORT")))


def port_settings(db: ConfigDb, port: str) -> dict[str, str] | None:
    """A port's PORT row normalised, SONiC's defaults where a field is absent; None without a row."""
    row = rows_of(db, "PORT").get(port)
    return None if row is None else fields(row, PORT_DEFAULTS, ignore=PORT_LABELS)


def _ports(db: ConfigDb) -> Iterator[Fact]:
    for port, row in rows_of(db, "PORT").items():
        settings = fields(row, PORT_DEFAULTS, ignore=PORT_LABELS)
        mtu = settings.pop("mtu")
        if "lanes" in settings:
            settings["lanes"] = ",".join(norm_list(row["lanes"]))
        yield Fact("MTU", port, "", "", (("", mtu),), (Row("PORT", port, "mtu"),), "no such port",
                   "" if "mtu" in row else "(mtu not set: SONiC's default)")
        yield Fact("port", port, "", "", tuple(sorted(settings.items())), (Row("PORT", port),), "no such port")
    for port, row in rows_of(db, "BREAKOUT_CFG").items():
        yield Fact("breakout", port, "", "", tuple(sorted(fields(row, _BREAKOUT).items())),
                   (Row("BREAKOUT_CFG", port),), "no breakout mode")


def _device(db: ConfigDb) -> Iterator[Fact]:
    for key, row in rows_of(db, "DEVICE_METADATA").items():
        yield Fact("device", "device" if key == "localhost" else key, "", "",
                   tuple(sorted(fields(row, DEVICE_DEFAULTS, ignore=DEVICE_LABELS).items())),
                   (Row("DEVICE_METADATA", key),))


def _address(text: str) -> str:
    try:
        return str(ip_interface(text))
    except ValueError:
        return text


def _addresses(db: ConfigDb) -> Iterator[Fact]:
    for table, defaults in ROUTED.items():
        names: dict[str, tuple[set[str], dict[str, str], list[Row]]] = {}
        metadata = metadata_only(table)  # an address row's family and scope: intfmgrd reads neither
        for key, row in rows_of(db, table).items():
            name, _, prefix = str(key).partition("|")
            addresses, settings, rows = names.setdefault(name, (set(), dict(defaults), []))
            if prefix:
                told = fields(row, ignore=metadata)
                addresses.add(_address(prefix) + (f" {described(tuple(sorted(told.items())))}" if told else ""))
            else:
                settings.update(fields(row))
            rows.append(Row(table, key))
        for name, (addresses, settings, rows) in names.items():
            value = (("addresses", ", ".join(sorted(addresses)) or "none"), *sorted(settings.items()))
            yield Fact("addresses", name, "", "", value, tuple(rows), "not routed")


def _referenced(db: ConfigDb, value: object) -> str:
    """A value of a table nothing here models, with what it names (a profile, a map) read as
    its content, so that renaming the object changes nothing."""
    out = []
    for item in norm_list(value) if isinstance(value, (list, str)) else (norm(value),):
        name = configdb_qos.reference(item)
        target = next(((t, r) for t in configdb_qos.REFERENCED if (r := rows_of(db, t).get(name)) is not None), None)
        out.append(f"{target[0]}{{{described(tuple(sorted(fields(target[1]).items())))}}}" if target else item)
    return ",".join(sorted(out)) if isinstance(value, list) else ",".join(out)


def _unmodelled(db: ConfigDb) -> Iterator[Fact]:
    for table in sorted(db):
        if table in MODELLED or table in SKIPPED:
            continue
        for key, row in rows_of(db, table).items():
            value = tuple(sorted((k, _referenced(db, v)) for k, v in row.items())) or (("", "present"),)
            yield Fact(table, key, "", "", value, (Row(table, key),), "absent")


# --------------------------------------------------------------------------- differences


@dataclass(frozen=True)
class _Delta:
    behaviour: str
    subject: str
    part: str
    name: str
    expected: str
    found: str
    rows: tuple[Row, ...]


def diff_config_db(switch: str, expected: dict, found_text: str, file: str = "config_db.json") -> list[Difference]:
    """fablab's render (`expected`) against the engineer's config_db.json text, by what they do."""
    found = parse(found_text, file)
    a, b = meaning(expected), meaning(found)
    deltas = list(_compare(a.facts, b.facts)) + list(_acl_deltas(a.acls, b.acls))
    lines = _lines(found_text)
    return _merged(switch, file, deltas, set(a.ports) | set(b.ports), lines)


def _text(fact: Fact, only: set[str] | None = None) -> str:
    text = described(fact.value, only)
    return f"{text} {fact.note}" if fact.note else text


def _told(fact: Fact, names: list[str]) -> str:
    """The named fields of a fact in words, "unset" for one it lacks."""
    values = dict(fact.value)
    text = described(tuple((k, values.get(k, "unset")) for k in names))
    return f"{text} {fact.note}" if fact.note else text


def _compare(expected: Iterable[Fact], found: Iterable[Fact]) -> Iterator[_Delta]:
    a, b = {f.key: f for f in expected}, {f.key: f for f in found}
    for key in sorted(set(a) | set(b)):
        e, f = a.get(key), b.get(key)
        if e is not None and f is not None:
            if e.value == f.value:
                continue
            ev, fv = dict(e.value), dict(f.value)
            differing = {k for k in set(ev) | set(fv) if ev.get(k) != fv.get(k)}
            behaviour = e.behaviour
            if behaviour == "DSCP->TC":  # the first link of the chain that differs names it; the whole chain is told
                behaviour = next(configdb_qos.CHAIN[k] for k, _ in e.value if k in differing)
                differing = set(ev)
            order = list(dict.fromkeys([k for k, _ in e.value] + [k for k, _ in f.value]))
            exp, fnd = (_told(fact, [k for k in order if k in differing]) for fact in (e, f))
            yield _Delta(behaviour, *key[1:], exp, fnd, tuple(_rows(f, differing)))
        elif e is not None:
            yield _Delta(e.behaviour, *key[1:], _text(e), e.absent, ())
        elif f is not None:
            yield _Delta(f.behaviour, *key[1:], f.absent, _text(f), f.rows)


def _rows(fact: Fact, differing: set[str]) -> Iterator[Row]:
    names = {k for k, _ in fact.value}
    for row in fact.rows:  # a field row only when that field differs
        if not row.field or row.field not in names or row.field in differing:
            yield row


def _acl_deltas(expected: tuple[configdb_acl.AclTable, ...], found: tuple[configdb_acl.AclTable, ...]
                ) -> Iterator[_Delta]:
    a, b = configdb_acl.bindings(expected), configdb_acl.bindings(found)
    done: dict[tuple[tuple[int, ...], tuple[int, ...]], configdb_acl.AclDifference | None] = {}
    for port, stage in sorted(set(a) | set(b)):
        ea, fb = a.get((port, stage), ()), b.get((port, stage), ())
        ident = (tuple(map(id, ea)), tuple(map(id, fb)))
        if ident not in done:  # the same tables at many ports decide alike: probe them once
            done[ident] = configdb_acl.compare(ea, fb)
        d = done[ident]
        if d is not None:
            exp, fnd = d.texts()
            rows = d.rows if fb else tuple(Row("ACL_TABLE", t.name, "ports") for t in found)  # where it is unbound
            yield _Delta("ACL", port, f"ACL {stage}", "", exp if ea else f"no ACL: {exp}",
                         fnd if fb else f"no ACL: {fnd}", rows)


def _natural(text: str) -> tuple:
    return tuple(int(t) if t.isdigit() else t for t in re.split(r"(\d+)", text))


def _names(names: list[str]) -> str:
    """"DSCP 0", "DSCP 8" -> "DSCP 0,8"; other names as they are."""
    numbered: dict[str, list[int]] = {}
    rest = []
    for n in names:
        m = re.fullmatch(r"(.*\D) (\d+)", n)
        if m:
            numbered.setdefault(m.group(1), []).append(int(m.group(2)))
        elif n:
            rest.append(n)
    return ", ".join(rest + [f"{label} {runs(nums)}" for label, nums in numbered.items()])


def _merged(switch: str, file: str, deltas: list[_Delta], ports: set[str], lines: dict[tuple[str, ...], int]
            ) -> list[Difference]:
    # one subject and part: its facts' differences told together, names alike merged
    by_subject: dict[tuple[str, str, str], list[_Delta]] = {}
    for d in deltas:
        by_subject.setdefault((d.behaviour, d.subject, d.part), []).append(d)
    told: dict[tuple[str, str, str, str], tuple[list[str], list[Row]]] = {}
    for (behaviour, subject, part), ds in by_subject.items():
        pairs: dict[tuple[str, str], list[str]] = {}
        for d in ds:
            pairs.setdefault((d.expected, d.found), []).append(d.name)
        exp = "; ".join(f"{_names(n)}: {e}" if _names(n) else e for (e, _), n in pairs.items() if e)
        fnd = "; ".join(f"{_names(n)}: {f}" if _names(n) else f for (_, f), n in pairs.items() if f)
        subjects, rows = told.setdefault((behaviour, part, exp, fnd), ([], []))
        subjects.append(subject)
        rows += [r for d in ds for r in d.rows]
    out = []
    for (behaviour, part, exp, fnd), (subjects, rows) in told.items():
        subjects.sort(key=_natural)
        out.append(Difference(switch, file, _subject(subjects, part, ports), behaviour, exp, fnd,
                              tuple(sorted({n for r in rows if (n := _line(lines, r))}))))
    return sorted(out, key=lambda d: (d.behaviour, _natural(d.subject)))


def _subject(subjects: list[str], part: str, ports: set[str]) -> str:
    if len(subjects) == 1 and not part.startswith("ACL"):
        return f"{subjects[0]} {part}".strip()
    who = f"every port ({len(subjects)})" if len(subjects) > 1 and set(subjects) == ports else ", ".join(subjects)
    return f"{part} on {who}" if part else who


# --------------------------------------------------------------------------- lines


_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[{}\[\]:,]|\n')


def _lines(text: str) -> dict[tuple[str, ...], int]:
    """(table,), (table, key), (table, key, field) -> the 1-based line of that name in the text."""
    out: dict[tuple[str, ...], int] = {}
    stack: list[str | None] = []  # the key of each object or list the scan is inside
    line, at, key, pending = 1, 1, None, None
    for m in _TOKEN.finditer(text):
        tok = m.group()
        if tok == "\n":
            line += 1
        elif tok.startswith('"'):
            pending, at = (json.loads(tok) if "\\" in tok else tok[1:-1]), line
        elif tok == ":":
            key = pending
            path = tuple(str(k) for k in stack[1:]) + (str(key),)
            if len(path) <= 3:
                out.setdefault(path, at)
        elif tok in "{[":
            stack.append(key)
            key = None
        elif tok in "}]":
            if stack:
                stack.pop()
        else:
            key = None
    return out


def _line(lines: Mapping[tuple[str, ...], int], row: Row) -> int | None:
    return lines.get((row.table, row.key, row.field)) if row.field and (row.table, row.key, row.field) in lines \
        else lines.get((row.table, row.key))
