"""`fablab audit`: the lossless contract hop by hop. Every built-in's render is clean; each way
of breaking one hop is found and named (switch, port, table, expected)."""
from __future__ import annotations

import copy
import json
from dataclasses import replace

import pytest

from harness.checks.lossless import audit, load_dir
from harness.cli import main
from harness.errors import HarnessError, TopologyError
from harness.model import Lossless, build
from harness.plan import make_plan
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
    assert any("as at its peer be-g1-r0:Ethernet16" in f.expected for f in found)  # both ends of a link compared


def test_one_switch_mapping_roce_dscp_to_another_class(ai):
    found = _broken(ai, lambda c: c["be-g2-r1"]["DSCP_TO_TC_MAP"]["AI_ROCE"].__setitem__("26", "4"))
    assert found and all(f.node == "be-g2-r1" and f.table == "DSCP_TO_TC_MAP" for f in found)
    assert found[0].expected == "DSCP 26 -> TC 3" and found[0].found == "TC 4"


def test_one_port_whose_mtu_cannot_carry_a_roce_frame(ai):
    found = _broken(ai, lambda c: c["be-g1-r0"]["PORT"]["Ethernet16"].__setitem__("mtu", "4000"))
    assert [(f.node, f.port, f.table) for f in found][0] == ("be-g1-r0", "Ethernet16", "PORT")
    assert "mtu >= 4156" in found[0].expected and found[0].found == "4000"


def test_a_host_port_whose_mtu_is_too_small(ai):
    found = _broken(ai, lambda c: c["be-g1-r0"]["PORT"]["Ethernet0"].__setitem__("mtu", "1500"))
    assert [(f.node, f.port, f.table, f.found) for f in found] == [("be-g1-r0", "Ethernet0", "PORT", "1500")]


def test_a_lossless_queue_without_ecn(ai):
    found = _broken(ai, lambda c: c["be-s2"]["WRED_PROFILE"]["AI_LOSSLESS"].__setitem__("ecn", "ecn_none"))
    assert found and all(f.table == "QUEUE" and f.port.endswith("|3") and "ECN" in f.expected for f in found)


def test_cnps_on_a_queue_that_is_not_strict(ai):
    found = _broken(ai, lambda c: c["be-s2"]["QUEUE"]["Ethernet4|6"].__setitem__("scheduler", "scheduler.0"))
    assert [(f.node, f.port, f.table, f.found) for f in found] == [("be-s2", "Ethernet4|6", "QUEUE", "DWRR")]


def test_a_buffer_profile_that_is_not_defined(ai):
    found = _broken(ai, lambda c: c["be-s1"]["BUFFER_PG"]["Ethernet8|3"].__setitem__("profile", "pg_lossless_x"))
    assert [(f.port, f.table) for f in found] == [("Ethernet8|3", "BUFFER_PG")]
    assert "pg_lossless_x" in found[0].found


def test_a_port_without_the_pfc_watchdog(ai):
    found = _broken(ai, lambda c: c["be-g1-r1"]["PFC_WD"].pop("Ethernet20"))
    assert [(f.node, f.port, f.table) for f in found] == [("be-g1-r1", "Ethernet20", "PFC_WD")]


def test_a_port_without_qos_maps(ai):
    found = _broken(ai, lambda c: c["be-g1-r1"]["PORT_QOS_MAP"].pop("Ethernet0"))
    assert [(f.node, f.port, f.table) for f in found] == [("be-g1-r1", "Ethernet0", "PORT_QOS_MAP")]


def test_cli_exit_codes(tmp_path):
    out = tmp_path / "r"
    write_artifacts(artifacts(make_plan(build(BUILTINS["rail-only"]()))), out)
    assert main(["audit", str(out)]) == 0
    db = out / "configs" / "be-r0" / "config_db.json"
    data = json.loads(db.read_text())
    data["PORT"]["Ethernet0"]["mtu"] = "2000"
    db.write_text(json.dumps(data))
    assert main(["audit", str(out)]) == 3
    assert main(["audit", str(tmp_path / "nothing")]) == 2


def test_a_render_without_its_contract_is_refused(tmp_path):
    out = tmp_path / "r"
    write_artifacts(artifacts(make_plan(build(BUILTINS["rail-only"]()))), out)
    (out / "lossless.json").unlink()
    with pytest.raises(HarnessError, match="lossless.json is missing"):
        load_dir(out)


@pytest.mark.parametrize("change,field", [
    (dict(roce_priority=8), "lossless.roce_priority"),
    (dict(roce_dscp=64), "lossless.roce_dscp"),
    (dict(cnp_priority=3), "lossless.cnp_priority"),
    (dict(cnp_dscp=26), "lossless.cnp_dscp"),
    (dict(roce_mtu=3000), "lossless.roce_mtu"),
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
    from harness.checks.jumbo import probe_pairs

    plan = make_plan(build(BUILTINS[topology]()))
    pairs = probe_pairs(plan)
    leaves = {(sw.rail, sw.name) for sw in plan.switches if sw.rail is not None}
    reached = {(rail, plan.host(dst).nic(nic).peer) for (_, _, rail), (dst, nic) in pairs}
    assert reached == leaves
    assert all(src != dst for (src, _, _), (dst, _) in pairs)
