"""A HwSKU read from a folder of SONiC's device tree (sonic-buildimage
`device/<vendor>/<platform>/<HwSKU>/`), for one fablab does not ship.

Its ports are the rows of its port_config.ini (columns as its `# name lanes ...` header names
them, as SONiC reads it), in file order: docker-sonic-vs gives row i the interface eth<i>.
With a hwsku.json beside it and platform.json in the platform folder above, SONiC's dynamic
port breakout applies: the cages and their modes come from those (harness.core.breakout), and
so do the speeds a port_config.ini without a speed column leaves out. A folder with
hwsku.json and platform.json but no port_config.ini gets its ports from them, in platform.json's
order. Every fault is a TopologyError naming the file (and line) and the fix.

A HwSKU named rather than given by path is looked for in the trees FABLAB_SONIC_DEVICES names
(`find_named`): a folder of that name holding port_config.ini or hwsku.json, at any depth (a
sonic-buildimage checkout's device/ tree, or a folder of a few).
"""
from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path

from harness.core.breakout import Cage, Layout, ModeError, Mode, PortRow, child_ports, service_rows
from harness.core.errors import Problem, TopologyError
from harness.core.inputfile import FileFault, json_of, read_text

PORT_CONFIG = "port_config.ini"
HWSKU_JSON = "hwsku.json"
PLATFORM_JSON = "platform.json"
_FOLDER_HINT = ("give the HwSKU's own folder of sonic-buildimage, device/<vendor>/<platform>/<HwSKU>/ "
                "(it holds port_config.ini, or hwsku.json with platform.json one level up)")


@dataclass(frozen=True)
class Derived:
    """What platform.json + hwsku.json give: each port (in platform order) and each cage."""

    ports: tuple[tuple[str, tuple[int, ...], str, int, int], ...]  # name, lanes, alias, index, Mb/s
    cages: tuple[Cage, ...]


def read_hwsku(path: str | Path, name: str | None = None) -> Layout:
    """The HwSKU in `path` (a HwSKU folder), or in `path`/`name` (a platform folder and a HwSKU)."""
    folder = Path(path).expanduser() / name if name else Path(path).expanduser()
    if not folder.is_dir():
        what = "is a file, not a folder" if folder.exists() else "does not exist"
        raise _error(str(folder), f"{what}", _FOLDER_HINT)
    folder = folder.resolve()
    ini, hwsku_json, platform_json = folder / PORT_CONFIG, folder / HWSKU_JSON, folder.parent / PLATFORM_JSON
    derived = derive(hwsku_json, platform_json) if hwsku_json.is_file() and platform_json.is_file() else None
    if ini.is_file():
        rows = _ini_rows(ini, {p[0]: p[4] for p in derived.ports} if derived else {})
    elif derived is not None:
        rows = tuple(PortRow(n, lanes, alias, index, speed, i) for i, (n, lanes, alias, index, speed)
                     in enumerate(derived.ports))
    else:
        raise _error(str(folder), f"has no {PORT_CONFIG}, nor a {HWSKU_JSON} with {PLATFORM_JSON} in "
                                  f"{folder.parent}", _FOLDER_HINT)
    if not rows:
        raise _error(str(ini if ini.is_file() else hwsku_json), "lists no port", "name the HwSKU's ports, one a row")
    data = len(rows) - service_rows([r.speed for r in rows])
    return Layout(folder.name, rows, data, _cages(derived, rows[:data]) if derived else (), str(folder))


def search_roots(text: str) -> tuple[Path, ...]:
    """The trees FABLAB_SONIC_DEVICES names (`text`: folders, os.pathsep between), each once."""
    out: dict[Path, None] = {}
    for part in text.split(os.pathsep):
        if part.strip():
            out.setdefault(Path(part.strip()).expanduser().absolute())
    return tuple(out)


_FOUND: dict[tuple[str, tuple[Path, ...]], tuple[Path, ...]] = {}  # a tree is walked once per name it has


def find_named(name: str, roots: tuple[Path, ...]) -> tuple[Path, ...]:
    """Every HwSKU folder called `name` under `roots` (one holding port_config.ini or
    hwsku.json), each once, in the order of the roots and then of the paths."""
    key = (name, roots)
    if key in _FOUND and all(p.is_dir() for p in _FOUND[key]):
        return _FOUND[key]
    found: dict[Path, None] = {}
    for root in roots:
        for here, dirs, _ in os.walk(root):
            dirs.sort()
            if name in dirs:
                folder = Path(here) / name
                if (folder / PORT_CONFIG).is_file() or (folder / HWSKU_JSON).is_file():
                    found.setdefault(folder.resolve())
                    dirs.remove(name)  # a HwSKU folder holds no other
    out = tuple(found)
    if out:  # not a miss: the folder may be made before the next look
        _FOUND[key] = out
    return out


def _error(where: str, message: str, hint: str) -> TopologyError:
    return TopologyError([Problem(where, message, hint)], source="HwSku.from_sonic")


def _ini_rows(path: Path, speeds: dict[str, int]) -> tuple[PortRow, ...]:
    """The rows of a port_config.ini: columns as the last `#` line naming `name` says (SONiC's
    default: name lanes alias index), a line of fewer than two words skipped, as SONiC does."""
    titles = ["name", "lanes", "alias", "index"]
    rows: list[PortRow] = []
    seen: set[str] = set()
    for number, line in enumerate(_text(path).splitlines(), start=1):
        where = f"{path}:{number}"
        if line.startswith("#"):
            if "name" in line:
                titles = line.strip("#").split()
            continue
        words = line.split()
        if len(words) < 2:
            continue
        if "name" not in titles or "lanes" not in titles:
            raise _error(where, "has no name and lanes columns (the header line names them)",
                         "begin the file with a header such as '# name lanes alias index speed'")
        cells = dict(zip(titles, words))
        name = cells.get("name", "")
        if name in seen:
            raise _error(where, f"names port {name} a second time", "give each port one row")
        seen.add(name)
        rows.append(PortRow(name, _ints(cells.get("lanes", ""), where, "lanes"), cells.get("alias", name),
                            _int(cells.get("index"), where, "index", "add an index column: each port's "
                                                                    "front-panel number"),
                            _speed(cells.get("speed"), speeds.get(name), where), len(rows)))
    return tuple(rows)


def _text(path: Path) -> str:
    try:
        return read_text(path)
    except FileFault as e:
        raise _error(e.where, e.what, "give a readable UTF-8 text file") from None


def _ints(text: str, where: str, column: str) -> tuple[int, ...]:
    try:
        values = tuple(int(x) for x in text.split(","))
    except ValueError:
        raise _error(where, f"{column} {text!r} is no list of numbers", "write lanes as e.g. 0,1,2,3") from None
    return values


def _int(text: str | None, where: str, column: str, hint: str) -> int:
    if text is None:
        raise _error(where, f"has no {column}", hint)
    try:
        return int(text)
    except ValueError:
        raise _error(where, f"{column} {text!r} is no number", hint) from None


def _speed(text: str | None, derived: int | None, where: str) -> int:
    if text is None and derived is not None:
        return derived
    return _int(text, where, "speed", f"add a speed column (Mb/s), or keep the HwSKU's {HWSKU_JSON} beside it "
                                      f"and {PLATFORM_JSON} in the folder above, as SONiC does")


def derive(hwsku_json: Path, platform_json: Path) -> Derived:
    """The ports and cages SONiC derives from platform.json + hwsku.json (portconfig.py): each
    platform port hwsku.json names, in platform order, in hwsku.json's default_brkout_mode."""
    platform, sku = _interfaces(platform_json), _interfaces(hwsku_json)
    ports: list[tuple[str, tuple[int, ...], str, int, int]] = []
    cages: list[Cage] = []
    for parent, props in platform.items():
        if parent not in sku:
            continue
        cage = _cage(parent, props, platform_json)
        mode = sku[parent].get("default_brkout_mode") if isinstance(sku[parent], dict) else None
        if not isinstance(mode, str):
            raise _error(str(hwsku_json), f"{parent} has no default_brkout_mode", "give it one of "
                         + ", ".join(m.text for m in cage.modes))
        try:
            ports += child_ports(cage, mode)
        except ModeError as e:
            raise _error(str(hwsku_json), f"{parent}: {e}", f"give {parent} a mode {PLATFORM_JSON} "
                                                            "lists for it") from None
        cages.append(replace(cage, default_mode=mode))
    return Derived(tuple(ports), tuple(cages))


def _interfaces(path: Path) -> dict:
    try:
        doc = json_of(_text(path), str(path))
    except FileFault as e:
        raise _error(e.where, e.what, f"fix the file, or give a folder without it and with a {PORT_CONFIG}") from None
    interfaces = doc.get("interfaces") if isinstance(doc, dict) else None
    if not isinstance(interfaces, dict):
        raise _error(str(path), "has no 'interfaces' object", "SONiC's files key every port under 'interfaces'")
    return interfaces


def _cage(parent: str, props: object, path: Path) -> Cage:
    where = f"{path}: {parent}"
    if not isinstance(props, dict) or not parent.startswith("Ethernet") or \
            not parent.removeprefix("Ethernet").isdigit():
        raise _error(where, "is no port of the form EthernetN with lanes, index and breakout_modes",
                     "give each port its lanes, index and breakout_modes")
    lanes = _ints(str(props.get("lanes", "")), where, "lanes")
    indexes = set(str(props.get("index", "")).split(","))
    if len(indexes) != 1:
        raise _error(where, f"gives its lanes several front-panel indexes ({', '.join(sorted(indexes))})",
                     "fablab reads cages whose lanes share one index")
    modes = props.get("breakout_modes")
    if not isinstance(modes, dict) or not all(isinstance(a, list) for a in modes.values()):
        raise _error(where, "has no breakout_modes object (mode -> the aliases of its ports)",
                     "list each mode the cage takes with its aliases")
    index = _int(indexes.pop(), where, "index", "give each port its front-panel index")
    return Cage(parent, lanes, index, "", tuple(Mode(m, tuple(map(str, a))) for m, a in modes.items()))


def _cages(derived: Derived, data: tuple[PortRow, ...]) -> tuple[Cage, ...]:
    """The cages whose ports in their default mode are data rows, name and lanes alike: those
    fablab may break out."""
    have = {(r.name, r.lanes) for r in data}
    return tuple(c for c in derived.cages
                 if all((n, lanes) in have for n, lanes, *_ in child_ports(c, c.default_mode)))
