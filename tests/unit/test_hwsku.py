"""Ports against SONiC's own HwSKU files: the rows fablab embeds, and what it renders from them.

The reference port_config.ini files are parsed here on their own, and docker-sonic-vs's lane
map is rebuilt from them as SONiC builds it (row i, 1-based, gives its lanes to eth<i>), so a
wrong transcription or a wrong rule in harness/core/hwsku.py cannot check itself.
"""
from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass, replace
from pathlib import Path

import pytest
import yaml

from harness.core.hwsku import HWSKUS, hwsku
from harness.core.errors import TopologyError
from harness.core.model import Cable, Cluster, Hardware, build
from harness.core.plan import make_plan
from harness.render import artifacts
from topologies import BUILTINS


@dataclass(frozen=True)
class RefRow:
    name: str
    lanes: tuple[int, ...]
    alias: str
    index: int
    speed: int


def read_port_config(path: Path) -> list[RefRow]:
    rows = []
    for line in path.read_text().splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        name, lanes, alias, index, speed = line.split()[:5]
        rows.append(RefRow(name, tuple(int(x) for x in lanes.split(",")), alias, int(index), int(speed)))
    return rows


@pytest.mark.parametrize("sku", HWSKUS, ids=lambda s: s.name)
def test_embedded_rows_equal_the_reference_file(sku, hwsku_dir):
    reference = read_port_config(hwsku_dir / f"{sku.name}.port_config.ini")
    embedded = [RefRow(r.name, r.lanes, r.alias, r.index, r.speed) for r in sku.rows]
    assert embedded == reference
    assert [r.position for r in sku.rows] == list(range(len(reference)))


def wide(nodes: int) -> Cluster:
    """rail-only with `nodes` GPU nodes: each rail leaf has one port per node."""
    base = BUILTINS["rail-only"]()
    return replace(base, name=f"wide{nodes}", gpu=replace(base.gpu, count=nodes),
                   backend=replace(base.backend, leaf_ports=128),
                   frontend=replace(base.frontend, leaves=4))


@pytest.mark.parametrize("nodes", [1, 40, 128])
def test_a_leaf_of_400g_links_runs_a_400g_hwsku_rows_in_order(nodes):
    leaf = make_plan(build(wide(nodes))).switch("be-r0")
    assert leaf.hwsku == "Arista-7060X6-64PE-O128S2"
    rows = hwsku(leaf.hwsku).rows
    assert [(p.name, p.clab) for p in leaf.ports] == [(r.name, f"eth{r.position + 1}") for r in rows[:nodes]]


def test_each_role_runs_a_hwsku_as_fast_as_its_links():
    plan = make_plan(build(BUILTINS["ai-cluster"]()))
    leaf, spine = plan.switch("be-g1-r0"), plan.switch("be-s1")
    assert (leaf.hwsku, spine.hwsku) == ("Arista-7060X6-64PE-P32O64", "Arista-7060X6-64PE")
    for sw in (leaf, spine):
        assert all(p.row.speed == p.speed * 1000 for p in sw.ports), sw.name  # no port faster than its link
    # a leaf of 100G hosts and 400G uplinks, the rail-only built-in's FE
    fe = make_plan(build(BUILTINS["rail-only"]())).switch("fe-l1")
    assert fe.hwsku == "Arista-7060X6-64PE-C224O8" and all(p.row.speed == p.speed * 1000 for p in fe.ports)


def test_a_40g_fabric_runs_the_docker_sonic_vs_default():
    c = replace(wide(8), backend=replace(wide(8).backend, uplink_speed=40), gpu=replace(wide(8).gpu, nic_speed=40))
    assert make_plan(build(c)).switch("be-r0").hwsku == "Force10-S6000"


def test_a_declared_hwsku_is_run_and_its_cages_broken_out_to_the_links_speed():
    c = replace(BUILTINS["ai-cluster"](), hardware=Hardware(be_leaf="Arista-7060X6-64PE"))
    leaf = make_plan(build(c)).switch("be-g1-r0")
    assert leaf.hwsku == "Arista-7060X6-64PE"
    assert {(p.speed, p.row.speed, p.row.broken_out) for p in leaf.host_ports} == {(400, 400000, True)}
    assert {(p.speed, p.row.speed, p.row.broken_out) for p in leaf.fabric_ports} == {(800, 800000, False)}


def test_a_declared_hwsku_without_breakout_runs_slower_links_on_its_faster_ports():
    c = replace(wide(8), gpu=replace(wide(8).gpu, nic_speed=25), hardware=Hardware(be_leaf="Force10-S6000"))
    leaf = make_plan(build(c)).switch("be-r0")
    assert {(p.speed, p.row.speed, p.row.broken_out) for p in leaf.ports} == {(25, 40000, False)}
    assert leaf.breakout == ()  # no BREAKOUT_CFG where the platform has no breakout modes


def test_a_link_faster_than_the_declared_hwsku_is_refused():
    c = replace(BUILTINS["ai-cluster"](), hardware=Hardware(be_spine="Arista-7060X6-64PE-O128S2"))
    with pytest.raises(TopologyError) as e:
        build_and_plan(c)
    assert [(p.field, p.message) for p in e.value.problems] == [
        ("hardware.be_spine", "be-s1 has 800G links, and the fastest port of HwSKU Arista-7060X6-64PE-O128S2 is 400G: "
                              "a link cannot be faster than its port")]
    assert "Arista-7060X6-64PE" in e.value.problems[0].hint


def test_a_declared_hwsku_with_too_few_ports_is_refused():
    c = replace(wide(40), hardware=Hardware(be_leaf="Force10-S6000"))
    with pytest.raises(TopologyError) as e:
        build_and_plan(c)
    assert e.value.problems[0].field == "hardware.be_leaf"


def test_an_unknown_hwsku_lists_those_fablab_carries():
    with pytest.raises(TopologyError) as e:
        build(replace(BUILTINS["ai-cluster"](), hardware=Hardware(fe_leaf="Arista-7060X6-64PE-O128")))
    (p,) = e.value.problems
    assert p.field == "hardware.fe_leaf" and "unknown HwSKU" in p.message
    assert all(h.name in p.hint for h in HWSKUS) and "did you mean" in p.hint


def build_and_plan(c):
    return make_plan(build(c))


def test_a_named_port_keeps_its_own_row_and_the_others_fill_around_it():
    c = replace(BUILTINS["ai-cluster"](), cables=(Cable("fe-l1", "fe-l2", a_port="Ethernet4", b_port="Ethernet120"),))
    plan = make_plan(build(c))
    l1 = {p.peer_port if p.peer == "fe-l2" else p.peer: (p.name, p.clab) for p in plan.switch("fe-l1").ports
          if p.peer_port != "st0"}  # the FE NICs (GPU nodes' storage NICs come after them)
    assert l1["Ethernet120"] == ("Ethernet4", "eth2")  # the named port, on its own row
    assert l1["gpu01"] == ("Ethernet0", "eth1") and l1["gpu02"] == ("Ethernet8", "eth3")
    l2 = {p.name: p.clab for p in plan.switch("fe-l2").ports}
    assert l2["Ethernet120"] == "eth31"


def vs_lanemap(rows: list[RefRow]) -> dict[str, tuple[int, ...]]:
    """docker-sonic-vs's lane map: the i-th row of port_config.ini (1-based) is eth<i>."""
    return {f"eth{i}": row.lanes for i, row in enumerate(rows, start=1)}


CLUSTERS = {**BUILTINS, "wide40": lambda: wide(40), "wide100": lambda: wide(100)}


@pytest.fixture(scope="module", params=sorted(CLUSTERS))
def rendered(request):
    plan = make_plan(build(CLUSTERS[request.param]()))
    return plan, artifacts(plan)


def test_ports_are_their_hwsku_rows_and_cables_land_on_the_lanes_owner(rendered, hwsku_dir):
    plan, files = rendered
    dbs = {sw.name: json.loads(files[f"configs/{sw.name}/config_db.json"]) for sw in plan.switches}
    refs = {}
    for name, db in dbs.items():
        sku = db["DEVICE_METADATA"]["localhost"]["hwsku"]
        if sku not in refs:
            refs[sku] = read_port_config(hwsku_dir / f"{sku}.port_config.ini")
        by_name = {r.name: r for r in refs[sku]}
        for port, fields in db["PORT"].items():
            row = by_name.get(port)
            assert row is not None, f"{name}: {port} is no port of {sku}"
            assert (fields["lanes"], fields["alias"], fields["index"]) == \
                (",".join(map(str, row.lanes)), row.alias, str(row.index)), f"{name} {port}"

    # cabling.csv names SONiC ports, the clab file names container interfaces: both list
    # the data-plane cables in the same order.
    cables = [r for r in csv.DictReader(io.StringIO(files["cabling.csv"])) if r["plane"] != "mgmt"]
    links = yaml.safe_load(files[f"{plan.name}.clab.yml"])["topology"]["links"]
    assert len(cables) == len(links)
    landed = 0
    for cable, link in zip(cables, links):
        ends = [ep.split(":") for ep in link["endpoints"]]
        assert [n for n, _ in ends] == [cable["a_node"], cable["b_node"]]
        for (node, eth), port in zip(ends, (cable["a_port"], cable["b_port"])):
            if node not in dbs:
                continue
            sku = dbs[node]["DEVICE_METADATA"]["localhost"]["hwsku"]
            lanes = dbs[node]["PORT"][port]["lanes"].split(",")
            owner = vs_lanemap(refs[sku]).get(eth)
            assert owner is not None and owner[0] == int(lanes[0]), \
                f"{node}:{eth} (lanes {owner}) does not own the first lane of {port} ({lanes[0]})"
            landed += 1
    assert landed == sum(len(sw.ports) for sw in plan.switches)


def test_a_switch_off_the_default_hwsku_tells_docker_sonic_vs_which_to_run(clab_validator):
    plan = make_plan(build(wide(40)))
    doc = yaml.safe_load(artifacts(plan)[f"{plan.name}.clab.yml"])
    assert not list(clab_validator.iter_errors(doc))
    nodes = doc["topology"]["nodes"]
    for sw in plan.switches:
        expected = None if sw.hwsku == "Force10-S6000" else {"HWSKU": sw.hwsku}
        assert nodes[sw.name].get("env") == expected, sw.name
    assert nodes["be-r0"]["env"] == {"HWSKU": "Arista-7060X6-64PE-O128S2"}


# --------------------------------------------------------------------------- breakout

@pytest.fixture(scope="session")
def x6_platform(reference):
    path = reference / "sonic-platform" / "x86_64-arista_7060x6_64pe"
    if not path.is_dir():
        pytest.skip(f"SONiC platform files not found at {path} (set FABLAB_REFERENCE to the reference folder)")
    return path


@pytest.mark.parametrize("sku", [h for h in HWSKUS if h.cages], ids=lambda s: s.name)
def test_cages_and_their_breakout_modes_are_the_platforms(sku, x6_platform):
    platform = json.loads((x6_platform / "platform.json").read_text())["interfaces"]
    defaults = json.loads((x6_platform / sku.name / "hwsku.json").read_text())["interfaces"]
    for cage in sku.cages:
        ref = platform[cage.parent]
        assert ",".join(map(str, cage.lanes)) == ref["lanes"] and str(cage.index) == ref["index"].split(",")[0]
        assert cage.default_mode == defaults[cage.parent]["default_brkout_mode"], cage.parent
        assert sorted(m for m, _, _ in sku.modes) == sorted(ref["breakout_modes"])
        for mode, _, _ in sku.modes:
            ports = sku.broken_out(cage, mode)
            assert [p.alias for p in ports] == ref["breakout_modes"][mode], (cage.parent, mode)
            assert [lane for p in ports for lane in p.lanes] == list(cage.lanes)  # the cage's lanes, split evenly
        # the HwSKU's own rows are its cages in their default mode
        assert [(r.name, r.lanes, r.alias, r.speed) for r in sku.broken_out(cage, cage.default_mode)] == \
            [(r.name, r.lanes, r.alias, r.speed) for r in sku.cage_rows(cage)]


def test_a_declared_hwsku_breaks_cages_out_for_slower_links():
    c = replace(BUILTINS["ai-cluster"](), hardware=Hardware(fe_leaf="Arista-7060X6-64PE"))
    plan = make_plan(build(c))
    leaf = plan.switch("fe-l1")
    assert {(p.speed, p.row.speed) for p in leaf.ports} == {(100, 100000), (200, 200000), (400, 400000)}
    modes = dict(leaf.breakout)
    assert len(modes) == 64 and {m for m in modes.values()} == {"1x800G[400G]", "8x100G", "4x200G", "2x400G"}
    broken = {p.name for p in leaf.ports if p.row.broken_out}
    assert broken == {p.name for p in leaf.ports}  # every port of a 64 × 800G leaf with no 800G link
    db = json.loads(artifacts(plan)["configs/fe-l1/config_db.json"])
    assert db["BREAKOUT_CFG"] == {parent: {"brkout_mode": mode} for parent, mode in leaf.breakout}
    assert all(db["PORT"][p.name]["speed"] == str(p.row.speed) for p in leaf.ports)


def test_the_default_choice_breaks_nothing_out(ai_plan):
    for sw in ai_plan.switches:
        assert not any(p.row.broken_out for p in sw.ports), sw.name
        assert all(mode == next(c.default_mode for c in hwsku(sw.hwsku).cages if c.parent == parent)
                   for parent, mode in sw.breakout)
