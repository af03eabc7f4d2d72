"""Ports against SONiC's own HwSKU files: the rows fablab embeds, and what it renders from them.

The reference port_config.ini files are parsed here on their own, and docker-sonic-vs's lane
map is rebuilt from them as SONiC builds it (row i, 1-based, gives its lanes to eth<i>), so a
wrong transcription or a wrong rule in harness/hwsku.py cannot check itself.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from harness.hwsku import HWSKUS


@dataclass(frozen=True)
class RefRow:
    name: str
    lanes: tuple[int, ...]
    alias: str
    index: int
    speed: int


def read_port_config(path: Path) -> list[RefRow]:
    rows = []
    for line in path.read_text().splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        name, lanes, alias, index, speed = line.split()[:5]
        rows.append(RefRow(name, tuple(int(x) for x in lanes.split(",")), alias, int(index), int(speed)))
    return rows


@pytest.mark.parametrize("sku", HWSKUS, ids=lambda s: s.name)
def test_embedded_rows_equal_the_reference_file(sku, hwsku_dir):
    reference = read_port_config(hwsku_dir / f"{sku.name}.port_config.ini")
    embedded = [RefRow(r.name, r.lanes, r.alias, r.index, r.speed) for r in sku.rows]
    assert embedded == reference
    assert [r.position for r in sku.rows] == list(range(len(reference)))
