"""`fablab audit`: the lossless contract hop by hop. Every built-in's render is clean; each way
of breaking one hop is found and named (switch, port, table, expected)."""
from __future__ import annotations

import copy
import json
from dataclasses import replace

import pytest

from harness.checks.lossless import audit, load_dir
from harness.cli.main import main
from harness.core.errors import HarnessError, TopologyError
from harness.core.model import Ecn, Lossless, build
from harness.core.plan import make_plan
from harness.render import artifacts, write_artifacts
from harness.render.lossless import contract_of
from topologies import BUILTINS


def _rendered(cluster) -> tuple:
    plan = make_plan(build(cluster))
    files = artifacts(plan)
    configs = {sw.name: json.loads(files[f"configs/{sw.name}/config_db.json"]) for sw in plan.switches}
    return contract_of(plan), configs


@pytest.fixture(scope="module")
def ai():
    return _rendered(BUILTINS["ai-cluster"]())


@pytest.mark.parametrize("topology", sorted(BUILTINS))
def test_every_builtin_render_is_lossless(topology):
    result = audit(*_rendered(BUILTINS[topology]()))
    assert result.passed, result.reason
    assert result.ports > 0 and result.switches == len(result.contract.be_switches)


def test_a_declared_contract_renders_and_audits_clean():
    cluster = replace(BUILTINS["ai-cluster"](), lossless=Lossless(roce_priority=4, roce_dscp=24, cnp_priority=7,
                                                                   cnp_dscp=46, roce_mtu=2048))
    contract, configs = _rendered(cluster)
    result = audit(contract, configs)
    assert result.passed, result.reason
    assert configs["be-s1"]["DSCP_TO_TC_MAP"]["AI_ROCE"]["24"] == "4"
    assert configs["be-s1"]["PORT_QOS_MAP"]["Ethernet0"]["pfc_enable"] == "4"


def _broken(ai, change) -> list:
    contract, configs = ai
    configs = copy.deepcopy(configs)
    change(configs)
    return list(audit(contract, configs).findings)


def test_one_switch_with_pfc_on_another_priority(ai):
    def change(c):
        for row in c["be-s1"]["PORT_QOS_MAP"].values():
            row["pfc_enable"] = "4"
    found = _broken(ai, change)
    assert {(f.node, f.table) for f in found} == {("be-s1", "PORT_QOS_MAP")}
    ports = {f.port for f in found if f.expected == "pfc_enable including 3"}
    assert ports == set(ai[1]["be-s1"]["PORT_QOS_MAP"])  # every port of be-s1, named
    assert any("as at its peer be-g1-r0:Ethernet0" in f.expected for f in found)  # both ends of a link compared


def test_one_switch_mapping_roce_dscp_to_another_class(ai):
    found = _broken(ai, lambda c: c["be-g2-r1"]["DSCP_TO_TC_MAP"]["AI_ROCE"].__setitem__("26", "4"))
    assert found and all(f.node == "be-g2-r1" and f.table == "DSCP_TO_TC_MAP" for f in found)
    assert found[0].expected == "DSCP 26 -> TC 3" and found[0].found == "TC 4"


def test_one_port_whose_mtu_cannot_carry_a_roce_frame(ai):
    found = _broken(ai, lambda c: c["be-g1-r0"]["PORT"]["Ethernet0"].__setitem__("mtu", "4000"))
    assert [(f.node, f.port, f.table) for f in found][0] == ("be-g1-r0", "Ethernet0", "PORT")
    assert "mtu >= 4156" in found[0].expected and found[0].found == "4000"


def test_a_host_port_whose_mtu_is_too_small(ai):
    found = _broken(ai, lambda c: c["be-g1-r0"]["PORT"]["Ethernet256"].__setitem__("mtu", "1500"))
    assert [(f.node, f.port, f.table, f.found) for f in found] == [("be-g1-r0", "Ethernet256", "PORT", "1500")]


def test_a_lossless_queue_without_ecn(ai):
    found = _broken(ai, lambda c: c["be-s2"]["WRED_PROFILE"]["AI_LOSSLESS"].__setitem__("ecn", "ecn_none"))
    assert found and all(f.table == "QUEUE" and f.port.endswith("|3") and "ECN" in f.expected for f in found)


def test_cnps_on_a_queue_that_is_not_strict(ai):
    found = _broken(ai, lambda c: c["be-s2"]["QUEUE"]["Ethernet8|6"].__setitem__("scheduler", "scheduler.0"))
    assert [(f.node, f.port, f.table, f.found) for f in found] == [("be-s2", "Ethernet8|6", "QUEUE", "DWRR")]


def test_a_buffer_profile_that_is_not_defined(ai):
    found = _broken(ai, lambda c: c["be-s1"]["BUFFER_PG"]["Ethernet16|3"].__setitem__("profile", "pg_lossless_x"))
    assert [(f.port, f.table) for f in found] == [("Ethernet16|3", "BUFFER_PG")]
    assert "pg_lossless_x" in found[0].found


def test_a_port_without_the_pfc_watchdog(ai):
    found = _broken(ai, lambda c: c["be-g1-r1"]["PFC_WD"].pop("Ethernet8"))
    assert [(f.node, f.port, f.table) for f in found] == [("be-g1-r1", "Ethernet8", "PFC_WD")]


def test_a_port_without_qos_maps(ai):
    found = _broken(ai, lambda c: c["be-g1-r1"]["PORT_QOS_MAP"].pop("Ethernet256"))
    assert [(f.node, f.port, f.table) for f in found] == [("be-g1-r1", "Ethernet256", "PORT_QOS_MAP")]


def test_a_host_port_missing_from_port_is_named_on_its_switch(ai):
    found = _broken(ai, lambda c: c["be-g2-r2"]["PORT"].pop("Ethernet260"))
    assert [(f.node, f.port, f.table, f.found) for f in found] == [("be-g2-r2", "Ethernet260", "PORT", "absent")]
    assert "cabled to gpu06:rail2" in found[0].expected


def test_a_port_left_admin_down(ai):
    found = _broken(ai, lambda c: c["be-s2"]["PORT"]["Ethernet16"].__setitem__("admin_status", "down"))
    assert [(f.node, f.port, f.table, f.found) for f in found] == [("be-s2", "Ethernet16", "PORT", "down")]


def test_the_two_ends_of_a_link_at_different_speeds(ai):
    found = _broken(ai, lambda c: c["be-g1-r3"]["PORT"]["Ethernet8"].__setitem__("speed", "100000"))
    assert [(f.node, f.port, f.expected) for f in found] == [
        ("be-g1-r3", "Ethernet8", "speed 800000 (the declared 800G)"),
        ("be-s2", "Ethernet24", "speed as at its peer be-g1-r3:Ethernet8 (100000)")]


def test_both_ends_of_a_link_at_the_same_undeclared_speed(ai):
    def change(c):
        c["be-g1-r3"]["PORT"]["Ethernet8"]["speed"] = "100000"
        c["be-s2"]["PORT"]["Ethernet24"]["speed"] = "100000"
    found = _broken(ai, change)
    assert {(f.node, f.port, f.found) for f in found} == {("be-g1-r3", "Ethernet8", "100000"),
                                                          ("be-s2", "Ethernet24", "100000")}


def test_cnps_on_another_strict_queue_than_declared(ai):
    """The CNP queue is the declared one (lossless.cnp_priority), not whichever the config maps
    CNPs to: queue 5 made strict and CNPs moved there is still a finding."""
    def change(c):
        c["be-s1"]["TC_TO_QUEUE_MAP"]["AI_ROCE"]["6"] = "5"
    found = _broken(ai, change)
    assert found and all(f.node == "be-s1" and f.table == "TC_TO_QUEUE_MAP" and f.found == "queue 5" for f in found)


def test_a_link_compared_by_its_declared_cable_not_its_description(ai):
    def change(c):
        c["be-g1-r3"]["PORT"]["Ethernet8"].update(description="spare", mtu="9000")
    found = _broken(ai, change)
    assert [f.table for f in found] == ["PORT"] and "mtu as at its peer be-g1-r3:Ethernet8 (9000)" in found[0].expected


def test_a_switch_pausing_a_priority_the_declaration_leaves_lossy(ai):
    def change(c):  # the whole switch, so both ends of no link disagree on its host ports
        for row in c["be-g2-r0"]["PORT_QOS_MAP"].values():
            row["pfc_enable"] = "3,4"
    found = _broken(ai, change)
    own = [f for f in found if f.node == "be-g2-r0" and f.expected.startswith("pfc_enable on no priority but 3")]
    assert len(own) == len(ai[1]["be-g2-r0"]["PORT_QOS_MAP"]) and own[0].found == "3,4"


def test_lossy_traffic_mapped_into_the_lossless_class(ai):
    found = _broken(ai, lambda c: c["be-s1"]["DSCP_TO_TC_MAP"]["AI_ROCE"].update({"0": "3", "8": "3"}))
    assert found and all(f.node == "be-s1" and f.table == "DSCP_TO_TC_MAP" for f in found)
    assert found[0].expected == "no DSCP but 26 in lossless TC 3" and found[0].found == "DSCP 0,8 -> TC 3"


def test_ecn_that_never_marks_green_packets(ai):
    found = _broken(ai, lambda c: c["be-g1-r2"]["WRED_PROFILE"]["AI_LOSSLESS"].__setitem__("ecn", "ecn_yellow_red"))
    assert found and all(f.table == "QUEUE" and "ecn=ecn_yellow_red" in f.found for f in found)


def test_wred_off_for_green_packets(ai):
    found = _broken(ai, lambda c: c["be-g1-r2"]["WRED_PROFILE"]["AI_LOSSLESS"].__setitem__("wred_green_enable", "false"))
    assert found and all(f.table == "WRED_PROFILE" and f.found == "false" for f in found)


def test_the_roce_pg_on_a_profile_without_headroom(ai):
    found = _broken(ai, lambda c: c["be-s1"]["BUFFER_PROFILE"]["pg_lossless_800000_40m_profile"].update(xoff="0"))
    assert found and all(f.table == "BUFFER_PROFILE" and "xoff=0" in f.found for f in found)


def test_a_lossless_profile_on_a_pool_of_the_wrong_direction(ai):
    found = _broken(ai, lambda c: c["be-s1"]["BUFFER_POOL"]["egress_lossless_pool"].__setitem__("type", "ingress"))
    assert found and all(f.table == "BUFFER_POOL" and f.port.endswith("|3") and f.found == "ingress" for f in found)


def test_a_watchdog_that_can_never_fire(ai):
    found = _broken(ai, lambda c: c["be-g2-r3"]["PFC_WD"]["Ethernet256"].__setitem__("detection_time", "0"))
    assert [(f.node, f.port, f.table, f.found) for f in found] == [("be-g2-r3", "Ethernet256", "PFC_WD", "0")]


def test_keys_as_sonic_may_write_them_audit_clean(ai):
    """CONFIG_DB may key a queue or PG by a range ("Ethernet0|3-4") and a QoS row by a list of
    ports: the same settings written so are still the contract, no finding."""
    def change(c):
        db = c["be-s1"]
        for table in ("BUFFER_PG", "BUFFER_QUEUE"):
            db[table] = {key.replace("|3", "|3-4"): row for key, row in db[table].items()}
        qos = db.pop("PORT_QOS_MAP")
        db["PORT_QOS_MAP"] = {",".join(sorted(qos)): next(iter(qos.values()))}
    assert _broken(ai, change) == []


def test_cli_exit_codes(tmp_path):
    out = tmp_path / "r"
    write_artifacts(artifacts(make_plan(build(BUILTINS["rail-only"]()))), out)
    assert main(["audit", "--against", "rail-only", str(out)]) == 0
    db = out / "configs" / "be-r0" / "config_db.json"
    data = json.loads(db.read_text())
    data["PORT"]["Ethernet0"]["mtu"] = "2000"
    db.write_text(json.dumps(data))
    assert main(["audit", "--against", "rail-only", str(out)]) == 3
    assert main(["audit", "--against", "rail-only", str(tmp_path / "nothing")]) == 2


def test_a_config_not_shaped_as_sonics_is_bad_input_naming_the_table(tmp_path, capsys):
    out = tmp_path / "r"
    write_artifacts(artifacts(make_plan(build(BUILTINS["rail-only"]()))), out)
    db = out / "configs" / "be-r1" / "config_db.json"
    data = json.loads(db.read_text())
    data["PORT_QOS_MAP"] = list(data["PORT_QOS_MAP"].values())
    db.write_text(json.dumps(data))
    assert main(["audit", "--against", "rail-only", str(out)]) == 2
    assert "be-r1/config_db.json: table PORT_QOS_MAP is a list" in capsys.readouterr().err.replace("\n", "")


def test_a_row_that_is_not_an_object_is_bad_input(ai):
    contract, configs = ai
    configs = copy.deepcopy(configs)
    configs["fe-l2"]["ACL_RULE"]["FE_EDGE|DEFAULT"] = "FORWARD"
    with pytest.raises(HarnessError, match=r"fe-l2: ACL_RULE\|FE_EDGE\|DEFAULT is a str"):
        audit(contract, configs)


def test_a_render_directory_without_a_declaration_to_judge_it_is_bad_input(tmp_path, capsys):
    out = tmp_path / "r"
    write_artifacts(artifacts(make_plan(build(BUILTINS["rail-only"]()))), out)
    assert main(["audit", str(out)]) == 2
    assert "--against" in capsys.readouterr().err


def test_a_contract_file_edited_with_the_configs_does_not_decide(tmp_path, capsys):
    """The tamper of issue 20: every BE port's MTU lowered to 1500 and lossless.json edited to a
    RoCE MTU that 1500 carries. The declaration judges, so the audit still fails, naming BE hops."""
    out = tmp_path / "r"
    write_artifacts(artifacts(make_plan(build(BUILTINS["ai-cluster"]()))), out)
    assert main(["audit", "--against", "ai-cluster", str(out)]) == 0  # positive control: untouched, clean
    for db in out.glob("configs/be-*/config_db.json"):
        data = json.loads(db.read_text())
        for row in data["PORT"].values():
            row["mtu"] = "1500"
        db.write_text(json.dumps(data))
    contract = json.loads((out / "lossless.json").read_text())
    contract["lossless"]["roce_mtu"] = 1024
    (out / "lossless.json").write_text(json.dumps(contract))
    capsys.readouterr()
    assert main(["audit", "--against", "ai-cluster", str(out), "--json"]) == 3
    doc = json.loads(capsys.readouterr().out)
    mtu = [f for f in doc["findings"] if f["table"] == "PORT" and f["found"] == "1500"]
    assert {f["node"] for f in mtu} == {s for s in doc["contract"]["be_switches"]}
    assert all(f["expected"].startswith("mtu >= 4156") for f in mtu)


def test_a_declared_switch_without_configs_is_a_finding(tmp_path):
    out = tmp_path / "r"
    write_artifacts(artifacts(make_plan(build(BUILTINS["ai-cluster"]()))), out)
    (out / "configs" / "be-s2" / "config_db.json").unlink()
    result = audit(*_judged(out, "ai-cluster"))
    assert ("be-s2", "config_db.json", "absent") in {(f.node, f.table, f.found) for f in result.findings}


def test_configs_of_another_design_fail_against_the_declaration(tmp_path, capsys):
    out = tmp_path / "r"
    write_artifacts(artifacts(make_plan(build(BUILTINS["rail-only"]()))), out)
    assert main(["audit", "--against", "ai-cluster", str(out)]) == 3


def _judged(directory, topology: str):
    contract = contract_of(make_plan(build(BUILTINS[topology]())))
    return contract, load_dir(directory, contract)


@pytest.mark.parametrize("change,field", [
    (dict(roce_priority=8), "lossless.roce_priority"),
    (dict(roce_dscp=64), "lossless.roce_dscp"),
    (dict(cnp_priority=3), "lossless.cnp_priority"),
    (dict(cnp_dscp=26), "lossless.cnp_dscp"),
    (dict(roce_mtu=3000), "lossless.roce_mtu"),
    (dict(ecn=Ecn(min_bytes=-1)), "lossless.ecn.min_bytes"),
    (dict(ecn=Ecn(min_bytes=500000, max_bytes=400000)), "lossless.ecn.max_bytes"),
    (dict(ecn=Ecn(probability_pct=0)), "lossless.ecn.probability_pct"),
    (dict(ecn=Ecn(probability_pct=101)), "lossless.ecn.probability_pct"),
    (dict(ecn="5%"), "lossless.ecn"),
])
def test_a_bad_contract_is_refused_naming_the_field(change, field):
    with pytest.raises(TopologyError, match=field):
        build(replace(BUILTINS["ai-cluster"](), lossless=Lossless(**change)))


def test_a_roce_mtu_the_backend_mtu_cannot_carry():
    cluster = BUILTINS["ai-cluster"]()
    small = replace(cluster, backend=replace(cluster.backend, mtu=4000))
    with pytest.raises(TopologyError, match="raise backend.mtu to >= 4156"):
        build(small)


@pytest.mark.parametrize("topology", ["ai-cluster", "rail-only", "xlarge"])
def test_the_wire_check_reaches_every_leaf_of_every_rail(topology):
    from harness.checks.lossless.wire import probe_pairs

    plan = make_plan(build(BUILTINS[topology]()))
    pairs = probe_pairs(plan)
    leaves = {(sw.rails[0], sw.name) for sw in plan.switches if sw.rails}
    reached = {(rail, plan.host(dst).nic(nic).peer) for (_, _, rail), (dst, nic) in pairs}
    assert reached == leaves
    assert all(src != dst for (src, _, _), (dst, _) in pairs)


# --------------------------------------------------------------------------- the FE tenant tables


def test_the_tenant_tables_are_audited(ai):
    contract, _ = ai
    assert set(contract.tenants) == {"fe-l1", "fe-l2"}
    assert audit(*ai).vtep_leaves == 2


def test_a_vni_mapped_to_another_vlan_on_one_leaf(ai):
    def change(c):
        c["fe-l2"]["VXLAN_TUNNEL_MAP"]["vtep|map_10100_Vlan100"]["vlan"] = "Vlan101"

    (f,) = _broken(ai, change)
    assert (f.node, f.table) == ("fe-l2", "VXLAN_TUNNEL_MAP") and "vlan=Vlan100" in f.expected
    assert f.found == "vlan=Vlan101"


def test_a_member_in_the_wrong_vlan(ai):
    def change(c):
        row = c["fe-l1"]["VLAN_MEMBER"].pop("Vlan100|Ethernet0")
        c["fe-l1"]["VLAN_MEMBER"]["Vlan101|Ethernet0"] = row

    found = {(f.node, f.port, f.table, f.found) for f in _broken(ai, change)}
    assert ("fe-l1", "Ethernet0", "VLAN_MEMBER", "absent") in found  # not in its tenant's VLAN
    assert any(f[3].startswith("{tagging_mode") for f in found)  # and in another one


def test_an_acl_rule_the_wrong_way_round(ai):
    def change(c):
        c["fe-l1"]["ACL_RULE"]["FE_EDGE|R2_0"]["PACKET_ACTION"] = "FORWARD"

    # Issue 31: an ACL is judged by its decisions, not by its rule names: the finding is the
    # packets decided otherwise, naming the engineer's rule that decides them.
    (f,) = _broken(ai, change)
    assert (f.node, f.table) == ("fe-l1", "ACL_RULE")
    assert "10.32.2.1 -> 10.32.2.9" in f.expected and ": DROP" in f.expected
    assert ": FORWARD" in f.found and "FE_EDGE|R2_0" in f.found


def test_an_acl_rule_nobody_declared(ai):
    def change(c):
        c["fe-l2"]["ACL_RULE"]["FE_EDGE|EXTRA"] = {"PRIORITY": "99999", "PACKET_ACTION": "FORWARD",
                                                   "IP_TYPE": "IPV4ANY"}

    (f,) = _broken(ai, change)  # issue 31: by what it does (forwards what should drop), not its name
    assert (f.node, f.table) == ("fe-l2", "ACL_RULE") and ": DROP" in f.expected
    assert ": FORWARD" in f.found and "FE_EDGE|EXTRA" in f.found


def test_the_acl_table_misses_a_member_port(ai):
    def change(c):
        c["fe-l1"]["ACL_TABLE"]["FE_EDGE"]["ports"].remove("Ethernet0")

    (f,) = _broken(ai, change)
    assert (f.node, f.table) == ("fe-l1", "ACL_TABLE") and "Ethernet0" in f.expected


def test_a_member_port_that_is_also_routed(ai):
    def change(c):
        c["fe-l2"]["INTERFACE"]["Ethernet8"] = {}
        c["fe-l2"]["INTERFACE"]["Ethernet8|10.16.9.0/31"] = {}

    (f,) = _broken(ai, change)
    assert (f.node, f.port, f.table, f.found) == ("fe-l2", "Ethernet8", "INTERFACE", "10.16.9.0/31")


def test_an_acl_rule_narrowed_by_a_field_nobody_declared(ai):
    """Issue 31: a narrowed rule is a finding when it decides a packet otherwise. The old case,
    the default FORWARD rule narrowed to one subnet, forwards the same packets (SONiC forwards
    what no rule matches), so it is no finding now; a permit narrowed to one source port is."""
    def narrowed_default(c):
        c["fe-l2"]["ACL_RULE"]["FE_EDGE|DEFAULT"]["SRC_IP"] = "10.32.0.0/24"

    assert _broken(ai, narrowed_default) == []

    def change(c):
        c["fe-l2"]["ACL_RULE"]["FE_EDGE|R0_0"]["L4_SRC_PORT"] = "1000"

    (f,) = _broken(ai, change)
    assert (f.node, f.table) == ("fe-l2", "ACL_RULE")
    assert "10.32.2.1 -> 10.32.2.9 tcp/2049: FORWARD" in f.expected and "tcp/2049: DROP" in f.found


def test_an_acl_table_nobody_declared_on_a_member_port(ai):
    """Issue 31: a table is judged by what its rules do where it is bound. An empty one filters
    nothing (no finding); one that drops SSH on a member port is found there, naming its rule."""
    def empty(c):
        c["fe-l1"]["ACL_TABLE"]["HOTFIX"] = {"type": "L3", "stage": "ingress", "ports": ["Ethernet4", "Ethernet48"]}

    assert _broken(ai, empty) == []

    def change(c):
        empty(c)
        c["fe-l1"]["ACL_RULE"]["HOTFIX|SSH"] = {"PRIORITY": "1", "PACKET_ACTION": "DROP", "IP_PROTOCOL": "6",
                                                "L4_DST_PORT": "22"}

    (f,) = _broken(ai, change)
    assert (f.node, f.port, f.table) == ("fe-l1", "Ethernet4", "ACL_RULE")
    assert "tcp/22: FORWARD" in f.expected and "tcp/22: DROP" in f.found and "HOTFIX|SSH" in f.found


def test_a_routed_svi_on_a_tenant_vlan(ai):
    def change(c):
        c["fe-l2"]["VLAN_INTERFACE"] = {"Vlan101": {}, "Vlan101|10.32.1.254/24": {}}

    found = _broken(ai, change)
    assert {(f.node, f.port, f.table) for f in found} == {("fe-l2", "Vlan101", "VLAN_INTERFACE")}
    assert "Vlan101|10.32.1.254/24" in {f.found for f in found}


def test_a_tenant_member_port_left_down(ai):
    (f,) = _broken(ai, lambda c: c["fe-l1"]["PORT"]["Ethernet20"].__setitem__("admin_status", "down"))
    assert (f.node, f.port, f.table, f.found) == ("fe-l1", "Ethernet20", "PORT", "down")


def test_a_leaf_uplink_too_small_for_a_vxlan_frame(ai):
    contract, configs = ai
    uplink = next(p for p, need in contract.fe_mtu["fe-l2"].items() if need == 1500)
    (f,) = _broken(ai, lambda c: c["fe-l2"]["PORT"][uplink].__setitem__("mtu", "1450"))
    assert (f.node, f.port, f.found) == ("fe-l2", uplink, "1450") and f.expected.startswith("mtu >= 1500")


def test_the_contract_holds_the_declared_cabling(ai):
    contract, _ = ai
    assert contract.be_ports["be-s1"]["Ethernet0"] == "be-g1-r0:Ethernet0"
    assert set(contract.fe_mtu) == {"fe-l1", "fe-l2", "fe-s1", "fe-s2"}


def test_a_render_dir_with_a_broken_tenant_table_exits_3(tmp_path, capsys):
    plan = make_plan(build(BUILTINS["ai-cluster"]()))
    write_artifacts(artifacts(plan), tmp_path)
    path = tmp_path / "configs" / "fe-l1" / "config_db.json"
    db = json.loads(path.read_text())
    db["VXLAN_TUNNEL"]["vtep"]["src_ip"] = "10.16.0.99"
    path.write_text(json.dumps(db))
    assert main(["audit", "--against", "ai-cluster", str(tmp_path)]) == 3
    assert "VXLAN_TUNNEL" in capsys.readouterr().out
