"""Every CONFIG_DB default `fablab diff` reads an absent field as comes from SONiC's YANG models,
generated (issue 67 item 2): harness/core/meaning/yang_defaults.py is what
scripts/gen_yang_defaults.py writes from the models of 202411 and master; a field written out at
its default means what leaving it out means, and any other value is one difference naming it;
an address row's family and scope change nothing; no default dict is typed by hand."""
from __future__ import annotations

import ast
import copy
import importlib.util
import json
import re
import sys
from pathlib import Path

import pytest

from harness.core.errors import TopologyError
from harness.core.meaning import configdb, configdb_norm, configdb_qos, configdb_yang, yang_defaults
from harness.core.meaning.configdb import diff_config_db
from harness.core.meaning.configdb_norm import APPLIED, norm, sonic_defaults

ROOT = Path(__file__).resolve().parents[2]
MEANING = ROOT / "harness" / "core" / "meaning"


def generator():
    """scripts/gen_yang_defaults.py as a module (registered first: its dataclasses look themselves up)."""
    if "gen_yang_defaults" not in sys.modules:
        spec = importlib.util.spec_from_file_location("gen_yang_defaults", ROOT / "scripts" / "gen_yang_defaults.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules["gen_yang_defaults"] = module
        spec.loader.exec_module(module)
    return sys.modules["gen_yang_defaults"]


# --------------------------------------------------------------------------- (a) generated


def test_the_module_is_what_the_generator_writes_from_both_releases(reference):
    dirs = [reference / "sonic-yang" / release for release in ("202411", "master")]
    for d in dirs:
        if not d.is_dir():
            pytest.skip(f"SONiC YANG models not found at {d} (set FABLAB_REFERENCE to the reference folder)")
    gen = generator()
    assert gen.TARGET.read_text() == gen.module_text(*dirs), (
        "harness/core/meaning/yang_defaults.py is stale: run .venv/bin/python scripts/gen_yang_defaults.py")


def test_the_generator_follows_typedefs_groupings_and_refines_and_tells_master_apart(tmp_path):
    """What the models of 202411 do not exercise (a typedef's default; 202411 has none) on models
    made for the purpose, with the controls: a leaf without a default, a map's entries."""
    types = """module t-types { namespace "t:types"; prefix tt;
        typedef on_off { type string; default "off"; }
        typedef twice { type tt:on_off; }
        typedef plain { type string; }
        grouping common { leaf shared { type string; default "yes"; } leaf refined { type string; } } }"""
    body = """module t-main {{ namespace "t:main"; prefix tm; import t-types {{ prefix tt; }}
        container t-main {{ container TABLE {{ list TABLE_LIST {{ key "name"; leaf name {{ type string; }}
            leaf own {{ type uint8; default {own}; }}
            leaf typed {{ type tt:twice; }}
            leaf none {{ type tt:plain; }}
            leaf banner {{ type string; default
                "one{pad}
                 two
                   three"; }}
            uses tt:common {{ refine refined {{ default "set"; }} }}
            list ENTRIES {{ key "k"; leaf k {{ type string; }} leaf v {{ type string; default "map"; }} }} }} }}
          container ADDR {{ list ADDR_LIST {{ key "name"; leaf name {{ type string; }} }}
            list ADDR_IPPREFIX_LIST {{ key "name ip-prefix"; leaf name {{ type string; }}
              leaf ip-prefix {{ type string; }} leaf family {{ type string; }} leaf scope {{ type string; }} }} }}
        }} }}"""
    release, master = tmp_path / "202411", tmp_path / "master"
    for d, own in ((release, "3"), (master, "4")):
        d.mkdir()
        (d / "t-types.yang").write_text(types)
        (d / "t-main.yang").write_text(body.format(own=own, pad="   "))  # spaces before a line break go
    gen = generator()
    found = gen.defaults(gen.Models(release))
    assert found == {"TABLE": {"banner": "one\ntwo\n  three", "own": "3", "refined": "set", "shared": "yes",
                               "typed": "off"}}
    assert gen.differences(found, gen.defaults(gen.Models(master))) == {"TABLE": {"own": "4"}}
    assert set(gen.metadata_only(gen.Models(release))) == {"ADDR"}
    text = gen.module_text(release, master)
    namespace: dict = {}
    exec(compile(text, "yang_defaults.py", "exec"), namespace)
    assert namespace["DEFAULTS"] == found and namespace["MASTER_DIFFERS"] == {"TABLE": {"own": "4"}}
    header = text.split('"""')[1]
    assert "GENERATED" in header and "gen_yang_defaults.py" in header and "202411 and master" in header


def test_the_generated_module_is_sorted_and_fits_the_module_limit():
    text = (MEANING / "yang_defaults.py").read_text()
    assert len(text.splitlines()) <= 450
    y = yang_defaults
    for table in (y.DEFAULTS, y.MASTER_DIFFERS, y.WHEN, y.METADATA_ONLY):
        assert list(table) == sorted(table)
        assert all(list(fields) == sorted(fields) for fields in table.values())


# --------------------------------------------------------------------------- (b) a default written out


BASE = {
    "DEVICE_METADATA": {"localhost": {"hostname": "sw1", "hwsku": "Force10-S6000", "type": "LeafRouter"}},
    "PORT": {"Ethernet0": {"lanes": "0,1,2,3", "speed": "400000", "admin_status": "up"},
             "Ethernet4": {"lanes": "4,5,6,7", "speed": "400000", "admin_status": "up"}},
    "INTERFACE": {"Ethernet0": {}, "Ethernet0|10.0.0.1/31": {}},
    "LOOPBACK_INTERFACE": {"Loopback0": {}, "Loopback0|10.1.0.1/32": {}},
    "PORTCHANNEL_INTERFACE": {"PortChannel1": {}, "PortChannel1|10.2.0.1/31": {}},
    "VLAN_SUB_INTERFACE": {"Ethernet4.10": {"vlan": "10"}, "Ethernet4.10|10.3.0.1/31": {}},
    "VLAN": {"Vlan100": {"vlanid": "100"}},
    "VLAN_MEMBER": {"Vlan100|Ethernet4": {"tagging_mode": "tagged"}},
    "VLAN_INTERFACE": {"Vlan100": {}, "Vlan100|10.4.0.1/24": {}},
    "SCHEDULER": {"scheduler.0": {"type": "DWRR", "weight": "15"}},
    "WRED_PROFILE": {"AZURE_LOSSLESS": {"ecn": "ecn_all", "wred_green_enable": "true", "green_min_threshold": "1048576",
                                        "green_max_threshold": "2097152"}},
    "QUEUE": {"Ethernet0|3": {"scheduler": "scheduler.0", "wred_profile": "AZURE_LOSSLESS"}},
    "BUFFER_POOL": {"ingress_lossless_pool": {"mode": "dynamic", "size": "12766208", "type": "ingress"}},
    "BUFFER_PROFILE": {"pg_lossless": {"pool": "ingress_lossless_pool", "size": "1248", "dynamic_th": "-3"}},
    "BUFFER_PG": {"Ethernet0|3": {"profile": "pg_lossless"}},
    "ACL_TABLE": {"DATAACL": {"type": "L3", "ports": ["Ethernet0"]}},
    "ACL_RULE": {"DATAACL|RULE_1": {"PRIORITY": "10", "PACKET_ACTION": "DROP", "SRC_IP": "10.9.0.0/16"}},
}
# where each table's row with settings is, in BASE
ROW = {"DEVICE_METADATA": "localhost", "PORT": "Ethernet0", "INTERFACE": "Ethernet0", "LOOPBACK_INTERFACE": "Loopback0",
       "PORTCHANNEL_INTERFACE": "PortChannel1", "VLAN_SUB_INTERFACE": "Ethernet4.10", "VLAN": "Vlan100",
       "VLAN_MEMBER": "Vlan100|Ethernet4", "VLAN_INTERFACE": "Vlan100", "SCHEDULER": "scheduler.0",
       "WRED_PROFILE": "AZURE_LOSSLESS", "BUFFER_POOL": "ingress_lossless_pool", "BUFFER_PROFILE": "pg_lossless"}


def _diff(expected: dict, change: dict[tuple[str, str], dict[str, object]]):
    found = copy.deepcopy(expected)
    for (table, key), fields in change.items():
        found.setdefault(table, {}).setdefault(key, {}).update(fields)
    return diff_config_db("sw1", copy.deepcopy(expected), json.dumps(found, indent=4))


# (table, field, its default written out, another value), against BASE without the field
CASES = [
    ("PORT", "pfc_asym", "off", "on"),  # no YANG default: orchagent's (configdb_norm.APPLIED)
    ("PORT", "tpid", "0x8100", "0x9100"),  # no YANG default: orchagent's
    ("PORT", "mtu", "9100", "9000"),  # no YANG default: portmgrd's
    ("PORT", "mtu", 9100, 1500),  # a number, as some automation writes it
    ("PORT", "dhcp_rate_limit", "300", "100"),
    ("PORT", "admin_status", "down", "up"),
    ("INTERFACE", "nat_zone", "0", "1"),
    ("INTERFACE", "ipv6_use_link_local_only", "disable", "enable"),
    ("LOOPBACK_INTERFACE", "admin_status", "up", "down"),
    ("DEVICE_METADATA", "default_bgp_status", "up", "down"),
    ("DEVICE_METADATA", "buffer_model", "traditional", "dynamic"),
    ("SCHEDULER", "meter_type", "bytes", "packets"),
    ("SCHEDULER", "type", "WRR", "DWRR"),
    ("WRED_PROFILE", "red_drop_probability", "100", "5"),
    ("WRED_PROFILE", "wred_yellow_enable", "false", "true"),
    ("WRED_PROFILE", "wred_yellow_enable", "False", "True"),
    ("WRED_PROFILE", "ecn", "ecn_none", "ecn_all"),
    ("BUFFER_PROFILE", "xoff", "0", "4096"),
    ("BUFFER_PROFILE", "headroom_type", "static", "dynamic"),
    ("BUFFER_POOL", "xoff", "0", "1024"),
    ("VLAN_MEMBER", "tagging_mode", "untagged", "priority_tagged"),  # YANG: mandatory; vlanmgrd's default
]


def _assert_default_and_control(table: str, field: str, default: object, other: object) -> None:
    key = ROW[table]
    expected = copy.deepcopy(BASE)
    expected[table][key].pop(field, None)
    assert _diff(expected, {(table, key): {field: default}}) == [], f"{table} {field} {default!r} written out differs"
    control = _diff(expected, {(table, key): {field: other}})
    assert len(control) == 1, [str(d) for d in control]
    named = str(other) if table == "VLAN_MEMBER" else field  # a port's VLANs are told as "100 tagged"
    assert named.lower() in str(control[0]).lower(), str(control[0])


@pytest.mark.parametrize("table,field,default,other", CASES, ids=[f"{t}.{f}={d!r}" for t, f, d, _ in CASES])
def test_a_field_at_its_default_is_the_field_left_out(table, field, default, other):
    _assert_default_and_control(table, field, default, other)


def _every_default() -> list[tuple[str, str, str]]:
    skipped = set(getattr(configdb, "DEVICE_LABELS", ()))  # where FRR's config is held: not compared here
    return [(t, f, v) for t in sorted(ROW) for f, v in sonic_defaults(t).items()
            if not (t == "DEVICE_METADATA" and f in skipped)]


@pytest.mark.parametrize("table,field,default", _every_default(),
                         ids=[f"{t}.{f}" for t, f, _ in _every_default()])
def test_every_default_of_every_table_compared_is_read_so(table, field, default):
    """Every default the generated table (and APPLIED) gives a compared table, written out, means
    what leaving it out means; any other value is one difference naming the field."""
    _assert_default_and_control(table, field, default, _another(table, field, default))


def _another(table: str, field: str, default: str) -> object:
    """A value other than the default that SONiC's YANG lets the field hold (a value it would
    refuse is bad input, refused before anything is compared: configdb_yang.py)."""
    spec = configdb_yang.FIELDS.get(table, {}).get(field)
    tries = [f"{default}-other" if default else "other"]
    if spec is not None:
        flat = [spec[1]] if spec[0] == "list" else list(spec[1]) if spec[0] == "union" else [spec]
        for s in flat:
            if s[0] == "enum":
                tries += [v for v in s[1] if v.lower() != str(default).lower()]
            elif s[0] == "int":
                tries += [str(n) for lo, hi in s[1] for n in (lo, lo + 1, hi) if str(n) != str(default)]
            elif s[0] == "bool":
                tries.append("false" if str(default).lower() == "true" else "true")
            elif s[0] == "str":  # a pattern that is a list of words: `on|off`
                tries += [w for p in s[1] if re.fullmatch(r"[\w.]+(\|[\w.]+)+", p) for w in p.split("|")
                          if w.lower() != str(default).lower()]
    good = [v for v in tries if spec is None or configdb_yang.holds(spec, v)]
    assert good, f"{table}.{field}: no other value SONiC's YANG takes among {tries}"
    return good[0]


def test_a_value_sonics_yang_refuses_is_bad_input_before_any_comparison():
    with pytest.raises(TopologyError, match=r"PORT\|Ethernet0: admin_status 'sideways' is not one of up, down"):
        _diff(BASE, {("PORT", "Ethernet0"): {"admin_status": "sideways"}})
    with pytest.raises(TopologyError, match=r"INTERFACE\|Ethernet0\|10.0.0.0/33: its ip-prefix"):
        _diff(BASE, {("INTERFACE", "Ethernet0|10.0.0.0/33"): {}})
    with pytest.raises(TopologyError, match=r"admin_status \['up'\] is not one of up, down"):
        _diff(BASE, {("PORT", "Ethernet0"): {"admin_status": ["up"]}})
    assert _diff(BASE, {("PORT", "Ethernet0"): {"admin_status": "up"}}) == []  # the control


def test_an_address_rows_family_and_scope_change_nothing():
    metadata = {"family": "IPv4", "scope": "global"}
    assert _diff(BASE, {("INTERFACE", "Ethernet0|10.0.0.1/31"): metadata,
                  ("LOOPBACK_INTERFACE", "Loopback0|10.1.0.1/32"): metadata}) == []
    assert _diff(BASE, {("INTERFACE", "Ethernet0|10.0.0.1/31"): {"family": "IPv6", "scope": "local"}}) == []
    # the control: a field of an address row that is not metadata is a difference naming it
    control = _diff(BASE, {("INTERFACE", "Ethernet0|10.0.0.1/31"): {**metadata, "secondary": "true"}})
    assert len(control) == 1 and "secondary" in str(control[0]) and "family" not in str(control[0])
    # PORTCHANNEL_INTERFACE's address rows have no family in SONiC's YANG (it would refuse the file)
    assert len(_diff(BASE, {("PORTCHANNEL_INTERFACE", "PortChannel1|10.2.0.1/31"): metadata})) == 1


def test_metadata_only_names_its_source():
    assert {"family", "scope"} <= set(yang_defaults.METADATA_ONLY["INTERFACE"])
    for fields in yang_defaults.METADATA_ONLY.values():
        assert all("sonic-swss cfgmgr/intfmgr.cpp" in why for why in fields.values())


def test_an_acl_tables_stage_left_out_is_the_yang_default():
    assert yang_defaults.DEFAULTS["ACL_TABLE"]["stage"] == "INGRESS"
    assert _diff(BASE, {("ACL_TABLE", "DATAACL"): {"stage": "INGRESS"}}) == []
    assert _diff(BASE, {("ACL_TABLE", "DATAACL"): {"stage": "ingress"}}) == []
    control = _diff(BASE, {("ACL_TABLE", "DATAACL"): {"stage": "EGRESS"}})
    assert control and all("ACL" in d.behaviour for d in control)
    assert any("egress" in d.subject for d in control) and any("ingress" in d.subject for d in control)


# --------------------------------------------------------------------------- (c) none typed by hand


@pytest.mark.parametrize("name,table", [
    ("PORT_DEFAULTS", "PORT"), ("DEVICE_DEFAULTS", "DEVICE_METADATA"), ("SCHEDULER_DEFAULTS", "SCHEDULER"),
    ("WRED_DEFAULTS", "WRED_PROFILE"), ("PROFILE_DEFAULTS", "BUFFER_PROFILE"), ("POOL_DEFAULTS", "BUFFER_POOL")])
def test_the_defaults_are_the_generated_ones(name, table):
    module = configdb if hasattr(configdb, name) else configdb_qos
    defaults = getattr(module, name)
    yang = yang_defaults.DEFAULTS.get(table, {})
    for field, value in yang.items():
        assert defaults[field] == norm(value), (table, field)
    newer = {f for f, v in yang_defaults.MASTER_DIFFERS.get(table, {}).items() if v is not None and f not in yang}
    assert set(defaults) - set(yang) - newer <= set(APPLIED.get(table, {})), "a default neither YANG nor APPLIED"


def test_the_routed_tables_defaults_are_the_generated_ones():
    for table, defaults in configdb.ROUTED.items():
        assert defaults == sonic_defaults(table)
        assert {f: defaults[f] for f in yang_defaults.DEFAULTS.get(table, {})} == \
            {f: norm(v) for f, v in yang_defaults.DEFAULTS.get(table, {}).items()}


def test_the_port_fields_the_brief_names():
    assert configdb.PORT_DEFAULTS["pfc_asym"] == "off" and configdb.PORT_DEFAULTS["tpid"] == "0x8100"
    assert configdb.PORT_DEFAULTS["mtu"] == "9100"
    # neither release's YANG states them: they are APPLIED, each with its daemon named there
    assert not {"pfc_asym", "tpid", "mtu"} & set(yang_defaults.DEFAULTS["PORT"])


def test_applied_only_where_the_yang_states_no_default():
    for table, fields in APPLIED.items():
        assert not set(fields) & set(yang_defaults.DEFAULTS.get(table, {})), table


def test_no_default_dict_is_typed_by_hand():
    """No config_db module of harness/core/meaning binds a *_DEFAULTS name, or ROUTED, to a
    dict literal: they are looked up in the generated table."""
    typed = []
    for path in sorted(MEANING.glob("configdb*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Dict):
                for target in node.targets:
                    if isinstance(target, ast.Name) and (target.id.endswith("DEFAULTS") or target.id == "ROUTED"):
                        typed.append(f"{path.name}: {target.id}")
    assert typed == []
    assert configdb_norm.sonic_defaults("NO_SUCH_TABLE") == {}
