"""A render's cabling read back is the same plan (issue 33, item 5): `fablab render` writes the
cabling as a cable list (cabling.csv + devices.csv), as sonic-mgmt's connection graph
(sonic_<lab>_links.csv + sonic_<lab>_devices.csv) and as DEVICE_NEIGHBOR in every
config_db.json; reading either CSV pair, or the clab file, back as the TOPOLOGY gives the
declaration's fabric cable for cable, node for node, over declarations drawn by hypothesis.
And the example plan of docs/examples/plan is the same plan in all three formats."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

from harness.catalog import load_cluster
from harness.core.cabling.declare import cluster_of
from harness.core.cabling.load import read_plan
from harness.core.model import build
from harness.core.plan import make_plan
from harness.render import artifacts
from test_properties import clusters

EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "examples" / "plan" / "sonic_lab_links.csv"


def _cables(plan) -> set:
    """Each cable as its two ends (either order), plane and speed."""
    return {(frozenset({(c.a_node, c.a_port), (c.b_node, c.b_port)}), c.plane, c.speed) for c in plan.cables}


def _nodes(plan) -> set:
    return {(n.name, n.role, n.group, n.pod, n.rails) for n in plan.fabric.nodes}


def _read_back(tmp: Path, files: dict[str, str], plan_file: str, name: str):
    for rel, text in files.items():
        if "/" not in rel:
            (tmp / rel).write_text(text)
    return make_plan(build(cluster_of(read_plan(tmp / plan_file), name)))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                   HealthCheck.function_scoped_fixture])
@given(clusters())
def test_a_renders_cabling_read_back_in_each_format_is_the_same_plan(tmp_path_factory, cluster):
    declared = make_plan(build(cluster))
    files = artifacts(declared)
    for plan_file in ("cabling.csv", f"sonic_{declared.name}_links.csv", f"{declared.name}.clab.yml"):
        back = _read_back(tmp_path_factory.mktemp("r"), files, plan_file, cluster.name)
        assert _cables(back) == _cables(declared), plan_file
        assert _nodes(back) == _nodes(declared), plan_file


def test_every_config_db_names_each_ports_neighbour_as_the_cabling_does():
    declared = make_plan(build(load_cluster("ai-cluster")))
    files = artifacts(declared)
    ends = {(c.a_node, c.a_port): (c.b_node, c.b_port) for c in declared.cables}
    ends.update({b: a for a, b in list(ends.items())})
    for sw in declared.switches:
        db = json.loads(files[f"configs/{sw.name}/config_db.json"])
        got = {(sw.name, port): (row["name"], row["port"]) for port, row in db["DEVICE_NEIGHBOR"].items()}
        assert got == {(sw.name, p.name): ends[(sw.name, p.name)] for p in sw.ports}
        assert set(db["DEVICE_NEIGHBOR"]) == set(db["PORT"])  # a neighbour on every port, none elsewhere


@pytest.mark.parametrize("fmt", ["sonic-mgmt", "cable list", "clab"])
def test_the_example_plan_is_the_same_plan_in_each_format(tmp_path, fmt):
    """docs/examples/plan as sonic-mgmt CSVs, written out again as a cable list and as a clab
    file by fablab's render: the plans are the same, with the example's own names and ports."""
    ours = make_plan(build(load_cluster(str(EXAMPLE))))
    assert {s.name for s in ours.switches} >= {"rtsw-g1-r0", "ctsw-01", "fetor-1", "fesp-1"}
    files = artifacts(ours)
    plan_file = {"sonic-mgmt": f"sonic_{ours.name}_links.csv", "cable list": "cabling.csv",
                 "clab": f"{ours.name}.clab.yml"}[fmt]
    back = _read_back(tmp_path, files, plan_file, ours.name)
    assert _cables(back) == _cables(ours) and _nodes(back) == _nodes(ours)
    leaf = back.switch("rtsw-g1-r0")
    assert {(p.name, p.peer) for p in leaf.ports} >= {("Ethernet256", "ctsw-01"), ("Ethernet0", "gpu-a01")}


def _edited(tmp: Path, edit) -> Path:
    """A copy of the example plan (links and devices) with `edit` applied to its links' lines."""
    lines = EXAMPLE.read_text().splitlines()
    (tmp / "sonic_lab_links.csv").write_text("\n".join(edit(lines)) + "\n")
    (tmp / "sonic_lab_devices.csv").write_text(EXAMPLE.with_name("sonic_lab_devices.csv").read_text())
    return tmp / "sonic_lab_links.csv"


def _swap_gpu_a01(lines):
    a, b = lines.index("gpu-a01,enp12s0np0,rtsw-g1-r0,Ethernet0,400000,,"), \
        lines.index("gpu-a01,enp13s0np0,rtsw-g1-r1,Ethernet0,400000,,")
    lines[a], lines[b] = "gpu-a01,enp12s0np0,rtsw-g1-r1,Ethernet0,400000,,", "gpu-a01,enp13s0np0,rtsw-g1-r0,Ethernet0,400000,,"
    return lines


@pytest.mark.parametrize("case, edit, said", [
    ("rail swap", _swap_gpu_a01, ["sonic_lab_links.csv:", "gpu-a01:enp12s0np0 is gpu-a01's rail 0 NIC",
                                  "rtsw-g1-r1 carries rail 1"]),
    ("FE-BE cable", lambda ls: ls + ["fetor-2,Ethernet200,rtsw-g1-r0,Ethernet200,400000,,"],
     ["fetor-2:Ethernet200 (fe) to rtsw-g1-r0:Ethernet200 (be): an FE–BE cable"]),
    ("oversubscribed leaf", lambda ls: [x for x in ls if not x.startswith("ctsw-02,")],
     ["rtsw-g1-r0:Ethernet256", "oversubscribed 2.00:1", "rtsw-g1-r0: 800G down (Ethernet0, Ethernet8)"]),
])
def test_a_bad_plan_is_refused_exit_2_naming_device_and_port(tmp_path, capsys, case, edit, said):
    from harness.cli.main import main
    assert main(["show", str(_edited(tmp_path, lambda ls: ls))]) == 0  # the control: the example as it is
    capsys.readouterr()
    assert main(["show", str(_edited(tmp_path, edit))]) == 2, case
    err = " ".join(capsys.readouterr().err.split())
    assert all(s in err for s in said), err
    assert "Traceback" not in err


def test_a_plan_writing_front_panel_aliases_is_the_plan_of_sonic_port_names(tmp_path):
    """A DCIM labels a cage as its front panel does (`etp33a`, SONiC's alias) where SONiC names the
    port `Ethernet256`: with the switch's HwSKU named, the alias is read as the port it labels."""
    from harness.core.hwsku import hwsku
    skus = dict(line.split(",")[0:3:2] for line in EXAMPLE.with_name("sonic_lab_devices.csv").read_text().splitlines()[1:])

    def aliased(lines):
        out = [lines[0]]
        for line in lines[1:]:
            a, ap, b, bp, *rest = line.split(",")
            ap, bp = (hwsku(skus[d]).row(p).alias if skus.get(d) else p for d, p in ((a, ap), (b, bp)))
            out.append(",".join([a, ap, b, bp, *rest]))
        return out

    text = "\n".join(aliased(EXAMPLE.read_text().splitlines()))
    assert ",rtsw-g1-r0,etp33a," in text and "Ethernet" not in text  # every switch port by its alias
    ours = make_plan(build(load_cluster(str(EXAMPLE))))
    back = make_plan(build(load_cluster(str(_edited(tmp_path, aliased)))))
    assert _cables(back) == _cables(ours)
