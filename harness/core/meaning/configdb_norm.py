"""How SONiC reads a config_db.json, whatever form it was written in: values as strings or
numbers, booleans in any case, lists as JSON lists or comma strings, a row keyed by one port
or by a list of them, queue and PG indexes one by one or as ranges, references by name or as
"[TABLE|name]"; a field left out as SONiC's default (SONiC's YANG, generated in yang_defaults, and
what its daemons apply where the YANG states none). Also the one shape every part of a meaning is
held in: a Fact."""
from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from harness.core.errors import InputError
from harness.core.meaning import yang_defaults

ConfigDb = Mapping[str, Mapping[str, Mapping[str, object]]]

_INT = re.compile(r"^[+-]?\d+$")
_REF = re.compile(r"^\[([A-Z_]+)\|(.+)\]$")  # SONiC's older reference form: "[SCHEDULER|scheduler.0]"
_SHAPE_FIX = "SONiC's config_db.json is {TABLE: {KEY: {field: value}}}; render again or fix the file"

# What SONiC's daemons do with a field left out where its YANG states no default (read in
# sonic-net/sonic-swss @ e6b0c5b5d2 and sonic-buildimage):
APPLIED = {
    # cfgmgr/portmgr.h DEFAULT_MTU_STR "9100", set by portmgrd on a port's first PORT row;
    # orchagent/port.h DEFAULT_TPID 0x8100; Port::m_pfc_asym starts COMBINED, which
    # orchagent/port/porthlpr.cpp's portPfcAsymMap spells "off"
    "PORT": {"mtu": "9100", "tpid": "0x8100", "pfc_asym": "off"},
    # dockers/docker-orchagent/buffermgrd.sh (sonic-buildimage) starts buffermgrd dynamic only
    # when buffer_model is "dynamic"; the YANG leaf's description: traditional is the default model
    "DEVICE_METADATA": {"buffer_model": "traditional"},
    # cfgmgr/intfmgr.cpp IntfMgr::doIntfGeneralTask: an empty admin_status of a loopback or a
    # sub-interface is "up" (master's YANG states it for LOOPBACK_INTERFACE too)
    "LOOPBACK_INTERFACE": {"admin_status": "up"},
    "VLAN_SUB_INTERFACE": {"admin_status": "up"},
    # cfgmgr/vlanmgr.cpp doVlanMemberTask: tagging_mode "untagged" unless the row says (YANG: mandatory)
    "VLAN_MEMBER": {"tagging_mode": "untagged"},
}
# YANG defaults SONiC does not apply: BUFFER_PG's and BUFFER_QUEUE's `profile` default 0 names no
# profile; orchagent/bufferorch.cpp processPriorityGroup/processQueue fail a row without one
# (resolveFieldRefValue: field_not_found), so such a row sets no buffer.
NOT_APPLIED = {"BUFFER_PG": ("profile",), "BUFFER_QUEUE": ("profile",)}


@dataclass(frozen=True)
class Row:
    """Where a fact was read: a row of a table, or one field of it."""
    table: str
    key: str
    field: str = ""


@dataclass(frozen=True)
class Fact:
    """One behaviour of a config: what it does (`value`, named fields in reading order) for a
    subject (a port, a VLAN, the device) and a part of it (a queue, a PG, an ACL stage).
    `absent` is what a config without this fact does instead, in words."""
    behaviour: str
    subject: str
    part: str
    name: str  # which of several facts of one subject and part ("DSCP 26", "mtu")
    value: tuple[tuple[str, str], ...]
    rows: tuple[Row, ...] = ()
    absent: str = "nothing"
    note: str = ""  # said after the value, never compared: "(SONiC's default)"

    @property
    def key(self) -> tuple[str, str, str, str]:
        return self.behaviour, self.subject, self.part, self.name


def check_shape(where: str, db: object) -> None:
    """SONiC's config_db shape; anything else is no config SONiC would load (bad input)."""
    if not isinstance(db, dict):
        raise InputError(f"{where}: config_db is a {type(db).__name__}, not an object of tables; {_SHAPE_FIX}")
    for table, rows in db.items():
        if not isinstance(rows, dict):
            raise InputError(f"{where}: table {table} is a {type(rows).__name__}, not an object of rows; {_SHAPE_FIX}")
        for key, row in rows.items():
            if not isinstance(row, dict):
                raise InputError(f"{where}: {table}|{key} is a {type(row).__name__}, not an object of fields; "
                                 f"{_SHAPE_FIX}")
            for name, value in row.items():
                items = value if isinstance(value, list) else [value]
                if any(isinstance(v, (dict, list)) for v in items):
                    raise InputError(f"{where}: {table}|{key} field {name} is not a value or a list of values; "
                                     f"{_SHAPE_FIX}")


def norm(value: object) -> str:
    """One spelling per value: 9100 == "9100", True == "true" == "True"."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return ",".join(norm(v) for v in value)
    text = str(value).strip()
    if _INT.match(text):
        return str(int(text))
    if text.lower() in ("true", "false"):
        return text.lower()
    return text


def norm_list(value: object) -> tuple[str, ...]:
    """A list SONiC takes either as a JSON list or as a comma-separated string."""
    items = value if isinstance(value, list) else str(value if value is not None else "").split(",")
    return tuple(norm(v) for v in items if str(v).strip())


def number(value: object) -> int | None:
    text = norm(value) if value is not None else ""
    return int(text) if _INT.match(text) else None


def indexes(span: str) -> tuple[int, ...]:
    """A queue or PG index as SONiC keys it: "3", "3-4", "0,3-4"."""
    out: list[int] = []
    for part in span.split(","):
        low, _, high = part.strip().partition("-")
        if not (low.isdigit() and (high or low).isdigit()):
            return ()
        out += range(int(low), int(high or low) + 1)
    return tuple(out)


def rows_of(db: ConfigDb, table: str) -> Mapping[str, Mapping[str, object]]:
    rows = db.get(table, {})
    return rows if isinstance(rows, Mapping) else {}


def port_rows(db: ConfigDb, table: str) -> dict[str, tuple[str, Mapping[str, object]]]:
    """port -> (key, row) of a table keyed by ports ("Ethernet0" or "Ethernet0,Ethernet4"); a
    row of the port alone wins over one of a list."""
    out: dict[str, tuple[str, Mapping[str, object]]] = {}
    for key, row in sorted(rows_of(db, table).items(), key=lambda kv: "," not in kv[0]):
        for port in str(key).split(","):
            out[port.strip()] = (key, row)
    return out


def indexed_rows(db: ConfigDb, table: str) -> dict[tuple[str, int], tuple[str, Mapping[str, object]]]:
    """(port, index) -> (key, row) of a table keyed "ports|indexes" (QUEUE, BUFFER_PG, BUFFER_QUEUE)."""
    out: dict[tuple[str, int], tuple[str, Mapping[str, object]]] = {}
    exact = lambda kv: "," not in kv[0] and "-" not in kv[0].partition("|")[2]  # noqa: E731
    for key, row in sorted(rows_of(db, table).items(), key=exact):
        ports, _, span = str(key).partition("|")
        for port in ports.split(","):
            for i in indexes(span):
                out[(port.strip(), i)] = (key, row)
    return out


def reference(value: object) -> str:
    """The name a field refers to, in either of SONiC's forms."""
    text = norm(value) if value is not None else ""
    m = _REF.match(text)
    return m.group(2) if m else text


def resolve(db: ConfigDb, table: str, value: object) -> Mapping[str, object] | None:
    """The row a reference names, None when it names nothing."""
    if value is None:
        return None
    row = rows_of(db, table).get(reference(value))
    return row if isinstance(row, Mapping) else None


def sonic_defaults(table: str) -> dict[str, str]:
    """What SONiC reads a field of `table` left out as, normalised as a row's values are: the YANG
    default of the release fablab targets (yang_defaults.DEFAULTS); where only master's YANG gives
    a field a default, master's (a config for a newer switch may write it); APPLIED over both."""
    release = yang_defaults.DEFAULTS.get(table, {})
    newer = {f: v for f, v in yang_defaults.MASTER_DIFFERS.get(table, {}).items() if v is not None and f not in release}
    out = {f: norm(v) for f, v in {**newer, **release}.items() if f not in NOT_APPLIED.get(table, ())}
    return dict(sorted({**out, **APPLIED.get(table, {})}.items()))


def metadata_only(table: str) -> tuple[str, ...]:
    """Fields of `table`'s address rows that change nothing (yang_defaults.METADATA_ONLY)."""
    return tuple(yang_defaults.METADATA_ONLY.get(table, {}))


def fields(row: Mapping[str, object] | None, defaults: Mapping[str, str] = {},  # noqa: B006 - read only
           ignore: tuple[str, ...] = ()) -> dict[str, str]:
    """A row's fields normalised, with SONiC's defaults where a field is absent."""
    out = dict(defaults)
    for name, value in (row or {}).items():
        if name not in ignore:
            out[name] = norm(value)
    return out


def runs(numbers: list[int]) -> str:
    """3,4,5,9 -> "3-5,9"."""
    out: list[str] = []
    for n in sorted(set(numbers)):
        if out and "-" in out[-1] and int(out[-1].split("-")[1]) == n - 1:
            out[-1] = f"{out[-1].split('-')[0]}-{n}"
        elif out and "-" not in out[-1] and int(out[-1]) == n - 1:
            out[-1] = f"{out[-1]}-{n}"
        else:
            out.append(str(n))
    return ",".join(out)


def described(pairs: tuple[tuple[str, str], ...], only: set[str] | None = None) -> str:
    """Named fields in words: "type DWRR, weight 15"; a lone unnamed value as itself."""
    chosen = [(k, v) for k, v in pairs if only is None or k in only]
    return ", ".join(f"{k} {v}" if k else v for k, v in chosen)


def walk_fields(db: ConfigDb) -> Iterator[tuple[str, str, str, object]]:
    for table, rows in db.items():
        for key, row in rows_of(db, table).items():
            for name, value in row.items():
                yield table, key, name, value
