"""A config_db.json's values held to what SONiC's YANG models let them be (yang_types.py, generated
from the models by scripts/gen_yang_types.py): `PORT|Ethernet0 admin_status "sideways"`, a
`bgp_asn` of "abc", an INTERFACE key `Ethernet0|10.0.0.0/33` are what SONiC refuses to load, so
fablab refuses them as bad input at file:line, naming what the model allows, before judging
anything. A field or key part the generated types do not cover is not checked.
"""
from __future__ import annotations

import functools
import ipaddress
import json
import re
from collections.abc import Mapping
from pathlib import Path

from harness.core.errors import Problem, too_many
from harness.core.inputfile import quoted


def _tupled(value: object) -> object:
    return tuple(_tupled(v) for v in value) if isinstance(value, list) else value


# yang_types.json: generated from SONiC's YANG models by scripts/gen_yang_types.py (data, 2,000 fields)
_TYPES = json.loads((Path(__file__).with_name("yang_types.json")).read_text())
FIELDS: dict[str, dict[str, tuple]] = {t: {f: _tupled(s) for f, s in fs.items()} for t, fs in _TYPES["fields"].items()}
KEYS: dict[str, tuple] = {t: _tupled(shapes) for t, shapes in _TYPES["keys"].items()}


@functools.lru_cache(maxsize=None)
def _pattern(text: str) -> re.Pattern:
    return re.compile(text)


def _one(spec: tuple, value: object) -> bool:
    """Whether one value (not a list) is of `spec`."""
    if value is None or isinstance(value, (dict, list)):
        return False
    text = ("true" if value else "false") if isinstance(value, bool) else str(value).strip()
    kind = spec[0]
    if kind == "enum":
        return text in spec[1]
    if kind == "int":
        if not re.fullmatch(r"-?\d{1,20}", text):
            return False
        return any(lo <= int(text) <= hi for lo, hi in spec[1])
    if kind == "bool":
        return text.lower() in ("true", "false")
    if kind == "ip":
        try:
            found = ipaddress.ip_interface(text) if spec[2] == "prefix" else ipaddress.ip_address(text)
        except ValueError:
            return False
        return (spec[2] != "prefix" or "/" in text) and spec[1] in (0, found.version)
    if kind == "str":
        if spec[2] and not any(lo <= len(text) <= hi for lo, hi in spec[2]):
            return False
        return all(_pattern(p).fullmatch(text) for p in spec[1])
    if kind == "union":
        return any(holds(s, value) for s in spec[1])
    return True


def holds(spec: tuple, value: object) -> bool:
    """Whether a config_db value is one SONiC's YANG lets a leaf of `spec` hold: one value for a
    leaf, a list (or config_db's comma-joined string) for a leaf-list."""
    if spec[0] == "list":
        items = value if isinstance(value, list) else [v for v in str(value).split(",")] if value != "" else []
        return all(_one(spec[1], v) or (spec[1][0] == "union" and holds(spec[1], v)) for v in items)
    if spec[0] == "union":
        return any(holds(s, value) for s in spec[1])
    return _one(spec, value)


def described(spec: tuple) -> str:
    kind = spec[0]
    if kind == "enum":
        return "one of " + ", ".join(spec[1])
    if kind == "int":
        return "an integer in " + " or ".join(f"{lo}..{hi}" for lo, hi in spec[1])
    if kind == "bool":
        return "true or false"
    if kind == "ip":
        family = f"IPv{spec[1]}" if spec[1] else "IP"
        return f"an {family} {spec[2]}" + (" with its length" if spec[2] == "prefix" else "")
    if kind == "str":
        lengths = " or ".join(f"{lo}..{hi}" for lo, hi in spec[2])
        return "a string" + (f" of {lengths} characters" if lengths else "") + (" of its pattern" if spec[1] else "")
    if kind == "list":
        return f"a list, each {described(spec[1])}"
    return " or ".join(described(s) for s in spec[1])


def problems(db: Mapping[str, object], text: str, file: str) -> list[Problem]:
    """Every value and key part of `db` SONiC's YANG would refuse, at file:line."""
    out: list[Problem] = []
    for table, rows in db.items():
        fields, shapes = FIELDS.get(table, {}), KEYS.get(table, ())
        if not (fields or shapes) or not isinstance(rows, Mapping):
            continue
        for key, row in rows.items():
            parts = str(key).split("|")
            fits = [s for s in shapes if len(s) == len(parts)]
            if shapes and not fits:
                said = " or ".join("|".join(leaf for leaf, _ in s) for s in shapes)
                out.append(Problem(f"{file}:{_line(text, table, key)}", f"{table}|{key}: a key of {len(parts)} parts; "
                                   f"SONiC's YANG keys {table} rows as {said}", "fix the key"))
                continue
            wrong = [[(leaf, spec, part) for (leaf, spec), part in zip(s, parts)
                      if spec is not None and not holds(spec, part)] for s in fits]
            if fits and all(wrong):  # no list (or container) of the table takes this key
                leaf, spec, part = wrong[0][0]
                out.append(Problem(f"{file}:{_line(text, table, key)}", f"{table}|{key}: its {leaf} {quoted(part)} "
                                   f"is not {described(spec)}", "SONiC's YANG refuses it: fix the key"))
            for name, value in (row.items() if isinstance(row, Mapping) else ()):
                spec = fields.get(name.rstrip("@"))
                if spec is not None and not holds(spec, value):
                    out.append(Problem(f"{file}:{_line(text, table, key, name)}", f"{table}|{key}: {name} "
                                       f"{quoted(value)} is not {described(spec)}",
                                       f"SONiC's YANG ({table}) refuses it: fix the value, or leave it out"))
            if too_many(out, f"{file}:{_line(text, table, key)}"):
                return out
    return out


def _line(text: str, *keys: str) -> int:
    """The line of the last of `keys`, each looked for after the one before (a good guess)."""
    at = 0
    for key in keys:
        found = text.find(json.dumps(key), at)
        if found < 0:
            break
        at = found
    return text.count("\n", 0, at) + 1
