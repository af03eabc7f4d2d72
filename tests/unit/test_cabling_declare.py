"""A cabling plan as a TOPOLOGY (harness/core/cabling/declare.py, apply.py): it builds with the
plan's own names and ports, reads back fablab's own renders cable for cable, and is written
out by `fablab import` as a declaration that loads back equal."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest
import yaml

from harness.catalog import load_cluster, load_fabric
from harness.cli.main import main
from harness.core.cabling.clab_plan import read_clab
from harness.core.cabling.csv_plans import read_cable_csv
from harness.core.cabling.declare import cluster_of, name_of
from harness.core.declarations import NicRole, Role
from harness.core.errors import TopologyError
from harness.core.model import build
from harness.core.plan import make_plan
from harness.render import artifacts

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from test_cabling_infer import cluster_csv  # noqa: E402  (the plan builder the inference tests use)

SMALL = ("ai-cluster", "dual-homed", "pods", "multi-rail", "rail-only")


def _cabling(plan) -> set:
    return {(c.a_node, c.a_port, c.b_node, c.b_port, c.plane) for c in plan.cables}


def _clab(topology: str) -> str:
    plan = make_plan(load_fabric(topology))
    return artifacts(plan)[f"{plan.name}.clab.yml"]


@pytest.mark.parametrize("topology", SMALL)
def test_fablabs_own_render_read_back_as_a_plan_is_the_same_fabric_cable_for_cable(topology):
    declared = make_plan(load_fabric(topology))
    back = make_plan(build(cluster_of(read_clab(_clab(topology), f"{topology}.clab.yml"), topology)))
    assert _cabling(back) == _cabling(declared)
    assert {(n.name, n.role, n.group, n.pod, n.rails) for n in back.fabric.nodes} == \
        {(n.name, n.role, n.group, n.pod, n.rails) for n in declared.fabric.nodes}


@pytest.mark.parametrize("topology", ("ai-cluster", "pods"))
def test_without_fablabs_labels_the_graph_alone_places_the_backend(topology):
    """An engineer's clab file has no fablab.* labels: the BE (groups, rails, pods, spines,
    super-spines) comes from the graph alone; servers with no role are CPU servers."""
    data = yaml.safe_load(_clab(topology))
    for node in data["topology"]["nodes"].values():
        node.pop("labels", None)
    back = make_plan(build(cluster_of(read_clab(yaml.safe_dump(data), "bare.clab.yml"), topology)))
    declared = make_plan(load_fabric(topology))
    be = {Role.BE_LEAF, Role.BE_SPINE, Role.BE_SUPERSPINE, Role.GPU}
    assert {(n.name, n.role, n.group, n.pod, n.rails) for n in back.fabric.nodes if n.role in be} == \
        {(n.name, n.role, n.group, n.pod, n.rails) for n in declared.fabric.nodes if n.role in be}
    assert {c for c in _cabling(back) if c[4].value == "be"} == {c for c in _cabling(declared) if c[4].value == "be"}
    servers = {n.name: n.role for n in back.fabric.nodes if n.name.startswith(("stor", "gw"))}
    assert servers and set(servers.values()) <= {Role.CPU, Role.STORAGE}  # no role column: storage only by its NIC


def test_an_engineers_plan_keeps_its_names_ports_and_nic_names():
    plan = make_plan(build(cluster_of(read_cable_csv(cluster_csv(), "lab_cables.csv"), "lab")))
    leaf = plan.switch("rtsw-g1-r0")
    assert {(p.name, p.peer, p.peer_port) for p in leaf.fabric_ports} == {
        ("Ethernet256", "ctsw-01", "Ethernet0"), ("Ethernet264", "ctsw-02", "Ethernet0")}
    gpu = plan.host("gpu-a03")
    assert [(n.name, n.peer, n.peer_port, n.rail, n.role) for n in gpu.nics if n.role is NicRole.RAIL] == [
        (f"enp{12 + r}s0np0", f"rtsw-g2-r{r}", "Ethernet0", r, NicRole.RAIL) for r in range(4)]
    # spines listed group 2 first in the plan: ctsw-01's ports are the plan's, not fablab's order
    spine = plan.switch("ctsw-01")
    assert ("Ethernet32", "rtsw-g2-r0", "Ethernet256") in {(p.name, p.peer, p.peer_port) for p in spine.fabric_ports}


@pytest.mark.parametrize("file, name", [("sonic_lab_links.csv", "sonic-lab"), ("DC 7 Cabling.csv", "dc-7"),
                                        ("7x.clab.yml", "x"), ("a" * 40 + ".csv", "a" * 24), ("__.csv", "plan")])
def test_a_plans_file_name_gives_a_usable_lab_name(file, name):
    assert name_of(Path(file)) == name


def test_a_plan_a_cable_short_is_refused_naming_the_leaf_and_spine():
    text = "\n".join(x for x in cluster_csv().splitlines() if not x.startswith("ctsw-02,Ethernet16,")) + "\n"
    with pytest.raises(TopologyError) as e:
        cluster_of(read_cable_csv(text, "lab_cables.csv"), "lab")
    assert "rtsw-g1-r2 - ctsw-02: 0 cables where every other leaf has 1" in str(e.value)
    cluster_of(read_cable_csv(cluster_csv(), "lab_cables.csv"), "lab")  # the control


def test_a_declared_cabling_with_a_cable_the_layout_has_no_place_for_is_named():
    c = cluster_of(read_cable_csv(cluster_csv(), "lab_cables.csv"), "lab")
    build(c)  # the control
    from dataclasses import replace

    from harness.core.declarations import Cable
    extra = replace(c, cabling=replace(c.cabling, cables=(*c.cabling.cables,
                                                          Cable("gpu-a01", "rtsw-g2-r0", "enp20s0np0", "Ethernet100"))))
    with pytest.raises(TopologyError) as e:
        build(extra)
    assert "gpu-a01:enp20s0np0 - rtsw-g2-r0:Ethernet100: a cable the fabric has no place for" in str(e.value)


def test_fablab_import_writes_a_declaration_that_loads_back_equal(tmp_path, capsys):
    plan = tmp_path / "lab_cables.csv"
    plan.write_text(cluster_csv(storage=False, cpus=2))
    target = tmp_path / "lab.py"
    assert main(["import", str(plan), "-o", str(target)]) == 0
    assert load_cluster(str(target)) == load_cluster(str(plan))
    assert "cabling=Cabling(" in target.read_text() and "'enp12s0np0'" in target.read_text()
    assert main(["import", str(plan), "-o", str(target)]) == 2  # no silent overwrite
    assert "--force" in capsys.readouterr().err
    assert main(["import", str(plan), "-o", str(target), "--force"]) == 0
    assert not list(tmp_path.glob(".*"))  # nothing half-written left beside it


def test_a_port_name_no_linux_interface_can_take_is_refused_before_boot():
    text = cluster_csv()
    build(cluster_of(read_cable_csv(text, "lab_cables.csv"), "lab"))  # the control: enp12s0np0 fits
    long = text.replace("gpu-a01,enp12s0np0,", "gpu-a01,enp12s0f0np0v1234,")
    with pytest.raises(TopologyError) as e:
        build(cluster_of(read_cable_csv(long, "lab_cables.csv"), "lab"))
    assert "gpu-a01:enp12s0f0np0v1234 cannot name a Linux interface (at most 15 characters" in str(e.value)


@pytest.mark.parametrize("spines, oversubscribed", [(2, False), (1, True)])
def test_an_oversubscribed_leaf_is_refused_once_naming_its_ports(spines, oversubscribed):
    """Two 400G NICs under each leaf and one 400G uplink: every leaf 2:1, said once with the
    count and one leaf's ports; two uplinks each (the control) is non-blocking."""
    text = cluster_csv(per_group=2, spines=spines)
    if not oversubscribed:
        cluster_of(read_cable_csv(text, "lab_cables.csv"), "lab")
        return
    with pytest.raises(TopologyError) as e:
        cluster_of(read_cable_csv(text, "lab_cables.csv"), "lab")
    [p] = e.value.problems
    assert p.field == "rtsw-g1-r0:Ethernet256 and 7 more"
    assert "8 BE leaves are oversubscribed 2.00:1, e.g. rtsw-g1-r0: 800G down (Ethernet0, Ethernet8), 400G up " \
           "(Ethernet256)" in p.message
    assert p.hint.startswith("cable 1 more 400G uplink on each")


def _with_skus(skus: dict[str, str]) -> tuple[str, str]:
    text = cluster_csv()
    names = dict.fromkeys(x for line in text.splitlines()[1:] for x in line.split(",")[0:3:2])
    return text, "name,hwsku\n" + "".join(f"{n},{skus.get(n, '')}\n" for n in names)


def test_a_plan_of_mixed_hardware_runs_each_switch_as_its_own_hwsku():
    """Most leaves an Arista 7060X6 of 128 × 400G, one an NVIDIA SN5600 (ACS-SN5600, 64 × 800G):
    the role takes the usual one, the odd leaf its own, its ports the SN5600's lanes."""
    leaves = {f"rtsw-g{g}-r{r}": "Arista-7060X6-64PE-O128S2" for g in (1, 2) for r in range(4)}
    text, devices = _with_skus(leaves)
    same = make_plan(build(cluster_of(read_cable_csv(text, "lab_cables.csv", devices), "lab")))
    assert {same.switch(n).hwsku for n in leaves} == {"Arista-7060X6-64PE-O128S2"}  # the control
    mixed = {**leaves, "rtsw-g2-r3": "ACS-SN5600"}
    text, devices = _with_skus(mixed)
    c = cluster_of(read_cable_csv(text, "lab_cables.csv", devices), "lab")
    assert c.hardware.be_leaf == "Arista-7060X6-64PE-O128S2" and c.cabling.hwskus == (("rtsw-g2-r3", "ACS-SN5600"),)
    plan = make_plan(build(c))
    odd = plan.switch("rtsw-g2-r3")
    assert odd.hwsku == "ACS-SN5600" and plan.switch("rtsw-g2-r2").hwsku == "Arista-7060X6-64PE-O128S2"
    up = next(p for p in odd.ports if p.name == "Ethernet256")
    assert up.row.lanes == tuple(range(256, 264))  # SN5600's cage 33: lanes 256..263


def test_an_unknown_hwsku_in_a_plan_is_named_by_its_switch_with_the_nearest():
    text, devices = _with_skus({"rtsw-g1-r0": "ACS-SN560"})
    with pytest.raises(TopologyError) as e:
        cluster_of(read_cable_csv(text, "lab_cables.csv", devices), "lab")
    [p] = e.value.problems
    row = next(i for i, line in enumerate(devices.splitlines(), 1) if line.startswith("rtsw-g1-r0,"))
    assert p.field == f"devices.csv:{row}"  # its row of the devices file
    assert "rtsw-g1-r0's HwSKU 'ACS-SN560' is not one fablab knows: not in fablab's catalogue" in p.message
    assert "did you mean ACS-SN5600?" in p.hint
