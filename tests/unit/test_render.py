"""What the rendered artifacts must say, checked by reading them back."""
from __future__ import annotations

import csv
import io
import json
import subprocess

import pytest
import yaml

from harness.core.model import build
from harness.core.plan import make_plan
from harness.render import artifacts
from topologies import BUILTINS


@pytest.fixture(scope="module", params=sorted(BUILTINS))
def builtin(request):
    plan = make_plan(build(BUILTINS[request.param]()))
    return plan, artifacts(plan)


def test_clab_file_passes_containerlab_schema(builtin, clab_validator):
    plan, files = builtin
    doc = yaml.safe_load(files[f"{plan.name}.clab.yml"])
    errors = [f"{list(e.path)}: {e.message}" for e in clab_validator.iter_errors(doc)]
    assert errors == []


def test_schema_check_can_fail(ai_plan, clab_validator):
    doc = yaml.safe_load(artifacts(ai_plan)["ai-cluster.clab.yml"])
    doc["topology"]["nodes"]["gpu01"]["kind"] = 7
    assert list(clab_validator.iter_errors(doc))


def test_every_frr_conf_passes_frrs_parser(builtin, vtysh, tmp_path):
    plan, files = builtin
    for rel, text in files.items():
        if rel.endswith("frr.conf"):
            path = tmp_path / rel.replace("/", "_")
            path.write_text(text)
            run = subprocess.run([vtysh, "--dryrun", "-f", str(path)], capture_output=True, text=True)
            assert run.returncode == 0, f"{rel}: {run.stdout}{run.stderr}"


def test_frr_parser_rejects_a_broken_conf(ai_plan, vtysh, tmp_path):
    text = artifacts(ai_plan)["configs/be-s1/frr.conf"].replace("maximum-paths 64", "maximum-pathz 64")
    path = tmp_path / "broken.conf"
    path.write_text(text)
    assert subprocess.run([vtysh, "--dryrun", "-f", str(path)], capture_output=True).returncode != 0


def test_be_config_db_is_lossless_and_fe_is_not(ai_plan):
    files = artifacts(ai_plan)
    be = json.loads(files["configs/be-g1-r0/config_db.json"])
    fe = json.loads(files["configs/fe-l1/config_db.json"])
    assert be["DSCP_TO_TC_MAP"]["AI_ROCE"]["26"] == "3"
    assert be["DSCP_TO_TC_MAP"]["AI_ROCE"]["48"] == "6"
    assert all(q["pfc_enable"] == "3" for q in be["PORT_QOS_MAP"].values())
    assert be["QUEUE"]["Ethernet0|3"]["wred_profile"] == "AI_LOSSLESS"
    assert be["WRED_PROFILE"]["AI_LOSSLESS"]["ecn"] == "ecn_all"
    assert {p["mtu"] for p in be["PORT"].values()} == {"9100"}
    # Arista-7060X6-64PE-P32O64: host ports on its 400G rows, uplinks on its 800G rows
    assert be["PORT"]["Ethernet256"]["speed"] == "400000" and be["PORT"]["Ethernet0"]["speed"] == "800000"
    assert "PORT_QOS_MAP" not in fe and "DSCP_TO_TC_MAP" not in fe
    assert be["DEVICE_METADATA"]["localhost"]["bgp_asn"] == "64601"


def test_frr_conf_is_unnumbered_with_bfd_profile_and_multipath(ai_plan):
    text = artifacts(ai_plan)["configs/be-g1-r0/frr.conf"]
    assert "neighbor Ethernet0 interface peer-group fabric" in text
    assert "neighbor Ethernet8 interface peer-group fabric" in text
    assert "bgp bestpath as-path multipath-relax" in text
    assert "maximum-paths 64" in text
    assert "neighbor fabric bfd profile fabric" in text and "detect-multiplier 3" in text
    assert "router bgp 64601" in text


def test_clab_names_only_declared_nodes_and_binds_configs(builtin):
    plan, files = builtin
    doc = yaml.safe_load(files[f"{plan.name}.clab.yml"])
    nodes = doc["topology"]["nodes"]
    declared = {n.name for n in plan.fabric.nodes}
    assert set(nodes) <= declared
    for link in doc["topology"]["links"]:
        for ep in link["endpoints"]:
            assert ep.split(":")[0] in nodes
    for sw in plan.switches:
        node = nodes[sw.name]
        assert node["kind"] == "sonic-vs"
        assert f"configs/{sw.name}/config_db.json:/etc/fablab/config_db.json:ro" in node["binds"]
        assert any("/etc/fablab/init.sh" in cmd for cmd in node["exec"])
        for bind in node["binds"]:
            assert bind.split(":")[0] in files
    for h in plan.hosts:
        assert nodes[h.name]["kind"] == "linux"
        assert any(cmd.startswith("ip address add") for cmd in nodes[h.name]["exec"])


def test_clab_endpoints_are_stable_and_unique(builtin):
    plan, files = builtin
    doc = yaml.safe_load(files[f"{plan.name}.clab.yml"])
    endpoints = [ep for link in doc["topology"]["links"] for ep in link["endpoints"]]
    assert len(endpoints) == len(set(endpoints))


def test_cabling_csv_has_every_cable(builtin):
    plan, files = builtin
    rows = list(csv.DictReader(io.StringIO(files["cabling.csv"])))
    assert len(rows) == len(plan.fabric.links)
    assert set(rows[0]) == {"a_device", "a_port", "b_device", "b_port", "plane", "rail", "speed", "media"}
    assert {r["plane"] for r in rows} == {"be", "fe", "mgmt"}


def test_diagram_draws_the_planes_apart(ai_plan):
    svg = artifacts(ai_plan)["topology.svg"]
    assert svg.startswith("<?xml") and "</svg>" in svg
    for label in ("Backend (BE)", "Frontend (FE)", "Management (OOB)"):
        assert label in svg


def test_declared_bgp_timers_are_on_every_session_and_the_default_is_frrs_datacenter(ai_plan):
    from dataclasses import replace

    from harness.core.model import Routing
    from harness.render.frr import frr_conf, host_frr_conf

    assert " neighbor fabric timers 3 9" in artifacts(ai_plan)["configs/be-g1-r0/frr.conf"].splitlines()  # the control
    plan = make_plan(build(replace(BUILTINS["dual-homed"](), routing=Routing(keepalive_s=10, hold_s=30))))
    leaf = next(sw for sw in plan.switches if sw.host_peers)
    host = next(h for h in plan.hosts if h.routed)
    assert {" neighbor fabric timers 10 30", " neighbor hosts timers 10 30"} <= set(frr_conf(plan, leaf).splitlines())
    assert " neighbor leaves timers 10 30" in host_frr_conf(plan, host).splitlines()
    assert not any("timers 3 9" in x for x in frr_conf(plan, leaf).splitlines() + host_frr_conf(plan, host).splitlines())


def test_switch_configs_are_the_renders_own_and_nothing_else():
    """What diff and up --configs compare with: each node's config_db.json and frr.conf, as the
    whole render has them (dual-homed hosts' frr.conf too), no clab file, CSV or init script."""
    from harness.render import switch_configs

    plan = make_plan(build(BUILTINS["dual-homed"]()))
    whole = artifacts(plan)
    configs = switch_configs(plan)
    assert configs == {k: v for k, v in whole.items()
                       if k.startswith("configs/") and k.endswith(("/frr.conf", "/config_db.json"))}
    assert any(h.routed and f"configs/{h.name}/frr.conf" in configs for h in plan.hosts)  # the control
