"""A field of a switch's config_db.json file changed in place: what the netns runtime's running
CONFIG_DB is (it runs no SONiC; the file kept in the lab's run directory is what an audit reads)."""
from __future__ import annotations

import json
from pathlib import Path


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
