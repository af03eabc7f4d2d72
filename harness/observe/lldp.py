"""LLDP neighbours as values, from what a Linux host running lldpd and a SONiC switch answer.

- `lldpctl -f json` and `lldpctl -f json0` (lldpd): the shapes were read in
  github.com/lldpd/lldpd src/client/json_writer.c, and the expected outputs in its
  tests/integration/test_lldpcli.py. lldpd builds every level as a list of objects; "json0"
  prints that as it is. "json" cleans it: a list of one member becomes that member, an object
  whose only key is "value" becomes that value, and an object with a "name" string becomes
  {name: the rest}. So its shape follows the count: one interface gives
  {"interface": {"eth0": {...}}}, several a list of one-key objects, none {"lldp": {}}; a
  chassis that sends its system name is {"sw1": {"id": ...}}, one that does not {"id": ...}.
  Samples with several interfaces are sonic-net/sonic-dbsyncd's tests/subproc_outputs/.
- `show lldp table` (SONiC): sonic-net/sonic-utilities scripts/lldpshow, tested in
  tests/lldp_test.py; a tabulate table closed by a rule and "Total entries displayed:  N".

tests/fixtures/sonic_show/README.md names each sample and its commit. Pure functions: the caller
runs the command (and json.loads the JSON), these read what it printed.
"""
from __future__ import annotations

import re

from harness.core.errors import LabError
from harness.core.observed import LldpNeighbour
from harness.observe.sonic_show import column, show_tables

_JSON = "lldpctl JSON"
_AGE = re.compile(r"(\d+) days?, (\d+):(\d+):(\d+)")


def neighbours_from_lldpctl_json(doc: object) -> tuple[LldpNeighbour, ...]:
    """Every neighbour in `lldpctl -f json` or `lldpctl -f json0` output (as json.loads gives
    it), sorted by (local_port, chassis, port_id). A port that hears two neighbours is listed
    twice, once for each. Where a chassis sends no system name, `chassis` is its chassis ID.
    A document of neither shape raises LabError naming the part that is wrong."""
    if not isinstance(doc, dict) or "lldp" not in doc:
        kind = type(doc).__name__
        raise LabError(f"{_JSON}: want an object with an 'lldp' key (json.loads of `lldpctl -f json`), "
                       f"got {kind}" + (f" with keys {sorted(doc)}" if isinstance(doc, dict) else ""))
    lldp = doc["lldp"]
    if isinstance(lldp, list):  # json0: every level a list, names kept as "name" keys
        entries = [entry for block in lldp
                   for entry in _list(_object(block, "'lldp' member").get("interface", []), "'interface'")]
        found = [_json0_neighbour(entry, i) for i, entry in enumerate(entries)]
    elif isinstance(lldp, dict):
        found = [_json_neighbour(name, body) for name, body in _named_entries(lldp.get("interface", []))]
    else:
        raise LabError(f"{_JSON}: 'lldp' is a {type(lldp).__name__}, neither an object (json) nor a list (json0)")
    return tuple(sorted(found, key=lambda n: (n.local_port, n.chassis, n.port_id)))


def _named_entries(interfaces: object) -> list[tuple[str, object]]:
    # One interface is {"eth0": {...}}; several are [{"eth0": {...}}, {"eth1": {...}}].
    members = interfaces if isinstance(interfaces, list) else [interfaces]
    entries = []
    for member in members:
        entries += list(_object(member, "an 'interface' entry").items())
    return entries


def _json_neighbour(local: str, body: object) -> LldpNeighbour:
    where = f"interface {local}"
    body = _object(body, where)
    chassis = _object(_key(body, "chassis", where), f"{where}: 'chassis'")
    if _is_id(chassis.get("id")):  # a chassis without a system name is not keyed by one
        name, fields = "", chassis
    elif len(chassis) == 1:
        name, fields = next(iter(chassis.items()))
        fields = _object(fields, f"{where}: chassis {name!r}")
    else:
        raise LabError(f"{_JSON}: {where}: 'chassis' has neither an 'id' nor a single system name "
                       f"(keys {sorted(chassis)})")
    chassis_id = _value(_key(fields, "id", f"{where}: chassis"), f"{where}: chassis 'id'")
    port = _object(_key(body, "port", where), f"{where}: 'port'")
    descr = port.get("descr", "")
    if not isinstance(descr, str):
        raise LabError(f"{_JSON}: {where}: port 'descr' is a {type(descr).__name__}, not a string")
    return LldpNeighbour(local_port=local, chassis=name or chassis_id,
                         port_id=_value(_key(port, "id", f"{where}: port"), f"{where}: port 'id'"),
                         port_descr=descr, chassis_id=chassis_id, age_s=_age(body.get("age")))


def _json0_neighbour(entry: object, index: int) -> LldpNeighbour:
    entry = _object(entry, f"interface entry {index}")
    local = entry.get("name")
    if not isinstance(local, str):
        raise LabError(f"{_JSON}: interface entry {index} has no 'name' string (json0 shape)")
    where = f"interface {local}"
    chassis = _only(_key(entry, "chassis", where), f"{where}: 'chassis'")
    chassis_id = _value(_only(_key(chassis, "id", f"{where}: chassis"), f"{where}: chassis 'id'"),
                        f"{where}: chassis 'id'")
    name = _value(_only(chassis["name"], f"{where}: chassis 'name'"), f"{where}: chassis 'name'") \
        if "name" in chassis else ""
    port = _only(_key(entry, "port", where), f"{where}: 'port'")
    port_id = _value(_only(_key(port, "id", f"{where}: port"), f"{where}: port 'id'"), f"{where}: port 'id'")
    descr = _value(_only(port["descr"], f"{where}: port 'descr'"), f"{where}: port 'descr'") \
        if "descr" in port else ""
    return LldpNeighbour(local_port=local, chassis=name or chassis_id, port_id=port_id,
                         port_descr=descr, chassis_id=chassis_id, age_s=_age(entry.get("age")))


def _age(text: object) -> int:
    """lldpd's "age" ("0 day, 00:00:07", as json_writer prints a neighbour's): seconds, -1 if absent."""
    match = _AGE.fullmatch(text.strip()) if isinstance(text, str) else None
    if match is None:
        return -1
    days, hours, minutes, seconds = (int(g) for g in match.groups())
    return ((days * 24 + hours) * 60 + minutes) * 60 + seconds


def _is_id(node: object) -> bool:
    # An ID carries its subtype ("mac", "ifname", "local") beside its value; a system name's
    # object holds an "id" but no "type".
    return isinstance(node, dict) and "type" in node and "value" in node


def _value(node: object, where: str) -> str:
    value = _object(node, where).get("value")
    if not isinstance(value, str):
        raise LabError(f"{_JSON}: {where} has no 'value' string (keys {sorted(node)})")
    return value


def _key(node: dict, key: str, where: str) -> object:
    if key not in node:
        raise LabError(f"{_JSON}: {where} has no {key!r} (keys {sorted(node)})")
    return node[key]


def _object(node: object, where: str) -> dict:
    if not isinstance(node, dict):
        raise LabError(f"{_JSON}: {where} is a {type(node).__name__}, not an object")
    return node


def _list(node: object, where: str) -> list:
    if not isinstance(node, list):
        raise LabError(f"{_JSON}: {where} is a {type(node).__name__}, not a list (json0 shape)")
    return node


def _only(node: object, where: str) -> dict:
    # json0 wraps each single thing in a list of one.
    items = _list(node, where)
    if len(items) != 1:
        raise LabError(f"{_JSON}: {where} holds {len(items)} members, want 1")
    return _object(items[0], where)


# --------------------------------------------------------------------------- show lldp table

_TABLE = "show lldp table"
_TOTAL = re.compile(r"^Total entries displayed:\s+(\d+)\s*$", re.MULTILINE)


def neighbours_from_show_lldp_table(text: str) -> tuple[LldpNeighbour, ...]:
    """Every neighbour in SONiC's `show lldp table`, sorted by (local_port, chassis, port_id).

    The table shows no chassis ID: `chassis` is the RemoteDevice (the system name; "" where
    the neighbour sends none) and `chassis_id` is "". A RemotePortID may hold a space
    ("GigabitEthernet 0/2") and a RemotePortDescr may be empty. lldpshow prints "Error: ..."
    when lldpctl failed; that, a missing table, or a count that disagrees with the closing
    "Total entries displayed" line (output cut short) raises LabError."""
    if text.lstrip().startswith("Error:"):
        raise LabError(f"{_TABLE}: the switch answered {text.strip()[:200]!r}")
    tables = show_tables(text, _TABLE)
    if len(tables) != 1:
        raise LabError(f"{_TABLE}: want one table, found {len(tables)} (the output begins {text.strip()[:80]!r})")
    table = tables[0]
    at = {name: column(table, name, _TABLE)
          for name in ("LocalPort", "RemoteDevice", "RemotePortID", "RemotePortDescr")}
    total = _TOTAL.search(text)
    if total is None:
        raise LabError(f"{_TABLE}: no 'Total entries displayed' line: was the output cut short?")
    if int(total[1]) != len(table.rows):
        raise LabError(f"{_TABLE}: {len(table.rows)} rows but 'Total entries displayed:  {total[1]}'")
    found = [LldpNeighbour(local_port=row[at["LocalPort"]], chassis=row[at["RemoteDevice"]],
                           port_id=row[at["RemotePortID"]], port_descr=row[at["RemotePortDescr"]])
             for row in table.rows]
    return tuple(sorted(found, key=lambda n: (n.local_port, n.chassis, n.port_id)))
