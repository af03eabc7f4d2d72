"""The HwSKUs fablab renders SONiC switches as: their ports, lanes and aliases.

docker-sonic-vs builds a lane map from the port_config.ini of the HwSKU it runs: the i-th
port row (1-based, comments and blank lines skipped) gives its lanes to the container
interface `eth<i>`, and a PORT is bridged to the interface that owns its first lane
(sonic-buildimage src/sonic-device-data: Makefile up to 202511, generate_vs_hwsku.py on
master). So a PORT only carries traffic when its name, lanes and alias are the HwSKU's own,
and a switch has no more ports than its HwSKU has rows.

fablab ships a catalogue of HwSKUs as data (harness/core/hwskus/, one file per platform, read
by harness.core.hwskudata; tests/unit/test_hwsku.py compares each row with SONiC's files):
`hwsku(name)` finds any of them. The plan's own choice (`choose`, for a role that names none)
picks from HWSKUS only, the five it always picked from, so automatic plans stay as they were.
Any other HwSKU of SONiC's device tree is read from its folder: `HwSku.from_sonic(DIR)`.

What a name in `Hardware(...)` or a plan's HwSku column may select (`lookup`): a name of the
catalogue; a HwSKU folder by its path (it holds a '/': absolute, or relative to the plan's
folder); or a name of a folder under the trees FABLAB_SONIC_DEVICES (and `--sonic-devices`)
name. The catalogue's name comes first, so a plan that names one means what it always meant.
"""
from __future__ import annotations

import difflib
import functools
import os
from dataclasses import dataclass, replace
from pathlib import Path

from harness.core.breakout import Cage, Layout, Mode, PortRow, child_ports
from harness.core.errors import Problem, TopologyError
from harness.core import hwskudata

__all__ = ["AUTOMATIC", "CATALOG", "DEFAULT_HWSKU", "HWSKUS", "SONIC_DEVICES", "Assignment", "Cage", "HwSku", "Mode",
           "PortRow", "anchored", "assign", "catalogue_hint", "choose", "find", "hwsku", "is_path", "known", "lookup",
           "names", "resolve", "shipped", "speed_matched", "unknown_hint"]

DEFAULT_HWSKU = "Force10-S6000"  # the HWSKU docker-sonic-vs runs unless told otherwise
SONIC_DEVICES = "FABLAB_SONIC_DEVICES"  # trees of SONiC HwSKU folders a name is looked for in (os.pathsep between)
# What the plan chooses from for a role that names no HwSKU, in this order (it breaks ties):
# the five it chose from before the catalogue grew, so that no automatic plan (nor the renders,
# golden files and recorded hashes that follow from one) changes with it.
AUTOMATIC = ("Force10-S6000", "Arista-7060X6-64PE", "Arista-7060X6-64PE-P32O64", "Arista-7060X6-64PE-O128S2",
             "Arista-7060X6-64PE-C224O8")


@dataclass(frozen=True)
class HwSku:
    """A SONiC HwSKU: its port_config.ini rows in file order (the data ports first, then slow
    service ports used only when a cable names them) and, on a platform with dynamic port
    breakout, its data cages. `Hardware(be_leaf=...)` takes one, or a name of fablab's
    catalogue (`fablab hwskus`)."""

    name: str
    rows: tuple[PortRow, ...]
    data_ports: int  # the leading rows; the rest are slow service ports, used only when named
    cages: tuple[Cage, ...] = ()  # a platform with breakout modes (none: the ports are the rows)
    source: str = ""  # the SONiC folder it was read from (from_sonic); "" for one fablab ships

    @classmethod
    def from_sonic(cls, path: str | Path, name: str | None = None) -> HwSku:
        """The HwSKU of a sonic-buildimage folder, `device/<vendor>/<platform>/<HwSKU>/` (or the
        platform folder and the HwSKU's name): its port_config.ini, or its hwsku.json with
        the platform's platform.json. A TopologyError names the file, line and fix of a fault."""
        from harness.core.sonicdevice import read_hwsku  # only when a folder is read: its parsers cost every command
        return _from(read_hwsku(path, name))

    @classmethod
    def named(cls, name: str) -> HwSku:
        """The HwSKU of that name in fablab's catalogue (`fablab hwskus`)."""
        return hwsku(name)

    def cage_rows(self, cage: Cage) -> tuple[PortRow, ...]:
        return tuple(r for r in self.data_rows if r.lanes[0] in cage.lanes)

    def broken_out(self, cage: Cage, mode: str) -> tuple[PortRow, ...] | None:
        """The ports of `cage` in `mode`, each on the row owning its first lane (docker-sonic-vs
        wires it there); None when a port's first lane is no row's, as nothing could carry it."""
        owner = {lane: r.position for r in self.rows for lane in r.lanes}
        ports = child_ports(cage, mode)
        if any(lanes[0] not in owner for _, lanes, *_ in ports):
            return None
        return tuple(PortRow(name, lanes, alias, index, speed, owner[lanes[0]], broken_out=True)
                     for name, lanes, alias, index, speed in ports)

    @property
    def data_rows(self) -> tuple[PortRow, ...]:
        return self.rows[:self.data_ports]

    def row(self, name: str) -> PortRow | None:
        return self._by_name.get(name)

    @functools.cached_property
    def _by_name(self) -> dict[str, PortRow]:  # a plan asks for thousands of ports: not a scan each
        out: dict[str, PortRow] = {}
        for r in self.rows:
            out.setdefault(r.name, r)
        return out

    @property
    def span(self) -> str:
        """The names of its data ports, for messages."""
        return f"{self.rows[0].name}..{self.rows[self.data_ports - 1].name}"


def _from(layout: Layout) -> HwSku:
    return HwSku(layout.name, layout.rows, layout.data_ports, layout.cages, layout.source)


@functools.cache
def _shipped(name: str) -> HwSku:
    return _from(hwskudata.layout(name))


def catalog() -> tuple[HwSku, ...]:
    """Every HwSKU fablab ships, expanded (the first call expands them all: ~40 ms)."""
    return tuple(_shipped(n) for n in names())


def automatic() -> tuple[HwSku, ...]:
    """The HwSKUs the plan chooses from for a role that names none (AUTOMATIC), in order."""
    return tuple(_shipped(n) for n in AUTOMATIC)


def __getattr__(attr: str) -> tuple[HwSku, ...]:
    # CATALOG and HWSKUS as constants, expanded only when asked for (a module's __getattr__)
    if attr == "CATALOG":
        return catalog()
    if attr == "HWSKUS":
        return automatic()
    raise AttributeError(f"module {__name__!r} has no attribute {attr!r}")


def names() -> tuple[str, ...]:
    """Every HwSKU fablab ships: what a name in Hardware(...) or a plan's HwSku column may select."""
    return hwskudata.sku_names()


def known(name: str) -> bool:
    return name in names()


def hwsku(name: str) -> HwSku:
    """The HwSKU of that name in fablab's catalogue; a TopologyError naming the nearest otherwise."""
    if known(name):
        return _shipped(name)
    raise TopologyError([Problem("hwsku", f"unknown HwSKU {name!r}", unknown_hint(name))])


def unknown_hint(name: str) -> str:
    if is_path(name):
        return ("give the path of a HwSKU's folder of SONiC's device tree (device/<vendor>/<platform>/<HwSKU>/, holding "
                "port_config.ini, or hwsku.json with platform.json one level up), relative to the plan's folder; or "
                f"its name, with --sonic-devices DIR (or {SONIC_DEVICES}) naming a tree that holds it")
    near = difflib.get_close_matches(name, names(), n=3, cutoff=0.6)
    said = f"did you mean {near[0]}?" + (f" (also near: {', '.join(near[1:])}) " if near[1:] else " ") if near else ""
    return said + catalogue_hint()


def catalogue_hint() -> str:
    return (f"`fablab hwskus` lists the {len(names())} fablab ships; another is read from its folder of SONiC's "
            "device tree (device/<vendor>/<platform>/<HwSKU>/): give its path, or its name with --sonic-devices DIR "
            f"(or {SONIC_DEVICES}) naming a tree that holds it")


def resolve(value: str | HwSku) -> HwSku:
    """A Hardware field's value as a HwSku: itself, or the HwSKU its text names (`lookup`)."""
    return value if isinstance(value, HwSku) else lookup(value)


def shipped(sku: HwSku) -> bool:
    """The catalogue's HwSKU of its name, row for row (wherever it was read from)."""
    return known(sku.name) and (sku is _shipped(sku.name) or replace(sku, source="") == _shipped(sku.name))


def is_path(ref: str) -> bool:
    """A HwSKU given as its folder rather than by name: SONiC's HwSKU names hold no '/'."""
    return "/" in ref or os.sep in ref or ref.startswith("~")


def anchored(ref: str, base: str | Path) -> str:
    """`ref` as it reads from anywhere: a relative path made absolute from `base` (the folder of
    the plan or declaration that names it), a name as it is."""
    if not is_path(ref) or Path(ref).expanduser().is_absolute():
        return ref
    return str(Path(base).absolute() / ref)


def lookup(ref: str, base: str | Path | None = None, field: str = "hwsku") -> HwSku:
    """The HwSKU `ref` names (`find`); a TopologyError at `field` naming where fablab looked."""
    found = find(ref, base, field)
    if isinstance(found, HwSku):
        return found
    raise TopologyError([Problem(field, f"unknown HwSKU {ref!r}: {found}", unknown_hint(ref))])


def find(ref: str, base: str | Path | None = None, field: str = "hwsku") -> HwSku | str:
    """The HwSKU `ref` names: the catalogue's of that name; else the SONiC HwSKU folder at that
    path (`ref` holds a '/': absolute, or relative to `base`, a plan's folder, the current one by
    default); else the one folder of that name under the FABLAB_SONIC_DEVICES trees. Where
    there is none, what fablab tried, for a message; a folder that is no HwSKU's is a
    TopologyError at `field` naming its file and line."""
    if known(ref):
        return _shipped(ref)
    from harness.core import sonicdevice  # only when a folder is read: its parsers cost every command
    if is_path(ref):
        folder = Path(ref).expanduser()
        folder = folder if folder.is_absolute() else Path(base or ".").absolute() / folder
        if not folder.exists():
            return f"no folder at {folder}" + ("" if Path(ref).expanduser().is_absolute() else
                                               f" (relative to {Path(base or '.').absolute()})")
        return _folder(folder, ref, field)
    roots = sonicdevice.search_roots(os.environ.get(SONIC_DEVICES, ""))
    found = sonicdevice.find_named(ref, roots)
    if found:
        first = _folder(found[0], ref, field)
        # copies of one HwSKU (SONiC keeps some under two platforms) are one; two that differ, a guess
        if any(replace(_folder(f, ref, field), source="") != replace(first, source="") for f in found[1:]):
            return (f"not in fablab's catalogue, and {len(found)} folders of that name, not alike, under "
                    f"{SONIC_DEVICES}: {', '.join(map(str, found))}: give the path of the one meant")
        return first
    if not roots:
        return (f"not in fablab's catalogue, and no folder was searched (--sonic-devices and {SONIC_DEVICES} "
                "name none)")
    searched = ", ".join(f"{r}" + ("" if r.is_dir() else " (no such folder)") for r in roots)
    return (f"not in fablab's catalogue, nor a folder of that name holding port_config.ini or hwsku.json under "
            f"{searched} (--sonic-devices, {SONIC_DEVICES})")


def _folder(folder: Path, ref: str, field: str) -> HwSku:
    try:
        return _read(str(folder.resolve()), _stamp(folder))
    except TopologyError as e:
        raise TopologyError([Problem(field, f"HwSKU {ref!r}: {p.field} {p.message}", p.hint)
                             for p in e.problems]) from None


def _stamp(folder: Path) -> tuple:
    """What a HwSKU folder's reading depends on, so an edited file is read again."""
    out = []
    for path in (folder / "port_config.ini", folder / "hwsku.json", folder.resolve().parent / "platform.json"):
        try:
            st = path.stat()
            out.append((st.st_mtime_ns, st.st_size))
        except OSError:
            out.append(None)
    return tuple(out)


@functools.lru_cache(maxsize=256)  # a plan names one HwSKU for many switches: read once
def _read(folder: str, stamp: tuple) -> HwSku:
    return HwSku.from_sonic(folder)


@dataclass(frozen=True)
class Assignment:
    rows: tuple[PortRow, ...]  # one per link, in order
    modes: tuple[tuple[str, str], ...]  # (parent port, breakout mode) of every cage, the HwSKU's unless broken out


def assign(h: HwSku, speeds: list[int], named: frozenset[str] = frozenset(),
           breakout: bool = False) -> Assignment | None:
    """A data row of `h` for each link, in order (speeds in Gb/s): a free row of the link's own
    speed; else, with `breakout`, a port of a free cage broken out into ports of that speed (the
    last free cages, of a speed with rows to spare); else a row of the slowest speed above it
    (the port then runs at the link's speed). None when a link finds no port."""
    free: dict[int, list[PortRow]] = {}
    for r in h.data_rows:
        if r.name not in named:
            free.setdefault(r.speed, []).append(r)
    need: dict[int, int] = {}
    for gbps in speeds:
        need[gbps * 1000] = need.get(gbps * 1000, 0) + 1
    modes = {c.parent: c.default_mode for c in h.cages}
    if breakout:
        for speed in sorted(need):
            for cage in reversed(h.cages):
                if len(free.get(speed, ())) >= need[speed]:
                    break
                mode = cage.mode_for(speed)
                rows = h.cage_rows(cage)
                spare = mode and rows and all(r.speed > speed for r in rows) and \
                    len(free.get(rows[0].speed, ())) - need.get(rows[0].speed, 0) >= len(rows)
                if not spare or any(r not in free[rows[0].speed] for r in rows):
                    continue
                ports = h.broken_out(cage, mode)
                if ports is None:
                    continue
                free[rows[0].speed] = [r for r in free[rows[0].speed] if r not in rows]
                free.setdefault(speed, []).extend(ports)
                free[speed].sort(key=lambda r: (r.position, r.lanes[0]))
                modes[cage.parent] = mode
    for rows in free.values():
        rows.reverse()  # pop() from the end takes them in order
    out = []
    for gbps in speeds:
        speed = next((sp for sp in sorted(free) if sp >= gbps * 1000 and free[sp]), None)
        if speed is None:
            return None
        out.append(free[speed].pop())
    return Assignment(tuple(out), tuple(modes.items()))


def speed_matched(h: HwSku, speeds: list[int]) -> bool:
    """Every link has a row of exactly its speed."""
    need: dict[int, int] = {}
    for gbps in speeds:
        need[gbps * 1000] = need.get(gbps * 1000, 0) + 1
    have: dict[int, int] = {}
    for r in h.data_rows:
        have[r.speed] = have.get(r.speed, 0) + 1
    return all(have.get(sp, 0) >= k for sp, k in need.items())


def choose(speeds: list[int]) -> HwSku | None:
    """The HwSKU for a switch whose links run at `speeds` (Gb/s, one per port): one whose ports
    are as fast as its links (the fewest rows of a speed it does not use, then the fewest rows),
    else one whose ports are faster; None when none has the ports."""
    def unused(h: HwSku) -> int:
        wanted = {gbps * 1000 for gbps in speeds}
        return sum(1 for r in h.data_rows if r.speed not in wanted)

    usable = [h for h in automatic() if assign(h, speeds) is not None]
    matched = [h for h in usable if speed_matched(h, speeds)]
    if matched:
        return min(matched, key=lambda h: (unused(h), h.data_ports))
    return min(usable, key=lambda h: (max(r.speed for r in h.data_rows), h.data_ports), default=None)
