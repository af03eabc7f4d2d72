"""A field of a switch's config_db.json file changed in place: what the netns runtime's running
CONFIG_DB is (it runs no SONiC; the file kept in the lab's run directory is what an audit reads)."""
from __future__ import annotations

import json
from pathlib import Path

from harness.core.errors import LabError


def read_booted(path: Path, lab: str) -> dict:
    """The config_db.json a netns switch was booted with (a hand edit there counts)."""
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        raise LabError(f"{path} is missing: lab {lab} was booted by an older fablab; boot it again") from None
    except ValueError as e:
        raise LabError(f"{path}: not JSON ({e})") from e


def with_mtus(db: dict, mtus: dict[str, int]) -> dict:
    """Each PORT's MTU as the kernel has it now (`ip link set ... mtu` by hand counts)."""
    for port, row in db.get("PORT", {}).items():
        if port in mtus:
            row["mtu"] = str(mtus[port])
    return db


def set_field(path: Path, table: str, key: str, field: str, value: str | None) -> str | None:
    """Set (or, for None, remove) TABLE|KEY's FIELD; the value it had (None: none). Written
    aside and renamed, so that a reader never sees half a file."""
    db = json.loads(path.read_text())
    row = db.setdefault(table, {}).setdefault(key, {})
    old = row.get(field)
    if value is None:
        row.pop(field, None)
    else:
        row[field] = value
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(db, indent=4, sort_keys=True) + "\n")
    tmp.replace(path)
    return old
