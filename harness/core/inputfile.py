"""Every file an engineer gives fablab is read here, so that each reader gets the same answers to
the same questions before it looks at a value:

- **Encoding.** UTF-8, with or without the BOM a spreadsheet's "CSV UTF-8" puts first; UTF-16
  by its BOM (Excel's "Unicode text", Windows PowerShell). Anything else is refused naming the
  file and the first byte that is not UTF-8: a Windows code page (cp1252's ’ is 0x92) is not
  guessed at, as a guess could change a name.
- **Size.** A file over MAX_BYTES is refused before it is read (docs/inputs.md says why that size).
- **Structure (YAML and JSON).** Nesting deeper than MAX_DEPTH, a key given twice in one map,
  an alias to itself, aliases that expand to more than MAX_VALUES values, NaN/Infinity in JSON:
  each refused naming file:line and the key. YAML maps and lists come back as YamlMap/YamlList,
  a dict/list that knows the line of each key and item, so a reader names the line of a field.

Errors are FileFault, an InputError (exit 2) that keeps apart where (file:line) and what.
"""
from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import yaml

from harness.core.errors import InputError

MAX_BYTES = 32 * 1024 * 1024  # 64x xlarge's .clab.yml (docs/inputs.md); larger is refused unread
MAX_YAML = 4 * 1024 * 1024  # YAML reads at ~0.5 MB/s in PyYAML: 4 MiB is 8 s, 8x xlarge's .clab.yml
MAX_DEPTH = 64  # config_db.json nests 3 deep, a .clab.yml 6: deeper is not an engineer's file
MAX_VALUES = 2_000_000  # what YAML aliases may expand to: a 10 MB file of plain values is ~1M


class FileFault(InputError):
    """A file fablab cannot read as what it should be: where (file or file:line), and what."""

    def __init__(self, where: str, what: str) -> None:
        super().__init__(f"{where}: {what}")
        self.where, self.what = where, what


def read_bytes(path: Path) -> bytes:
    """The bytes of `path`: refused when it is not a readable file, or over MAX_BYTES."""
    try:
        size = path.stat().st_size
        if path.is_dir():
            raise FileFault(str(path), "a directory, not a file")
        if size > MAX_BYTES:
            raise FileFault(str(path), f"{size:,} bytes, over the {MAX_BYTES / 2 ** 20:.2g} MiB fablab reads of one "
                            "file; "
                             "split it, or remove what repeats (docs/inputs.md)")
        return path.read_bytes()
    except OSError as e:
        raise FileFault(str(path), f"cannot be read ({e.strerror or e})") from None


def decode(data: bytes, where: str) -> str:
    """`data` as text: UTF-8 (a BOM dropped) or UTF-16 by its BOM; else a clear refusal."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        try:
            return data.decode("utf-16")
        except UnicodeDecodeError as e:
            raise FileFault(where, f"not UTF-16 as its byte-order mark says (byte {e.start}); save it as "
                             "UTF-8") from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise FileFault(f"{where}:{line}", f"not UTF-8 text (byte {e.start} is 0x{data[e.start]:02x}, e.g. a Windows "
                         "code page such as cp1252); save it as UTF-8 (a spreadsheet's \"CSV UTF-8\")") from None
    if "\x00" in text:
        at = text.index("\x00")
        raise FileFault(f"{where}:{text.count(chr(10), 0, at) + 1}", f"a NUL byte at character {at}: not a text file "
                         "(or UTF-16 without its byte-order mark); save it as UTF-8")
    return text


def read_text(path: Path) -> str:
    """The text of an engineer's file at `path` (encoding and size as the module says)."""
    return decode(read_bytes(path), str(path))


# --- JSON ---------------------------------------------------------------------------------------

class _Duplicate(dict):
    """A JSON object with a key given twice: kept (last wins, as Python's and SONiC's json do)
    until the whole document is read, then said with its path."""

    def __init__(self, pairs: list, twice: list[str]) -> None:
        super().__init__(pairs)
        self.twice = twice


def _pairs(pairs: list) -> dict:
    seen: set = set()
    twice = [k for k, _ in pairs if k in seen or seen.add(k)]
    return _Duplicate(pairs, twice) if twice else dict(pairs)


def _no_constant(name: str) -> float:
    raise ValueError(f"{name} is not JSON")


def json_of(text: str, where: str, fix: str = "") -> object:
    """The JSON document in `text`; its faults said at `where`:line, with `fix` where given."""
    fix = f"; {fix}" if fix else ""
    try:
        doc = json.loads(text, object_pairs_hook=_pairs, parse_constant=_no_constant)
    except json.JSONDecodeError as e:
        raise FileFault(f"{where}:{e.lineno}", f"not JSON: {e.msg} (column {e.colno}){fix}") from None
    except ValueError as e:  # NaN, Infinity; an integer of more digits than Python converts
        said = "a number of thousands of digits" if "digits" in str(e) else str(e)
        raise FileFault(where, f"not JSON fablab reads: {said}{fix}") from None
    except RecursionError:
        raise FileFault(where, f"nested deeper than {MAX_DEPTH} levels: not a config fablab reads{fix}") from None
    if _SURROGATE_ESCAPE.search(text):  # only an escape can make one: a pair is one character, half is none
        for path, value in _strings(doc):
            if _LONE.search(value):
                raise FileFault(f"{where}:{_line_of_text(text, _SURROGATE_ESCAPE)}",
                                f"{_dotted(path)}: a \\u escape of half a character (a lone UTF-16 surrogate), "
                                f"no text SONiC or a terminal can hold{fix}")
    for path, value, depth in _walk(doc):
        if depth > MAX_DEPTH:
            raise FileFault(where, f"{_dotted(path)}: nested deeper than {MAX_DEPTH} levels: not a config "
                             "fablab reads")
        if isinstance(value, _Duplicate):
            key = value.twice[0]
            raise FileFault(f"{where}:{_line_of_key(text, key, 2)}", f"{_dotted((*path, key))} is given twice in one "
                             "object; JSON readers keep only the last silently: keep one")
    return doc


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
_LONE = re.compile("[\ud800-\udfff]")


def _line_of_text(text: str, pattern: re.Pattern) -> int:
    found = pattern.search(text)
    return text.count("\n", 0, found.start()) + 1 if found else 1


def _strings(doc: object):
    """(path, text) of every key and string value in `doc`."""
    for path, value, _ in _walk(doc):
        items = value.items() if isinstance(value, dict) else enumerate(value)
        for k, v in items:
            if isinstance(k, str):
                yield path, k
            if isinstance(v, str):
                yield (*path, str(k) if isinstance(value, dict) else f"[{k}]"), v


def _line_of_key(text: str, key: str, nth: int) -> int:
    """The line of the `nth` `"key":` in `text` (a good guess at where a duplicate is)."""
    found = list(re.finditer(re.escape(json.dumps(key)) + r"\s*:", text))
    at = found[min(nth, len(found)) - 1].start() if found else 0
    return text.count("\n", 0, at) + 1


def _walk(doc: object):
    """(path, value, depth) of every map and list in `doc`, without recursion (the doc may be deep)."""
    stack: list[tuple[tuple, object, int]] = [((), doc, 1)]
    while stack:
        path, value, depth = stack.pop()
        if isinstance(value, dict):
            yield path, value, depth
            stack.extend(((*path, str(k)), v, depth + 1) for k, v in value.items() if isinstance(v, (dict, list)))
        elif isinstance(value, list):
            yield path, value, depth
            stack.extend(((*path, f"[{i}]"), v, depth + 1) for i, v in enumerate(value) if isinstance(v, (dict, list)))


def _dotted(path: tuple) -> str:
    return ".".join(path).replace(".[", "[") or "the document"


# --- YAML ---------------------------------------------------------------------------------------

class YamlMap(dict):
    """A YAML map as a dict, with the line of the map (`line`) and of each key (`lines`)."""

    line: int = 0
    lines: dict

    def line_of(self, key: object) -> int:
        return self.lines.get(key, self.line) if hasattr(self, "lines") else self.line


class YamlList(list):
    """A YAML list as a list, with the line of the list and of each item."""

    line: int = 0
    lines: list

    def line_of(self, index: int) -> int:
        lines = getattr(self, "lines", [])
        return lines[index] if 0 <= index < len(lines) else self.line


def line_of(value: object, key: object = None) -> int:
    """The line a YAML value (or one of its keys or items) is on; 0 when not known."""
    if isinstance(value, (YamlMap, YamlList)):
        return value.line_of(key) if key is not None else value.line
    return 0


class _Loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    pass


def _map(loader: _Loader, node: yaml.MappingNode) -> YamlMap:
    out = YamlMap()
    out.line, out.lines = node.start_mark.line + 1, {}
    yield out
    merge = "tag:yaml.org,2002:merge"
    first: dict = {}
    for key_node, _ in node.value:  # before merge keys are flattened in: an explicit key overrides a merged one
        if key_node.tag == merge:
            continue
        key = loader.construct_object(key_node, deep=True)
        try:
            hash(key)
        except TypeError:
            raise _Fault(key_node, "a map or list used as a key") from None
        if key in first:
            raise _Fault(key_node, f"{key!r} is given twice in one map (first at line {first[key]}); "
                                   "keep one (containerlab refuses it)")
        first[key] = key_node.start_mark.line + 1
    loader.flatten_mapping(node)  # `<<: *defaults` merge keys, as SafeLoader does
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        try:
            hash(key)
        except TypeError:
            raise _Fault(key_node, "a map or list used as a key") from None
        out.lines[key] = key_node.start_mark.line + 1
        out[key] = loader.construct_object(value_node, deep=True)


def _seq(loader: _Loader, node: yaml.SequenceNode) -> YamlList:
    out = YamlList()
    out.line, out.lines = node.start_mark.line + 1, [n.start_mark.line + 1 for n in node.value]
    yield out
    out.extend(loader.construct_object(n, deep=True) for n in node.value)


_Loader.add_constructor("tag:yaml.org,2002:map", _map)
_Loader.add_constructor("tag:yaml.org,2002:seq", _seq)


class _Fault(Exception):
    def __init__(self, node: yaml.Node, message: str) -> None:
        super().__init__(message)
        self.line = node.start_mark.line + 1


def _check_nodes(root: yaml.Node) -> None:
    """Depth, self-reference and the size aliases expand to, on the composed nodes (before any
    value is built, so an alias bomb costs nothing)."""
    size: dict[int, int] = {}
    open_: set[int] = set()
    stack: list[tuple[yaml.Node, int, bool]] = [(root, 1, False)]
    while stack:
        node, depth, done = stack.pop()
        if depth > MAX_DEPTH:
            raise _Fault(node, f"nested deeper than {MAX_DEPTH} levels")
        children = [] if isinstance(node, yaml.ScalarNode) else \
            [n for pair in node.value for n in pair] if isinstance(node, yaml.MappingNode) else list(node.value)
        if done:
            open_.discard(id(node))
            size[id(node)] = 1 + sum(size[id(c)] for c in children)
            if size[id(node)] > MAX_VALUES:
                raise _Fault(node, f"expands to over {MAX_VALUES:,} values through its aliases (an alias bomb?)")
            continue
        if id(node) in size:
            continue
        if id(node) in open_:
            raise _Fault(node, "an alias inside the value it names (it would never end)")
        open_.add(id(node))
        stack.append((node, depth, True))
        stack.extend((c, depth + 1, False) for c in children if id(c) not in size)


def yaml_of(text: str, where: str) -> object:
    """The YAML document in `text` (None when empty); its faults said at `where`:line."""
    if len(text) > MAX_YAML:
        raise FileFault(where, f"{len(text):,} characters of YAML, over the {MAX_YAML / 2 ** 20:.2g} MiB fablab reads "
                        "(YAML is slow to read: 10 MB takes 20 s); a plan this size reads in a second as a CSV "
                        "cable list or sonic-mgmt's links CSV (docs/inputs.md)")
    loader = _Loader(text)
    try:
        root = loader.get_single_node()
        if root is None:
            return None
        _check_nodes(root)
        return loader.construct_document(root)
    except _Fault as e:
        raise FileFault(f"{where}:{e.line}", str(e)) from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None) or getattr(e, "context_mark", None)
        what = " ".join(str(p) for p in (getattr(e, "context", None), getattr(e, "problem", None)) if p) or str(e)
        raise FileFault(f"{where}:{mark.line + 1 if mark else 1}", f"not YAML: {what}") from None
    except RecursionError:
        raise FileFault(where, f"nested deeper than {MAX_DEPTH} levels") from None
    finally:
        loader.dispose()


# --- CSV ----------------------------------------------------------------------------------------

def csv_rows(text: str, where: str):
    """(line, cells) of every row of the CSV in `text` (comma-separated, as a spreadsheet's CSV
    export writes it); a row the csv module cannot read (a field over its 128 KiB limit) is
    refused at its line."""
    # Line ends as an editor shows them: CRLF, LF, or a CR alone (csv would refuse a bare CR in a cell)
    reader = csv.reader(io.StringIO(text.replace("\r\n", "\n").replace("\r", "\n")))
    try:
        for row in reader:
            yield reader.line_num, row
    except csv.Error as e:
        raise FileFault(f"{where}:{reader.line_num}", f"not a CSV row fablab reads: {e}") from None


def quoted(value: object, limit: int = 48) -> str:
    """`value` as a message quotes it: its repr, cut to `limit` characters (a cell may be 100 KB)."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit - 12]}...({len(text):,} chars)"
