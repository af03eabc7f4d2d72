"""The HwSKUs fablab ships, read from its own data: one file per SONiC platform in
harness/core/hwskus/, written the way SONiC's device tree describes a box (its cages in
platform.json, each HwSKU's breakout of them in hwsku.json), and expanded into ports by SONiC's
own rule (harness.core.breakout). tests/unit/test_hwsku.py compares every HwSKU, row by row,
with SONiC's port_config.ini and platform.json + hwsku.json.

A file (`<platform>.yaml`):

    platform: x86_64-vendor_box-r0
    groups:                  # the cages, in platform.json's order; cage numbers count from 1 across groups
      - cages: 64            # cages in the group
        first: 0             # the k-th (from 0) is port Ethernet<first + step*k>
        step: 8
        lanes: 8             # lanes per cage, consecutive from its first lane:
        first_lanes: {from: 0, step: 8}   # or the list of each cage's first lane
        index: 1             # front-panel index of the first cage, +1 for each next
        alias: ["etp{index}", "etp{index}{letter}"]   # a mode of one port, of several
        modes: ["1x800G[400G]", 2x400G]           # the breakout modes platform.json lists
      - {cages: 1, first: 512, lanes: 1, first_lanes: [512], index: 65, alias: ["etp{index}"],
         modes: ["1x25G[10G]"], service: true}    # slow ports after the data ports
    hwskus:                  # each HwSKU: cages (numbers, ranges, ranges/step) -> its mode (later wins)
      Vendor-Box-O64: {1-64: "1x800G[400G]", 65: "1x25G[10G]"}
    port_config_only: []     # HwSKUs SONiC ships with no hwsku.json: fixed ports, no breakout

An alias template may use {index}, {letter} (a, b, ... by port), {port} (1, 2, ...), {lane}
(1 + the offset of the port's first lane in its cage) and {number} (N of EthernetN).
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, replace
from importlib import resources

import yaml

from harness.core.breakout import PORT_PREFIX, Cage, Layout, Mode, ModeError, PortRow, child_ports, parse_mode
from harness.core.errors import HarnessError

_LETTERS = "abcdefghijklmnop"


@dataclass(frozen=True)
class Group:
    """Cages of one kind, numbered in a row."""

    cages: int
    first: int
    step: int
    lanes: int
    first_lanes: tuple[int, ...]
    index: int
    alias: tuple[str, ...]
    modes: tuple[str, ...]
    service: bool


@dataclass(frozen=True)
class Slot:
    """A cage of a platform as the data numbers it, and the group it belongs to."""

    number: int
    cage: Cage
    group: Group


class DataError(HarnessError):
    """fablab's own HwSKU data is wrong (tests/unit/test_hwsku.py keeps it from shipping so)."""


@functools.cache
def _platforms() -> dict[str, tuple[str, dict]]:
    """HwSKU name -> (its platform file, the file's document), every file read once and no
    HwSKU expanded: a CLI command names one or two, and expanding all 31 costs ~40 ms."""
    folder = resources.files(__package__).joinpath("hwskus")
    out: dict[str, tuple[str, dict]] = {}
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".yaml"):
            try:
                doc = yaml.load(entry.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
                out.update(dict.fromkeys(doc["hwskus"], (entry.name, doc)))
            except (KeyError, TypeError, yaml.YAMLError) as e:
                raise DataError(f"harness/core/hwskus/{entry.name}: {type(e).__name__}: {e}") from None
    return out


def sku_names() -> tuple[str, ...]:
    """Every HwSKU shipped, in file order (platforms by name)."""
    return tuple(_platforms())


@functools.cache
def _platform_slots(file: str) -> list[Slot]:
    doc = next(d for f, d in _platforms().values() if f == file)
    return _slots([_group(g) for g in doc["groups"]])


@functools.cache
def layout(name: str) -> Layout:
    """The shipped HwSKU `name`, expanded (KeyError: none of that name)."""
    file, doc = _platforms()[name]
    try:
        slots = _platform_slots(file)
        fixed = set(doc.get("port_config_only") or ())
        return _layout(name, _selected(doc["hwskus"][name], len(slots)), slots, name not in fixed)
    except (KeyError, TypeError, ValueError) as e:
        raise DataError(f"harness/core/hwskus/{file}: {type(e).__name__}: {e}") from None


def shipped() -> tuple[Layout, ...]:
    """Every HwSKU of every platform file, in file order (platforms by name)."""
    return tuple(layout(n) for n in sku_names())


def platform_layouts(name: str, text: str) -> list[Layout]:
    try:
        doc = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
        slots = _slots([_group(g) for g in doc["groups"]])
        fixed = set(doc.get("port_config_only") or ())
        return [_layout(sku, _selected(choice, len(slots)), slots, sku not in fixed)
                for sku, choice in doc["hwskus"].items()]
    except (KeyError, TypeError, ValueError, yaml.YAMLError) as e:
        raise DataError(f"harness/core/hwskus/{name}: {type(e).__name__}: {e}") from None


def _group(g: dict) -> Group:
    lanes = g["first_lanes"]
    first_lanes = tuple(lanes) if isinstance(lanes, list) else \
        tuple(lanes["from"] + lanes["step"] * k for k in range(g["cages"]))
    if len(first_lanes) != g["cages"]:
        raise ValueError(f"{len(first_lanes)} first lanes for {g['cages']} cages")
    return Group(g["cages"], g["first"], g.get("step", 1), g["lanes"], first_lanes, g["index"], tuple(g["alias"]),
                 tuple(g["modes"]), bool(g.get("service", False)))


def _slots(groups: list[Group]) -> list[Slot]:
    out = []
    for group in groups:
        for k in range(group.cages):
            first, index = group.first_lanes[k], group.index + k
            cage = Cage(f"{PORT_PREFIX}{group.first + group.step * k}", tuple(range(first, first + group.lanes)),
                        index, "")
            out.append(Slot(len(out) + 1, replace(cage, modes=tuple(_mode(cage, m, group) for m in group.modes)),
                            group))
    return out


def _mode(cage: Cage, text: str, group: Group) -> Mode:
    """A mode of `cage` with its ports' aliases, from the group's templates."""
    parts = parse_mode(text, len(cage.lanes))
    total = sum(p.ports for p in parts)
    template = group.alias[0] if total == 1 else group.alias[-1]
    aliases, lane = [], 0
    for part in parts:
        for _ in range(part.ports):
            k = len(aliases)
            aliases.append(template.format(index=cage.index, letter=_LETTERS[k], port=k + 1, lane=lane + 1,
                                           number=int(cage.parent.removeprefix(PORT_PREFIX)) + lane))
            lane += part.lanes // part.ports
    return Mode(text, tuple(aliases))


def _selected(choice: dict, cages: int) -> dict[int, str]:
    """Cage number -> mode, from `{selector: mode}` (`3`, `1-32`, `1-63/2`, `13,17`; later wins)."""
    out: dict[int, str] = {}
    for selector, mode in choice.items():
        for item in str(selector).split(","):
            span, _, step = item.partition("/")
            low, _, high = span.partition("-")
            numbers = range(int(low), int(high or low) + 1, int(step or 1))
            if not numbers or numbers[0] < 1 or numbers[-1] > cages:
                raise ValueError(f"cages {item!r}: the platform has cages 1-{cages}")
            out.update(dict.fromkeys(numbers, str(mode)))
    return out


def _layout(name: str, mode_of: dict[int, str], slots: list[Slot], breakout: bool) -> Layout:
    """The HwSKU's rows (its cages in their modes, in cage order) and, when SONiC gives it a
    hwsku.json, its data cages with their default mode."""
    rows: list[PortRow] = []
    cages: list[Cage] = []
    data = 0
    for slot in slots:
        text = mode_of.get(slot.number)
        if text is None:
            continue
        cage = slot.cage if breakout else replace(slot.cage, modes=(_mode(slot.cage, text, slot.group),))
        try:
            ports = child_ports(cage, text)
        except ModeError as e:
            raise ValueError(f"{name}: {e}") from None
        if not slot.group.service and len(rows) > data:
            raise ValueError(f"{name}: data cage {slot.number} after a service cage")
        rows += [PortRow(n, lanes, alias, index, speed, len(rows) + i)
                 for i, (n, lanes, alias, index, speed) in enumerate(ports)]
        if not slot.group.service:
            data = len(rows)
            if breakout:
                cages.append(replace(cage, default_mode=text))
    return Layout(name, tuple(rows), data, tuple(cages))
