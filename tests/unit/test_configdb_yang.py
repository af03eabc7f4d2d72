"""A config_db.json value SONiC's YANG refuses is bad input where fablab reads it
(harness/core/meaning/configdb_yang.py, from yang_types.json that scripts/gen_yang_types.py writes
from the models). Each value below is held against libyang's yanglint on SONiC's own models: what
fablab refuses, yanglint refuses; what it takes (the positive controls), yanglint takes."""
from __future__ import annotations

import copy
import importlib.util
import json
import sys
from pathlib import Path

import pytest

from harness.core.errors import TopologyError
from harness.core.meaning import configdb_yang
from harness.core.meaning.configdb import parse
from harness.core.model import build
from harness.core.plan import make_plan
from harness.render import artifacts
from conftest import require_tool
from sonic_yang import Schema, validate
from topologies import BUILTINS

ROOT = Path(__file__).resolve().parents[2]
SWITCH = "be-g1-r0"

# (table, key, field or None for the key alone, value, SONiC's YANG takes it)
CASES = [
    ("PORT", "Ethernet0", "admin_status", "down", True), ("PORT", "Ethernet0", "admin_status", "sideways", False),
    ("PORT", "Ethernet0", "admin_status", "", False), ("PORT", "Ethernet0", "admin_status", ["up"], False),
    ("PORT", "Ethernet0", "mtu", "9100", True), ("PORT", "Ethernet0", "mtu", "70000", False),
    ("PORT", "Ethernet0", "mtu", "abc", False), ("PORT", "Ethernet0", "speed", "400G", False),
    ("PORT", "Ethernet0", "fec", "rs", True), ("PORT", "Ethernet0", "fec", "reed-solomon", False),
    ("PORT", "Ethernet0", "autoneg", "on", True), ("PORT", "Ethernet0", "autoneg", "yes", False),
    ("DEVICE_METADATA", "localhost", "bgp_asn", "65001", True),
    ("DEVICE_METADATA", "localhost", "bgp_asn", "abc", False),
    ("DEVICE_METADATA", "localhost", "bgp_asn", "99999999999", False),
    ("INTERFACE", "Ethernet8|10.0.0.9/31", None, None, True), ("INTERFACE", "Ethernet8|10.0.0.0/33", None, None, False),
    ("INTERFACE", "Ethernet8|10.0.0.300/31", None, None, False),
]


def _config() -> dict:
    plan = make_plan(build(BUILTINS["ai-cluster"]()))
    return json.loads(artifacts(plan)[f"configs/{SWITCH}/config_db.json"])


def _changed(base: dict, table: str, key: str, field: str | None, value: object) -> dict:
    db = copy.deepcopy(base)
    row = db.setdefault(table, {}).setdefault(key, {})
    if field is not None:
        row[field] = value
    if table == "INTERFACE":
        db[table].setdefault(key.split("|")[0], {})  # an address row's port row, as SONiC wants it
    return db


def _fablab_takes(db: dict) -> bool:
    text = json.dumps(db, indent=4)
    try:
        parse(text, "config_db.json")
    except TopologyError as e:
        assert "config_db.json:" in str(e) and "SONiC's YANG" in str(e)  # file:line, and whose rule
        return False
    return True


@pytest.mark.parametrize("case", CASES, ids=[f"{t}.{f or 'key'}={v!r}" if f else f"{t}|{k}" for t, k, f, v, _ in CASES])
def test_fablab_takes_what_sonics_yang_takes(case):
    table, key, field, value, takes = case
    assert _fablab_takes(_changed(_config(), table, key, field, value)) is takes


def test_a_key_no_list_of_its_table_takes_is_refused():
    db = _changed(_config(), "BGP_PEER_GROUP_AF", "default|fabric|ipv4_unicast|extra", None, None)
    with pytest.raises(TopologyError, match=r"a key of 4 parts; SONiC's YANG keys BGP_PEER_GROUP_AF rows as "
                                            r"vrf_name\|peer_group_name\|afi_safi"):
        parse(json.dumps(db), "config_db.json")
    assert _fablab_takes(_changed(_config(), "DEVICE_METADATA", "localhost", "hostname", "be-g1-r0"))  # a container


def test_yanglint_on_sonics_models_agrees(reference, tmp_path):
    yanglint = require_tool("yanglint", "libyang2-tools")
    models = reference / "sonic-yang" / "202411"
    if not models.is_dir():
        pytest.skip(f"SONiC YANG models not found at {models}")
    base = _config()
    asked = [c for c in CASES if not isinstance(c[3], list)]  # a list for a leaf is no instance data at all
    configs = {f"{i}": _changed(base, *c[:4]) for i, c in enumerate(asked)}
    verdicts = validate(yanglint, Schema(models), configs, tmp_path)
    said = {asked[int(name)][:4]: not errors for name, errors in verdicts.items()}
    assert said == {c[:4]: c[4] for c in asked}, {c[:4]: said[c[:4]] for c in asked if said[c[:4]] != c[4]}


def test_the_types_are_what_the_generator_writes(reference):
    dirs = [reference / "sonic-yang" / r for r in ("202411", "master")]
    if not all(d.is_dir() for d in dirs):
        pytest.skip("SONiC YANG models not found (set FABLAB_REFERENCE to the reference folder)")
    spec = importlib.util.spec_from_file_location("gen_yang_types", ROOT / "scripts" / "gen_yang_types.py")
    gen = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("gen_yang_types", gen)
    spec.loader.exec_module(gen)
    assert gen.TARGET.read_text() == gen.module_text(*dirs), \
        "harness/core/meaning/yang_types.json is stale: run .venv/bin/python scripts/gen_yang_types.py"
    assert configdb_yang.FIELDS["PORT"]["admin_status"] == ("enum", ("up", "down"))
