"""Every miscabled rail NIC named where it is fixed (issue 66, item 2; harness/core/cabling/astray.py):
a GPU NIC moved to a spare port of another rail's leaf, swapped with another NIC, or doubled up
beside its node's NIC of that leaf's rail is refused naming first the node:NIC and the leaf:port
it belongs on; the leaf it lands on (oversubscribed by it) is said as following from it, never
as the cause. In each plan format, on multi-rail and rail-only leaves, each with its control."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from harness.catalog import load_cluster, load_fabric
from harness.core.cabling.clab_plan import read_clab
from harness.core.cabling.csv_plans import read_cable_csv
from harness.core.cabling.declare import cluster_of
from harness.core.cabling.infer import place
from harness.core.errors import TopologyError
from harness.core.model import build
from harness.core.plan import make_plan
from harness.render import artifacts

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from test_cabling_infer import cluster_csv  # noqa: E402  (the plan builder the inference tests use)

EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "examples" / "plan" / "sonic_lab_links.csv"
ROW = "{},{},{},{},400000,,"


def _moved(node: str, nic: str, was: str, to: str):
    """The example's links with `node:nic`'s cable moved from leaf:port `was` to leaf:port `to`."""
    def edit(lines: list[str]) -> list[str]:
        i = lines.index(ROW.format(node, nic, *was.split(":")))
        lines[i] = ROW.format(node, nic, *to.split(":"))
        return lines
    return edit


def _swapped(a: str, b: str):
    """The example's links with the leaf ports of NICs `a` and `b` (node:nic) traded."""
    def edit(lines: list[str]) -> list[str]:
        i, j = (next(k for k, x in enumerate(lines) if x.startswith(end.replace(":", ",") + ",")) for end in (a, b))
        ra, rb = lines[i].split(","), lines[j].split(",")
        ra[2:4], rb[2:4] = rb[2:4], ra[2:4]
        lines[i], lines[j] = ",".join(ra), ",".join(rb)
        return lines
    return edit


# mutation of docs/examples/plan -> what the first problem says (node:NIC, where, the leaf:port it belongs on)
EXAMPLE_CASES = [
    ("moved to a spare port of the other rail's leaf", _moved("gpu-a02", "enp13s0np0", "rtsw-g1-r1:Ethernet8",
                                                               "rtsw-g1-r0:Ethernet16"),
     ["gpu-a02:enp13s0np0 is gpu-a02's rail 1 NIC", "but is cabled to rtsw-g1-r0:Ethernet16, and rtsw-g1-r0 "
      "carries rail 0", "hint: move it to rtsw-g1-r1:Ethernet8 (free)"],
     "rtsw-g1-r0 is oversubscribed 1.50:1 (1200G down, 800G up): this follows from gpu-a02:enp13s0np0 above"),
    ("doubled up: rail 0 NIC beside its rail 1 NIC", _moved("gpu-a03", "enp12s0np0", "rtsw-g2-r0:Ethernet0",
                                                             "rtsw-g2-r1:Ethernet16"),
     ["gpu-a03:enp12s0np0 is gpu-a03's rail 0 NIC", "cabled to rtsw-g2-r1:Ethernet16",
      "hint: move it to rtsw-g2-r0:Ethernet0 (free)"],
     "follows from gpu-a03:enp12s0np0 above"),
    ("moved to another group's leaf of the other rail", _moved("gpu-a02", "enp13s0np0", "rtsw-g1-r1:Ethernet8",
                                                               "rtsw-g2-r0:Ethernet16"),
     ["gpu-a02:enp13s0np0 is gpu-a02's rail 1 NIC", "cabled to rtsw-g2-r0:Ethernet16",
      "hint: move it to rtsw-g1-r1:Ethernet8 (free)"],
     "follows from gpu-a02:enp13s0np0 above"),
    ("two NICs of two nodes swapped", _swapped("gpu-a01:enp12s0np0", "gpu-a02:enp13s0np0"),
     ["gpu-a01:enp12s0np0 is gpu-a01's rail 0 NIC", "cabled to rtsw-g1-r1:Ethernet8",
      "hint: swap it with gpu-a02:enp13s0np0, now on rtsw-g1-r0:Ethernet0"],
     "gpu-a02:enp13s0np0 is gpu-a02's rail 1 NIC"),
    ("a node's two NICs swapped", _swapped("gpu-a01:enp12s0np0", "gpu-a01:enp13s0np0"),
     ["gpu-a01:enp12s0np0 is gpu-a01's rail 0 NIC", "rtsw-g1-r1 carries rail 1",
      "hint: swap it with gpu-a01:enp13s0np0, now on rtsw-g1-r0:Ethernet0"],
     "hint: swap it with gpu-a01:enp12s0np0, now on rtsw-g1-r1:Ethernet0"),
]


def _edited(tmp: Path, edit) -> Path:
    lines = EXAMPLE.read_text().splitlines()
    (tmp / "sonic_lab_links.csv").write_text("\n".join(edit(lines)) + "\n")
    (tmp / "sonic_lab_devices.csv").write_text(EXAMPLE.with_name("sonic_lab_devices.csv").read_text())
    return tmp / "sonic_lab_links.csv"


@pytest.mark.parametrize("case, edit, first, then", EXAMPLE_CASES, ids=[c[0] for c in EXAMPLE_CASES])
def test_a_nic_on_another_rails_leaf_in_sonic_mgmt_csvs_is_named_first_with_its_port(tmp_path, capsys, case, edit,
                                                                                      first, then):
    from harness.cli.main import main
    assert main(["show", str(_edited(tmp_path, lambda ls: ls))]) == 0  # the control: the example as it is
    capsys.readouterr()
    assert main(["show", str(_edited(tmp_path, edit))]) == 2, case
    err = capsys.readouterr().err
    problems = [x for x in err.splitlines() if x.startswith("  - ")]
    assert all(s in problems[0] for s in first), err
    assert problems[0].startswith("  - ") and "sonic_lab_links.csv:" in problems[0]
    assert then in err, err
    assert "carries 2 rails" not in err and "the backend must be non-blocking" not in err, err
    assert "Traceback" not in err


def _problems(plan) -> list[str]:
    with pytest.raises(TopologyError) as e:
        cluster_of(plan, "x")
    return [str(p) for p in e.value.problems]


@pytest.fixture(scope="module")
def example_files() -> dict[str, str]:
    return artifacts(make_plan(build(load_cluster(str(EXAMPLE)))))


@pytest.mark.parametrize("fmt", ["cable list", "clab"])
def test_a_moved_nic_is_named_alike_in_the_other_formats(example_files, fmt):
    """The example rendered as a cable list and as a clab file (clab's `eth5` is `Ethernet16`)."""
    if fmt == "cable list":
        text = example_files["cabling.csv"]
        read = lambda t: read_cable_csv(t, "cabling.csv", example_files["devices.csv"])  # noqa: E731
        was, to = "gpu-a02,enp13s0np0,rtsw-g1-r1,Ethernet8,", "gpu-a02,enp13s0np0,rtsw-g1-r0,Ethernet16,"
    else:
        text = example_files["sonic-lab.clab.yml"]
        read = lambda t: read_clab(t, "lab.clab.yml")  # noqa: E731
        was, to = '"gpu-a02:enp13s0np0", "rtsw-g1-r1:eth3"', '"gpu-a02:enp13s0np0", "rtsw-g1-r0:eth5"'
    cluster_of(read(text), "x")  # the control
    assert was in text
    got = _problems(read(text.replace(was, to)))
    assert "gpu-a02:enp13s0np0 is gpu-a02's rail 1 NIC" in got[0] and "cabled to rtsw-g1-r0:Ethernet16" in got[0]
    assert "move it to rtsw-g1-r1:Ethernet8 (free)" in got[0]
    assert len(got) == 2 and "follows from gpu-a02:enp13s0np0 above" in got[1]


@pytest.fixture(scope="module")
def multi_rail_files() -> dict[str, str]:
    return artifacts(make_plan(load_fabric("multi-rail")))


@pytest.mark.parametrize("was, to, said", [
    ("gpu02,rail1,be-g1-r0-1,Ethernet276", "gpu02,rail1,be-g1-r2-3,Ethernet288",
     ["gpu02:rail1 is gpu02's rail 1 NIC", "cabled to be-g1-r2-3:Ethernet288, and be-g1-r2-3 carries rails 2/3",
      "move it to be-g1-r0-1:Ethernet276 (free)"]),
    ("gpu07,rail3,be-g2-r2-3,Ethernet280", "gpu07,rail3,be-g2-r0-1,Ethernet288",
     ["gpu07:rail3 is gpu07's rail 3 NIC", "cabled to be-g2-r0-1:Ethernet288", "move it to be-g2-r2-3:Ethernet280 (free)"]),
])
def test_on_leaves_of_two_rails_a_nic_moved_across_is_named_with_its_rails_port_group(multi_rail_files, was, to, said):
    """multi-rail: each leaf carries two consecutive rails on purpose (Ethernet256.. rail 0,
    Ethernet272.. rail 1); a node's three NICs on one leaf do not make it a leaf of three rails."""
    text, devices = multi_rail_files["cabling.csv"], multi_rail_files["devices.csv"]
    cluster_of(read_cable_csv(text, "cabling.csv", devices), "x")  # the control
    got = _problems(read_cable_csv(text.replace(was, to), "cabling.csv", devices))
    assert all(s in got[0] for s in said), got
    assert not any("carries 3 rails" in p or "carries 1 rails" in p for p in got), got


def test_rail_only_a_moved_nic_is_named_with_its_port():
    plan = cluster_csv(groups=1, spines=0, per_group=3)
    cluster_of(read_cable_csv(plan, "c.csv"), "x")  # the control
    got = _problems(read_cable_csv(plan.replace("gpu-a02,enp13s0np0,rtsw-g1-r1,Ethernet8",
                                                "gpu-a02,enp13s0np0,rtsw-g1-r3,Ethernet24"), "c.csv"))
    assert len(got) == 1 and "gpu-a02:enp13s0np0 is gpu-a02's rail 1 NIC" in got[0]
    assert "cabled to rtsw-g1-r3:Ethernet24" in got[0] and "move it to rtsw-g1-r1:Ethernet8 (free)" in got[0]


def test_where_the_ports_follow_no_pattern_the_first_free_port_of_the_rails_group_is_named():
    """gpu-a03 on Ethernet40 of every leaf (0, 8, 40: no even step): the rail's first free port."""
    plan = cluster_csv(groups=1, spines=0, per_group=3)
    plan = "\n".join(x.replace(",Ethernet16,", ",Ethernet40,") if x.startswith("gpu-a03,enp") else x
                     for x in plan.splitlines()) + "\n"
    cluster_of(read_cable_csv(plan, "c.csv"), "x")  # the control
    got = _problems(read_cable_csv(plan.replace("gpu-a02,enp13s0np0,rtsw-g1-r1,Ethernet8",
                                                "gpu-a02,enp13s0np0,rtsw-g1-r3,Ethernet48"), "c.csv"))
    assert "move it to rtsw-g1-r1:Ethernet8 (free), the first free port of rail 1's ports on rtsw-g1-r1" in got[0]


def test_the_pattern_port_taken_by_a_rightly_cabled_nic_gives_the_first_free_one():
    """The moved NIC's place is taken by another node's right NIC (two nodes shifted): the rail's
    first free port is named, never a port in use."""
    plan = cluster_csv(groups=1, spines=0, per_group=3)
    plan = plan.replace("gpu-a02,enp13s0np0,rtsw-g1-r1,Ethernet8", "gpu-a02,enp13s0np0,rtsw-g1-r3,Ethernet24")
    plan = plan.replace("gpu-a03,enp13s0np0,rtsw-g1-r1,Ethernet16", "gpu-a03,enp13s0np0,rtsw-g1-r1,Ethernet8")
    got = _problems(read_cable_csv(plan, "c.csv"))
    assert "gpu-a02:enp13s0np0 is gpu-a02's rail 1 NIC" in got[0]
    assert "move it to rtsw-g1-r1:Ethernet16 (free)" in got[0], got


def test_the_astray_nics_and_their_homes_are_kept_for_what_follows():
    plan = cluster_csv(swap=("gpu-a02:enp12s0np0", "gpu-a02:enp13s0np0"))
    homes = {str(h.nic): (str(h.end), str(h.taken_by)) for h in place(read_cable_csv(plan, "c.csv")).astray}
    assert homes == {"gpu-a02:enp12s0np0": ("rtsw-g1-r0:Ethernet8", "gpu-a02:enp13s0np0"),
                     "gpu-a02:enp13s0np0": ("rtsw-g1-r1:Ethernet8", "gpu-a02:enp12s0np0")}
    assert place(read_cable_csv(cluster_csv(), "c.csv")).astray == ()  # the control
