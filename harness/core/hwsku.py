"""The HwSKUs fablab renders SONiC switches as: their ports, lanes and aliases.

docker-sonic-vs builds a lane map from the port_config.ini of the HwSKU it runs: the i-th
port row (1-based, comments and blank lines skipped) gives its lanes to the container
interface `eth<i>`, and a PORT is bridged to the interface that owns its first lane
(sonic-buildimage src/sonic-device-data: Makefile up to 202511, generate_vs_hwsku.py on
master). So a PORT only carries traffic when its name, lanes and alias are the HwSKU's own,
and a switch has no more ports than its HwSKU has rows.

The rows below are transcribed from SONiC's device tree (device/*/*/<HwSKU>/port_config.ini,
the same in 202411 and master); tests/unit/test_hwsku.py compares them with the files.
"""
from __future__ import annotations

from dataclasses import dataclass

DEFAULT_HWSKU = "Force10-S6000"  # the HWSKU docker-sonic-vs runs unless told otherwise


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
class Cage:
    """A front-panel cage of a platform with dynamic port breakout: SONiC's parent port (the key
    of BREAKOUT_CFG), its lanes, and the breakout mode the HwSKU gives it (hwsku.json's
    default_brkout_mode)."""

    parent: str
    lanes: tuple[int, ...]
    index: int
    default_mode: str


# The breakout modes of a 7060X6-64PE cage (platform.json of x86_64-arista_7060x6_64pe): mode ->
# (ports, Mb/s each); port k of n is Ethernet<parent + 8k/n>, alias etp<cage><a..h> when n > 1.
X6_MODES = {"1x800G[400G]": (1, 800000), "1x400G": (1, 400000), "2x400G": (2, 400000), "4x200G": (4, 200000),
            "8x100G": (8, 100000)}


@dataclass(frozen=True)
class HwSku:
    name: str
    rows: tuple[PortRow, ...]
    data_ports: int  # the leading rows; the rest are slow service ports, used only when named
    cages: tuple[Cage, ...] = ()  # a platform with breakout modes (none: the ports are the rows)
    modes: tuple[tuple[str, int, int], ...] = ()  # (mode, ports, Mb/s each) every cage accepts

    def cage_rows(self, cage: Cage) -> tuple[PortRow, ...]:
        return tuple(r for r in self.data_rows if r.lanes[0] in cage.lanes)

    def mode_for(self, speed: int) -> str | None:
        """The breakout mode whose ports run at `speed` Mb/s (the most ports per cage)."""
        fits = [(n, mode) for mode, n, each in self.modes if each == speed]
        return max(fits)[1] if fits else None

    def broken_out(self, cage: Cage, mode: str) -> tuple[PortRow, ...]:
        """The ports of `cage` in `mode`. docker-sonic-vs wires each to the row owning its first lane."""
        n, speed = next((k, each) for m, k, each in self.modes if m == mode)
        width = len(cage.lanes) // n
        base = int(cage.parent.removeprefix("Ethernet"))
        owner = {lane: r.position for r in self.rows for lane in r.lanes}
        return tuple(PortRow(f"Ethernet{base + k * width}", cage.lanes[k * width:(k + 1) * width],
                             f"etp{cage.index}{'abcdefgh'[k] if n > 1 else ''}", cage.index, speed,
                             owner[cage.lanes[k * width]], broken_out=True) for k in range(n))

    @property
    def data_rows(self) -> tuple[PortRow, ...]:
        return self.rows[:self.data_ports]

    def row(self, name: str) -> PortRow | None:
        for r in self.rows:
            if r.name == name:
                return r
        return None

    @property
    def span(self) -> str:
        """The names of its data ports, for messages."""
        return f"{self.rows[0].name}..{self.rows[self.data_ports - 1].name}"


# --------------------------------------------------------------------------- the data

# First lane of each cage, in row order. Lanes of a cage are consecutive from there.
_S6000_CAGES = (25, 29, 33, 37, 45, 41, 1, 5, 13, 9, 17, 21, 53, 49, 57, 61,
                69, 65, 73, 77, 109, 105, 113, 117, 125, 121, 81, 85, 93, 89, 101, 97)
_7060X6_CAGES = (17, 1, 9, 25, 57, 41, 33, 49, 89, 73, 65, 81, 121, 105, 97, 113,
                 153, 137, 129, 145, 185, 169, 161, 177, 217, 201, 193, 209, 249, 233, 225, 241,
                 273, 257, 265, 281, 313, 297, 289, 305, 345, 329, 321, 337, 377, 361, 353, 369,
                 409, 393, 385, 401, 441, 425, 417, 433, 473, 457, 449, 465, 505, 489, 481, 497)
# The two 10G SFP ports after the 64 OSFP cages of the 7060X6-64PE: (name, lane, cage).
_7060X6_SFP = (("Ethernet512", 513, 65), ("Ethernet513", 515, 66))


def _cages(cages: tuple[int, ...], lanes: int, split: int, step: int, alias: str, first_index: int,
           speed: int) -> list[PortRow]:
    """Rows of cages broken out in `split` ports each, named Ethernet<step*k> for the k-th row.

    `alias` is formatted with n (the Ethernet number), c (1-based cage) and s (breakout letter).
    """
    rows: list[PortRow] = []
    width = lanes // split
    for c, first in enumerate(cages):
        for s in range(split):
            k = len(rows)
            rows.append(PortRow(
                name=f"Ethernet{step * k}", lanes=tuple(range(first + s * width, first + (s + 1) * width)),
                alias=alias.format(n=step * k, c=c + 1, s="ab"[s] if split > 1 else ""),
                index=c + first_index, speed=speed, position=k))
    return rows


def _x6(split_of: dict[int, int]) -> list[PortRow]:
    """Rows of a 7060X6-64PE HwSKU whose cage c (1-based, in order) is broken out into
    split_of[c] ports of 800G / split each (a cage not listed is unused): the k-th port of cage c
    is Ethernet<8(c-1) + 8k/split>, alias etp<c><letter>, its 8/split lanes from the cage's."""
    rows: list[PortRow] = []
    for c, split in split_of.items():
        first, width = _7060X6_CAGES[c - 1], 8 // split
        for s in range(split):
            rows.append(PortRow(
                name=f"Ethernet{8 * (c - 1) + s * width}", lanes=tuple(range(first + s * width, first + (s + 1) * width)),
                alias=f"etp{c}{'abcdefgh'[s] if split > 1 else ''}", index=c, speed=800000 // split,
                position=len(rows)))
    return rows


_SPLIT_MODE = {(1, 800000): "1x800G[400G]", (2, 400000): "2x400G", (4, 200000): "4x200G", (8, 100000): "8x100G"}


def _x6_sku(name: str, split_of: dict[int, int]) -> HwSku:
    rows = _x6(split_of)
    cages = tuple(Cage(f"Ethernet{8 * (c - 1)}", tuple(range(_7060X6_CAGES[c - 1], _7060X6_CAGES[c - 1] + 8)), c,
                       _SPLIT_MODE[(split, 800000 // split)]) for c, split in split_of.items())
    return HwSku(name, _sfp(rows), len(rows), cages, tuple((m, n, each) for m, (n, each) in X6_MODES.items()))


def _sfp(rows: list[PortRow]) -> tuple[PortRow, ...]:
    extra = [PortRow(name, (lane,), f"etp{cage}", cage, 10000, len(rows) + i)
             for i, (name, lane, cage) in enumerate(_7060X6_SFP)]
    return tuple(rows + extra)


def _registry() -> tuple[HwSku, ...]:
    s6000 = _cages(_S6000_CAGES, 4, 1, 4, "fortyGigE0/{n}", 0, 40000)
    cages = range(1, 65)
    return (
        HwSku(DEFAULT_HWSKU, tuple(s6000), len(s6000)),  # Dell S6000: 32 × 40G, no breakout
        # the 7060X6-64PE's 64 OSFP cages (+ 2 × 10G SFP), in four layouts:
        _x6_sku("Arista-7060X6-64PE", {c: 1 for c in cages}),  # 64 × 800G
        # a leaf of 400G down and 800G up: cages 1-32 whole, 33-64 as 2 × 400G
        _x6_sku("Arista-7060X6-64PE-P32O64", {c: 1 if c <= 32 else 2 for c in cages}),
        _x6_sku("Arista-7060X6-64PE-O128S2", {c: 2 for c in cages}),  # 128 × 400G
        # a leaf of 100G down and 400G up: the odd cages only, four as 2 × 400G, the rest as 8 × 100G
        _x6_sku("Arista-7060X6-64PE-C224O8", {c: 2 if c in (13, 17, 45, 49) else 8 for c in range(1, 65, 2)}),
    )


HWSKUS: tuple[HwSku, ...] = _registry()


def hwsku(name: str) -> HwSku:
    for h in HWSKUS:
        if h.name == name:
            return h
    raise KeyError(f"unsupported HwSKU {name!r}; supported: {', '.join(h.name for h in HWSKUS)}")


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
            mode = h.mode_for(speed)
            for cage in reversed(h.cages):
                if mode is None or len(free.get(speed, ())) >= need[speed]:
                    break
                rows = h.cage_rows(cage)
                spare = rows and all(r.speed > speed for r in rows) and \
                    len(free.get(rows[0].speed, ())) - need.get(rows[0].speed, 0) >= len(rows)
                if not spare or any(r not in free[rows[0].speed] for r in rows):
                    continue
                free[rows[0].speed] = [r for r in free[rows[0].speed] if r not in rows]
                free.setdefault(speed, []).extend(h.broken_out(cage, mode))
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

    usable = [h for h in HWSKUS if assign(h, speeds) is not None]
    matched = [h for h in usable if speed_matched(h, speeds)]
    if matched:
        return min(matched, key=lambda h: (unused(h), h.data_ports))
    return min(usable, key=lambda h: (max(r.speed for r in h.data_rows), h.data_ports), default=None)


def names() -> tuple[str, ...]:
    return tuple(h.name for h in HWSKUS)
