"""config_db.json -> the instance data SONiC's YANG models describe, for yanglint to judge.

SONiC validates a config_db.json by turning each table T into the container
`sonic-<module>:sonic-<module>/T`, each entry into an element of one of T's lists (the key
split on '|' into the list's key leaves, in the order the list declares them), and a
map-like entry (a DSCP_TO_TC_MAP, a CABLE_LENGTH set) into the entries of the list nested
in it. This module does the same from the .yang files themselves: it reads them with a small
parser (scripts/gen_yang_defaults.py's, which writes SONiC's defaults from the same models),
finds which module holds each table, and writes the data as XML (libyang 2.1 rejects numbers
given as JSON strings, and every config_db value is a string).
"""
from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from xml.sax.saxutils import escape


def _parser():
    """scripts/gen_yang_defaults.py, whose YANG parser this reads the models with."""
    path = Path(__file__).resolve().parents[1] / "scripts" / "gen_yang_defaults.py"
    spec = importlib.util.spec_from_file_location("gen_yang_defaults", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(spec.name, module)
    spec.loader.exec_module(module)
    return sys.modules[spec.name]


_yang = _parser()
YangError = _yang.YangError  # also config_db data that has no place in the YANG models at all
Stmt = _yang.Stmt
parse_yang = _yang.parse_yang


# --------------------------------------------------------------------------- the schema


@dataclass(frozen=True)
class Node:
    """A list (or a container, with no keys) of a table, as the data must be shaped."""

    name: str
    is_list: bool
    keys: tuple[str, ...]
    leaves: frozenset[str]
    leaf_lists: frozenset[str]
    inner: tuple[Node, ...]  # lists nested in a list: the entries of a map-like table


@dataclass(frozen=True)
class Table:
    name: str
    module: str
    namespace: str
    top: str  # the module's top container, sonic-<module>
    nodes: tuple[Node, ...]


class Schema:
    """Every table of a directory of SONiC .yang files, by config_db table name."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.modules: dict[str, Stmt] = {}
        for path in sorted(directory.glob("*.yang")):
            module = parse_yang(path.read_text())
            if module.keyword == "module":
                self.modules[module.arg] = module
        self.tables: dict[str, Table] = {}
        self.ambiguous: set[str] = set()  # tables that more than one module defines
        for name, module in self.modules.items():
            namespace = module.first("namespace").arg
            for top in module.all("container"):
                for table in top.all("container"):
                    nodes = tuple(self._node(module, n) for n in self._data(module, table)
                                  if n.keyword in ("list", "container"))
                    if table.arg in self.tables:
                        self.ambiguous.add(table.arg)
                    self.tables[table.arg] = Table(table.arg, name, namespace, top.arg, nodes)

    def _data(self, module: Stmt, stmt: Stmt) -> Iterator[Stmt]:
        """Data children, with groupings expanded and choices/cases seen through."""
        for child in stmt.children:
            if child.keyword == "uses":
                yield from self._data(*self._grouping(module, child.arg))
            elif child.keyword in ("choice", "case"):
                yield from self._data(module, child)
            else:
                yield child

    def _grouping(self, module: Stmt, ref: str) -> tuple[Stmt, Stmt]:
        prefix, _, name = ref.rpartition(":")
        owner = module
        for imported in module.all("import"):
            if prefix and imported.first("prefix").arg == prefix:
                owner = self.modules[imported.arg]
        for g in owner.all("grouping"):
            if g.arg == name:
                return owner, g
        raise YangError(f"grouping {ref} not found from module {module.arg}")

    def _node(self, module: Stmt, stmt: Stmt) -> Node:
        children = list(self._data(module, stmt))
        key = stmt.first("key")
        return Node(
            name=stmt.arg, is_list=stmt.keyword == "list", keys=tuple(key.arg.split()) if key else (),
            leaves=frozenset(c.arg for c in children if c.keyword == "leaf"),
            leaf_lists=frozenset(c.arg for c in children if c.keyword == "leaf-list"),
            inner=tuple(self._node(module, c) for c in children if c.keyword == "list"))


# --------------------------------------------------------------------------- translation


@dataclass(frozen=True)
class Entry:
    """Where one config_db entry went in the XML: for reading yanglint's errors back."""

    table: str
    key: str
    first_line: int
    last_line: int


def _node_for(table: Table, key: str) -> tuple[Node, list[str]]:
    parts = key.split("|")
    for node in table.nodes:
        if not node.is_list and node.name == key:
            return node, []
    fits = [n for n in table.nodes if n.is_list and len(n.keys) == len(parts)]
    if len(fits) != 1:
        raise YangError(f"{table.name}|{key}: {len(fits)} lists of {table.module} take a key of {len(parts)} parts")
    return fits[0], parts


def _leaf(name: str, value: str) -> str:
    return f"<{name}>{escape(value)}</{name}>"


def _fields(node: Node, fields: dict[str, str]) -> list[str]:
    lines = []
    own = {k: v for k, v in fields.items() if k in node.leaves or k in node.leaf_lists}
    if len(node.inner) == 1 and fields and not own:
        # a map: each field is one entry of the nested list, {inner key: field, value leaf: value}
        inner = node.inner[0]
        (value_leaf,) = inner.leaves - set(inner.keys)
        for k, v in fields.items():
            lines.append(f"<{inner.name}>{_leaf(inner.keys[0], k)}{_leaf(value_leaf, v)}</{inner.name}>")
        return lines
    for k, v in sorted(fields.items()):
        if k in node.leaf_lists:
            # config_db.json holds a leaf-list as a JSON list (ACL_TABLE ports) or a comma string
            lines += [_leaf(k, item) for item in (v if isinstance(v, list) else v.split(","))]
        else:
            lines.append(_leaf(k, v))  # unknown fields too: yanglint must reject them
    return lines


def to_xml(config: dict[str, dict], schema: Schema) -> tuple[str, list[Entry]]:
    """The XML instance of a config_db, one element per line, and where each entry landed."""
    missing = sorted(t for t in config if t not in schema.tables)
    if missing:
        raise YangError(f"tables in no YANG module of {schema.directory}: {', '.join(missing)}")
    ambiguous = sorted(t for t in config if t in schema.ambiguous)
    if ambiguous:
        raise YangError(f"tables in more than one YANG module of {schema.directory}: {', '.join(ambiguous)}")
    lines: list[str] = []
    entries: list[Entry] = []
    by_top: dict[str, list[str]] = {}
    for name in sorted(config):
        by_top.setdefault(schema.tables[name].top, []).append(name)
    for top, names in by_top.items():
        table0 = schema.tables[names[0]]
        lines.append(f'<{top} xmlns="{table0.namespace}">')
        for name in names:
            table = schema.tables[name]
            lines.append(f"<{name}>")
            for key, fields in config[name].items():
                node, parts = _node_for(table, key)
                first = len(lines) + 1
                lines.append(f"<{node.name}>")
                lines += [_leaf(k, v) for k, v in zip(node.keys, parts)]
                lines += _fields(node, fields)
                lines.append(f"</{node.name}>")
                entries.append(Entry(name, key, first, len(lines)))
            lines.append(f"</{name}>")
        lines.append(f"</{top}>")
    return "\n".join(lines) + "\n", entries


# --------------------------------------------------------------------------- validation

_ERROR = re.compile(r"^libyang err : ", re.M)
_FAILED = re.compile(r'Failed to parse input data file "([^"]+)"')
_PATH = re.compile(r'Data location "(/[^"]+)"')
_LINE = re.compile(r"line number (\d+)")
_STEP = re.compile(r"/(?:[\w-]+:)?([\w-]+)((?:\[[^\]]*\])*)")
_PRED = re.compile(r"\[[\w-]+='([^']*)'\]")


def locate(message: str, entries: list[Entry]) -> str:
    """'<table> <key>' of the entry a yanglint error is about, from its data path or its line."""
    path = _PATH.search(message)
    if path:
        steps = _STEP.findall(path.group(1))  # /sonic-x:sonic-x/TABLE/TABLE_LIST[k='v'][k2='v2']/leaf
        if len(steps) >= 3:
            node, preds = steps[2]
            return f"{steps[1][0]} {'|'.join(_PRED.findall(preds)) or node}"
    line = _LINE.search(message)
    if line:
        n = int(line.group(1))
        for e in entries:
            if e.first_line <= n <= e.last_line:
                return f"{e.table} {e.key}"
    if path:
        return _STEP.findall(path.group(1))[-1][0]
    return "(entry not located)"


def validate(yanglint: str, schema: Schema, configs: dict[str, dict], workdir: Path) -> dict[str, list[str]]:
    """What yanglint rejects in each config, as '<table> <key>: <error>' lines; [] where it accepts.

    One yanglint run takes many files, each validated as its own datastore, but stops at the
    first file it rejects: run again from the file after it until the rest pass.
    """
    files: dict[str, Path] = {}
    entries: dict[str, list[Entry]] = {}
    for i, (name, config) in enumerate(configs.items()):
        xml, entries[name] = to_xml(config, schema)
        files[name] = workdir / f"{i:04d}.xml"
        files[name].write_text(xml)
    owner = {str(path): name for name, path in files.items()}
    modules = sorted({str(schema.directory / f"{schema.tables[t].module}.yang") for c in configs.values() for t in c})
    verdicts: dict[str, list[str]] = {name: [] for name in configs}
    pending = list(configs)
    while pending:
        run = subprocess.run([yanglint, "-i", "-t", "config", "-p", str(schema.directory), *modules,
                              *(str(files[n]) for n in pending)], capture_output=True, text=True)
        if run.returncode == 0:
            break
        failed = _FAILED.search(run.stderr)
        if failed is None or failed.group(1) not in owner:
            raise YangError(f"yanglint failed without naming a data file:\n{run.stdout}{run.stderr}")
        name = owner[failed.group(1)]
        report = run.stderr[:run.stderr.rfind("\n", 0, failed.start()) + 1]  # up to yanglint's own line
        errors = [e.strip() for e in _ERROR.split(report)[1:]]
        verdicts[name] = [f"{locate(e, entries[name])}: {e}" for e in errors] or [run.stderr.strip()]
        pending = pending[pending.index(name) + 1:]
    return verdicts
