"""What each device of a cabling plan is, read from how it is cabled (harness/core/cabling/infer.py):
plans written the way engineers keep them (their hostnames, NIC names, uplink ports, spines in
their own order), and every miscabling named by device:port and file:line, each with its control."""
from __future__ import annotations

import pytest

from harness.core.cabling.csv_plans import read_cable_csv, read_sonic_mgmt
from harness.core.cabling.infer import infer, natural
from harness.core.cabling.shape import shape
from harness.core.declarations import NicRole, Plane, Role
from harness.core.errors import TopologyError


def cluster_csv(groups: int = 2, per_group: int = 2, rails: int = 4, spines: int = 2, fe_leaves: int = 2,
                fe_spines: int = 2, cpus: int = 1, storage: bool = False, dual: bool = False,
                spines_first_group: int = 2, swap: tuple[str, str] | None = None) -> str:
    """A rail-optimized cluster as a DCIM cable list: gpu-a01.. with NICs enp<12+r>s0np0 on rtsw-g<g>-r<r>,
    uplinks on Ethernet256, 264, ..., spines ctsw-01.. listing group `spines_first_group` first, FE leaves
    fetor-1.., FE spines fesp-1.., CPU servers cpu-x1.. . `swap`: two NIC ends whose leaves trade places."""
    rows = ["a_device,a_port,b_device,b_port,speed"]
    hosts = []
    nodes = [f"gpu-a{g * per_group + k + 1:02d}" for g in range(groups) for k in range(per_group)]
    be = []
    for i, node in enumerate(nodes):
        g = i // per_group + 1
        for r in range(rails):
            be.append([node, f"enp{12 + r}s0np0", f"rtsw-g{g}-r{r}", f"Ethernet{8 * (i % per_group)}"])
    if swap:
        a, b = (next(x for x in be if f"{x[0]}:{x[1]}" == end) for end in swap)
        a[2:], b[2:] = b[2:], a[2:]
    rows += [",".join(x) + ",400G" for x in be]
    order = list(range(spines_first_group, groups + 1)) + list(range(1, spines_first_group))
    for s in range(1, spines + 1):
        for g in order:
            for r in range(rails):
                down = f"Ethernet{8 * ((g - 1) * rails + r)}"
                rows.append(f"ctsw-{s:02d},{down},rtsw-g{g}-r{r},Ethernet{248 + 8 * s},400G")
    hosts = nodes + [f"cpu-x{k}" for k in range(1, cpus + 1)]
    pairs = [(f"fetor-{k}", f"fetor-{k + 1}") for k in range(1, fe_leaves, 2)] if dual else \
        [(f"fetor-{k}",) for k in range(1, fe_leaves + 1)]
    per = -(-len(hosts) // len(pairs))
    for i, h in enumerate(hosts):
        rack = pairs[i // per]
        port = f"Ethernet{i % per}"  # 100G ports of an Arista-7060X6-64PE-C224O8: cage 1 as 8 x 100G
        rows.append(f"{h},eno1,{rack[0]},{port},100G")
        if dual:
            rows.append(f"{h},eno2,{rack[1]},{port},100G")
        if storage and h in nodes:
            rows.append(f"{h},ens9f1,{rack[0]},Ethernet{4 * (i % per) + 128},200G")
    for s in range(1, fe_spines + 1):
        for k in range(1, fe_leaves + 1):
            rows.append(f"fetor-{k},Ethernet{92 + 4 * s},fesp-{s},Ethernet{8 * (k - 1)},400G")  # cage 13: 2 x 400G
    return "\n".join(rows) + "\n"


def read(text: str, devices: str | None = None):
    return infer(read_cable_csv(text, "cables.csv", devices))


def test_roles_rails_and_groups_come_from_the_graph_with_the_plans_names():
    got = read(cluster_csv())
    roles = {d.name: d.role for d in got.devices}
    assert {n for n, r in roles.items() if r is Role.GPU} == {"gpu-a01", "gpu-a02", "gpu-a03", "gpu-a04"}
    assert {n for n, r in roles.items() if r is Role.BE_LEAF} == {f"rtsw-g{g}-r{r}" for g in (1, 2) for r in range(4)}
    assert {n for n, r in roles.items() if r is Role.BE_SPINE} == {"ctsw-01", "ctsw-02"}
    assert {n for n, r in roles.items() if r is Role.FE_LEAF} == {"fetor-1", "fetor-2"}
    assert {n for n, r in roles.items() if r is Role.FE_SPINE} == {"fesp-1", "fesp-2"}
    assert roles["cpu-x1"] is Role.CPU
    leaf = got.device("rtsw-g2-r3")
    assert (leaf.group, leaf.rails) == (2, (3,))  # numbered by name, though the spines list group 2 first
    assert got.device("gpu-a01").group == 1 and got.device("gpu-a04").group == 2
    nic = next(w for w in got.wires if str(w.a) == "gpu-a03:enp14s0np0")
    assert (str(nic.b), nic.plane, nic.rail, nic.nic) == ("rtsw-g2-r2:Ethernet0", Plane.BE, 2, NicRole.RAIL)
    up = next(w for w in got.wires if str(w.a) == "rtsw-g1-r0:Ethernet256")  # the leaf is the lower end
    assert (str(up.b), up.plane, up.speed_mbps) == ("ctsw-01:Ethernet0", Plane.BE, 400_000)
    fe = next(w for w in got.wires if str(w.a) == "gpu-a01:eno1")
    assert (fe.plane, fe.nic) == (Plane.FE, NicRole.FE)


def test_a_nic_on_the_wrong_rails_leaf_is_named_and_a_clean_plan_is_the_control():
    read(cluster_csv())  # the control: the same plan, cabled right, infers
    with pytest.raises(TopologyError) as e:
        read(cluster_csv(swap=("gpu-a02:enp12s0np0", "gpu-a02:enp13s0np0")))
    text = str(e.value)
    assert "gpu-a02:enp12s0np0 is gpu-a02's rail 0 NIC" in text and "rtsw-g1-r1 carries rail 1" in text
    assert "gpu-a02:enp13s0np0 is gpu-a02's rail 1 NIC" in text
    assert "cables.csv:" in text


@pytest.mark.parametrize("leaf_names", [("rtsw-g{g}-r{r}", 0), ("be-rail{r}-g{g}", 1), ("L{g}x{r}", None)])
def test_two_nodes_disagreeing_on_a_leaf_blame_the_one_against_the_leafs_name_else_say_both(leaf_names):
    """Two nodes of a group, one with its NICs swapped: each leaf takes one NIC of each rail, a
    tie. The leaf's name (0- or 1-based) names the swapped node; with no rail in the name, the
    tie is said with both NICs."""
    form, base = leaf_names

    def renamed(text):
        for g in (1, 2):
            for r in range(4):
                text = text.replace(f"rtsw-g{g}-r{r},", form.format(g=g, r=r + (base or 0)) + ",")
        return text

    read(renamed(cluster_csv(per_group=2)))  # the control
    with pytest.raises(TopologyError) as e:
        read(renamed(cluster_csv(per_group=2, swap=("gpu-a01:enp12s0np0", "gpu-a01:enp13s0np0"))))
    text = str(e.value)
    if base is not None:
        assert "gpu-a01:enp12s0np0 is gpu-a01's rail 0 NIC" in text and "gpu-a02" not in text
    else:
        assert "takes NICs of 2 rails, as many of each" in text and "gpu-a02:enp12s0np0 (rail 0)" in text


def roles_csv(text: str, roles: dict[str, str]) -> str:
    """A devices.csv listing every device of `text`, with a role where `roles` gives one."""
    names = dict.fromkeys(x for line in text.splitlines()[1:] for x in line.split(",")[0:3:2])
    return "name,role\n" + "".join(f"{n},{roles.get(n, '')}\n" for n in names)


@pytest.mark.parametrize("far", ["rtsw-g1-r0", "ctsw-01"])
@pytest.mark.parametrize("with_roles", [True, False])
def test_an_fe_be_cable_is_refused_naming_both_ends_with_or_without_roles(far, with_roles):
    """An FE leaf cabled to a BE leaf or a BE spine: named as the one FE–BE cable, file:line and
    both ports, whether the plan gives roles or the graph alone tells the planes apart."""
    roles = {"fetor-1": "fe-leaf", "fetor-2": "fe-leaf", "rtsw-g1-r0": "be-leaf"}
    stray = cluster_csv() + f"fetor-2,Ethernet200,{far},Ethernet200,400G\n"
    line = len(stray.splitlines())
    with pytest.raises(TopologyError) as e:
        read(stray, roles_csv(stray, roles) if with_roles else None)
    assert len(e.value.problems) == 1, str(e.value)
    assert str(e.value.problems[0]).startswith(f"cables.csv:{line}: fetor-2:Ethernet200 (fe) to {far}:Ethernet200 (be): "
                                                 "an FE–BE cable")
    read(cluster_csv(), roles_csv(cluster_csv(), roles) if with_roles else None)  # the control


def test_storage_and_dual_homed_nics_are_told_apart_by_their_leaves():
    got = read(cluster_csv(storage=True))
    parts = {str(w.a): w.nic for w in got.wires if w.a.device == "gpu-a01" and w.plane is Plane.FE}
    assert parts == {"gpu-a01:eno1": NicRole.FE, "gpu-a01:ens9f1": NicRole.STORAGE}
    got = read(cluster_csv(dual=True))
    parts = {str(w.a): (w.nic, w.b.device) for w in got.wires if w.a.device == "gpu-a01" and w.plane is Plane.FE}
    assert parts == {"gpu-a01:eno1": (NicRole.FE, "fetor-1"), "gpu-a01:eno2": (NicRole.FE2, "fetor-2")}


def test_a_rail_only_backend_has_no_groups():
    got = read(cluster_csv(groups=1, spines=0, per_group=3, rails=4))
    leaves = got.with_role(Role.BE_LEAF)
    assert sorted(((d.name, d.rails, d.group) for d in leaves), key=lambda x: natural(x[0])) == [
        (f"rtsw-g1-r{r}", (r,), None) for r in range(4)]
    assert {d.name for d in got.with_role(Role.FE_LEAF)} == {"fetor-1", "fetor-2"}


def test_a_sonic_mgmt_graph_with_types_and_an_oob_switch():
    links = ["StartDevice,StartPort,EndDevice,EndPort,BandWidth"]
    links += [f"str-gpu-{n},eth{r + 1},str-leaf-r{r},Ethernet{8 * n},400000" for n in range(2) for r in range(2)]
    links += [f"str-leaf-r{r},Ethernet256,str-spine-1,Ethernet{8 * r},400000" for r in range(2)]
    links += [f"str-gpu-{n},eth0,str-fe-1,Ethernet{4 * n},100000" for n in range(2)]
    links += ["str-fe-1,Ethernet256,str-fe-sp,Ethernet0,400000"]
    links += [f"{d},eth0,str-mgmt,Ethernet{4 * k}" for k, d in enumerate(
        ["str-leaf-r0", "str-leaf-r1", "str-spine-1", "str-fe-1", "str-fe-sp"])]
    devices = ["Hostname,ManagementIp,HwSku,Type"]
    devices += [f"str-gpu-{n},10.0.0.{n + 1}/24,,Server" for n in range(2)]
    devices += [f"{d},10.0.1.{k + 1}/24,Force10-S6000,DevSonic" for k, d in enumerate(
        ["str-leaf-r0", "str-leaf-r1", "str-spine-1", "str-fe-1", "str-fe-sp", "str-mgmt"])]
    got = infer(read_sonic_mgmt("\n".join(links) + "\n", "sonic_str_links.csv", "\n".join(devices) + "\n"))
    assert got.device("str-mgmt").role is Role.OOB
    assert {w.plane for w in got.wires if w.b.device == "str-mgmt"} == {Plane.MGMT}
    assert got.device("str-leaf-r1").role is Role.BE_LEAF and got.device("str-fe-1").role is Role.FE_LEAF
    assert got.device("str-gpu-1").role is Role.GPU
    # a GPU's eth0 here is an FE NIC (to an FE leaf), not a management port: the graph decides
    assert next(w for w in got.wires if str(w.a) == "str-gpu-1:eth0").nic is NicRole.FE


# ---------------------------------------------------------------------- the declaration a plan is

def shaped(text: str, devices: str | None = None):
    return shape(read(text, devices), "plan")


def test_a_plan_declares_its_counts_speeds_and_hardware():
    got = shaped(cluster_csv(groups=2, per_group=3, rails=4, spines=3, fe_leaves=2, fe_spines=1, cpus=2))
    assert got.problems == ()
    c = got.cluster
    assert (c.gpu.count, c.gpu.gpus_per_node, c.gpu.nic_speed, c.gpu.fe_speed) == (6, 4, 400, 100)
    be = c.backend
    assert (be.kind, be.rails, be.rails_per_leaf, be.groups, be.spines, be.uplinks_per_spine, be.uplink_speed) == (
        "rail-optimized", 4, 1, 2, 3, 1, 400)
    fe = c.frontend
    assert (fe.leaves, fe.spines, fe.cpu_servers, fe.storage_servers, fe.gateways, fe.dual_homed) == (2, 1, 2, 0, 0,
                                                                                                     False)
    only = shaped(cluster_csv(groups=1, per_group=3, spines=0)).cluster.backend
    assert (only.kind, only.spines, only.rails) == ("rail-only", 0, 4)


def test_a_leaf_short_of_an_uplink_and_a_slower_nic_are_named():
    text = cluster_csv()
    assert shaped(text).problems == ()  # the control
    lines = text.splitlines()
    missing = [x for x in lines if not x.startswith("ctsw-02,Ethernet16,rtsw-g1-r2,")]
    slow = [x.replace("gpu-a03,enp13s0np0,rtsw-g2-r1,Ethernet0,400G", "gpu-a03,enp13s0np0,rtsw-g2-r1,Ethernet0,200G")
            for x in missing]
    problems = [str(p) for p in shaped("\n".join(slow) + "\n").problems]
    assert any(p.startswith("rtsw-g1-r2 - ctsw-02: 0 cables where every other leaf has 1") for p in problems)
    assert any("gpu-a03:enp13s0np0 - rtsw-g2-r1:Ethernet0 runs 200G where the other rail NICs run 400G" in p
               and p.startswith("cables.csv:") for p in problems)
