"""Every config_db.json fablab renders passes SONiC's own YANG models (202411 and master).

Since 202405 `config load` / `config reload` refuse a file that SONiC's YANG rejects, so a
config that does not validate never reaches CONFIG_DB. tests/sonic_yang.py shapes the
tables as SONiC does and libyang's yanglint judges them; the negative controls show that
the judge can say no.
"""
from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from harness.catalog import load_cluster
from harness.core.model import Acl, AclRule, Frontend, Hardware, Lossless, Tenant, build
from harness.core.plan import make_plan
from harness.render import artifacts
from conftest import require_tool
from sonic_yang import Schema, validate
from topologies import BUILTINS
from topologies.multi_rail import multi_rail

RELEASES = ("202411", "master")


@pytest.fixture(scope="module")
def yanglint():
    return require_tool("yanglint", "libyang2-tools")


@pytest.fixture(scope="module")
def schemas(reference):
    out = {}
    for release in RELEASES:
        path = reference / "sonic-yang" / release
        if not path.is_dir():
            pytest.skip(f"SONiC YANG models not found at {path} (set FABLAB_REFERENCE to the reference folder)")
        out[release] = Schema(path)
    return out


@pytest.fixture(scope="module")
def configs():
    """(topology, switch) -> the config_db of every switch of every built-in."""
    out = {}
    declared = {t: BUILTINS[t]() for t in sorted(BUILTINS)}
    # the lossless settings declared away from their defaults render valid tables too
    declared[CUSTOM_LOSSLESS] = replace(BUILTINS["ai-cluster"](), lossless=Lossless(
        roce_priority=4, roce_dscp=24, cnp_priority=7, cnp_dscp=46, roce_mtu=2048))
    # trunks (a gateway and GPU nodes in two tenants: tagged members), a storage tenant,
    # every kind of ACL match, a deny default
    declared[CUSTOM_TENANTS] = replace(
        BUILTINS["ai-cluster"](), frontend=Frontend(spines=2, leaves=2, storage_servers=2, gateways=1),
        tenants=(Tenant("train", vni=10100, members=("gpu0[1-4]", "gw1")),
                 Tenant("infer", vni=10200, members=("gpu0[5-8]", "gw1"), vlan=2000),
                 Tenant("storage", vni=16000000, members=("role:gpu", "role:storage"), subnet="10.33.0.0/23")),
        acl=Acl(rules=(AclRule("permit", "tenant:storage", "role:storage", "tcp", "2049", "600-1023"),
                       AclRule("deny", "gpu01", "any", "udp", "4791"),
                       AclRule("deny", "any", "role:gateway", "icmp"),
                       AclRule("permit", "role:gpu", "role:gateway")), default="deny"))
    # rail-only leaves of two rails each: a VRF per rail, the host ports in their rail's VRF
    declared[CUSTOM_RAIL_VRFS] = multi_rail(kind="rail-only")
    # leaves declared on 800G cages: BREAKOUT_CFG, and ports broken out to 400G, 200G and 100G
    declared[CUSTOM_COMBINED] = load_cluster(str(Path(__file__).resolve().parents[2] / "docs/examples/combined.py"))
    declared[CUSTOM_BREAKOUT] = replace(BUILTINS["ai-cluster"](), hardware=Hardware(
        be_leaf="Arista-7060X6-64PE", fe_leaf="Arista-7060X6-64PE"))
    # leaves and spines on NVIDIA SN5600s, SONiC's lanes: the BE leaves' 800G cages broken out for
    # 400G hosts (BREAKOUT_CFG), the spines on their 800G rows, the FE leaves' 100G hosts on 8 x 100G rows
    declared[CUSTOM_SN5600] = replace(BUILTINS["ai-cluster"](), hardware=Hardware(
        be_leaf="ACS-SN5600", be_spine="ACS-SN5600", fe_leaf="Mellanox-SN5600-C224O8"))
    for topology, cluster in declared.items():
        plan = make_plan(build(cluster))
        files = artifacts(plan)
        for sw in plan.switches:
            out[(topology, sw.name)] = json.loads(files[f"configs/{sw.name}/config_db.json"])
    return out


@pytest.fixture(scope="module")
def verdicts(yanglint, schemas, configs, tmp_path_factory):
    """(release, topology, switch) -> what yanglint rejects: one batch per release."""
    out = {}
    for release, schema in schemas.items():
        named = {f"{t} {s}": db for (t, s), db in configs.items()}
        found = validate(yanglint, schema, named, tmp_path_factory.mktemp(release))
        out.update({(release, *name.split(" ")): errors for name, errors in found.items()})
    return out


CUSTOM_LOSSLESS = "ai-cluster+lossless"
CUSTOM_TENANTS = "ai-cluster+trunks"
CUSTOM_RAIL_VRFS = "multi-rail+rail-only"
CUSTOM_BREAKOUT = "ai-cluster-broken-out"  # 64 × 800G leaves, cages broken out for slower links
CUSTOM_COMBINED = "docs-examples-combined"  # pods, two rails per leaf, dual-homed FE, broken-out BE leaves
CUSTOM_SN5600 = "ai-cluster-sn5600"  # HwSKUs beyond the automatic five, named in Hardware


@pytest.mark.parametrize("release", RELEASES)
@pytest.mark.parametrize("topology", sorted(BUILTINS) + [CUSTOM_LOSSLESS, CUSTOM_TENANTS, CUSTOM_RAIL_VRFS,
                                                         CUSTOM_SN5600])
def test_config_db_passes_sonic_yang(verdicts, topology, release):
    rejected = [f"{switch}: {error}" for (rel, topo, switch), errors in sorted(verdicts.items())
                if rel == release and topo == topology for error in errors]
    checked = [k for k in verdicts if k[:2] == (release, topology)]
    assert checked, f"no switch of {topology} was validated"
    assert rejected == [], f"SONiC {release} YANG rejects {topology}:\n" + "\n".join(rejected)


def _without_mgmt_port(db: dict) -> dict:
    return {t: v for t, v in db.items() if t != "MGMT_PORT"}


def _mgmt_vrf_not_a_boolean(db: dict) -> dict:
    return {**db, "MGMT_VRF_CONFIG": {"vrf_global": {"mgmtVrfEnabled": "yes"}}}


def _unknown_device_type(db: dict) -> dict:
    return {**db, "DEVICE_METADATA": {"localhost": {**db["DEVICE_METADATA"]["localhost"], "type": "TorRouter"}}}


def _port_routed_and_in_a_vlan(db: dict) -> dict:
    port = next(k.split("|")[1] for k in db["VLAN_MEMBER"])
    return {**db, "INTERFACE": {**db["INTERFACE"], port: {}, f"{port}|10.99.0.0/31": {}}}


def _tunnel_map_to_a_bad_vlan(db: dict) -> dict:
    key, value = next(iter(db["VXLAN_TUNNEL_MAP"].items()))
    return {**db, "VXLAN_TUNNEL_MAP": {key: {**value, "vlan": "Vlan5000"}}}


def _acl_rule_with_a_bad_range(db: dict) -> dict:
    return {**db, "ACL_RULE": {**db["ACL_RULE"], "FE_EDGE|BAD": {"PRIORITY": "5", "PACKET_ACTION": "DROP",
                                                                  "L4_DST_PORT_RANGE": "70000-1"}}}


@pytest.mark.parametrize("release", RELEASES)
@pytest.mark.parametrize(("break_it", "switch", "where"), [
    (_without_mgmt_port, "be-g1-r0", "MGMT_INTERFACE eth0|"),
    (_mgmt_vrf_not_a_boolean, "be-g1-r0", "MGMT_VRF_CONFIG"),
    (_unknown_device_type, "be-g1-r0", "DEVICE_METADATA localhost"),
    (_port_routed_and_in_a_vlan, "fe-l1", "VLAN_MEMBER "),
    (_tunnel_map_to_a_bad_vlan, "fe-l1", "VXLAN_TUNNEL_MAP "),
    (_acl_rule_with_a_bad_range, "fe-l1", "ACL_RULE FE_EDGE|BAD")])
def test_yang_check_rejects_a_broken_config(yanglint, schemas, configs, tmp_path, release, break_it, switch, where):
    good = configs[("ai-cluster", switch)]
    found = validate(yanglint, schemas[release], {"good": good, "broken": break_it(good)}, tmp_path)
    assert found["good"] == []
    assert found["broken"] and found["broken"][0].startswith(where), found["broken"]


@pytest.mark.parametrize("release", RELEASES)
def test_yang_check_rejects_a_port_in_an_undeclared_vrf(yanglint, schemas, configs, tmp_path, release):
    good = configs[(CUSTOM_RAIL_VRFS, "be-r0-1")]
    assert set(good["VRF"]) == {"Vrf_rail0", "Vrf_rail1"}
    assert good["INTERFACE"]["Ethernet0"] == {"vrf_name": "Vrf_rail0"}
    assert good["INTERFACE"]["Ethernet32"] == {"vrf_name": "Vrf_rail1"}  # 8 nodes: rail 1 from the 9th port
    broken = {**good, "VRF": {"Vrf_rail1": {}}}  # rail 0's port group names a VRF that is gone
    found = validate(yanglint, schemas[release], {"good": good, "broken": broken}, tmp_path)
    assert found["good"] == []
    assert found["broken"], "a port in a missing VRF must be rejected"


def test_a_declared_sn5600_renders_sonics_lanes(configs, reference):
    """The ACS-SN5600 leaves and spines of CUSTOM_SN5600: every PORT on SONiC's lanes for it,
    a row of its port_config.ini or (broken out) a port platform.json gives the cage's mode."""
    from sonic_hwsku import read_port_config

    ini = reference / "sonic-hwsku" / "ACS-SN5600.port_config.ini"
    platform = reference / "sonic-platform" / "x86_64-nvidia_sn5600-r0" / "platform.json"
    if not ini.is_file() or not platform.is_file():
        pytest.skip(f"SONiC's ACS-SN5600 files not found under {reference}")
    rows = {r.name: r for r in read_port_config(ini)}
    cages = json.loads(platform.read_text())["interfaces"]
    checked = 0
    for switch in ("be-g1-r0", "be-s1"):
        db = configs[(CUSTOM_SN5600, switch)]
        assert db["DEVICE_METADATA"]["localhost"]["hwsku"] == "ACS-SN5600"
        modes = {parent: v["brkout_mode"] for parent, v in db["BREAKOUT_CFG"].items()}  # every cage's
        for port, fields in db["PORT"].items():
            parent = f"Ethernet{int(port[8:]) // 8 * 8}"  # the SN5600's cages are Ethernet0, 8, ... of 8 lanes
            aliases = cages[parent]["breakout_modes"][modes[parent]]
            width = 8 // len(aliases)
            k = (int(port[8:]) - int(parent[8:])) // width
            lanes = cages[parent]["lanes"].split(",")[k * width:(k + 1) * width]
            assert (fields["lanes"], fields["alias"]) == (",".join(lanes), aliases[k]), (switch, port)
            if len(aliases) == 1:  # a cage in its own mode: the row of port_config.ini
                assert (fields["lanes"], fields["alias"]) == (",".join(map(str, rows[port].lanes)), rows[port].alias)
            checked += 1
    leaf = {v["brkout_mode"] for v in configs[(CUSTOM_SN5600, "be-g1-r0")]["BREAKOUT_CFG"].values()}
    assert checked >= 10 and leaf == {"1x800G[400G,200G,100G,50G,40G,25G,10G]",  # 800G up
                                      "2x400G[200G,100G,50G,40G,25G,10G]"}  # 400G down
