"""A HwSKU fablab does not ship, read from its folder of SONiC's device tree
(`HwSku.from_sonic`), and a declaration that holds one: planned, rendered, kept in a lab's
state, hashed, written back as Python.

The folders are laid out in a temporary tree, device/<vendor>/<platform>/<HwSKU>/, from the
reference files (flat <HwSKU>.port_config.ini, platform folders with platform.json and
<HwSKU>/hwsku.json), and what fablab reads is compared with tests/sonic_hwsku.py's reading.
"""
from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from harness import HwSku
from harness.cli.main import main
from harness.core.errors import InputError, TopologyError
from harness.core.hwsku import AUTOMATIC, CATALOG, hwsku
from harness.core.model import Cluster, Hardware, build, cluster_from_dict, cluster_to_dict
from harness.core.plan import make_plan
from harness.core.pysource import declaration_source
from harness.render import artifacts
from harness.report.provenance import declaration_sha256
from sonic_hwsku import RefRow, platform_of, read_port_config, ref_rows
from topologies import BUILTINS

# (HwSKU, what its folder holds): none of them is in fablab's catalogue
INI_AND_JSON = "NH-4220-64x800G-2x25G"  # port_config.ini, hwsku.json, ../platform.json
JSON_ONLY = "Arista-7060X6-16PE-384C-O128S2"  # hwsku.json and ../platform.json, no port_config.ini
INI_ONLY = "Arista-7060PX5-64S"  # port_config.ini alone, as older HwSKUs are
NOKIA = "Nokia-IXR7220-H5-64O"  # port_config.ini with a fec column, hwsku.json, ../platform.json


@pytest.fixture(scope="module")
def device(reference, tmp_path_factory) -> Path:
    """A sonic-buildimage `device/` tree of the HwSKUs above, from the reference files."""
    hwsku_dir = reference / "sonic-hwsku"
    if not hwsku_dir.is_dir() or not (reference / "sonic-platform").is_dir():
        pytest.skip(f"SONiC HwSKU files not found under {reference} (set FABLAB_REFERENCE to the reference folder)")
    root = tmp_path_factory.mktemp("sonic") / "device"
    for sku, ini, json_too in ((INI_AND_JSON, True, True), (JSON_ONLY, False, True), (INI_ONLY, True, False),
                               (NOKIA, True, True), ("ACS-SN5600", True, True)):
        platform = platform_of(reference, sku) if json_too else None
        folder = root / "vendor" / (platform.name if platform else "x86_64-some_platform-r0") / sku
        folder.mkdir(parents=True)
        if ini:
            shutil.copy(hwsku_dir / f"{sku}.port_config.ini", folder / "port_config.ini")
        if platform:
            shutil.copy(platform / "platform.json", folder.parent / "platform.json")
            shutil.copy(platform / sku / "hwsku.json", folder / "hwsku.json")
    return root


def folder(device: Path, sku: str) -> Path:
    return next(device.glob(f"*/*/{sku}"))


def rows_of(sku: HwSku) -> list[RefRow]:
    return [RefRow(r.name, r.lanes, r.alias, r.index, r.speed) for r in sku.rows]


@pytest.mark.parametrize("name", [INI_AND_JSON, JSON_ONLY, INI_ONLY, NOKIA])
def test_a_hwsku_read_from_its_folder_has_sonics_rows(device, reference, name):
    assert not any(h.name == name for h in CATALOG)
    sku = HwSku.from_sonic(folder(device, name))
    assert sku.name == name and sku.source == str(folder(device, name).resolve())
    assert rows_of(sku) == ref_rows(reference / "sonic-hwsku", name)  # the reference port_config.ini's rows
    assert [r.position for r in sku.rows] == list(range(len(sku.rows)))
    # the slow SFP ports after the cages are no data ports
    assert {r.speed for r in sku.rows[sku.data_ports:]} <= {10000, 25000} and sku.data_ports >= 32
    # cages, where SONiC has the platform.json and hwsku.json to break them out
    assert bool(sku.cages) == (name != INI_ONLY)


def test_a_platform_folder_and_a_name_read_the_same(device):
    one = HwSku.from_sonic(folder(device, INI_AND_JSON))
    assert HwSku.from_sonic(folder(device, INI_AND_JSON).parent, INI_AND_JSON) == one


def test_a_shipped_hwsku_read_from_sonics_folder_is_the_shipped_one(device):
    # ACS-SN5600's port_config.ini has no speed column: its speeds come from hwsku.json
    read = HwSku.from_sonic(folder(device, "ACS-SN5600"))
    assert replace(read, source="") == hwsku("ACS-SN5600")
    assert {r.speed for r in read.data_rows} == {800000} and read.data_ports == 64


def test_a_cage_read_from_sonic_breaks_out_as_its_platform_says(device, reference):
    sku = HwSku.from_sonic(folder(device, INI_AND_JSON))
    platform = json.loads((platform_of(reference, INI_AND_JSON) / "platform.json").read_text())["interfaces"]
    cage = sku.cages[0]
    ports = sku.broken_out(cage, "2x400G")
    assert [(p.name, p.alias, p.lanes) for p in ports] == [
        ("Ethernet0", "Port1/1", cage.lanes[:4]), ("Ethernet4", "Port1/2", cage.lanes[4:])]
    assert [p.alias for p in ports] == platform["Ethernet0"]["breakout_modes"]["2x400G"]
    assert {p.position for p in ports} == {0}  # both on the cage's row: docker-sonic-vs's eth1


def sonic_cluster(sku: HwSku) -> Cluster:
    return replace(BUILTINS["ai-cluster"](), hardware=Hardware(be_spine=sku, fe_leaf="ACS-SN5600"))


def test_a_declaration_holding_a_hwsku_read_from_sonic_plans_and_renders_its_lanes(device, reference):
    sku = HwSku.from_sonic(folder(device, INI_AND_JSON))
    plan = make_plan(build(sonic_cluster(sku)))
    spine = plan.switch("be-s1")
    assert spine.hwsku == INI_AND_JSON and {p.speed for p in spine.ports} == {800}
    db = json.loads(artifacts(plan)["configs/be-s1/config_db.json"])
    assert db["DEVICE_METADATA"]["localhost"]["hwsku"] == INI_AND_JSON
    ini = {r.name: r for r in read_port_config(reference / "sonic-hwsku" / f"{INI_AND_JSON}.port_config.ini")}
    for port, fields in db["PORT"].items():
        assert (fields["lanes"], fields["alias"]) == (",".join(map(str, ini[port].lanes)), ini[port].alias), port


def test_a_state_file_hash_and_python_source_keep_a_hwsku_read_from_sonic(device):
    cluster = sonic_cluster(HwSku.from_sonic(folder(device, INI_AND_JSON)))
    stored = json.loads(json.dumps(cluster_to_dict(cluster)))  # a lab's state file
    again = cluster_from_dict(stored)
    assert again == cluster and isinstance(again.hardware.be_spine, HwSku)
    assert declaration_sha256(again) == declaration_sha256(stored) == declaration_sha256(cluster)
    assert declaration_sha256(sonic_cluster(hwsku("Dell-Z9864f-O64"))) != declaration_sha256(cluster)  # control
    source = declaration_source(cluster, "a cluster")
    assert f"be_spine=HwSku.from_sonic({str(folder(device, INI_AND_JSON).resolve())!r})" in source
    assert "fe_leaf='ACS-SN5600'" in source
    assert "HwSku" in next(line for line in source.splitlines() if line.startswith("from harness import"))
    scope: dict = {}
    exec(compile(source, "cluster.py", "exec"), scope)
    assert scope["cluster"] == cluster


def test_python_source_names_a_shipped_hwsku_and_refuses_one_made_by_hand():
    shipped = replace(BUILTINS["ai-cluster"](), hardware=Hardware(be_spine=hwsku("Dell-Z9864f-O64")))
    source = declaration_source(shipped, "a cluster")
    assert "be_spine=HwSku.named('Dell-Z9864f-O64')" in source
    scope: dict = {}
    exec(compile(source, "cluster.py", "exec"), scope)
    assert scope["cluster"] == shipped
    by_hand = replace(hwsku("Dell-Z9864f-O64"), name="My-Z9864f")
    with pytest.raises(InputError, match="My-Z9864f .*HwSku.from_sonic"):
        declaration_source(replace(shipped, hardware=Hardware(be_spine=by_hand)), "a cluster")


def test_a_hardware_field_of_another_type_is_refused_naming_both_kinds():
    with pytest.raises(TopologyError) as e:
        build(replace(BUILTINS["ai-cluster"](), hardware=Hardware(be_leaf=42)))
    (p,) = e.value.problems
    assert p.field == "hardware.be_leaf" and "a HwSKU's name or a HwSku" in p.message
    assert "HwSku.from_sonic" in p.hint


# --------------------------------------------------------------------------- faults, each beside its control

def problem_of(path, name=None):
    with pytest.raises(TopologyError) as e:
        HwSku.from_sonic(path, name)
    (p,) = e.value.problems
    return p


def test_a_missing_folder_or_a_file_is_refused(device):
    assert HwSku.from_sonic(folder(device, INI_ONLY)).rows  # the control
    p = problem_of(device / "nowhere" / INI_ONLY)
    assert (p.field, p.message) == (str(device / "nowhere" / INI_ONLY), "does not exist")
    assert "device/<vendor>/<platform>/<HwSKU>/" in p.hint
    p = problem_of(folder(device, INI_ONLY) / "port_config.ini")
    assert p.message == "is a file, not a folder"


def test_a_malformed_row_is_refused_naming_its_file_and_line(device, tmp_path):
    bad = tmp_path / "x86_64-p-r0" / "Bad-SKU"
    shutil.copytree(folder(device, INI_ONLY), bad)
    assert HwSku.from_sonic(bad).name == "Bad-SKU"  # the control: the copy reads
    lines = (bad / "port_config.ini").read_text().splitlines()
    row = next(i for i, line in enumerate(lines) if line.startswith("Ethernet8 "))
    lines[row] = lines[row].replace("9,10,11,12,13,14,15,16", "9,10,x,12")
    (bad / "port_config.ini").write_text("\n".join(lines) + "\n")
    p = problem_of(bad)
    assert p.field == f"{bad.resolve() / 'port_config.ini'}:{row + 1}" and "lanes '9,10,x,12'" in p.message


def test_a_folder_without_port_config_nor_hwsku_json_is_refused(device, tmp_path):
    empty = tmp_path / "x86_64-p-r0" / "Empty-SKU"
    empty.mkdir(parents=True)
    p = problem_of(empty)
    assert p.message.startswith("has no port_config.ini, nor a hwsku.json with platform.json")
    (empty / "hwsku.json").write_text((folder(device, JSON_ONLY) / "hwsku.json").read_text())
    assert "has no port_config.ini" in problem_of(empty).message  # hwsku.json needs ../platform.json too
    (empty.parent / "platform.json").write_text((folder(device, JSON_ONLY).parent / "platform.json").read_text())
    assert HwSku.from_sonic(empty).data_ports == 128  # the control: both, and it reads


def test_rows_without_speeds_and_no_json_to_derive_them_are_refused(device, tmp_path):
    bare = tmp_path / "x86_64-p-r0" / "ACS-SN5600"
    bare.mkdir(parents=True)
    shutil.copy(folder(device, "ACS-SN5600") / "port_config.ini", bare)
    p = problem_of(bare)
    assert p.message == "has no speed" and "add a speed column" in p.hint and p.field.endswith(".ini:18")


def test_a_mode_the_platform_lacks_and_broken_json_are_refused(device, tmp_path):
    platform = tmp_path / "x86_64-nexthop_4220-r0"
    shutil.copytree(folder(device, INI_AND_JSON).parent, platform)
    sku = platform / INI_AND_JSON
    assert HwSku.from_sonic(sku).cages  # the control
    data = json.loads((sku / "hwsku.json").read_text())
    data["interfaces"]["Ethernet8"]["default_brkout_mode"] = "1x200G"
    (sku / "hwsku.json").write_text(json.dumps(data, indent=4))
    p = problem_of(sku)
    assert p.field == str(sku.resolve() / "hwsku.json") and p.message.startswith("Ethernet8: Ethernet8 takes no "
                                                                                   "breakout mode '1x200G'")
    (sku / "hwsku.json").write_text('{\n  "interfaces": {\n    "Ethernet0": \n}\n')
    p = problem_of(sku)
    assert p.field == f"{sku.resolve() / 'hwsku.json'}:4" and p.message.startswith("not JSON")


# --------------------------------------------------------------------------- the catalogue, listed

def test_fablab_hwskus_lists_the_catalogue_and_marks_the_automatic_five(capsys):
    assert main(["hwskus", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [r["name"] for r in listed] == [h.name for h in CATALOG]
    assert [r["name"] for r in listed if r["automatic"]] == sorted(AUTOMATIC, key=[h.name for h in CATALOG].index)
    sn5600 = next(r for r in listed if r["name"] == "ACS-SN5600")
    assert sn5600["ports"] == {"800G": 64} and sn5600["data_ports"] == 64 and sn5600["breakout"]
    assert not next(r for r in listed if r["name"] == "Force10-S6000")["breakout"]


def test_a_planned_switch_runs_the_hwsku_object_its_role_declares(device):
    from harness.core.portmap import running

    sku = HwSku.from_sonic(folder(device, INI_AND_JSON))
    plan = make_plan(build(sonic_cluster(sku)))
    spine, leaf = plan.switch("be-s1"), plan.switch("fe-l1")
    hardware = plan.fabric.cluster.hardware
    assert running(hardware, spine.role, spine.hwsku) is sku  # no name of the catalogue: the object itself
    assert running(hardware, leaf.role, leaf.hwsku) is hwsku("ACS-SN5600")  # a name: the catalogue's
    with pytest.raises(TopologyError, match="unknown HwSKU"):
        hwsku(INI_AND_JSON)  # the control: the catalogue does not know it
