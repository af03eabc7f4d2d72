"""A cabling plan as an engineer keeps one: devices and cables with their own names and ports.

What a plan file says, read and checked for what can be told from the file alone (a port
cabled twice, a speed that is not one, a cable to a device the devices file does not list).
What the devices are (GPU node, rail leaf, spine ...) is inferred from the graph later; here a
device only carries the words its file gave: a sonic-mgmt `Type`, a `role` column, a HwSKU.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

from harness.core.cabling.numbering_csv import NumberingRows
from enum import Enum


class PlanFormat(str, Enum):
    SONIC_MGMT = "sonic-mgmt"  # sonic_lab_links.csv (+ sonic_lab_devices.csv)
    CABLE_CSV = "cable-csv"  # a_device,a_port,b_device,b_port[,speed] (+ devices.csv)
    CLAB = "clab"  # a containerlab topology file


@dataclass(frozen=True)
class Where:
    """A row of a plan file, for messages: `file:line`."""

    file: str
    line: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}"


@dataclass(frozen=True)
class Device:
    name: str
    where: Where
    hwsku: str | None = None
    kind: str | None = None  # sonic-mgmt's Type (DevSonic, Server, ...), as written
    role: str | None = None  # a `role` column, as written: it wins over what the graph says
    mgmt_ip: str | None = None  # as written, prefix length included where given


@dataclass(frozen=True)
class End:
    device: str
    port: str

    def __str__(self) -> str:
        return f"{self.device}:{self.port}"


@dataclass(frozen=True)
class CableRow:
    a: End
    b: End
    where: Where
    speed_mbps: int | None = None  # None: not given (the port's own speed then)


@dataclass(frozen=True)
class CablingPlan:
    format: PlanFormat
    cables: tuple[CableRow, ...]
    devices: tuple[Device, ...] = ()  # from the devices file; empty when none was given
    numbering: NumberingRows | None = None  # numbering.csv beside the plan, when there is one

    def device(self, name: str) -> Device | None:
        return self._by_name.get(name)

    @functools.cached_property
    def _by_name(self) -> dict[str, Device]:  # asked once per device of a plan of thousands
        out: dict[str, Device] = {}
        for d in self.devices:
            out.setdefault(d.name, d)
        return out

    @property
    def device_names(self) -> tuple[str, ...]:
        """Every device a cable names, in the order first named."""
        seen: dict[str, None] = {}
        for c in self.cables:
            seen.setdefault(c.a.device)
            seen.setdefault(c.b.device)
        return tuple(seen)
