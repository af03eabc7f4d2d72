"""A cabling plan read from where it is kept: which file is which format, and the devices file
beside it.

- `*_links.csv` with a sonic-mgmt header: its devices file is the one beside it with `_links`
  read as `_devices` (sonic-mgmt's `sonic_<lab>_links.csv` / `sonic_<lab>_devices.csv`).
- a cable list (`a_device,a_port,b_device,b_port[,speed]`): `devices.csv` beside it, if there.
- `*.clab.yml` / `*.clab.yaml`, or YAML with `topology.nodes`: a containerlab file.
- `numbering.csv` beside any of them: the engineer's own numbering (cabling/numbering_csv.py).
"""
from __future__ import annotations

import difflib
from dataclasses import replace
from pathlib import Path

from harness.core.cabling.clab_plan import read_clab
from harness.core.cabling.csv_plans import read_cable_csv, read_sonic_mgmt, sniff
from harness.core.cabling.plan import CablingPlan, PlanFormat
from harness.core.cabling.numbering_csv import FILE as NUMBERING, read_numbering
from harness.core.errors import InputError, Problem, TopologyError, too_many
from harness.core.inputfile import read_text

PLAN_SUFFIXES = (".csv", ".yml", ".yaml")


def is_plan(path: Path) -> bool:
    """A path fablab reads as a cabling plan (by its name; the content then decides the format)."""
    return path.suffix.lower() in PLAN_SUFFIXES


def text_of(path: Path) -> str:
    """A plan file's text (harness/core/inputfile.py: encoding, size)."""
    return read_text(path)


def read_plan(path: Path) -> CablingPlan:
    """The plan at `path`, with the devices file and `numbering.csv` beside it where they are."""
    plan = _read(path)
    numbering = path.with_name(NUMBERING)
    if not numbering.is_file():
        return plan
    text = text_of(numbering)
    rows, problems = read_numbering(text, str(numbering))
    if not problems:
        problems = _unknown(rows, plan, str(numbering))
    if problems:
        raise TopologyError(problems, source=str(numbering))
    return replace(plan, numbering=rows)


def _unknown(rows, plan: CablingPlan, name: str) -> list[Problem]:
    """Each numbering row naming a device the plan does not have (said once per device)."""
    known = set(plan.device_names) | {d.name for d in plan.devices}
    problems: list[Problem] = []
    said: set[str] = set()
    for device in (*(d for d, _ in rows.asns), *(d for d, _ in rows.loopbacks), *(d for d, *_ in rows.ports),
                   *(d for d, _ in rows.mgmt_ips)):
        if device in known or device in said:
            continue
        if too_many(problems, name):
            break
        said.add(device)
        near = difflib.get_close_matches(device, sorted(known), n=1)
        problems.append(Problem(name, f"{device} is no device of the plan",
                                f"did you mean {near[0]}?" if near else "number only the plan's devices"))
    return problems


def _read(path: Path) -> CablingPlan:
    if not path.is_file():
        raise InputError(f"no cabling plan at {path}")
    text = text_of(path)
    if path.suffix.lower() in (".yml", ".yaml"):
        return read_clab(text, str(path))
    fmt = sniff(text)
    if fmt is PlanFormat.SONIC_MGMT:
        devices = path.with_name(path.name.replace("_links", "_devices")) if "_links" in path.name else None
        if devices is not None and devices.is_file():
            return read_sonic_mgmt(text, str(path), text_of(devices), str(devices))
        return read_sonic_mgmt(text, str(path))
    if fmt is PlanFormat.CABLE_CSV:
        devices = path.with_name("devices.csv")
        if devices.is_file() and devices != path:
            return read_cable_csv(text, str(path), text_of(devices), str(devices))
        return read_cable_csv(text, str(path))
    raise InputError(f"{path}: not a cabling plan fablab reads: its header is neither sonic-mgmt's "
                     "(StartDevice,StartPort,EndDevice,EndPort,...) nor a cable list's "
                     "(a_device,a_port,b_device,b_port[,speed])")
