#!/usr/bin/env python3
"""Write harness/core/meaning/yang_types.json: what SONiC's YANG models let each CONFIG_DB field and
key part hold, so that a value SONiC would refuse (`admin_status: sideways`, `bgp_asn: abc`, an
INTERFACE key `Ethernet0|10.0.0.0/33`) is refused as bad input where fablab reads it, not judged.

    .venv/bin/python scripts/gen_yang_types.py                    # <reference>/sonic-yang/{202411,master}
    .venv/bin/python scripts/gen_yang_types.py DIR [MASTER_DIR]   # the .yang files of a release (and master)
    .venv/bin/python scripts/gen_yang_types.py --check            # exit 1 if the module is stale

Only the types whose meaning is plain are written: enumerations, integer ranges, booleans, IP
addresses and prefixes (RFC 6991's inet types by name), unions of those. A string pattern, a
leafref, a union with any other member: nothing written, nothing refused. Where the release and
master differ, either's values are taken (a config for a newer switch may use master's). The YANG
parser and the tables are scripts/gen_yang_defaults.py's.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path

_spec = importlib.util.spec_from_file_location("gen_yang_defaults", Path(__file__).with_name("gen_yang_defaults.py"))
_gen = importlib.util.module_from_spec(_spec)
sys.modules.setdefault("gen_yang_defaults", _gen)
_spec.loader.exec_module(_gen)
Models, Stmt, REFERENCE, RELEASES, ROOT = _gen.Models, _gen.Stmt, _gen.REFERENCE, _gen.RELEASES, _gen.ROOT

TARGET = ROOT / "harness" / "core" / "meaning" / "yang_types.json"
COMMAND = ".venv/bin/python scripts/gen_yang_types.py"

_INTS = {"int8": (-128, 127), "int16": (-32768, 32767), "int32": (-2 ** 31, 2 ** 31 - 1),
         "int64": (-2 ** 63, 2 ** 63 - 1),
         "uint8": (0, 255), "uint16": (0, 65535), "uint32": (0, 2 ** 32 - 1), "uint64": (0, 2 ** 64 - 1)}
_IETF = {  # RFC 6991's types, which SONiC's directory does not hold, by name
    "ipv4-address": ("ip", 4, "address"), "ipv6-address": ("ip", 6, "address"), "ip-address": ("ip", 0, "address"),
    "ipv4-prefix": ("ip", 4, "prefix"), "ipv6-prefix": ("ip", 6, "prefix"), "ip-prefix": ("ip", 0, "prefix"),
    "as-number": ("int", ((0, 2 ** 32 - 1),)), "port-number": ("int", ((0, 65535),)), "dscp": ("int", ((0, 63),)),
}

# SONiC's own typedefs of addresses and prefixes (sonic-types.yang): string patterns that say what
# RFC 6991's types say; read as those (one of them has a pattern Python's re does not read as XSD).
_SONIC = {"sonic-ip4-prefix": ("ip", 4, "prefix"), "sonic-ip6-prefix": ("ip", 6, "prefix"),
          "sonic-ip-prefix": ("ip", 0, "prefix")}


def _ranges(text: str, base: tuple[int, int]) -> tuple[tuple[int, int], ...]:
    out = []
    for part in text.split("|"):
        lo, _, hi = (x.strip() for x in part.partition(".."))
        hi = hi or lo
        low = base[0] if lo == "min" else int(lo)
        high = base[1] if hi == "max" else int(hi)
        out.append((low, high))
    return tuple(out)


def spec(models: Models, module: Stmt, kind: Stmt | None, base: tuple[int, int] | None = None) -> tuple | None:
    """What a `type` statement lets a value be, as yang_types.py writes it; None: not checked."""
    if kind is None or kind.arg is None:
        return None
    name = kind.arg
    own_range = kind.first("range")
    if name == "enumeration":
        return ("enum", tuple(e.arg for e in kind.all("enum")))
    if name in _INTS:
        bounds = _INTS[name]
        return ("int", _ranges(own_range.arg, bounds) if own_range is not None else (bounds,))
    if name == "boolean":
        return ("bool",)
    if name == "union":
        members = [spec(models, module, t) for t in kind.all("type")]
        return None if any(m is None for m in members) else ("union", tuple(members))
    if name == "string":
        return _string(kind)
    if ":" not in name and name in ("leafref", "binary", "identityref", "empty", "decimal64", "bits",
                                     "instance-identifier"):
        return None
    owner, local = models.owner(module, name)
    if owner is None or local in _SONIC:
        found = _IETF.get(local) if owner is None else _SONIC[local]
    else:
        defined = models.defined(module, "typedef", name)
        if defined is None:
            return None
        found = spec(models, defined[0], defined[1].first("type"))
    if found is not None and found[0] == "int" and own_range is not None:  # a range narrowing a typedef
        found = ("int", _ranges(own_range.arg, (min(lo for lo, _ in found[1]), max(hi for _, hi in found[1]))))
    return found


def _string(kind: Stmt) -> tuple | None:
    """A string's patterns (XSD regular expressions, whole-value matches) and length, where Python's
    re reads the pattern as XSD does: none with XSD's own escapes, anchors (literal in XSD) or an
    inverted match; otherwise nothing is checked."""
    patterns = []
    for p in kind.all("pattern"):
        text = p.arg
        if any(x in text for x in ("\\p", "\\i", "\\c", "^", "$", "(?")) or p.first("modifier") is not None:
            return None
        try:
            re.compile(text)
        except re.error:
            return None
        patterns.append(text)
    length = kind.first("length")
    bounds = _ranges(length.arg, (0, 2 ** 32)) if length is not None else ()
    return ("str", tuple(patterns), bounds) if patterns or bounds else None


def _leaves(models: Models, module: Stmt, node: Stmt) -> Iterator[tuple[str, Stmt, Stmt, bool]]:
    """(field, its module, its leaf, a leaf-list?) of a table's fields (map entries not read)."""
    for owner, child, _ in models.data(module, node):
        if child.keyword in ("leaf", "leaf-list"):
            yield child.arg, owner, child, child.keyword == "leaf-list"
        elif child.keyword == "container" or (child.keyword == "list" and node.keyword == "container"):
            yield from _leaves(models, owner, child)


def _merge(a: tuple | None, b: tuple | None) -> tuple | None:
    """Either's values (a field typed by two lists, or by the release and master)."""
    if a is None or b is None:
        return None
    if a == b:
        return a
    if a[0] == b[0] == "enum":
        return ("enum", tuple(dict.fromkeys(a[1] + b[1])))
    if a[0] == b[0] == "str" and a[1] != b[1]:  # patterns of two lists: either may hold
        return ("union", (a, b))
    if a[0] == b[0] == "int":
        return ("int", tuple(dict.fromkeys(a[1] + b[1])))
    return ("union", (a, b))


def types(models: Models) -> tuple[dict, dict]:
    """FIELDS: table -> {field: spec}; KEYS: table -> the key shapes of its lists, each a tuple of
    (key leaf, spec) in the order the key names them."""
    fields: dict[str, dict[str, tuple | None]] = {}
    keys: dict[str, set[tuple]] = {}
    for table, module, node in models.tables():
        found = fields.setdefault(table, {})
        for field, owner, leaf, is_list in _leaves(models, module, node):
            s = spec(models, owner, leaf.first("type"))
            s = ("list", s) if is_list and s is not None else s
            found[field] = _merge(found[field], s) if field in found else s
        for owner, child, _ in models.data(module, node):
            if child.keyword == "container":  # a row of its own name (DEVICE_METADATA|localhost)
                keys.setdefault(table, set()).add(((child.arg, ("enum", (child.arg,))),))
            key = child.first("key") if child.keyword == "list" else None
            if key is None:
                continue
            by_name = {c.arg: (o, c) for o, c, _ in models.data(owner, child) if c.keyword == "leaf"}
            shape = tuple((k, spec(models, by_name[k][0], by_name[k][1].first("type")) if k in by_name else None)
                          for k in key.arg.split())
            keys.setdefault(table, set()).add(shape)
    return ({t: {f: s for f, s in sorted(v.items()) if s is not None} for t, v in sorted(fields.items())},
            {t: tuple(sorted(v, key=repr)) for t, v in sorted(keys.items())})


def _both(a: tuple[dict, dict], b: tuple[dict, dict]) -> tuple[dict, dict]:
    fields: dict[str, dict] = {}
    for table in sorted(set(a[0]) | set(b[0])):
        x, y = a[0].get(table, {}), b[0].get(table, {})
        merged = {f: (_merge(x[f], y[f]) if f in x and f in y else x.get(f, y.get(f))) for f in sorted(set(x) | set(y))}
        fields[table] = {f: s for f, s in merged.items() if s is not None}
    keys = {t: tuple(sorted(set(a[1].get(t, ())) | set(b[1].get(t, ())), key=repr))
            for t in sorted(set(a[1]) | set(b[1]))}
    return {t: f for t, f in fields.items() if f}, keys


def module_text(target: Path, other: Path | None) -> str:
    """yang_types.json: data, not a module (2,000 fields); harness/core/meaning/configdb_yang.py reads it."""
    found = types(Models(target))
    if other is not None:
        found = _both(found, types(Models(other)))
    args = " ".join(f"<reference>/sonic-yang/{d.name}" if d.parent.name == "sonic-yang" else str(d)
                    for d in (target, other) if d is not None)
    releases = f"{target.name} and {other.name}" if other is not None else target.name
    fields, keys = found
    doc = {"about": [f"What SONiC's YANG models of {releases} let each CONFIG_DB field and key part hold.",
                     f"GENERATED: do not edit; run {COMMAND} {args}",
                     "(<reference>: $FABLAB_REFERENCE or ../shared/reference).",
                     "A spec: ['enum', values], ['int', [[low, high], ...]], ['bool'],",
                     "['ip', 4|6|0, 'address'|'prefix'],",
                     "['str', patterns, lengths] (XSD patterns, each matching the whole value), ['union', specs],",
                     "['list', spec] for a leaf-list. A field or key part not here is not checked.",
                     f"fields: {len(fields)} tables, {sum(len(f) for f in fields.values())} fields; keys: each list's "
                     "key leaves, in order."],
           "fields": fields, "keys": {t: [list(shape) for shape in shapes] for t, shapes in keys.items()}}
    return json.dumps(doc, indent=1, sort_keys=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("directories", nargs="*", type=Path)
    parser.add_argument("--check", action="store_true", help="exit 1 if the module is not what this writes")
    args = parser.parse_args(argv)
    dirs = args.directories or [REFERENCE / "sonic-yang" / r for r in RELEASES]
    text = module_text(dirs[0], dirs[1] if len(dirs) > 1 else None)
    if args.check:
        if TARGET.read_text() != text:
            print(f"{TARGET.relative_to(ROOT)} is stale: run {COMMAND}", file=sys.stderr)
            return 1
        return 0
    TARGET.write_text(text)
    print(f"wrote {TARGET.relative_to(ROOT)} ({len(text.splitlines())} lines)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
