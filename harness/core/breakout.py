"""A HwSKU's ports as SONiC derives them from its cages: a port_config.ini row, a cage of a
platform with dynamic port breakout, and the breakout rule itself.

SONiC's sonic-config-engine (portconfig.py, BreakoutCfg) turns a cage of platform.json (its
lanes, index and breakout modes, each with the aliases of its ports) in a mode of hwsku.json
into ports: a mode `NxS[T,..](L)` (parts joined by `+`) gives N ports of S Gb/s on L lanes (all
the cage's by default), the k-th named Ethernet<parent + offset of its first lane>, aliased by
the mode's k-th alias. A HwSKU's mode need not be written as platform.json writes it: SONiC
takes the platform's mode with the same ports, speeds and lanes, and the HwSKU's default speed.
"""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass

PORT_PREFIX = "Ethernet"
# SONiC's BRKOUT_PATTERN, matched as SONiC does (at the start: what follows a match is ignored)
_PART = re.compile(r"(\d{1,6})x(\d{1,6}G?)(\[(?:\d{1,6}G?,?)*\])?(?:\((\d{1,6})\))?")


@dataclass(frozen=True)
class PortRow:
    """One row of a HwSKU's port_config.ini."""

    name: str  # SONiC port name, e.g. Ethernet8
    lanes: tuple[int, ...]
    alias: str
    index: int  # front-panel index as the HwSKU numbers it (0- or 1-based, per vendor)
    speed: int  # Mb/s
    position: int  # 0-based row number in the file (a broken-out port: the row owning its first lane)
    broken_out: bool = False  # a port of a cage broken out by BREAKOUT_CFG, not a row of the file

    @property
    def clab(self) -> str:
        """The docker-sonic-vs interface that owns this row's lanes."""
        return f"eth{self.position + 1}"

    @property
    def lanes_text(self) -> str:
        return ",".join(str(lane) for lane in self.lanes)


@dataclass(frozen=True)
class Mode:
    """A breakout mode a cage accepts, as platform.json writes it, and the aliases of its ports."""

    text: str  # e.g. '2x400G[200G,100G]'
    aliases: tuple[str, ...]


@dataclass(frozen=True)
class Cage:
    """A front-panel cage of a platform with dynamic port breakout: SONiC's parent port (the key
    of BREAKOUT_CFG), its lanes, the breakout mode the HwSKU gives it (hwsku.json's
    default_brkout_mode) and the modes the platform accepts."""

    parent: str
    lanes: tuple[int, ...]
    index: int
    default_mode: str
    modes: tuple[Mode, ...] = ()

    def mode_for(self, speed: int) -> str | None:
        """The mode whose ports all run at `speed` Mb/s on the cage's every lane, the most ports
        (a mode of mixed parts or idle lanes is one fablab never picks on its own)."""
        fits = []
        for m in self.modes:
            parts = parse_mode(m.text, len(self.lanes))
            if len(parts) == 1 and parts[0].speed == speed and parts[0].lanes == len(self.lanes):
                fits.append((parts[0].ports, m.text))
        return max(fits)[1] if fits else None


@dataclass(frozen=True)
class Part:
    """One `NxS[T,..](L)` part of a breakout mode."""

    ports: int
    speed: int  # Mb/s, the default
    speeds: frozenset[int]  # every speed it runs at, the default included
    lanes: int  # lanes it takes

    @property
    def key(self) -> tuple[int, frozenset[int], int]:
        return self.ports, self.speeds, self.lanes


class ModeError(ValueError):
    """A breakout mode that SONiC would not accept; its callers say where it was written."""


@functools.lru_cache(maxsize=1024)  # the same few modes, parsed for every cage of every HwSKU
def parse_mode(text: str, lanes: int) -> tuple[Part, ...]:
    parts = []
    for piece in text.split("+"):
        m = _PART.match(piece)
        if m is None:
            raise ModeError(f"breakout mode {text!r} is not of the form NxSG[..](L), parts joined by '+'")
        n, speed, others, used = m.groups()
        speeds = {_mbps(speed)} | {_mbps(s) for s in (others or "[]")[1:-1].split(",") if s}
        parts.append(Part(int(n), _mbps(speed), frozenset(speeds), int(used) if used else lanes))
    if sum(p.lanes for p in parts) > lanes or any(p.ports < 1 or p.lanes % p.ports for p in parts):
        raise ModeError(f"breakout mode {text!r} does not fit a cage of {lanes} lanes")
    return tuple(parts)


def _mbps(speed: str) -> int:
    return int(speed[:-1]) * 1000 if speed.endswith("G") else int(speed)


def platform_mode(cage: Cage, text: str) -> Mode:
    """The platform's mode that `text` (a HwSKU's way of writing it) selects: same ports, speeds
    and lanes, as SONiC matches them."""
    key = [p.key for p in parse_mode(text, len(cage.lanes))]
    for m in cage.modes:
        if [p.key for p in parse_mode(m.text, len(cage.lanes))] == key:
            return m
    raise ModeError(f"{cage.parent} takes no breakout mode {text!r}: its modes are "
                    f"{', '.join(m.text for m in cage.modes) or 'none'}")


def child_ports(cage: Cage, text: str) -> tuple[tuple[str, tuple[int, ...], str, int, int], ...]:
    """(name, lanes, alias, index, Mb/s) of each port of `cage` in mode `text`, in order."""
    aliases = platform_mode(cage, text).aliases
    base = int(cage.parent.removeprefix(PORT_PREFIX))
    out, lane = [], 0
    for part in parse_mode(text, len(cage.lanes)):
        width = part.lanes // part.ports
        for _ in range(part.ports):
            if len(out) >= len(aliases):
                raise ModeError(f"{cage.parent}'s mode {text!r} has {len(aliases)} aliases for more ports")
            out.append((f"{PORT_PREFIX}{base + lane}", cage.lanes[lane:lane + width], aliases[len(out)], cage.index,
                        part.speed))
            lane += width
    return tuple(out)


@dataclass(frozen=True)
class Layout:
    """What a HwSKU is, as read from fablab's data or from SONiC's files: its rows in file order
    (the data rows first), its cages with breakout modes, and the folder it was read from."""

    name: str
    rows: tuple[PortRow, ...]
    data_ports: int
    cages: tuple[Cage, ...]
    source: str = ""


def service_rows(speeds: list[int]) -> int:
    """How many trailing rows are slow service ports (the one or two 10G or 25G ports after the
    cages): at most two rows of 25G or less, slower than every row before them. fablab uses
    them only when a cable names them."""
    for n in (2, 1):
        if len(speeds) > n and max(speeds[-n:]) <= 25000 and max(speeds[-n:]) < min(speeds[:-n]):
            return n
    return 0
