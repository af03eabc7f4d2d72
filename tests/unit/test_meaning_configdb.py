"""config_db.json judged by meaning (issue 31): fablab's own render rewritten the ways SONiC's
templates, NVUE or an engineer's automation write the same thing has no difference; each
change in what a switch does is named by switch, port or object and behaviour, once."""
from __future__ import annotations

import copy
import json
import time
from collections.abc import Callable

import pytest

from harness.core.errors import InputError
from harness.core.meaning.configdb import diff_config_db, meaning
from harness.core.meaning.configdb_acl import Packet, acl_tables, compare
from harness.core.model import build
from harness.core.plan import make_plan
from harness.render.sonic import config_db
from topologies import BUILTINS

SPINE, LEAF, VTEP = "be-s1", "be-g1-r0", "fe-l1"  # a BE spine, a BE leaf with GPU ports, an FE VTEP leaf


def _render(topology: str) -> dict[str, dict]:
    plan = make_plan(build(BUILTINS[topology]()))
    return {sw.name: config_db(plan, sw) for sw in plan.switches}


@pytest.fixture(scope="module")
def ai() -> dict[str, dict]:
    return _render("ai-cluster")


def _diff(ai, switch: str, change: Callable[[dict], object], indent: int | None = 4):
    expected = ai[switch]
    found = json.loads(json.dumps(expected))  # the render shares one map between tables: the file does not
    change(found)
    return diff_config_db(switch, expected, json.dumps(found, indent=indent))


# --------------------------------------------------------------------------- the same meaning


def _rename(db: dict, table: str, names: dict[str, str], form: str = "{}") -> None:
    """Objects of `table` renamed, every field that names one updated (written as `form`)."""
    rows = db.get(table, {})
    db[table] = {names.get(k, k): v for k, v in rows.items()}
    for rs in db.values():
        for row in rs.values():
            for field, value in row.items():
                referring = field in ("scheduler", "wred_profile", "profile", "pool") or field.endswith("_map")
                if referring and isinstance(value, str) and value in names:
                    row[field] = form.format(names[value])


def maps_named_azure(db):
    for table in ("DSCP_TO_TC_MAP", "TC_TO_QUEUE_MAP", "TC_TO_PRIORITY_GROUP_MAP", "MAP_PFC_PRIORITY_TO_QUEUE"):
        _rename(db, table, {"AI_ROCE": "AZURE"})


def profiles_named_as_sonic(db):
    _rename(db, "SCHEDULER", {"scheduler.0": "scheduler.2", "scheduler.1": "scheduler.0",
                              "scheduler.strict": "scheduler.1"})
    _rename(db, "WRED_PROFILE", {"AI_LOSSLESS": "AZURE_LOSSLESS"})
    _rename(db, "BUFFER_PROFILE", {"pg_lossless_800000_40m_profile": "ingress_lossless_profile",
                                   "pg_lossless_400000_5m_profile": "headroom_400g",
                                   "egress_lossless_profile": "egress_lossless_profile_x"})
    _rename(db, "BUFFER_POOL", {"ingress_lossless_pool": "ingress_pool", "egress_lossless_pool": "egress_pool"})


def references_in_the_older_form(db):
    for table in ("SCHEDULER", "WRED_PROFILE"):
        _rename(db, table, {k: k for k in db[table]}, "[" + table + "|{}]")
    _rename(db, "BUFFER_PROFILE", {k: k for k in db["BUFFER_PROFILE"]}, "[BUFFER_PROFILE|{}]")


def dscp_map_without_its_zeroes(db):  # an unmapped DSCP is TC 0
    db["DSCP_TO_TC_MAP"] = {name: {k: v for k, v in m.items() if v != "0"} for name, m in db["DSCP_TO_TC_MAP"].items()}


def mtu_left_to_its_default(db):
    for row in db["PORT"].values():
        if row["mtu"] == "9100":
            del row["mtu"]


def labels_changed(db):
    for i, row in enumerate(db["PORT"].values()):
        row.update(alias=f"etp{i}", description="spare", index=str(100 + i))


def yang_defaults_written_in(db):
    for row in db["PORT"].values():
        row.update(dhcp_rate_limit="300", fast_linkup="false", role="Ext")
    for row in db.get("SCHEDULER", {}).values():
        row["meter_type"] = "bytes"
    for row in db.get("BUFFER_PROFILE", {}).values():
        row.setdefault("xon", "0")
        row.setdefault("xoff", "0")
        row["xon_offset"] = "0"
    for key, row in db["INTERFACE"].items():
        if "|" not in key:
            row.setdefault("ipv6_use_link_local_only", "disable")
    db["DEVICE_METADATA"]["localhost"]["default_bgp_status"] = "up"
    for row in db.get("ACL_TABLE", {}).values():
        row["stage"] = "INGRESS"


def ports_keys_merged(db):
    for table in ("QUEUE", "BUFFER_PG", "BUFFER_QUEUE", "PORT_QOS_MAP"):
        merged: dict[str, tuple[list[str], dict]] = {}
        for key, row in db.get(table, {}).items():
            port, _, index = key.partition("|")
            merged.setdefault(json.dumps([index, row], sort_keys=True), ([], row))[0].append(port)
        db[table] = {",".join(ports) + (f"|{json.loads(k)[0]}" if json.loads(k)[0] else ""): row
                     for k, (ports, row) in merged.items()}


def numbers_and_booleans_as_json(db):
    for rows in db.values():
        for row in rows.values():
            for field, value in row.items():
                if isinstance(value, str) and value.lstrip("-").isdigit():
                    row[field] = int(value)
                elif value == "true":
                    row[field] = "True"


def keys_in_another_order(db):
    items = list(db.items())[::-1]
    db.clear()
    db.update({t: dict(list(rows.items())[::-1]) for t, rows in items})


def acl_rules_and_table_renamed(db):
    rules = db.pop("ACL_RULE")
    db["ACL_TABLE"] = {"DATAACL": {**db.pop("ACL_TABLE")["FE_EDGE"], "stage": "INGRESS"}}
    db["ACL_TABLE"]["DATAACL"]["ports"] = ",".join(db["ACL_TABLE"]["DATAACL"]["ports"])
    db["ACL_RULE"] = {f"DATAACL|RULE_{i + 1}": row for i, row in enumerate(rules.values())}


def acl_priorities_renumbered(db):  # the same order, other numbers
    for row in db["ACL_RULE"].values():
        row["PRIORITY"] = str(int(row["PRIORITY"]) * 3 + 7)


def vxlan_objects_renamed(db):
    db["VXLAN_TUNNEL"] = {"VTEP1": db["VXLAN_TUNNEL"]["vtep"]}
    db["VXLAN_TUNNEL_MAP"] = {f"VTEP1|map_{i}": row for i, row in enumerate(db["VXLAN_TUNNEL_MAP"].values())}
    db["VXLAN_EVPN_NVO"] = {"nvo1": {"source_vtep": "VTEP1"}}
    for row in db["VLAN"].values():
        row["description"] = "renamed"


def every_rewrite(db):
    for rewrite in SAME[:-1]:
        if rewrite in (acl_rules_and_table_renamed, acl_priorities_renumbered, vxlan_objects_renamed) \
                and "ACL_RULE" not in db:
            continue
        if rewrite in (maps_named_azure, profiles_named_as_sonic, references_in_the_older_form,
                       dscp_map_without_its_zeroes) and "SCHEDULER" not in db:
            continue
        rewrite(db)


SAME = [maps_named_azure, profiles_named_as_sonic, references_in_the_older_form, dscp_map_without_its_zeroes,
        mtu_left_to_its_default, labels_changed, yang_defaults_written_in, ports_keys_merged,
        numbers_and_booleans_as_json, keys_in_another_order, acl_rules_and_table_renamed, acl_priorities_renumbered,
        vxlan_objects_renamed, every_rewrite]


@pytest.mark.parametrize("rewrite", SAME, ids=lambda f: f.__name__)
@pytest.mark.parametrize("switch", [SPINE, LEAF, VTEP])
def test_the_same_meaning_in_other_words_has_no_difference(ai, switch, rewrite):
    if rewrite in (acl_rules_and_table_renamed, acl_priorities_renumbered, vxlan_objects_renamed) \
            and "ACL_RULE" not in ai[switch]:
        pytest.skip("no tenant tables on this switch")
    if rewrite in SAME[:4] and "SCHEDULER" not in ai[switch]:
        pytest.skip("no lossless tables on this switch")
    assert _diff(ai, switch, rewrite) == []


@pytest.mark.parametrize("topology", ["ai-cluster", "pods", "rail-only", "dual-homed", "multi-rail"])
def test_every_kind_of_switch_of_every_design_rewritten_is_the_same(topology):
    kinds = {}  # one switch per set of tables (a spine, a GPU leaf, a VTEP leaf...): the others read alike
    for switch, db in _render(topology).items():
        kinds.setdefault(tuple(sorted(db)), (switch, db))
    for switch, db in kinds.values():
        found = copy.deepcopy(db)
        every_rewrite(found)
        assert diff_config_db(switch, db, json.dumps(found)) == [], switch


# --------------------------------------------------------------------------- what a switch does, changed


def _set(table: str, key: str, **values) -> Callable[[dict], None]:
    def change(db):
        db[table][key].update(values)
    return change


def _drop(table: str, key: str, field: str) -> Callable[[dict], None]:
    return lambda db: db[table][key].pop(field)


def _swap_priorities(db):
    rules = db["ACL_RULE"]
    rules["FE_EDGE|R0_0"]["PRIORITY"], rules["FE_EDGE|R2_0"]["PRIORITY"] = (rules["FE_EDGE|R2_0"]["PRIORITY"],
                                                                            rules["FE_EDGE|R0_0"]["PRIORITY"])


def _acl_moved(db):
    ports = db["ACL_TABLE"]["FE_EDGE"]["ports"]
    ports[ports.index("Ethernet0")] = "Ethernet48"


def _member_moved(db):
    db["VLAN_MEMBER"]["Vlan101|Ethernet0"] = db["VLAN_MEMBER"].pop("Vlan100|Ethernet0")


def _pg_range(db):  # "Ethernet0|3-4": the lossless profile on PG 4 too
    db["BUFFER_PG"]["Ethernet0|3-4"] = db["BUFFER_PG"].pop("Ethernet0|3")


def _wred_on_another_profile(db):
    db["WRED_PROFILE"]["AZURE_LOSSY"] = {**db["WRED_PROFILE"]["AI_LOSSLESS"], "ecn": "ecn_none"}
    db["QUEUE"]["Ethernet8|3"]["wred_profile"] = "AZURE_LOSSY"


EVERY = "every port (8)"  # be-s1 has 8 ports, every one of them lossless
FAULTS = [
    # (switch, change, {(behaviour, subject)}, a word the expected text holds, one the found text holds)
    (SPINE, _set("DSCP_TO_TC_MAP", "AI_ROCE", **{"26": "4"}), {("DSCP->TC", EVERY)}, "DSCP 26: TC 3", "TC 4"),
    (SPINE, _set("TC_TO_QUEUE_MAP", "AI_ROCE", **{"3": "5"}), {("TC->queue", EVERY)}, "queue 3", "queue 5"),
    (SPINE, _set("PORT_QOS_MAP", "Ethernet8", pfc_enable=""), {("PFC", "Ethernet8")}, "on priorities 3", "none"),
    (SPINE, _set("PORT_QOS_MAP", "Ethernet8", pfcwd_sw_enable="4"), {("PFC watchdog", "Ethernet8")}, "3", "4"),
    (SPINE, _set("SCHEDULER", "scheduler.1", weight="20"), {("scheduler", f"queue 3 on {EVERY}")}, "weight 15",
     "weight 20"),
    (SPINE, _set("SCHEDULER", "scheduler.strict", type="DWRR"), {("scheduler", f"queue 6 on {EVERY}")}, "STRICT",
     "DWRR"),
    (SPINE, _set("WRED_PROFILE", "AI_LOSSLESS", green_min_threshold="500000"), {("WRED/ECN", f"queue 3 on {EVERY}")},
     "green_min_threshold 5000", "500000"),
    (SPINE, _set("WRED_PROFILE", "AI_LOSSLESS", ecn="ecn_none"), {("WRED/ECN", f"queue 3 on {EVERY}")}, "ecn_all",
     "ecn_none"),
    (SPINE, _drop("WRED_PROFILE", "AI_LOSSLESS", "wred_green_enable"), {("WRED/ECN", f"queue 3 on {EVERY}")},
     "wred_green_enable true", "wred_green_enable false"),  # YANG's default is false
    (SPINE, _wred_on_another_profile, {("WRED/ECN", "Ethernet8 queue 3")}, "ecn_all", "ecn_none"),
    (SPINE, _set("BUFFER_PROFILE", "pg_lossless_800000_40m_profile", xoff="1000"),
     {("buffers", f"PG 3 on {EVERY}")}, "xoff 366776", "xoff 1000"),
    (SPINE, _set("BUFFER_POOL", "egress_lossless_pool", mode="dynamic"), {("buffers", f"queue 3 on {EVERY}")},
     "pool mode static", "dynamic"),
    (SPINE, _pg_range, {("buffers", "Ethernet0 PG 4")}, "no buffer profile", "xoff 366776"),
    (SPINE, _set("PFC_WD", "Ethernet16", action="forward"), {("PFC watchdog", "Ethernet16")}, "drop", "forward"),
    (SPINE, _set("CABLE_LENGTH", "AZURE", Ethernet0="300m"), {("cable length", "Ethernet0")}, "40m", "300m"),
    (SPINE, _set("PORT", "Ethernet0", mtu="1500"), {("MTU", "Ethernet0")}, "9100", "1500"),
    (SPINE, _set("PORT", "Ethernet0", admin_status="down"), {("port", "Ethernet0")}, "admin_status up", "down"),
    (SPINE, _drop("PORT", "Ethernet0", "admin_status"), {("port", "Ethernet0")}, "admin_status up", "down"),
    (SPINE, _set("DEVICE_METADATA", "localhost", bgp_asn="65000"), {("device", "device")}, "bgp_asn", "65000"),
    (VTEP, _drop("PORT", "Ethernet0", "mtu"), {("MTU", "Ethernet0")}, "1500", "9100 (mtu not set"),
    (VTEP, _set("ACL_RULE", "FE_EDGE|R2_0", PACKET_ACTION="FORWARD"), None, "10.32.2.1 -> 10.32.2.9", "FORWARD"),
    (VTEP, _swap_priorities, None, "tcp/2049: FORWARD", "tcp/2049: DROP"),
    (VTEP, _acl_moved, {("ACL", "ACL ingress on Ethernet0"), ("ACL", "ACL ingress on Ethernet48")}, "DROP", "FORWARD"),
    (VTEP, _set("VXLAN_TUNNEL_MAP", "vtep|map_10100_Vlan100", vlan="Vlan101"), {("VXLAN", "VNI 10100")}, "VLAN 100",
     "VLAN 101"),
    (VTEP, _set("VXLAN_TUNNEL", "vtep", src_ip="10.16.0.99"), {("VXLAN", "EVPN NVO, VTEP")},
     "10.16.0.3", "10.16.0.99"),
    (VTEP, _member_moved, {("VLAN", "Ethernet0")}, "in VLAN 100 untagged", "in VLAN 101 untagged"),
    (VTEP, _set("VLAN_MEMBER", "Vlan100|Ethernet0", tagging_mode="tagged"), {("VLAN", "Ethernet0")}, "untagged",
     "tagged"),
    (VTEP, _set("INTERFACE", "Ethernet48", ipv6_use_link_local_only="disable"), {("addresses", "Ethernet48")},
     "enable", "disable"),
    (VTEP, _set("BREAKOUT_CFG", "Ethernet0", brkout_mode="1x800G"), {("breakout", "Ethernet0")}, "2x400G", "1x800G"),
    (VTEP, lambda db: db.setdefault("VRF", {}).update(Vrf_blue={}), {("VRF", "Vrf_blue")}, "absent", "present"),
]


@pytest.mark.parametrize("switch,change,named,expected,found", FAULTS,
                         ids=[f"{i}-{f[0]}-{getattr(f[1], '__name__', 'set')}" for i, f in enumerate(FAULTS)])
def test_a_change_in_what_a_switch_does_is_named_once(ai, switch, change, named, expected, found):
    diffs = _diff(ai, switch, change)
    assert diffs, "no difference found"
    if named is None:  # an ACL's decisions: one difference naming every port the table binds
        named = {("ACL", "ACL ingress on " + ", ".join(ai[switch]["ACL_TABLE"]["FE_EDGE"]["ports"]))}
    assert {(d.behaviour, d.subject) for d in diffs} == named, [str(d) for d in diffs]
    assert all(d.switch == switch and d.file == "config_db.json" for d in diffs)
    assert any(expected in d.expected for d in diffs) and any(found in d.found for d in diffs), \
        [str(d) for d in diffs]


def test_a_difference_names_the_lines_of_the_engineers_file(ai):
    found = copy.deepcopy(ai[SPINE])
    found["PORT"]["Ethernet8"]["mtu"] = "1500"
    text = json.dumps(found, indent=4, sort_keys=True)
    (d,) = diff_config_db(SPINE, ai[SPINE], text)
    (line,) = d.lines
    assert text.splitlines()[line - 1].strip() == '"mtu": "1500",' and d.source == f"config_db.json:{line}"
    del found["PORT_QOS_MAP"]["Ethernet8"]
    diffs = diff_config_db(SPINE, ai[SPINE], json.dumps(found))
    assert {d.behaviour for d in diffs} >= {"MTU", "DSCP->TC", "PFC"}
    assert all(d.lines == () for d in diffs if d.behaviour == "PFC")  # a row the file lacks has no line


def test_a_removed_default_mtu_is_no_difference_but_a_removed_1500_is(ai):
    assert _diff(ai, SPINE, _drop("PORT", "Ethernet8", "mtu")) == []
    (d,) = _diff(ai, VTEP, _drop("PORT", "Ethernet4", "mtu"))
    assert (d.behaviour, d.subject, d.expected) == ("MTU", "Ethernet4", "1500")


@pytest.mark.parametrize("text,says", [
    ("{", "not JSON"),
    ("[]", "config_db is a list"),
    ('{"PORT": []}', "table PORT is a list"),
    ('{"PORT": {"Ethernet0": "up"}}', "PORT|Ethernet0 is a str"),
    ('{"PORT": {"Ethernet0": {"mtu": {"v": 1}}}}', "field mtu"),
])
def test_a_file_not_shaped_as_sonics_is_bad_input_naming_it(ai, text, says):
    with pytest.raises(InputError, match="configs/x/config_db.json") as e:
        diff_config_db(SPINE, ai[SPINE], text, "configs/x/config_db.json")
    assert says in str(e.value) and "{TABLE: {KEY: {field: value}}}" in str(e.value)


# --------------------------------------------------------------------------- ACLs by their decisions


def _acl(rules: dict[str, dict], ports="Ethernet0", stage="ingress") -> tuple:
    db = {"ACL_TABLE": {"T": {"type": "L3", "stage": stage, "ports": ports}},
          "ACL_RULE": {f"T|{k}": v for k, v in rules.items()}}
    return acl_tables(db)


def test_an_acl_is_its_decisions_not_its_rules():
    permit = {"PRIORITY": "20", "PACKET_ACTION": "FORWARD", "SRC_IP": "10.0.0.0/25"}
    deny = {"PRIORITY": "10", "PACKET_ACTION": "DROP", "SRC_IP": "10.0.0.0/24"}
    # the same decisions from other rules: two halves, one of them shadowed by the permit
    split = {"a": {"PRIORITY": "30", "PACKET_ACTION": "FORWARD", "SRC_IP": "10.0.0.0/25"},
             "b": {"PRIORITY": "5", "PACKET_ACTION": "DROP", "SRC_IP": "10.0.0.128/25"}}
    assert compare(_acl({"p": permit, "d": deny}), _acl(split)) is None
    d = compare(_acl({"p": permit, "d": deny}), _acl({"p": {**permit, "PRIORITY": "5"}, "d": deny}))
    assert d is not None and d.examples[0][0].src.exploded.startswith("10.0.0.")
    assert {(a, b) for _, a, b in d.examples} == {("FORWARD", "DROP")}


def test_an_acl_probes_the_edges_of_every_range():
    rules = {"r": {"PRIORITY": "10", "PACKET_ACTION": "DROP", "IP_PROTOCOL": "6", "L4_DST_PORT_RANGE": "9000-9100"}}
    narrower = {"r": {**rules["r"], "L4_DST_PORT_RANGE": "9000-9099"}}
    d = compare(_acl(rules), _acl(narrower))
    assert d is not None and {str(p) for p, _, _ in d.examples} >= {"192.0.2.1 -> 192.0.2.1 tcp/9100"}


def test_rules_the_probes_cannot_meet_are_compared_as_written():
    a = {"r": {"PRIORITY": "10", "PACKET_ACTION": "DROP", "TCP_FLAGS": "0x02/0x02"}}
    b = {"r": {"PRIORITY": "10", "PACKET_ACTION": "DROP", "TCP_FLAGS": "0x12/0x12"}}
    assert compare(_acl(a), _acl(a)) is None
    d = compare(_acl(a), _acl(b))
    assert d is not None and "TCP_FLAGS=0x02/0x02" in d.texts()[0] and "0x12/0x12" in d.texts()[1]


def test_a_packet_reads_as_an_engineer_writes_it():
    from ipaddress import IPv4Address as A
    assert str(Packet(A("10.32.2.1"), A("10.32.2.9"), 6, 49152, 2049)) == "10.32.2.1 -> 10.32.2.9 tcp/2049"
    assert str(Packet(A("10.0.0.1"), A("10.0.0.2"), 1)) == "10.0.0.1 -> 10.0.0.2 icmp"


def test_stage_case_and_port_forms_do_not_matter():
    rules = {"r": {"PRIORITY": "10", "PACKET_ACTION": "DROP", "DST_IP": "10.0.0.1/32"}}
    a = _acl(rules, ["Ethernet0", "Ethernet4"], "ingress")
    b = _acl(rules, "Ethernet4,Ethernet0", "INGRESS")
    assert a[0].ports == b[0].ports and a[0].stage == b[0].stage == "ingress"


def test_the_model_reads_names_through(ai):
    m = meaning(ai[SPINE])
    assert m.fact("DSCP->TC", "Ethernet0", "", "DSCP 26").value == (("TC", "3"), ("queue", "3"), ("PG", "3"))
    assert dict(m.fact("scheduler", "Ethernet0", "queue 6").value) == {"type": "STRICT", "meter_type": "bytes"}


def test_every_switch_of_a_cluster_compares_in_well_under_a_second_each(ai):
    t0 = time.process_time()  # CPU time: a loaded machine does not make it fail
    for switch, db in ai.items():
        assert diff_config_db(switch, db, json.dumps(db)) == []
    assert time.process_time() - t0 < 0.2 * len(ai)
