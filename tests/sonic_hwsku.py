"""SONiC's HwSKU files read as SONiC reads them, apart from fablab's own reader
(harness/core/sonicdevice.py, harness/core/breakout.py), so the two check each other: a
port_config.ini with the columns its header names, and the ports sonic-config-engine's
portconfig.py derives from platform.json + hwsku.json (BreakoutCfg, parse_platform_json_file).
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from pathlib import Path


@dataclass(frozen=True)
class RefRow:
    name: str
    lanes: tuple[int, ...]
    alias: str
    index: int | None
    speed: int | None


def read_port_config(path: Path) -> list[RefRow]:
    """SONiC's reading: columns as the last `#` line naming `name` says (default name lanes
    alias index), a line of fewer than two words skipped. The reference keeps a symlink as its
    target's path (`../ACS-MSN4700/port_config.ini`): that is the flat file of that HwSKU."""
    text = path.read_text()
    if re.fullmatch(r"\.\./([^/]+)/port_config\.ini\s*", text):
        return read_port_config(path.parent / f"{text.split('/')[1]}.port_config.ini")
    titles, rows = ["name", "lanes", "alias", "index"], []
    for line in text.splitlines():
        if line.startswith("#"):
            titles = line.strip("#").split() if "name" in line else titles
            continue
        if len(line.split()) < 2:
            continue
        cell = dict(zip(titles, line.split()))
        rows.append(RefRow(cell["name"], tuple(int(x) for x in cell["lanes"].split(",")), cell.get("alias", cell["name"]),
                           int(cell["index"]) if "index" in cell else None,
                           int(cell["speed"]) if "speed" in cell else None))
    return rows


BRKOUT_PATTERN = r"(\d{1,6})x(\d{1,6}G?)(\[(\d{1,6}G?,?)*\])?(\((\d{1,6})\))?"  # portconfig.py's BRKOUT_PATTERN


def entries(mode: str, lanes: int) -> list[tuple[int, int, frozenset, int]]:
    """(ports, default Mb/s, every Mb/s, lanes) of each `+` part, as portconfig.py's BreakoutCfg reads them."""
    def mbps(s):
        return int(s[:-1]) * 1000 if s.endswith("G") else int(s)
    out = []
    for part in mode.split("+"):
        n, default, others, _, _, used = re.match(BRKOUT_PATTERN, part).groups()
        speeds = {mbps(default)} | {mbps(x) for x in (others or "[]")[1:-1].split(",") if x}
        out.append((int(n), mbps(default), frozenset(speeds), int(used) if used else lanes))
    return out


def sonic_ports(platform: dict, sku: dict) -> list[RefRow]:
    """portconfig.py's parse_platform_json_file: every platform port hwsku.json names, in
    platform order, broken out in its default_brkout_mode."""
    rows = []
    for parent, props in platform["interfaces"].items():
        if parent not in sku["interfaces"]:
            continue
        mode, lanes, index = sku["interfaces"][parent]["default_brkout_mode"], props["lanes"].split(","), \
            props["index"].split(",")
        key = [(n, sp, used) for n, _, sp, used in entries(mode, len(lanes))]
        aliases = next(a for m, a in props["breakout_modes"].items()
                       if [(n, sp, used) for n, _, sp, used in entries(m, len(lanes))] == key)
        lane, k = 0, 0
        for n, default, _, used in entries(mode, len(lanes)):
            for _ in range(n):
                rows.append(RefRow(f"Ethernet{int(parent[8:]) + lane}", tuple(int(x) for x in lanes[lane:lane + used // n]),
                                   aliases[k], int(index[lane]), default))
                lane, k = lane + used // n, k + 1
    return rows


def platform_of(reference: Path, sku: str) -> Path | None:
    """The platform folder of SONiC's device tree that holds the HwSKU's hwsku.json."""
    found = sorted((reference / "sonic-platform").glob(f"*/{sku}/hwsku.json"))
    return found[0].parent.parent if found else None


def ref_rows(hwsku_dir: Path, sku: str) -> list[RefRow]:
    """SONiC's rows of a HwSKU: its port_config.ini, the speeds it leaves out from
    platform.json + hwsku.json; only those where it has no port_config.ini."""
    platform = platform_of(hwsku_dir.parent, sku)
    derived = sonic_ports(json.loads((platform / "platform.json").read_text()),
                          json.loads((platform / sku / "hwsku.json").read_text())) if platform else []
    ini = hwsku_dir / f"{sku}.port_config.ini"
    if not ini.is_file():
        return derived
    speed = {r.name: r.speed for r in derived}
    return [r if r.speed is not None else replace(r, speed=speed[r.name]) for r in read_port_config(ini)]
