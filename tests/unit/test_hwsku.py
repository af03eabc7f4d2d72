"""Ports against SONiC's own HwSKU files: the rows fablab ships, and what it renders from them.

The reference port_config.ini, platform.json and hwsku.json files are read, and SONiC's
breakout rule applied, by tests/sonic_hwsku.py on its own, and docker-sonic-vs's lane map is
rebuilt here as SONiC builds it (row i, 1-based, gives its lanes to eth<i>), so a wrong data
file or a wrong rule in harness/core cannot check itself.
"""
from __future__ import annotations

import csv
import hashlib
import io
import json
from dataclasses import replace

import pytest
import yaml

from harness.core.breakout import child_ports
from harness.core.hwsku import AUTOMATIC, CATALOG, HWSKUS, hwsku, known, names
from harness.core.hwskudata import DataError, platform_layouts
from harness.core.errors import TopologyError
from harness.core.model import Cable, Cluster, Hardware, build
from harness.core.plan import make_plan
from harness.render import artifacts
from sonic_hwsku import RefRow, entries, platform_of, read_port_config, ref_rows, sonic_ports
from topologies import BUILTINS


@pytest.mark.parametrize("sku", CATALOG, ids=lambda s: s.name)
def test_shipped_rows_equal_sonics(sku, hwsku_dir):
    reference = ref_rows(hwsku_dir, sku.name)
    shipped = [RefRow(r.name, r.lanes, r.alias, r.index, r.speed) for r in sku.rows]
    assert shipped == reference
    assert [r.position for r in sku.rows] == list(range(len(reference)))  # docker-sonic-vs: row i is eth<i+1>


@pytest.mark.parametrize("sku", [h for h in CATALOG if h.cages], ids=lambda s: s.name)
def test_shipped_rows_are_what_sonic_derives_from_platform_and_hwsku_json(sku, reference):
    platform = platform_of(reference, sku.name)
    if platform is None:
        pytest.skip(f"no hwsku.json of {sku.name} under {reference / 'sonic-platform'}")
    derived = sonic_ports(json.loads((platform / "platform.json").read_text()),
                          json.loads((platform / sku.name / "hwsku.json").read_text()))
    assert [RefRow(r.name, r.lanes, r.alias, r.index, r.speed) for r in sku.rows] == derived


def test_the_catalogue_holds_the_hwskus_the_issue_names():
    for name in ("ACS-SN5600", "Mellanox-SN5600-O128", "Mellanox-SN5600-C224O8", "Mellanox-SN5600-V256",
                 "ACS-SN5400", "ACS-MSN4700", "Mellanox-SN4700-O28", "Arista-7060X6-64PE-64x400G",
                 "Arista-7060X6-64PE-256x200G", "Arista-7060X6-32PE", "Arista-7060X6-64DE", "Dell-Z9864f-O64",
                 "Nokia-IXR7220-H5-64D"):
        assert known(name) and hwsku(name).name == name
    assert len(names()) == len(set(names())) == len(CATALOG) >= 30
    assert not known("ACS-SN5601")  # the control


def _pinned(skus) -> str:
    data = [[h.name, h.data_ports, [[r.name, list(r.lanes), r.alias, r.index, r.speed, r.position] for r in h.rows],
             [[c.parent, list(c.lanes), c.index, c.default_mode] for c in h.cages]] for h in skus]
    return hashlib.sha256(json.dumps(data).encode()).hexdigest()


def test_the_automatic_pool_is_the_five_it_always_was():
    # the plan chooses from these alone, so automatic plans, their renders and recorded hashes stay
    assert [h.name for h in HWSKUS] == list(AUTOMATIC) == [
        "Force10-S6000", "Arista-7060X6-64PE", "Arista-7060X6-64PE-P32O64", "Arista-7060X6-64PE-O128S2",
        "Arista-7060X6-64PE-C224O8"]
    # their rows and cages, as transcribed by hand before the catalogue was data
    assert _pinned(HWSKUS) == "a6ac1f1378c0cc9facafec6c5eae1c67c0244f746c85326cff38a41fe8da5ad8"
    assert _pinned(CATALOG[:5]) != _pinned(HWSKUS)  # the control: another five hash otherwise


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


def test_an_unknown_hwsku_names_the_nearest_and_where_the_others_are():
    with pytest.raises(TopologyError) as e:
        build(replace(BUILTINS["ai-cluster"](), hardware=Hardware(fe_leaf="Arista-7060X6-64PE-O128")))
    (p,) = e.value.problems
    assert p.field == "hardware.fe_leaf" and "unknown HwSKU" in p.message
    assert "did you mean 'Arista-7060X6-64PE-O128S2'?" in p.hint and "`fablab hwskus` lists the" in p.hint
    # a name of the catalogue beyond the automatic five is no problem (the control)
    build(replace(BUILTINS["ai-cluster"](), hardware=Hardware(fe_leaf="Mellanox-SN5600-C224O8")))


def test_a_leaf_beyond_the_automatic_hwskus_is_told_which_of_the_catalogue_to_declare():
    base = BUILTINS["rail-only"]()
    c = replace(base, gpu=replace(base.gpu, count=200, nic_speed=200), backend=replace(base.backend, leaf_ports=256),
                frontend=replace(base.frontend, leaves=8))
    with pytest.raises(TopologyError) as e:
        build_and_plan(c)
    p = e.value.problems[0]
    assert p.field == "switches.be-r0" and "no HwSKU the plan picks from has them" in p.message
    assert p.hint.startswith("declare Hardware(be_leaf='Arista-7060X6-64DE-256x200G'), or ")
    # the control: declared, it plans, 200 × 200G on rows of their own speed
    leaf = build_and_plan(replace(c, hardware=Hardware(be_leaf="Arista-7060X6-64DE-256x200G"))).switch("be-r0")
    assert len(leaf.ports) == 200 and {p.row.speed for p in leaf.ports} == {200000}


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


CLUSTERS = {**BUILTINS, "wide40": lambda: wide(40), "wide100": lambda: wide(100),
            # HwSKUs of the catalogue beyond the automatic five, each with links of its ports' speed
            "sn5600": lambda: replace(BUILTINS["ai-cluster"](), name="sn5600", hardware=Hardware(
                be_spine="ACS-SN5600", fe_spine="Mellanox-SN5600-O128", fe_leaf="Mellanox-SN5600-C224O8")),
            "dell": lambda: replace(BUILTINS["ai-cluster"](), name="dell", hardware=Hardware(
                be_spine="Dell-Z9864f-O64", fe_spine="Arista-7060X6-64DE-O128S2")),
            "nokia": lambda: replace(BUILTINS["ai-cluster"](), name="nokia", hardware=Hardware(
                be_spine="Nokia-IXR7220-H5-64D", fe_spine="Mellanox-SN4700-O32"))}


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
        assert [n for n, _ in ends] == [cable["a_device"], cable["b_device"]]
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

@pytest.mark.parametrize("sku", [h for h in CATALOG if h.cages], ids=lambda s: s.name)
def test_cages_and_their_breakout_modes_are_the_platforms(sku, reference):
    folder = platform_of(reference, sku.name)
    if folder is None:
        pytest.skip(f"no hwsku.json of {sku.name} under {reference / 'sonic-platform'}")
    platform = json.loads((folder / "platform.json").read_text())["interfaces"]
    defaults = json.loads((folder / sku.name / "hwsku.json").read_text())["interfaces"]
    data_lanes = {lane for r in sku.data_rows for lane in r.lanes}
    # every data cage of hwsku.json, in platform order: what BREAKOUT_CFG names
    assert [c.parent for c in sku.cages] == [p for p, v in platform.items() if p in defaults
                                             and int(v["lanes"].split(",")[0]) in data_lanes]
    for cage in sku.cages:
        ref = platform[cage.parent]
        assert ",".join(map(str, cage.lanes)) == ref["lanes"] and str(cage.index) == ref["index"].split(",")[0]
        assert cage.default_mode == defaults[cage.parent]["default_brkout_mode"], cage.parent
        assert sorted(m.text for m in cage.modes) == sorted(ref["breakout_modes"])
        for mode, aliases in ref["breakout_modes"].items():
            ports = child_ports(cage, mode)
            assert [alias for _, _, alias, _, _ in ports] == aliases, (cage.parent, mode)
            used = sum(lanes for *_, lanes in entries(mode, len(cage.lanes)))
            assert [lane for _, lanes, *_ in ports for lane in lanes] == list(cage.lanes[:used])  # split evenly
        # the HwSKU's own rows are its cages in their default mode, each on its own row
        assert [(r.name, r.lanes, r.alias, r.speed, r.position) for r in sku.broken_out(cage, cage.default_mode)] == \
            [(r.name, r.lanes, r.alias, r.speed, r.position) for r in sku.cage_rows(cage)]


def test_a_port_whose_first_lane_is_no_rows_is_not_broken_out():
    # Mellanox-SN4700-A96C8V8 runs cages 1-24 as 4 x 25G on their first four lanes: 2 x 200G
    # would start a port on lane 4, which no row owns (docker-sonic-vs has no interface for it)
    sku = hwsku("Mellanox-SN4700-A96C8V8")
    cage = sku.cages[0]
    assert sku.broken_out(cage, "2x200G[100G,50G,40G,25G,10G,1G]") is None
    assert sku.broken_out(cage, "4x100G[50G,25G,10G,1G]") is None  # lanes 0, 2, 4, 6
    # the controls: ports on lanes 0 (the row of etp1a) and 0-3 (the cage's own four rows)
    assert [p.position for p in sku.broken_out(cage, "1x400G[200G,100G,50G,40G,25G,10G,1G]")] == [0]
    assert [p.position for p in sku.broken_out(cage, "4x25G(4)[10G,1G]")] == [0, 1, 2, 3]


def test_the_data_format_as_documented_reads():
    import textwrap

    from harness.core import hwskudata

    example = textwrap.dedent(hwskudata.__doc__.split("(`<platform>.yaml`):\n\n")[1].split("\n\nAn alias")[0])
    (box,) = platform_layouts("example.yaml", example)
    assert (box.name, len(box.rows), box.data_ports, len(box.cages)) == ("Vendor-Box-O64", 65, 64, 64)
    assert (box.rows[-1].name, box.rows[-1].alias, box.rows[-1].speed) == ("Ethernet512", "etp65", 25000)


def test_a_data_file_that_breaks_a_rule_is_refused_naming_it():
    good = """platform: p
groups:
  - {cages: 2, first: 0, step: 8, lanes: 8, first_lanes: {from: 0, step: 8}, index: 1,
     alias: ["etp{index}", "etp{index}{letter}"], modes: [1x800G, 2x400G]}
hwskus:
  X: {1-2: 2x400G}
"""
    (x,) = platform_layouts("p.yaml", good)
    assert [(r.name, r.lanes[0], r.alias) for r in x.rows] == [("Ethernet0", 0, "etp1a"), ("Ethernet4", 4, "etp1b"),
                                                               ("Ethernet8", 8, "etp2a"), ("Ethernet12", 12, "etp2b")]
    for broken in (good.replace("{1-2: 2x400G}", "{1-3: 2x400G}"), good.replace("{1-2: 2x400G}", "{1-2: 4x200G}"),
                   good.replace("{from: 0, step: 8}", "[0]")):
        with pytest.raises(DataError, match="p.yaml"):
            platform_layouts("p.yaml", broken)


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
