"""What a real SONiC switch answers over SSH to `show pfc counters` and `show interfaces status`,
as values; and the reader of the tables every such `show` command prints.

Those commands are Python scripts of sonic-utilities that print with tabulate's "simple" format:
a header line, a rule of dashes under each column, one row a line. The formats were read in
github.com/sonic-net/sonic-utilities: scripts/pfcstat (and utilities_common/netstat.py, where
N/A and the thousands separators come from), scripts/intfutil, scripts/lldpshow; and the outputs
they are tested against: tests/pfcstat_test.py, tests/pfcstat_input/assert_show_output.py,
tests/intfutil_test.py, tests/lldp_test.py. tests/fixtures/sonic_show/README.md names each
sample and its commit. Pure functions: the caller runs the command, these read its text.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from harness.core.errors import LabError

_RULE = re.compile(r"-+(?:  +-+)*")
_HEADER_GAP = re.compile(r"\s{2,}")


@dataclass(frozen=True)
class ShowTable:
    """One table of a `show` command's output: its column names and its rows, cell by cell."""

    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    line: int  # the header's line number in the output, from 1, for messages


def show_tables(text: str, what: str) -> tuple[ShowTable, ...]:
    """Every tabulate "simple" table in `text`, the output of `what` (named in messages).

    A table's rows end at a blank line, at a rule (lldpshow closes its table with 50 dashes)
    or at the end. Cells are cut at the columns of the rule, not split on spaces: a cell may
    hold a space ("QSFP28 or later", "GigabitEthernet 0/2") or be empty (a neighbour without a
    port description). The header is split on runs of two spaces instead: a captured output
    that was strip()ped loses the header's leading spaces (sonic-utilities' own tests do it)."""
    lines = text.splitlines()
    tables: list[ShowTable] = []
    i = 1
    while i < len(lines):
        if not (_RULE.fullmatch(lines[i].rstrip()) and lines[i - 1].strip()):
            i += 1
            continue
        spans = [(m.start(), m.end()) for m in re.finditer(r"-+", lines[i])]
        header = tuple(_HEADER_GAP.split(lines[i - 1].strip()))
        if len(header) != len(spans):
            raise LabError(f"{what}: the header on line {i} names {len(header)} columns "
                           f"{list(header)} but its rule of dashes has {len(spans)}")
        rows, i = [], i + 1
        while i < len(lines) and lines[i].strip() and not _RULE.fullmatch(lines[i].rstrip()):
            rows.append(_cells(lines[i], spans, f"{what}, line {i + 1}"))
            i += 1
        tables.append(ShowTable(header, tuple(rows), i - len(rows) - 1))
        i += 1  # past the blank line or the closing rule, which heads no table
    return tuple(tables)


def _cells(line: str, spans: list[tuple[int, int]], where: str) -> tuple[str, ...]:
    # tabulate pads every cell to its column and leaves two spaces between columns: text in
    # a gap means the row is not the table's (a wrapped line, a hand-edited sample).
    gaps = [(end, start) for (_, end), (start, _) in zip(spans, spans[1:])] + [(spans[-1][1], len(line))]
    if line[:spans[0][0]].strip() or any(line[a:b].strip() for a, b in gaps):
        raise LabError(f"{where}: {line.strip()!r} does not line up with the columns of its header")
    return tuple(line[a:b].strip() for a, b in spans)


def column(table: ShowTable, name: str, what: str) -> int:
    """The index of the column called `name`: columns come and go across SONiC versions."""
    if name not in table.header:
        raise LabError(f"{what}: the table on line {table.line} has no {name!r} column "
                       f"(it has {list(table.header)})")
    return table.header.index(name)


# --------------------------------------------------------------------------- show pfc counters

PFC_TITLES = tuple(f"PFC{p}" for p in range(8))
_DIRECTIONS = {"Port Rx": "rx", "Port Tx": "tx"}
_COUNT = re.compile(r"\d{1,3}(?:,\d{3})+|\d+")


def pfc_counters(text: str) -> dict[str, dict[str, tuple[int, ...]]]:
    """PFC frames received and sent per port and priority, from `show pfc counters` (pfcstat):
    {"rx": {port: (PFC0, ..., PFC7)}, "tx": {...}}, ports in the order printed.

    pfcstat prints two tables, "Port Rx" then "Port Tx", counts with thousands separators
    ("1,200"). After `sonic-clear pfccounters` each table follows a "Last cached time was ..."
    line and its counts are what came since the clear, not since boot.

    "N/A" raises LabError: pfcstat prints it where COUNTERS_DB holds no such counter for the
    port (the ASIC does not count it, or the flex counters have not been polled yet, or a
    backplane port of `-s all`). Read as 0 it would claim a count nobody made, and a check
    that no pause frame was sent would pass on a port that counts nothing."""
    what = "show pfc counters"
    found: dict[str, dict[str, tuple[int, ...]]] = {}
    for table in show_tables(text, what):
        direction = _DIRECTIONS.get(table.header[0])
        if direction is None or table.header[1:] != PFC_TITLES:
            raise LabError(f"{what}: the table on line {table.line} is not a PFC counter table "
                           f"(header {list(table.header)}; want 'Port Rx' or 'Port Tx', then PFC0..PFC7)")
        if direction in found:
            raise LabError(f"{what}: two '{table.header[0]}' tables (the second on line {table.line})")
        found[direction] = _pfc_rows(table, direction, what)
    missing = [f"'Port {d.capitalize()}'" for d in ("rx", "tx") if d not in found]
    if missing:
        raise LabError(f"{what}: no {' or '.join(missing)} table in the output "
                       f"(it begins {text.strip()[:80]!r})")
    return {"rx": found["rx"], "tx": found["tx"]}


def _pfc_rows(table: ShowTable, direction: str, what: str) -> dict[str, tuple[int, ...]]:
    counts: dict[str, tuple[int, ...]] = {}
    for port, *cells in table.rows:
        if port in counts:
            raise LabError(f"{what}: port {port} is listed twice in the {direction.upper()} table")
        values = []
        for priority, cell in enumerate(cells):
            where = f"{what}: {port} {direction.upper()} PFC{priority}"
            if cell == "N/A":
                raise LabError(f"{where} is N/A: the switch keeps no such counter for the port "
                               "(not counted by the ASIC, or not polled yet)")
            if not _COUNT.fullmatch(cell):
                raise LabError(f"{where} is {cell!r}, not a count")
            values.append(int(cell.replace(",", "")))
        counts[port] = tuple(values)
    return counts


# ----------------------------------------------------------------------- show interfaces status

@dataclass(frozen=True)
class InterfaceStatus:
    """One row of `show interfaces status`: a front-panel port or a PortChannel."""

    name: str
    lanes: tuple[int, ...]  # the ASIC's SerDes lanes; () for a PortChannel (N/A)
    speed_mbps: int  # the operational speed when up, else the configured one; 0 where N/A
    mtu: int  # 0 where N/A
    alias: str  # the vendor's name of the port ("etp1", "fortyGigE0/0"); "N/A" for a PortChannel
    oper: str  # "up", "down" or "N/A", as printed
    admin: str


_SPEED = re.compile(r"(\d+(?:\.\d+)?)([MG]?)")
_NEEDED = ("Interface", "Lanes", "Speed", "MTU", "Alias", "Oper", "Admin")


def interfaces_status(text: str) -> dict[str, InterfaceStatus]:
    """Each interface `show interfaces status` (intfutil) lists, by name, in the order printed.

    Columns are found by their header, as versions differ: 2019's had no FEC, later ones
    added FEC, Type and Asym PFC. Speeds print as intfutil's port_speed_parse writes them
    ("25G", "2.5G", "100M", "1000M" for RJ45): they become Mbps; N/A (no speed in APPL_DB)
    becomes 0, a speed no port has, so it cannot pass for a real one. MTU N/A becomes 0 too."""
    what = "show interfaces status"
    tables = show_tables(text, what)
    if len(tables) != 1:
        raise LabError(f"{what}: want one table, found {len(tables)} "
                       f"(the output begins {text.strip()[:80]!r})")
    table = tables[0]
    at = {name: column(table, name, what) for name in _NEEDED}
    found: dict[str, InterfaceStatus] = {}
    for row in table.rows:
        name = row[at["Interface"]]
        where = f"{what}: {name}"
        if name in found:
            raise LabError(f"{where} is listed twice")
        found[name] = InterfaceStatus(
            name=name, lanes=_lanes(row[at["Lanes"]], where), speed_mbps=_speed(row[at["Speed"]], where),
            mtu=_mtu(row[at["MTU"]], where), alias=row[at["Alias"]], oper=row[at["Oper"]],
            admin=row[at["Admin"]])
    return found


def _lanes(cell: str, where: str) -> tuple[int, ...]:
    if cell == "N/A":
        return ()
    if not re.fullmatch(r"\d+(?:,\d+)*", cell):
        raise LabError(f"{where}: lanes {cell!r} are not a comma-separated list of numbers")
    return tuple(int(lane) for lane in cell.split(","))


def _speed(cell: str, where: str) -> int:
    if cell == "N/A":
        return 0
    m = _SPEED.fullmatch(cell)
    if not m:
        raise LabError(f"{where}: speed {cell!r} is none of '100G', '2.5G', '100M' or 'N/A'")
    return round(float(m[1]) * (1000 if m[2] == "G" else 1))


def _mtu(cell: str, where: str) -> int:
    if cell == "N/A":
        return 0
    if not cell.isdigit():
        raise LabError(f"{where}: MTU {cell!r} is not a number")
    return int(cell)
