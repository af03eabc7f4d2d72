"""Mutations of a switch's config_db.json of the kinds a hand edit or another tool makes: duplicate
keys, deep nesting, lists where maps are, numbers where strings are, NaN, trailing commas, values
SONiC refuses, changes of behaviour, BGP in unified mode's tables. tests/inputfuzz.py says what
the expectations mean.

A change of behaviour is `broken` for `fablab diff` only (the other commands do not judge it); a
file that is not JSON is broken for every command that reads it."""
from __future__ import annotations

import json
import re
from random import Random

from inputfuzz_text import Mut, Target

DIFF = ("diff",)
READERS = ("diff", "show-configs", "import-configs")  # what reads every switch's files (audit: the BE's)


def _readers(t: Target) -> tuple[str, ...]:
    return READERS + (("audit",) if "/be-" in t.path else ())


def _db(t: Target) -> dict:
    return json.loads(t.text)


def _dump(db, **kw) -> str:
    return json.dumps(db, **({"indent": 4, "sort_keys": True} | kw)) + "\n"


def _entry(db: dict, rng: Random, table: str) -> tuple[str, dict] | None:
    rows = [(k, v) for k, v in db.get(table, {}).items() if isinstance(v, dict)]
    return rng.choice(rows) if rows else None


# ------------------------------------------------------------------ config_db.json


def json_format(rng: Random, t: Target) -> Mut:
    db = _db(t)
    how = rng.choice(["compact", "indent2", "tabs", "reversed", "ascii-escapes", "one-line"])
    if how == "compact":
        text = json.dumps(db, separators=(",", ":"))
    elif how == "indent2":
        text = json.dumps(db, indent=2)
    elif how == "tabs":
        text = json.dumps(db, indent="\t")
    elif how == "reversed":
        text = json.dumps({k: dict(reversed(list(v.items()))) if isinstance(v, dict) else v
                           for k, v in reversed(list(db.items()))}, indent=4)
    elif how == "one-line":
        text = json.dumps(db)
    else:
        text = re.sub(r'"Ethernet', r'"\\u0045thernet', _dump(db))
    return t.mut("same", text, f"the same JSON, {how}")


def json_syntax(rng: Random, t: Target) -> Mut:
    how = rng.choice(["trailing-comma", "comment", "single-quotes", "unquoted-key", "truncated", "two-docs",
                      "missing-brace", "nan", "infinity", "big-exponent"])
    text = t.text
    if how == "trailing-comma":
        text = re.sub(r'("\s*)\n(\s*)}', r'\1,\n\2}', text, count=rng.randint(1, 3))
    elif how == "comment":
        text = text.replace("{\n", "{\n    // rack B\n", 1)
    elif how == "single-quotes":
        text = text.replace('"DEVICE_METADATA"', "'DEVICE_METADATA'")
    elif how == "unquoted-key":
        text = text.replace('"DEVICE_METADATA"', "DEVICE_METADATA")
    elif how == "truncated":
        text = text[:rng.randrange(1, len(text) - 2)]
    elif how == "two-docs":
        text = text + text
    elif how == "missing-brace":
        text = text.rstrip().removesuffix("}")
    else:
        value = {"nan": "NaN", "infinity": "-Infinity", "big-exponent": "1e400"}[how]
        text = re.sub(r'"mtu": "\d+"', f'"mtu": {value}', text, count=1)
    return t.mut("broken", text, f"not JSON: {how}", only=_readers(t) if how != "big-exponent" else DIFF)


def json_shape(rng: Random, t: Target) -> Mut:
    db = _db(t)
    how = rng.choice(["root", "table-list", "entry-list", "metadata-string", "empty", "entry-null", "key-empty"])
    if how == "root":
        return t.mut("broken", json.dumps(rng.choice([[db], "config", 5, None, True])), "the root is no object",
                     only=_readers(t))
    if how == "empty":
        return t.mut("broken", "{}\n", "an empty object", only=DIFF)
    table = rng.choice(["PORT", "INTERFACE", "DEVICE_METADATA", "LOOPBACK_INTERFACE"])
    if how == "table-list":
        db[table] = list(db[table].items()) if rng.random() < 0.5 else list(db[table])
    elif how == "entry-list":
        key, value = next(iter(db[table].items()))
        db[table][key] = list(value.items()) or [key]
    elif how == "metadata-string":
        db["DEVICE_METADATA"]["localhost"] = "fe-l1"
    elif how == "entry-null":
        db[table] = None
    else:
        db[table][""] = {}
    return t.mut("broken" if how != "key-empty" else "any", _dump(db), f"{table}: {how}", only=DIFF)


def _twice(db: dict, table: str, key: str | None, a, b) -> str:
    """The JSON of `db` with table.key (or, key None, the table itself) given twice: a, then b."""
    def entries(rows: dict) -> list[str]:
        return [f"{json.dumps(k)}: {json.dumps(v)}" for k, v in rows.items()]

    parts = []
    for name, rows in db.items():
        if name != table:
            parts.append(f"{json.dumps(name)}: {json.dumps(rows)}")
        elif key is None:
            parts += [f"{json.dumps(name)}: {json.dumps(a)}", f"{json.dumps(name)}: {json.dumps(b)}"]
        else:
            body = [f"{json.dumps(key)}: {json.dumps(a)}", f"{json.dumps(key)}: {json.dumps(b)}"]
            rest = entries({k: v for k, v in rows.items() if k != key})
            parts.append(f"{json.dumps(name)}: {{{', '.join(body + rest)}}}")
    return "{" + ",\n".join(parts) + "}\n"


def json_duplicate(rng: Random, t: Target) -> Mut:
    db = _db(t)
    port, entry = _entry(db, rng, "PORT")
    if rng.random() < 0.3:
        return t.mut("any", _twice(db, "PORT", port, entry, entry), f"PORT.{port} twice, the same")
    first = rng.random() < 0.5
    if rng.random() < 0.5:
        meta = db["DEVICE_METADATA"]
        other = {"localhost": dict(meta["localhost"], bgp_asn="65999")}
        a, b = (other, meta) if first else (meta, other)
        return t.mut("broken", _twice(db, "DEVICE_METADATA", None, a, b),
                     f"DEVICE_METADATA twice, the {'first' if first else 'second'} with bgp_asn 65999", only=READERS)
    changed = dict(entry, mtu="1234")
    a, b = (changed, entry) if first else (entry, changed)
    return t.mut("broken", _twice(db, "PORT", port, a, b),
                 f"PORT.{port} twice, the {'first' if first else 'second'} with mtu 1234", only=DIFF)


def json_types(rng: Random, t: Target) -> Mut | None:
    db = _db(t)
    port, entry = _entry(db, rng, "PORT")
    field = rng.choice(["mtu", "speed", "index", "lanes"])
    entry[field] = int(entry[field]) if entry[field].isdigit() else entry[field]
    if rng.random() < 0.3:
        db["DEVICE_METADATA"]["localhost"]["bgp_asn"] = int(db["DEVICE_METADATA"]["localhost"]["bgp_asn"])
        field += " and bgp_asn"
    return t.mut("faithful", _dump(db), f"{field} as a JSON number")


def json_values(rng: Random, t: Target) -> Mut | None:
    db = _db(t)
    port, entry = _entry(db, rng, "PORT")
    how = rng.choice(["mtu", "speed", "admin", "asn", "loopback", "interface", "mgmt", "bool", "huge-int"])
    only = DIFF
    if how == "mtu":
        entry["mtu"] = rng.choice(["abc", "-1", "99999999", "", "9100.5", "0"])
    elif how == "speed":
        entry["speed"] = rng.choice(["-400", "abc", "0", "400G", "1e9"])
    elif how == "admin":
        entry["admin_status"] = rng.choice(["sideways", "", "UPP", "1"])
    elif how == "bool":
        entry["admin_status"] = rng.choice([True, None, ["up"], {"up": 1}])
    elif how == "huge-int":
        digits = rng.choice([20, 400, 5000])
        entry["mtu"] = "@@BIG@@"
        return t.mut("broken", _dump(db).replace('"@@BIG@@"', "1" + "0" * digits), f"{port}: mtu of {digits} digits",
                     only=DIFF)
    elif how == "asn":
        db["DEVICE_METADATA"]["localhost"]["bgp_asn"] = rng.choice(["abc", "99999999999", "", "-5", "0"])
        port, only = "bgp_asn", READERS
    else:
        table = {"loopback": "LOOPBACK_INTERFACE", "interface": "INTERFACE", "mgmt": "MGMT_INTERFACE"}[how]
        key = next((k for k in db[table] if "|" in k), None)
        if key is None:
            return None
        name, _, prefix = key.partition("|")
        bad = rng.choice([prefix.replace(prefix.split(".")[3], "300/32" if how == "loopback" else "300/31"),
                          prefix.split("/")[0] + "/33", "abc/31", prefix + "/1"])
        db[table][f"{name}|{bad}"] = db[table].pop(key)
        port, only = f"{table} {key} -> {bad}", READERS if how != "mgmt" else DIFF
    value = {"admin": "admin_status", "bool": "admin_status"}.get(how, how)
    return t.mut("broken", _dump(db), f"{port}: {how} {entry.get(value, '')!r}", only=only)


def json_behaviour(rng: Random, t: Target) -> Mut | None:
    """What a switch does, changed: `fablab diff` must say so."""
    db = _db(t)
    port, entry = _entry(db, rng, "PORT")
    lossless = "PORT_QOS_MAP" in db
    how = rng.choice(["mtu", "admin", "speed", "port-gone", "interfaces-gone"] +
                     (["pfc", "pfcwd", "ecn", "dscp", "pg-gone"] * 2 if lossless else []))
    if how == "mtu":
        entry["mtu"] = "1500" if entry["mtu"] != "1500" else "9100"
    elif how == "admin":
        entry["admin_status"] = "down"
    elif how == "speed":
        entry["speed"] = "10000"
    elif how == "port-gone":
        del db["PORT"][port]
    elif how == "interfaces-gone":
        del db["INTERFACE"]
    elif how == "pfc":
        db["PORT_QOS_MAP"][port]["pfc_enable"] = rng.choice(["4", "", "3,4"])
    elif how == "pfcwd":
        next(iter(db["PFC_WD"].values()))["detection_time"] = "800"
    elif how == "ecn":
        db["WRED_PROFILE"]["AI_LOSSLESS"]["ecn"] = "ecn_none"
    elif how == "dscp":
        next(iter(db["DSCP_TO_TC_MAP"].values()))["26"] = "0"
    else:
        del db["BUFFER_PG"]
    return t.mut("broken", _dump(db), f"{how} on {port}", only=DIFF + (("audit",) if lossless and how in (
        "pfc", "ecn", "dscp", "pg-gone", "mtu") else ()))


def json_extra(rng: Random, t: Target) -> Mut:
    db = _db(t)
    how = rng.choice(["table", "field", "description", "deep-extra", "deep-used", "huge-string", "gone"])
    if how == "table":
        db["SNMP_COMMUNITY"] = {"public": {"TYPE": "RO"}}
    elif how == "field":
        next(iter(db["PORT"].values()))["fec"] = "rs"
    elif how == "description":
        next(iter(db["PORT"].values()))["description"] = "\u2019\u00e9\U0001f50c :100: [bold]x[/bold]"
    elif how == "gone":
        return t.mut("any", None, "config_db.json removed")
    elif how in ("deep-extra", "deep-used"):
        depth = rng.choice([1000, 10_000, 100_000])
        where = '"X_NOTES": @@DEEP@@, ' if how == "deep-extra" else '"mtu": @@DEEP@@, "x_mtu": '
        text = t.text.replace('"DEVICE_METADATA": {', where + '"DEVICE_METADATA": {', 1) if how == "deep-extra" \
            else t.text.replace('"mtu": ', where, 1)
        return Mut("any" if how == "deep-extra" else "broken", text, heavy=True,
                   steps=({"op": "nest", "path": t.path, "find": "@@DEEP@@", "depth": depth, "open": "[",
                           "close": "]", "inner": "1"},), note=f"{how}: nested {depth} deep",
                   only=None if how == "deep-extra" else DIFF)
    else:
        text = t.text.replace('"description": "', '"description": "@@', 1)
        return Mut("any", text, steps=({"op": "grow", "path": t.path, "after": "@@", "unit": "x",
                                        "bytes": 10_000_000},), note="a 10 MB description", heavy=True)
    return t.mut("any", _dump(db), f"extra: {how}")


def json_unified(rng: Random, t: Target) -> Mut | None:
    """The switch's BGP as SONiC's unified mode holds it: in config_db.json's tables, no frr.conf
    (tests/corpus/unified.py writes them); then one field of those tables wrong."""
    from corpus.model import parse
    from corpus.unified import tables

    frr = t.path.replace("config_db.json", "frr.conf")
    db = _db(t)
    db.update(tables(parse(t.files[frr])))
    db["DEVICE_METADATA"]["localhost"]["docker_routing_config_mode"] = "unified"
    how = rng.choice(["same", "field-gone", "wrong-type", "bad-value", "bad-key", "row-gone", "table-list"])
    table = rng.choice([n for n in UNIFIED if db.get(n)])
    key = rng.choice(list(db[table]))
    row = db[table][key]
    field = rng.choice(list(row)) if row else None
    note = f"{table}|{key}"
    if how == "same":
        return Mut("same", _dump(db), others={frr: None}, note="BGP in unified mode's tables, no frr.conf")
    if how in ("field-gone", "wrong-type", "bad-value") and field is None:
        return None
    if how == "field-gone":
        del row[field]
        note += f" without {field}"
    elif how == "wrong-type":
        row[field] = rng.choice([["a", "b"], {"x": 1}, 5, None, True, 1.5])
        note += f" {field} = {row[field]!r}"
    elif how == "bad-value":
        row[field] = rng.choice(["abc", "", "-1", "99999999999", "1e9", "10.0.0.300", "true false", "|||"])
        note += f" {field} = {row[field]!r}"
    elif how == "bad-key":
        db[table][rng.choice(["", "|", "default|", "x|y|z|w|v|u", key + "|extra", key.split("|")[-1]])] = \
            db[table].pop(key)
        note += " under another key"
    elif how == "row-gone":
        del db[table][key]
        note += " gone"
    else:
        db[table] = list(db[table].values())
        note = f"{table} as a list"
    expect = "broken" if (table, how) in (("BGP_GLOBALS", "row-gone"), ("BGP_GLOBALS", "table-list")) else "any"
    return Mut(expect, _dump(db), others={frr: None}, note=note, only=DIFF if expect == "broken" else None)


UNIFIED = ("BGP_GLOBALS", "BGP_GLOBALS_AF", "BGP_PEER_GROUP", "BGP_PEER_GROUP_AF", "BGP_NEIGHBOR", "PREFIX_SET",
           "PREFIX", "ROUTE_MAP", "ROUTE_REDISTRIBUTE", "BFD_PROFILE")


def json_surrogate(rng: Random, t: Target) -> Mut:
    """A JSON escape of half a UTF-16 pair (\\ud800), or of a control character, in a value fablab
    may print or write."""
    esc = rng.choice(["\\ud800", "\\udfff", "\\u0000", "\\u001b[31m", "\\ud83d\\ude00"])
    where = rng.choice(['"description": "', '"hostname": "', '"name": "'])
    if where not in t.text:
        where = '"description": "'
    return t.mut("any", t.text.replace(where, where + esc, 1), f"{esc} in {where.split(':')[0]}")


CONFIG_DB = [json_format, json_syntax, json_shape, json_duplicate, json_types, json_values, json_behaviour,
             json_extra, json_unified, json_surrogate] * 2
