"""Cabling plans kept as CSV: sonic-mgmt's connection graph and a plain cable list.

- sonic-mgmt (`ansible/files/sonic_<lab>_links.csv`, `sonic_<lab>_devices.csv` beside it):
  `StartDevice,StartPort,EndDevice,EndPort,BandWidth,...` (BandWidth in Mb/s) and
  `Hostname,ManagementIp,HwSku,Type,...` (and a `Role`, where given). Its rows may stop short of the header (a devices
  row without Protocol or Os): a missing trailing cell is an empty one.
- a cable list, as a DCIM exports one: `a_device,a_port,b_device,b_port[,speed]` and an optional
  `devices.csv`: `name,role,hwsku,mgmt_ip` (role, hwsku and mgmt_ip each optional).

A HwSKU cell is a name (fablab's catalogue, or a folder under FABLAB_SONIC_DEVICES) or the path
of a SONiC HwSKU folder (it holds a '/'), relative to the devices file's folder: kept absolute,
so the plan reads the same from any working directory. Which HwSKU it is, is settled where the
device turns out to be a switch (shape.py): a server's HwSku cell (sonic-mgmt's `TestServ`) is
nobody's port map.

Column names are matched without regard to case or surrounding blanks; columns fablab does
not use (VlanID, VlanMode, a rack, an asset tag) are ignored; blank lines and lines starting
with `#` are skipped. Text in, a CablingPlan out: opening the files is the caller's.
Every problem is reported at once, each as `file:line`, with a fix.
"""
from __future__ import annotations

import difflib
import ipaddress
import re
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

from harness.core.cabling.numbering_csv import host_address
from harness.core.cabling.plan import CablingPlan, CableRow, Device, End, PlanFormat, Where
from harness.core.errors import Problem, TopologyError, too_many
from harness.core.inputfile import csv_rows, quoted
from harness.core.hwsku import anchored

SONIC_LINKS = ("StartDevice", "StartPort", "EndDevice", "EndPort")
SONIC_DEVICES = ("Hostname",)
CABLE_COLUMNS = ("a_device", "a_port", "b_device", "b_port")
DEVICE_COLUMNS = ("name",)
_SPEED = re.compile(r"^\s*(\d{1,9}(?:\.\d{1,6})?)\s*([GMT]?)(?:b(?:ps|/s|it/s)?)?\s*$", re.IGNORECASE)


def sniff(text: str) -> PlanFormat | None:
    """The CSV plan format whose header `text` starts with (its first line that is not blank
    or a comment), or None."""
    for _, row in _rows(text):
        names = {_key(c) for c in row}
        if {_key(c) for c in SONIC_LINKS} <= names:
            return PlanFormat.SONIC_MGMT
        if {_key(c) for c in CABLE_COLUMNS} <= names:
            return PlanFormat.CABLE_CSV
        return None
    return None


def speed_mbps(text: str, bare_unit: str = "M") -> int:
    """Mb/s from `400000`, `400G`, `400Gbps`, `400 Gb/s`, `100M`, `1.6T`. A bare number is in
    `bare_unit`: sonic-mgmt's BandWidth is Mb/s; a cable list's speed is Gb/s under 1000 (no
    data-center link is that slow), Mb/s from 1000 on."""
    m = _SPEED.match(text)
    if not m:
        raise ValueError(text)
    value, unit = float(m.group(1)), (m.group(2) or "").upper()
    if not unit:
        unit = bare_unit if bare_unit != "auto" else ("G" if value < 1000 else "M")
    mbps = value * {"M": 1, "G": 1000, "T": 1_000_000}[unit]
    if mbps <= 0 or mbps != int(mbps):
        raise ValueError(text)
    return int(mbps)


def read_sonic_mgmt(links: str, links_name: str, devices: str | None = None,
                    devices_name: str = "sonic_lab_devices.csv") -> CablingPlan:
    problems: list[Problem] = []
    listed = _devices(devices, devices_name, "Hostname", {"hwsku": "HwSku", "kind": "Type",
                                                         "mgmt_ip": "ManagementIp", "role": "Role"}, problems) \
        if devices is not None else None
    cables = _cables(links, links_name, SONIC_LINKS, "BandWidth", "M", listed, devices_name, problems)
    return _plan(PlanFormat.SONIC_MGMT, cables, listed, links_name, problems)


def read_cable_csv(cables: str, cables_name: str, devices: str | None = None,
                   devices_name: str = "devices.csv") -> CablingPlan:
    problems: list[Problem] = []
    listed = _devices(devices, devices_name, "name", {"hwsku": "hwsku", "role": "role", "mgmt_ip": "mgmt_ip"},
                      problems) if devices is not None else None
    rows = _cables(cables, cables_name, CABLE_COLUMNS, "speed", "auto", listed, devices_name, problems)
    return _plan(PlanFormat.CABLE_CSV, rows, listed, cables_name, problems)


def _plan(fmt: PlanFormat, cables: list[CableRow], listed: dict[str, Device] | None, source: str,
          problems: list[Problem]) -> CablingPlan:
    if problems:
        raise TopologyError(problems, source=source, what="cabling plan")
    return CablingPlan(fmt, tuple(cables), tuple(listed.values()) if listed else ())


def _key(column: str) -> str:
    return column.strip().lower()


def _rows(text: str, name: str = "the file") -> Iterator[tuple[int, list[str]]]:
    """(line, cells) of every row that is not blank or a comment."""
    for line, row in csv_rows(text, name):
        if not row or not "".join(row).strip() or row[0].lstrip().startswith("#"):
            continue
        yield line, [c.strip() for c in row]


def _table(text: str, name: str, needed: tuple[str, ...], problems: list[Problem]
           ) -> Iterator[tuple[Where, dict[str, str]]]:
    """Rows as {column (lower case): cell}; nothing when the header lacks a needed column."""
    rows = _rows(text, name)
    first = next(rows, None)
    if first is None:
        problems.append(Problem(f"{name}:1", "the file has no header and no rows",
                                f"start it with the header {','.join(needed)}"))
        return
    line, header = first
    keys = [_key(c) for c in header]
    missing = [c for c in needed if _key(c) not in keys]
    if missing:
        problems.append(Problem(f"{name}:{line}", f"no column {', '.join(missing)} in the header {','.join(header)}",
                                f"the header needs {','.join(needed)}"))
        return
    for line, cells in rows:
        yield Where(name, line), {k: (cells[i] if i < len(cells) else "") for i, k in enumerate(keys)}


def _devices(text: str, name: str, key: str, fields: dict[str, str], problems: list[Problem]) -> dict[str, Device]:
    out: dict[str, Device] = {}
    for where, row in _table(text, name, (key,), problems):
        if too_many(problems, str(where)):
            break
        dev = row[_key(key)]
        if not dev:
            problems.append(Problem(str(where), f"no {key}", f"give the device's name in the {key} column"))
            continue
        if dev in out:
            problems.append(Problem(str(where), f"{dev} is listed twice (first at line {out[dev].where.line})",
                                    "keep one row per device"))
            continue
        d = Device(dev, where, **{f: row.get(_key(col)) or None for f, col in fields.items()})
        if d.mgmt_ip and not _is_interface(d.mgmt_ip):
            problems.append(Problem(str(where), f"{dev}'s {fields['mgmt_ip']} {quoted(d.mgmt_ip)} is not a host's IP "
                                    "address",
                                    "write it as 10.250.0.10/24, or leave it empty for fablab's"))
            d = replace(d, mgmt_ip=None)  # the device is still listed: its cables are not said twice
        out[dev] = replace(d, hwsku=anchored(d.hwsku, Path(name).parent)) if d.hwsku else d
    return out


def _is_interface(text: str) -> bool:
    """An address, with or without its length; with it, a host's (not the network's or broadcast)."""
    try:
        iface = ipaddress.ip_interface(text)
    except ValueError:
        return False
    return "/" not in text or host_address(iface)


def _cables(text: str, name: str, columns: tuple[str, ...], speed_column: str, bare_unit: str,
            listed: dict[str, Device] | None, devices_name: str, problems: list[Problem]) -> list[CableRow]:
    out: list[CableRow] = []
    used: dict[End, Where] = {}
    a_dev, a_port, b_dev, b_port = (_key(c) for c in columns)
    for where, row in _table(text, name, columns, problems):
        if too_many(problems, str(where)):
            break
        empty = [c for c in columns if not row[_key(c)]]
        if empty:
            problems.append(Problem(str(where), f"{', '.join(empty)} empty", "every cable names both ends: "
                                    "device and port"))
            continue
        a, b = End(row[a_dev], row[a_port]), End(row[b_dev], row[b_port])
        if a.device == b.device:
            problems.append(Problem(str(where), f"a cable from {a.device} to itself ({a.port} to {b.port})",
                                    "a cable joins two devices"))
            continue
        speed = None
        if row.get(_key(speed_column)):
            try:
                speed = speed_mbps(row[_key(speed_column)], bare_unit)
            except ValueError:
                problems.append(Problem(str(where), f"{speed_column} {quoted(row[_key(speed_column)])} is not a speed",
                                        "write 400000 (Mb/s) or 400G"))
                continue
        for end in (a, b):
            if end in used:
                problems.append(Problem(str(where), f"{end} is cabled twice (also at line {used[end].line})",
                                        "a port takes one cable: fix the port of one of the two rows"))
            used.setdefault(end, where)
            if listed is not None and end.device not in listed:
                near = difflib.get_close_matches(end.device, list(listed), n=1)
                problems.append(Problem(str(where), f"{end.device} is not in {devices_name}",
                                        f"did you mean {near[0]}?" if near else f"add a row for it to {devices_name}"))
        out.append(CableRow(a, b, where, speed))
    return out
