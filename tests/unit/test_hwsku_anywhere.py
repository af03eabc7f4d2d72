"""Any HwSKU, anywhere a plan names one (issue 66, item 5): a plan's HwSku column (cable list,
sonic-mgmt, a clab file's `fablab.hwsku`) and `Hardware(...)` take a SONiC HwSKU folder by its
path (relative to the plan's or declaration's folder) or by its name under `--sonic-devices` /
FABLAB_SONIC_DEVICES; one fablab finds nowhere is refused (exit 2) naming where it looked; and a
render carries the port map it used (`hwskus/`), so that reading the render back is the same
plan, for a HwSKU fablab does not ship as for one it does.

The folders are synthetic ones written here (always run), and Nokia-IXR7220-H4-64D laid out from
SONiC's own files in ../shared/reference (skipped where that is absent).
"""
from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from harness import HwSku
from harness.catalog import load_cluster
from harness.cli.main import main
from harness.core.cabling.declare import cluster_of
from harness.core.cabling.load import read_plan
from harness.core.errors import TopologyError
from harness.core.hwsku import CATALOG, SONIC_DEVICES, hwsku
from harness.core.model import Hardware, build
from harness.core.plan import make_plan
from harness.render import artifacts, write_artifacts
from harness.render.hwskus import VS_DEVICE
from topologies import BUILTINS

ACME = "Acme-X64"  # port_config.ini alone: 64 × 800G
CAGED = "Acme-C64"  # hwsku.json + ../platform.json, no port_config.ini: 64 cages of 800G, 2x400G too
NOKIA = "Nokia-IXR7220-H4-64D"  # SONiC's: port_config.ini (a fec column), hwsku.json, ../platform.json


def _acme(folder: Path) -> Path:
    folder.mkdir(parents=True)
    rows = [f"Ethernet{8 * i} {','.join(str(8 * i + k) for k in range(8))} etp{i + 1} {i + 1} 800000"
            for i in range(64)]
    (folder / "port_config.ini").write_text("# name lanes alias index speed\n" + "\n".join(rows) + "\n")
    return folder


def _caged(folder: Path) -> Path:
    folder.mkdir(parents=True)
    cages = {f"Ethernet{8 * i}": {"index": ",".join([str(i + 1)] * 8), "lanes": ",".join(str(8 * i + k) for k in range(8)),
                                  "breakout_modes": {"1x800G": [f"etp{i + 1}"],
                                                     "2x400G": [f"etp{i + 1}a", f"etp{i + 1}b"]}}
             for i in range(64)}
    (folder.parent / "platform.json").write_text(json.dumps({"interfaces": cages}, indent=4))
    (folder / "hwsku.json").write_text(json.dumps(
        {"interfaces": {p: {"default_brkout_mode": "1x800G"} for p in cages}}, indent=4))
    return folder


@pytest.fixture
def device(tmp_path) -> Path:
    """A sonic-buildimage-like `device/` tree of two HwSKUs fablab does not ship."""
    root = tmp_path / "device"
    _acme(root / "acme" / "x86_64-acme_x64-r0" / ACME)
    _caged(root / "acme" / "x86_64-acme_c64-r0" / CAGED)
    assert not any(h.name in (ACME, CAGED) for h in CATALOG)
    return root


@pytest.fixture(autouse=True)
def no_search_path(monkeypatch):
    """Nothing searched but what a test names (and --sonic-devices' change undone after it)."""
    monkeypatch.delenv(SONIC_DEVICES, raising=False)


def _folder(device: Path, name: str) -> Path:
    return next(device.glob(f"*/*/{name}"))


def _plan_files(tmp: Path, fmt: str, spine_sku: str) -> Path:
    """ai-cluster's render as a cabling plan in `tmp`, its spines naming `spine_sku`."""
    files = artifacts(make_plan(build(BUILTINS["ai-cluster"]())))
    tmp.mkdir(parents=True, exist_ok=True)
    links, devices, column = {"cable list": ("cabling.csv", "devices.csv", 2),
                              "sonic-mgmt": ("sonic_lab_links.csv", "sonic_lab_devices.csv", 2)}[fmt]
    source = {"cable list": ("cabling.csv", "devices.csv"),
              "sonic-mgmt": ("sonic_ai-cluster_links.csv", "sonic_ai-cluster_devices.csv")}[fmt]
    (tmp / links).write_text(files[source[0]])
    rows = [line.split(",") for line in files[source[1]].splitlines()]
    for row in rows:
        if row[0] in ("be-s1", "be-s2"):
            row[column] = spine_sku
    (tmp / devices).write_text("\n".join(",".join(r) for r in rows) + "\n")
    return tmp / links


def _spines(plan) -> dict:
    return {n: (plan.switch(n).hwsku, tuple((p.name, p.row.lanes, p.row.alias, p.speed) for p in plan.switch(n).ports))
            for n in ("be-s1", "be-s2")}


# --------------------------------------------------------------------------- by path, by name

@pytest.mark.parametrize("fmt", ["cable list", "sonic-mgmt"])
def test_a_plans_hwsku_column_takes_a_folder_by_its_path_relative_to_the_plan(tmp_path, device, fmt, monkeypatch):
    plan_file = _plan_files(tmp_path / "plan", fmt, f"../device/acme/x86_64-acme_x64-r0/{ACME}")
    monkeypatch.chdir(device)  # another working directory: the path is the plan's
    cluster = cluster_of(read_plan(plan_file), "lab")
    sku = cluster.hardware.be_spine
    assert isinstance(sku, HwSku) and sku.name == ACME and sku.source == str(_folder(device, ACME).resolve())
    plan = make_plan(build(cluster))
    assert {h for h, _ in _spines(plan).values()} == {ACME}
    assert {p.row.lanes for p in plan.switch("be-s1").ports} <= {tuple(range(8 * i, 8 * i + 8)) for i in range(64)}
    assert main(["show", str(plan_file)]) == 0


def test_a_plans_hwsku_by_name_is_found_under_sonic_devices_or_the_environment(tmp_path, device, monkeypatch, capsys):
    plan_file = _plan_files(tmp_path / "plan", "cable list", ACME)
    assert main(["show", str(plan_file)]) == 2  # the control: the name alone is no HwSKU fablab knows
    capsys.readouterr()
    assert main(["show", str(plan_file), "--sonic-devices", str(device), "--json"]) == 0
    capsys.readouterr()
    monkeypatch.delenv(SONIC_DEVICES)
    monkeypatch.setenv(SONIC_DEVICES, f"{tmp_path / 'elsewhere'}:{device}")
    c = cluster_of(read_plan(plan_file), "lab")
    assert c.hardware.be_spine.name == ACME and c.hardware.be_spine.source == str(_folder(device, ACME).resolve())


def test_hardware_takes_a_folders_path_or_its_name(tmp_path, device, monkeypatch):
    base = BUILTINS["ai-cluster"]()
    fabric = build(replace(base, hardware=Hardware(be_spine=str(_folder(device, ACME)))))
    assert fabric.cluster.hardware.be_spine == HwSku.from_sonic(_folder(device, ACME))  # read, and kept whole
    assert {h for h, _ in _spines(make_plan(fabric)).values()} == {ACME}
    # a .py declaration's relative path is from its own folder, as a plan's is
    decl = tmp_path / "decl" / "cluster.py"
    decl.parent.mkdir()
    decl.write_text("from dataclasses import replace\nfrom harness.core.model import Hardware\n"
                    "from topologies import BUILTINS\n"
                    f"cluster = replace(BUILTINS['ai-cluster'](), hardware=Hardware(be_spine="
                    f"'../device/acme/x86_64-acme_c64-r0/{CAGED}'))\n")
    monkeypatch.chdir(device)
    loaded = load_cluster(str(decl))
    assert isinstance(loaded.hardware.be_spine, HwSku) and loaded.hardware.be_spine.cages  # its breakout modes too
    assert build(loaded).cluster == loaded  # what is loaded is what is built (and hashed: fablab check --against)
    monkeypatch.setenv(SONIC_DEVICES, str(device))  # by name
    assert make_plan(build(replace(base, hardware=Hardware(be_spine=CAGED)))).switch("be-s1").hwsku == CAGED


# --------------------------------------------------------------------------- nowhere: refused, saying where fablab looked

def _refused(argv, capsys) -> str:
    assert main(argv) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "Traceback" not in err
    return err


def test_an_unknown_hwsku_is_refused_naming_where_fablab_looked(tmp_path, device, capsys, monkeypatch):
    by_path = _plan_files(tmp_path / "a", "cable list", "../device/acme/x86_64-acme_x64-r0/Acme-X65")
    err = _refused(["show", str(by_path)], capsys)
    row = next(i for i, line in enumerate((tmp_path / "a" / "devices.csv").read_text().splitlines(), 1)
               if line.startswith("be-s1,"))
    assert f"devices.csv:{row}: be-s1's HwSKU" in err
    assert f"no folder at {tmp_path / 'a' / '..' / 'device' / 'acme' / 'x86_64-acme_x64-r0' / 'Acme-X65'}" in err
    by_name = _plan_files(tmp_path / "b", "sonic-mgmt", "Acme-X65")
    err = _refused(["show", str(by_name), "--sonic-devices", str(device)], capsys)
    assert "sonic_lab_devices.csv:" in err and "'Acme-X65' is not one fablab knows: not in fablab's catalogue" in err
    assert f"under {device} (--sonic-devices, {SONIC_DEVICES})" in err
    monkeypatch.delenv(SONIC_DEVICES)  # what --sonic-devices set, for this process and its children
    err = _refused(["show", str(by_name)], capsys)
    assert "no folder was searched" in err and "--sonic-devices DIR" in err
    decl = tmp_path / "d.py"
    decl.write_text("from dataclasses import replace\nfrom harness.core.model import Hardware\n"
                    "from topologies import BUILTINS\n"
                    "cluster = replace(BUILTINS['ai-cluster'](), hardware=Hardware(fe_leaf='Nokia-IXR7220-H4-64E'))\n")
    err = _refused(["render", str(decl), "-o", str(tmp_path / "out"), "--sonic-devices", str(device)], capsys)
    assert "hardware.fe_leaf: unknown HwSKU 'Nokia-IXR7220-H4-64E': not in fablab's catalogue" in err
    assert str(device) in err and "did you mean" in err and not (tmp_path / "out").exists()
    err = _refused(["show", "ai-cluster", "--sonic-devices", str(tmp_path / "nowhere")], capsys)
    assert f"--sonic-devices {tmp_path / 'nowhere'}: no such folder" in err


def test_a_folder_that_is_no_hwskus_is_refused_naming_its_file_and_line(tmp_path, device, capsys):
    ini = _folder(device, ACME) / "port_config.ini"
    ini.write_text(ini.read_text().replace("Ethernet8 8,9,10", "Ethernet8 8,x,10"))
    with pytest.raises(TopologyError) as e:
        build(replace(BUILTINS["ai-cluster"](), hardware=Hardware(be_spine=str(_folder(device, ACME)))))
    (p,) = e.value.problems
    assert p.field == "hardware.be_spine" and f"{ini.resolve()}:3 lanes '8,x,10" in p.message


def test_a_clab_files_hwsku_folder_must_be_the_hwsku_it_runs(tmp_path, device, capsys):
    files = artifacts(make_plan(build(replace(BUILTINS["ai-cluster"](), hardware=Hardware(
        be_spine=HwSku.from_sonic(_folder(device, ACME)))))))
    write_artifacts(files, tmp_path / "out")
    clab = tmp_path / "out" / "ai-cluster.clab.yml"
    assert main(["show", str(clab)]) == 0  # the control
    text = clab.read_text()
    clab.write_text(text.replace(f'HWSKU: "{ACME}"', 'HWSKU: "Arista-7060X6-64PE"', 1))
    err = _refused(["show", str(clab)], capsys)
    assert f"be-s1: fablab.hwsku is the folder of HwSKU {ACME}, and env HWSKU runs Arista-7060X6-64PE" in err
    clab.write_text(text.replace(f"fablab.hwsku: hwskus/x86_64-acme_x64-r0/{ACME}", "fablab.hwsku: hwskus/gone", 1))
    line = next(i for i, x in enumerate(text.splitlines(), 1) if x.strip() == "be-s1:")
    err = _refused(["show", str(clab)], capsys)
    assert f"ai-cluster.clab.yml:{line}: be-s1: fablab.hwsku" in err and f"no folder at {tmp_path / 'out' / 'hwskus' / 'gone'}" in err


# --------------------------------------------------------------------------- a render carries its HwSKUs

PLAN_FILES = ("cabling.csv", "sonic_{lab}_links.csv", "{lab}.clab.yml")


def _round_trip(tmp_path: Path, cluster, monkeypatch) -> None:
    declared = make_plan(build(cluster))
    files = artifacts(declared)
    out = tmp_path / "out"
    write_artifacts(files, out)
    monkeypatch.chdir(tmp_path.parent)  # the render read back from elsewhere, its source folders gone
    for original in {s.source for s in (cluster.hardware.be_spine, cluster.hardware.fe_spine) if isinstance(s, HwSku)}:
        shutil.rmtree(original)
    for plan_file in PLAN_FILES:
        back = make_plan(build(load_cluster(str(out / plan_file.format(lab=declared.name)))))
        assert {(frozenset({(c.a_node, c.a_port), (c.b_node, c.b_port)}), c.plane, c.speed) for c in back.cables} == \
            {(frozenset({(c.a_node, c.a_port), (c.b_node, c.b_port)}), c.plane, c.speed) for c in declared.cables}
        assert {(n.name, n.role) for n in back.fabric.nodes} == {(n.name, n.role) for n in declared.fabric.nodes}
        assert {s.name: s.hwsku for s in back.switches} == {s.name: s.hwsku for s in declared.switches}, plan_file
        again = artifacts(back, lab=declared.name)
        for sw in declared.switches:  # each port on the same row, broken out alike
            ours, theirs = (json.loads(f[f"configs/{sw.name}/config_db.json"]) for f in (files, again))
            assert ours["PORT"] == theirs["PORT"] and ours.get("BREAKOUT_CFG") == theirs.get("BREAKOUT_CFG"), sw.name
        assert {k: v for k, v in again.items() if "hwsku" in k} == {k: v for k, v in files.items() if "hwsku" in k}


def test_a_render_read_back_is_the_same_plan_for_a_hwsku_fablab_does_not_ship(tmp_path, device, monkeypatch):
    cluster = replace(BUILTINS["ai-cluster"](), hardware=Hardware(be_spine=HwSku.from_sonic(_folder(device, CAGED))))
    files = artifacts(make_plan(build(cluster)))
    folder = f"hwskus/x86_64-acme_c64-r0/{CAGED}"
    assert {k for k in files if k.startswith("hwskus/")} == {f"{folder}/hwsku.json", f"{folder}/port_config.ini",
                                                             "hwskus/x86_64-acme_c64-r0/platform.json"}
    assert f"be-s1,be-spine,{folder}," in files["devices.csv"] and "fe-l1,fe-leaf,Arista-" in files["devices.csv"]
    node = yaml.safe_load(files["ai-cluster.clab.yml"])["topology"]["nodes"]["be-s1"]
    assert node["labels"]["fablab.hwsku"] == folder and node["env"]["HWSKU"] == CAGED
    assert f"configs/be-s1/hwsku:{VS_DEVICE}/{CAGED}" in node["binds"]  # where docker-sonic-vs looks, writable
    lanemap = files["configs/be-s1/hwsku/lanemap.ini"].splitlines()
    assert lanemap[0] == "eth1:0,1,2,3,4,5,6,7" and len(lanemap) == 64
    assert "SAI_VS_INTERFACE_LANE_MAP_FILE=/usr/share/sonic/hwsku/lanemap.ini" in files["configs/be-s1/hwsku/sai.profile"]
    assert not any("hwsku" in k for k in artifacts(make_plan(build(BUILTINS["ai-cluster"]())))), "shipped: nothing"
    _round_trip(tmp_path / "a", cluster, monkeypatch)


def test_a_plan_of_two_folders_of_one_name_reads_back_from_the_render(tmp_path, device, monkeypatch):
    """A cable list whose spines name two folders of one HwSKU name (a plan of mixed hardware: one in
    Hardware, the other in Cabling.hwskus), rendered with the CLI, imported, and read back in each
    format once the folders are gone: the same plan."""
    other = shutil.copytree(_folder(device, ACME), tmp_path / "other" / "x86_64-acme_x64-r0" / ACME)
    plan_file = _plan_files(tmp_path / "plan", "cable list", "")
    devices = plan_file.with_name("devices.csv")
    devices.write_text(devices.read_text().replace("be-s1,be-spine,,", f"be-s1,be-spine,{_folder(device, ACME)},")
                       .replace("be-s2,be-spine,,", f"be-s2,be-spine,../other/x86_64-acme_x64-r0/{ACME},"))
    cluster = cluster_of(read_plan(plan_file), "lab")
    assert cluster.hardware.be_spine.source == str(_folder(device, ACME).resolve())
    assert cluster.cabling.hwskus == (("be-s2", str(other.resolve())),)
    declared = make_plan(build(cluster))
    assert {h for h, _ in _spines(declared).values()} == {ACME}
    out = tmp_path / "out"
    assert main(["render", str(plan_file), "-o", str(out)]) == 0
    assert {p.parent.parent.name for p in (out / "hwskus").glob(f"*/{ACME}/port_config.ini")} == {
        "x86_64-acme_x64-r0", "x86_64-acme_x64-r0-2"}  # two folders of one name, each its own
    assert main(["import", str(out / "cabling.csv"), "-o", str(tmp_path / "lab.py")]) == 0
    shutil.rmtree(device)
    shutil.rmtree(other)
    for again in [*(out / f.format(lab="cabling") for f in PLAN_FILES), tmp_path / "lab.py"]:
        back = make_plan(build(load_cluster(str(again))))
        assert _spines(back) == _spines(declared), again


def test_a_render_of_sonics_own_nokia_folder_reads_back_the_same(reference, tmp_path, monkeypatch):
    ini = reference / "sonic-hwsku" / f"{NOKIA}.port_config.ini"
    platform = next(iter(sorted((reference / "sonic-platform").glob(f"*/{NOKIA}/hwsku.json"))), None)
    if not ini.is_file() or platform is None:
        pytest.skip(f"SONiC's {NOKIA} files not found under {reference} (set FABLAB_REFERENCE to the reference folder)")
    folder = tmp_path / "device" / "nokia" / platform.parent.parent.name / NOKIA
    folder.mkdir(parents=True)
    shutil.copy(ini, folder / "port_config.ini")
    shutil.copy(platform, folder / "hwsku.json")
    shutil.copy(platform.parent.parent / "platform.json", folder.parent / "platform.json")
    sku = HwSku.from_sonic(folder)
    assert sku.cages and {r.speed for r in sku.data_rows} == {400000}
    with pytest.raises(TopologyError):
        hwsku(NOKIA)  # the control: fablab does not ship it
    _round_trip(tmp_path / "r", replace(BUILTINS["ai-cluster"](), hardware=Hardware(fe_spine=sku)), monkeypatch)


def test_the_clab_file_binds_the_folder_and_clabernetes_leaves_it_to_the_image(device, clab_validator):
    plan = make_plan(build(replace(BUILTINS["ai-cluster"](), hardware=Hardware(
        be_spine=HwSku.from_sonic(_folder(device, ACME))))))
    files = artifacts(plan, clabernetes=True)
    doc = yaml.safe_load(files["ai-cluster.clab.yml"])
    assert [f"{list(e.path)}: {e.message}" for e in clab_validator.iter_errors(doc)] == []
    binds = doc["topology"]["nodes"]["be-s2"]["binds"]
    folder = next(b.split(":")[0] for b in binds if b.endswith(f"/{ACME}"))
    assert {f"{folder}/{f}" for f in ("port_config.ini", "lanemap.ini", "sai.profile")} <= set(files)
    assert not any("hwsku" in b for b in doc["topology"]["nodes"]["be-g1-r0"]["binds"])  # a shipped HwSKU: the image's
    # ConfigMaps mount read-only, and start.sh writes that folder: clabernetes binds none
    assert "configs/be-s2/hwsku" not in files["ai-cluster.clabernetes.yaml"]


def test_two_folders_of_one_name_under_the_trees_are_one_if_alike_and_refused_if_not(tmp_path, device, monkeypatch):
    copy = shutil.copytree(_folder(device, ACME), device / "other" / "x86_64-acme_x64-r1" / ACME)
    monkeypatch.setenv(SONIC_DEVICES, str(device))
    base = BUILTINS["ai-cluster"]()
    assert build(replace(base, hardware=Hardware(be_spine=ACME))).cluster.hardware.be_spine.name == ACME  # alike
    ini = copy / "port_config.ini"
    ini.write_text(ini.read_text().replace(" etp2 ", " etp2x "))
    with pytest.raises(TopologyError) as e:
        build(replace(base, hardware=Hardware(be_spine=ACME)))
    (p,) = e.value.problems
    assert p.field == "hardware.be_spine" and "2 folders of that name, not alike" in p.message
    assert str(copy.resolve()) in p.message and str(_folder(device, ACME).resolve()) in p.message
