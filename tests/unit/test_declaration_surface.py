"""A declaration a newcomer gets right the first time (issue 33, item 6): defaults that follow
the rest of the declaration, hints that give the value that fixes it, one problem on many
switches said once, and a misspelt field that hides none of the file's other problems."""
from __future__ import annotations

import re
import textwrap
from dataclasses import replace

import pytest

from harness.catalog import load_cluster, load_fabric
from harness.cli.main import main
from harness.core.defaults import FIXED, FOLLOWING, Derived
from harness.core.errors import TopologyError
from harness.core.model import Backend, Cluster, GpuNodes, Role, build, oversubscription
from harness.report.provenance import declaration_sha256
from topologies import BUILTINS
from topologies.edge import edge


def cluster(count=8, gpus=4, **backend) -> Cluster:
    return Cluster(name="t", gpu=GpuNodes(count=count, gpus_per_node=gpus), backend=Backend(rails=gpus, **backend))


def problems(c: Cluster) -> list[str]:
    with pytest.raises(TopologyError) as info:
        build(c)
    return [str(p) for p in info.value.problems]


# --------------------------------------------------------------------------- defaults that follow


# backend fields given (8 nodes × 4 GPUs at 400G), then (spines, uplinks_per_spine, uplinks_per_superspine)
DEFAULTS = [
    ({"kind": "rail-only"}, (0, 1, 1)),  # no spine tier: no spines
    ({}, (2, 1, 1)),  # a leaf: 4 nodes × 400G down, 2 spines × 1 × 800G up
    ({"groups": 1}, (2, 2, 1)),  # 8 nodes × 400G down: 2 spines × 2 × 800G up
    ({"groups": 1, "uplink_speed": 400}, (2, 4, 1)),
    ({"groups": 1, "spines": 4}, (4, 1, 1)),
    ({"groups": 1, "allow_oversubscription": True}, (2, 1, 1)),  # declared: the uplinks stay 1
    ({"pods": 2, "superspines": 2}, (2, 1, 4)),  # a spine: 8 leaf links down, 2 super-spines × 4 up
    ({"pods": 2, "superspines": 4}, (2, 1, 2)),
    ({"groups": 1, "uplinks_per_spine": 3}, (2, 3, 1)),  # written: kept
]


@pytest.mark.parametrize("given, expected", DEFAULTS)
def test_defaults_follow_the_rest_and_build_non_blocking(given, expected):
    fabric = build(cluster(**given))
    be = fabric.cluster.backend
    assert (be.spines, be.uplinks_per_spine, be.uplinks_per_superspine) == expected
    ratios = [oversubscription(fabric, s.name) for s in fabric.switches if s.role in (Role.BE_LEAF, Role.BE_SPINE)]
    assert given.get("allow_oversubscription") or all(r is None or r <= 1 for r in ratios), ratios


def test_a_default_follows_a_later_change_a_written_value_does_not():
    c = cluster(groups=1)
    assert c.backend.uplinks_per_spine == 2
    assert replace(c, gpu=GpuNodes(count=16)).backend.uplinks_per_spine == 4  # derived again
    assert replace(c, backend=replace(c.backend, spines=4)).backend.uplinks_per_spine == 1
    written = cluster(groups=1, uplinks_per_spine=2)
    assert replace(written, gpu=GpuNodes(count=16)).backend.uplinks_per_spine == 2  # the control: kept


@pytest.mark.parametrize("make", [*BUILTINS.values(), edge], ids=[*BUILTINS, "edge"])
def test_existing_declarations_keep_their_fabric_and_hash(make):
    """A derived value of a built-in is the old fixed default (spines 2, uplinks 1), so the same
    declaration written with those gives the same fabric and declaration_sha256."""
    c = make()
    derived = {n: getattr(c.backend, n) for n in FOLLOWING if isinstance(getattr(c.backend, n), Derived)}
    assert derived == {n: FIXED[n] for n in derived}
    old = replace(c, backend=replace(c.backend, **{n: int(v) for n, v in derived.items()}))
    assert declaration_sha256(old) == declaration_sha256(c)
    assert build(old).links == build(c).links


def test_a_rail_only_backend_written_with_spines_is_still_refused():
    assert any("has no spine tier" in p for p in problems(cluster(kind="rail-only", spines=2)))
    assert build(cluster(kind="rail-only")).cluster.backend.spines == 0  # the control


# --------------------------------------------------------------------------- said once, with the fix

SAID_ONCE = [  # declaration, the one problem's words, the hint's fix
    (cluster(pods=2, superspines=2, uplinks_per_superspine=1),
     "4 spines (be-p1-s1, be-p1-s2, ...) are oversubscribed 4.00:1 towards the super-spines "
     "(6400G down, 1600G up each)",
     {"uplinks_per_superspine": 4}),
    (cluster(groups=1, uplinks_per_spine=1),
     "4 leaves (be-g1-r0, be-g1-r1, ...) are oversubscribed 2.00:1 (3200G down, 1600G up each)",
     {"uplinks_per_spine": 2}),
    (cluster(groups=1, uplinks_per_spine=4, leaf_ports=12),
     "4 leaves (be-g1-r0, be-g1-r1, ...) need 16 ports each but have 12", {"leaf_ports": 16}),
    (cluster(spine_ports=2), "2 spines (be-s1, be-s2) need 8 ports each but have 2", {"spine_ports": 8}),
    (cluster(count=64, groups=1, uplinks_per_spine=1, uplink_speed=100),
     "are oversubscribed 128.00:1", {"spines": 16, "uplinks_per_spine": 16}),
    (cluster(gpus=1, groups=1, uplinks_per_spine=1),
     "backend: be-g1-r0 is oversubscribed 2.00:1 (3200G down, 1600G up)",
     {"uplinks_per_spine": 2}),  # one switch: named alone
]


@pytest.mark.parametrize("c, words, fix", SAID_ONCE)
def test_one_problem_on_many_switches_is_said_once_and_its_hint_fixes_it(c, words, fix):
    said = problems(c)
    assert len([p for p in said if words in p]) == 1, said
    hint = next(p for p in said if words in p).split("(hint: ", 1)[1]
    for name, value in fix.items():
        assert re.search(rf"\b{name}={value}\b", hint), hint
    fixed = replace(c, backend=replace(c.backend, **fix))
    assert not any(words in p for p in _problems_or_none(fixed))  # the control: the hint's values fix it


def _problems_or_none(c: Cluster) -> list[str]:
    try:
        build(c)
    except TopologyError as e:
        return [str(p) for p in e.problems]
    return []


# --------------------------------------------------------------------------- a misspelt field hides nothing

OTHERS = ("name: 'Typo_Lab' is not a usable cluster name", "backend.rails: 3 rails but 4 GPUs per node",
          "frontend.leaves: 0 FE leaves", "backend.mtu: MTU 100 out of range")
FILES = [  # the misspelt call, the problem said for it
    ("Backend(spine=2, rails=3, mtu=100)", "backend.spine: Backend has no field 'spine' ({path}, line 3)",
     "did you mean 'spines'?"),
    ("Backend(rails=3, mtu=100, uplinks_per_superspin=2)", "backend.uplinks_per_superspin: Backend has no field",
     "did you mean 'uplinks_per_superspine'?"),
    ("Backend(rails=3, mtu=100), cables=(Cable('fe-l1', 'fe-l2', sped=100),)",
     "cables[0].sped: Cable has no field 'sped' ({path}, line 3)", "did you mean 'speed'?"),
    ("Backend(rails=3, mtu=100), tenants=(Tenant('a', members=('gpu01',)),)",
     "tenants[0].vni: Tenant() needs 'vni' ({path}, line 3)", ""),
]


def _file(tmp_path, backend: str, frontend: str = "Frontend(leaves=0)", name: str = "Typo_Lab"):
    path = tmp_path / "decl.py"
    path.write_text(textwrap.dedent(f"""\
        from harness.core.model import *
        cluster = Cluster(name={name!r}, gpu=GpuNodes(count=8, gpus_per_node=4),
                          backend={backend},
                          frontend={frontend})
    """))
    return path


@pytest.mark.parametrize("call, said, hint", FILES)
def test_a_misspelt_field_is_said_with_every_other_problem(tmp_path, call, said, hint):
    path = _file(tmp_path, call)
    with pytest.raises(TopologyError) as info:
        load_cluster(str(path))
    text = [str(p) for p in info.value.problems]
    assert text[0].startswith(said.format(path=path)) and hint in text[0], text
    assert all(any(p.startswith(o) for p in text) for o in OTHERS), text
    assert len(text) == 1 + len(OTHERS), text  # nothing said twice, no follow-on


def test_the_file_without_the_typo_says_only_the_others(tmp_path):
    with pytest.raises(TopologyError) as info:
        load_fabric(str(_file(tmp_path, "Backend(spines=2, rails=3, mtu=100)")))
    assert [str(p).split(" (hint")[0] for p in info.value.problems] == [
        "name: 'Typo_Lab' is not a usable cluster name", "backend.rails: 3 rails but 4 GPUs per node",
        "frontend.leaves: 0 FE leaves", "backend.mtu: MTU 100 out of range"]
    assert load_cluster(str(_file(tmp_path, "Backend(spines=2)", "Frontend()", "typo-lab"))).name == "typo-lab"


def test_a_misspelt_field_alone_is_refused_and_the_cli_says_it_exit_2(tmp_path, capsys):
    path = _file(tmp_path, "Backend(spine=2)", "Frontend()", "typo-lab")
    assert main(["show", str(path)]) == 2
    err = capsys.readouterr().err
    assert "1 problem" in err and "did you mean 'spines'?" in err and "Traceback" not in err


def test_outside_a_file_a_misspelt_field_still_raises_at_once():
    with pytest.raises(TopologyError, match="did you mean 'spines'"):
        Backend(spine=2)
