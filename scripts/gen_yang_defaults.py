#!/usr/bin/env python3
"""Write harness/core/meaning/yang_defaults.py: every CONFIG_DB default SONiC's YANG models
state, table -> {field: default}, so that `fablab diff` reads an absent field as SONiC does
without a default typed by hand.

    .venv/bin/python scripts/gen_yang_defaults.py                    # <reference>/sonic-yang/{202411,master}
    .venv/bin/python scripts/gen_yang_defaults.py DIR [MASTER_DIR]   # the .yang files of a release (and master)
    .venv/bin/python scripts/gen_yang_defaults.py --check            # exit 1 if the module is stale

<reference> is $FABLAB_REFERENCE, else ../shared/reference beside the checkout (as tests/conftest.py).
A table is a container in a module's top container (sonic-port:sonic-port/PORT); its fields are
the leaves and leaf-lists of its lists and containers (PORT/PORT_LIST, DEVICE_METADATA/localhost),
`uses` expanded (a `refine` that sets a default included), choices seen through. A leaf without a
`default` of its own takes its typedef's, followed through typedefs and the modules they come
from. A list inside a list holds a map's entries (DSCP_TO_TC_MAP), not fields: not read. A
leaf-list's defaults are joined with ",", as config_db.json writes a list. The values are the
YANG text as written ("False", "10.0"): a reader normalises them as it normalises a row.

The first directory is the release fablab targets (DEFAULTS); the second, where given, is held
against it (MASTER_DIFFERS: each field whose default it states otherwise, None where it states
none). Also written: WHEN, the defaults that hold only under their leaf's `when`, and
METADATA_ONLY, the fields of address rows that change nothing (family, scope) with the source that
says so (METADATA_WHY below). The small YANG parser here (RFC 7950's strings, no semantics beyond the above) is also
what tests/sonic_yang.py reads the models with.
"""
from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET = ROOT / "harness" / "core" / "meaning" / "yang_defaults.py"
REFERENCE = Path(os.environ.get("FABLAB_REFERENCE") or ROOT.parent / "shared" / "reference")
RELEASES = ("202411", "master")
COMMAND = ".venv/bin/python scripts/gen_yang_defaults.py"
WIDTH = 120


# --------------------------------------------------------------------------- .yang parsing
# (moved here from tests/sonic_yang.py, which imports it from this file)


class YangError(Exception):
    """A .yang file this parser cannot read, or a model it cannot follow."""


@dataclass(frozen=True)
class Stmt:
    keyword: str
    arg: str | None
    children: tuple[Stmt, ...]

    def all(self, keyword: str) -> Iterator[Stmt]:
        return (c for c in self.children if c.keyword == keyword)

    def first(self, keyword: str) -> Stmt | None:
        return next(self.all(keyword), None)


_TOKEN = re.compile(r"""
    (?P<skip>\s+|//[^\n]*|/\*.*?\*/)
  | (?P<dq>"(?:[^"\\]|\\.)*")
  | (?P<sq>'[^']*')
  | (?P<punct>[{};+])
  | (?P<word>[^\s{};"']+)
""", re.S | re.X)
_ESCAPES = {"n": "\n", "t": "\t", '"': '"', "\\": "\\"}


def _dq_value(text: str, start: int, end: int) -> str:
    """A double-quoted string's value (RFC 7950 6.1.3): the whitespace before each line break
    stripped, each further line's indentation stripped up to and including the opening quote's
    column (a tab counts 8), then \\n, \\t, \\" and \\\\ read as what they stand for."""
    column = len(text[text.rfind("\n", 0, start) + 1:start].expandtabs(8)) + 1
    lines = text[start + 1:end - 1].split("\n")
    out = []
    for i, line in enumerate(lines):
        if i < len(lines) - 1:
            line = line.rstrip(" \t")
        if i > 0:
            rest = line.lstrip(" \t")
            indent = line[:len(line) - len(rest)].expandtabs(8)
            line = indent[min(len(indent), column):] + rest
        out.append(line)
    return re.sub(r"\\(.)", lambda m: _ESCAPES.get(m.group(1), m.group()), "\n".join(out), flags=re.S)


def _tokens(text: str) -> list[tuple[str, str]]:
    out = []
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            raise YangError(f"cannot tokenise YANG at {text[pos:pos + 40]!r}")
        pos = m.end()
        kind = m.lastgroup
        if kind == "skip":
            continue
        value = m.group()
        if kind == "dq":
            value = _dq_value(text, m.start(), m.end())
        elif kind == "sq":
            value = value[1:-1]
        out.append(("str" if kind in ("dq", "sq", "word") else value, value))
    return out


def parse_yang(text: str) -> Stmt:
    tokens = _tokens(text)
    pos = 0

    def block() -> tuple[Stmt, ...]:
        nonlocal pos
        stmts = []
        while pos < len(tokens) and tokens[pos][0] != "}":
            keyword = tokens[pos][1]
            pos += 1
            arg = None
            if tokens[pos][0] == "str":
                arg = tokens[pos][1]
                pos += 1
                while tokens[pos][0] == "+":  # "a" + "b" concatenation
                    arg += tokens[pos + 1][1]
                    pos += 2
            if tokens[pos][0] == "{":
                pos += 1
                children = block()
                pos += 1  # the closing brace
            else:
                children = ()
                pos += 1  # the semicolon
            stmts.append(Stmt(keyword, arg, children))
        return tuple(stmts)

    (module,) = block()
    return module


# --------------------------------------------------------------------------- defaults

# Fields of address rows that change nothing, and why. What was read (sonic-net/sonic-swss @
# e6b0c5b5d2, 2026-08): cfgmgr/intfmgr.cpp IntfMgr::doIntfAddrTask takes an address row's key
# (interface, prefix) and never reads its fields (`data`): it runs `ip address add <prefix> dev
# <interface>` and writes APPL_DB INTF_TABLE its own `family` (from ip_prefix.isV4()) and `scope`
# ("global"); orchagent/intfsorch.cpp reads neither field (its field loop knows vrf_name, mtu,
# admin_status, nat_zone, ... and no family or scope). intfsyncd no longer exists in sonic-swss:
# not read. The YANG models say of `family` only, in a comment (not a description): "family leaf
# needed for backward compatibility", with a `must` that it match the prefix.
_SWSS = "sonic-swss cfgmgr/intfmgr.cpp IntfMgr::doIntfAddrTask"
METADATA_WHY = {
    "family": f"the prefix's own family; {_SWSS} never reads an address row's fields and writes family from the "
              "prefix (ip_prefix.isV4()); orchagent/intfsorch.cpp reads no family; YANG: 'family leaf needed for "
              "backward compatibility', a must that it match ip-prefix",
    "scope": f"{_SWSS} never reads an address row's fields and writes scope 'global' itself; "
             "orchagent/intfsorch.cpp reads no scope",
}
_PREFIX_KEYS = ("ip-prefix", "ip_prefix")


class Models:
    """The modules of one directory of .yang files, by name."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.modules: dict[str, Stmt] = {}
        for path in sorted(directory.glob("*.yang")):
            module = parse_yang(path.read_text())
            if module.keyword == "module":
                self.modules[module.arg] = module

    def owner(self, module: Stmt, ref: str) -> tuple[Stmt | None, str]:
        """The module a prefixed name ("stypes:admin_status") comes from, and the bare name;
        None for IETF's modules (RFC 6991's types), which SONiC's directory does not hold: their
        typedefs state no default."""
        prefix, _, name = ref.rpartition(":")
        if not prefix or prefix == module.first("prefix").arg:
            return module, name
        for imported in module.all("import"):
            if imported.first("prefix").arg == prefix:
                if imported.arg not in self.modules and imported.arg.startswith("ietf-"):
                    return None, name
                return self.modules[imported.arg], name
        raise YangError(f"{module.arg}: no import with prefix {prefix} (for {ref})")

    def defined(self, module: Stmt, keyword: str, ref: str) -> tuple[Stmt, Stmt] | None:
        """A grouping or typedef by reference, wherever in its module it is defined."""
        owner, name = self.owner(module, ref)
        if owner is None:
            return None
        found = next((s for s in _walk(owner) if s.keyword == keyword and s.arg == name), None)
        return None if found is None else (owner, found)

    def type_default(self, module: Stmt, leaf: Stmt) -> str | None:
        """The default a leaf's type gives it: its typedef's, through typedefs of typedefs."""
        kind = leaf.first("type")
        while kind is not None and kind.arg is not None:
            found = self.defined(module, "typedef", kind.arg)
            if found is None:  # a built-in type
                return None
            module, typedef = found
            if (default := typedef.first("default")) is not None:
                return default.arg
            kind = typedef.first("type")
        return None

    def data(self, module: Stmt, stmt: Stmt, refines: dict[str, Stmt] | None = None
             ) -> Iterator[tuple[Stmt, Stmt, Stmt | None]]:
        """(module, child, its refine) for each data child, groupings expanded, choices seen through."""
        for child in stmt.children:
            if child.keyword == "uses":
                found = self.defined(module, "grouping", child.arg)
                if found is None:
                    raise YangError(f"{module.arg}: grouping {child.arg} not found")
                inner = {r.arg: r for r in child.all("refine")}
                yield from self.data(*found, {**inner, **(refines or {})})
            elif child.keyword in ("choice", "case"):
                yield from self.data(module, child, refines)
            else:
                yield module, child, (refines or {}).get(child.arg)

    def leaf_default(self, module: Stmt, leaf: Stmt, refine: Stmt | None) -> str | None:
        own = [d.arg for d in (refine.all("default") if refine and refine.first("default") else leaf.all("default"))]
        if own:
            return ",".join(own)
        return self.type_default(module, leaf)

    def tables(self) -> Iterator[tuple[str, Stmt, Stmt]]:
        """(table name, its module, its container) of every module's top container."""
        for module in self.modules.values():
            for top in module.all("container"):
                for table in top.all("container"):
                    yield table.arg, module, table

    def fields(self, module: Stmt, node: Stmt) -> Iterator[tuple[str, str, Stmt]]:
        """(field, default, its leaf) of a table's leaves with a default; lists inside lists (map
        entries) are not fields."""
        for owner, child, refine in self.data(module, node):
            if child.keyword in ("leaf", "leaf-list"):
                default = self.leaf_default(owner, child, refine)
                if default is not None:
                    yield child.arg, default, child
            elif child.keyword == "container" or (child.keyword == "list" and node.keyword == "container"):
                yield from self.fields(owner, child)

    def address_lists(self, module: Stmt, node: Stmt) -> Iterator[Stmt]:
        """The lists of a table keyed by an interface and an IP prefix: its address rows."""
        for _, child, _ in self.data(module, node):
            key = child.first("key")
            if child.keyword == "list" and key is not None and key.arg.split()[-1] in _PREFIX_KEYS:
                yield child


def _walk(stmt: Stmt) -> Iterator[Stmt]:
    for child in stmt.children:
        yield child
        yield from _walk(child)


def defaults(models: Models) -> dict[str, dict[str, str]]:
    out: dict[str, dict[str, str]] = {}
    for name, module, table in models.tables():
        found = out.setdefault(name, {})
        for field, default, _ in models.fields(module, table):
            if found.get(field, default) != default:
                raise YangError(f"{models.directory}: {name}.{field} has defaults {found[field]!r} and {default!r}")
            found[field] = default
    return {t: dict(sorted(f.items())) for t, f in sorted(out.items()) if f}


def conditional(models: Models) -> dict[str, dict[str, str]]:
    """table -> {field: the YANG `when` its leaf (and so its default) exists under}."""
    out: dict[str, dict[str, str]] = {}
    for name, module, table in models.tables():
        for field, _, leaf in models.fields(module, table):
            if (when := leaf.first("when")) is not None:
                out.setdefault(name, {})[field] = " ".join(when.arg.split())
    return {t: dict(sorted(f.items())) for t, f in sorted(out.items())}


def metadata_only(models: Models) -> dict[str, dict[str, str]]:
    out: dict[str, dict[str, str]] = {}
    for name, module, table in models.tables():
        for address in models.address_lists(module, table):
            leaves = {c.arg for _, c, _ in models.data(module, address) if c.keyword == "leaf"}
            for field in sorted(leaves & set(METADATA_WHY)):
                out.setdefault(name, {})[field] = METADATA_WHY[field]
    return {t: dict(sorted(f.items())) for t, f in sorted(out.items())}


def differences(target: dict[str, dict[str, str]], other: dict[str, dict[str, str]]
                ) -> dict[str, dict[str, str | None]]:
    out: dict[str, dict[str, str | None]] = {}
    for table in sorted(set(target) | set(other)):
        a, b = target.get(table, {}), other.get(table, {})
        changed = {f: b.get(f) for f in sorted(set(a) | set(b)) if a.get(f) != b.get(f)}
        if changed:
            out[table] = changed
    return out


def _dict(name: str, kind: str, tables: Mapping[str, Mapping[str, str | None]]) -> list[str]:
    """A dict of dicts as Python, one table a line where it fits, else a field a line."""
    lines = [f"{name}: {kind} = {{"]
    for table, fields in tables.items():
        line = f"    {table!r}: {{{', '.join(f'{k!r}: {v!r}' for k, v in fields.items())}}},"
        if len(line) <= WIDTH:
            lines.append(line)
            continue
        lines.append(f"    {table!r}: {{")
        for k, v in fields.items():
            item = f"        {k!r}: {v!r},"
            lines.append(item if len(item) <= WIDTH or not isinstance(v, str) else _wrapped(k, v))
        lines.append("    },")
    lines.append("}")
    return lines


def _wrapped(key: str, value: str) -> str:
    """A long string value split into adjacent literals that fit the width, at spaces where it can."""
    head = f"        {key!r}: ("
    room = WIDTH - len(head) - 2  # the closing "),"
    parts, rest = [], value
    while rest:
        cut = 1
        while cut < len(rest) and len(repr(rest[:cut + 1])) <= room:
            cut += 1
        if cut < len(rest) and " " in rest[:cut].strip():
            cut = rest[:cut].rstrip().rindex(" ") + 1
        parts.append(rest[:cut])
        rest = rest[cut:]
    return head + ("\n" + " " * len(head)).join(repr(p) for p in parts) + "),"


def module_text(target: Path, other: Path | None) -> str:
    models = Models(target)
    found = defaults(models)
    args = " ".join(f"<reference>/sonic-yang/{d.name}" if d.parent.name == "sonic-yang" else str(d)
                    for d in (target, other) if d is not None)
    releases = f"{target.name} and {other.name}" if other is not None else target.name
    header = [
        "SONiC's CONFIG_DB defaults as its YANG models state them. GENERATED: do not edit; run",
        "",
        f"    {COMMAND} {args}",
        "",
        f"(<reference>: $FABLAB_REFERENCE or ../shared/reference) from SONiC's YANG models of {releases}",
        "(sonic-buildimage src/sonic-yang-models/yang-models; <reference>/README.md names the commits).",
        "",
        f"DEFAULTS: release {target.name}, the one fablab targets: every CONFIG_DB table of the models with",
        "a leaf or leaf-list that has a `default` (its own, a refine's or its typedef's), table -> {field:",
        f"default}}: {len(found)} tables, {sum(len(f) for f in found.values())} fields, the YANG text as written.",
    ]
    if other is not None:
        header += [f"MASTER_DIFFERS: each field whose default {other.name}'s YANG states otherwise (None: it states",
                   f"none), the tables only {other.name} has included."]
    header += ["WHEN: defaults that hold only where their leaf's YANG `when` does.",
               "METADATA_ONLY: fields of address rows that change nothing, and the source that says so."]
    lines = ['"""' + header[0], *header[1:], '"""', "from __future__ import annotations", "",
             f"RELEASE = {target.name!r}", f"OTHER_RELEASE = {other.name if other else ''!r}", "",
             *_dict("DEFAULTS", "dict[str, dict[str, str]]", found), ""]
    differ = differences(found, defaults(Models(other))) if other is not None else {}
    lines += [*_dict("MASTER_DIFFERS", "dict[str, dict[str, str | None]]", differ), ""]
    lines += [*_dict("WHEN", "dict[str, dict[str, str]]", conditional(models)), ""]
    lines += _dict("METADATA_ONLY", "dict[str, dict[str, str]]", metadata_only(models))
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("directories", nargs="*", type=Path,
                        help=f"the release's .yang files, then master's (default {REFERENCE}/sonic-yang/"
                             f"{{{','.join(RELEASES)}}})")
    parser.add_argument("--check", action="store_true", help="exit 1 if the module is not what this writes")
    args = parser.parse_args(argv)
    dirs = args.directories or [REFERENCE / "sonic-yang" / r for r in RELEASES]
    if len(dirs) > 2:
        parser.error("at most two directories: the release fablab targets, and master")
    for d in dirs:
        if not d.is_dir() or not any(d.glob("*.yang")):
            parser.error(f"no .yang files in {d}")
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
