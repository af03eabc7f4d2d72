"""The fablab command, run as a user runs it (in-process through main(), same argv)."""
from __future__ import annotations

import json
import textwrap

import yaml

from harness.cli.main import main


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_list_names_the_builtins(capsys):
    code, out, _ = run(capsys, "list", "--json")
    assert code == 0
    assert {r["name"] for r in json.loads(out)} == {"ai-cluster", "rail-only", "multi-rail", "pods", "dual-homed", "large", "xlarge"}


def test_show_json_counts(capsys):
    code, out, _ = run(capsys, "show", "ai-cluster", "--json")
    s = json.loads(out)
    assert code == 0
    assert s["nodes"]["gpu"] == 8 and s["nodes"]["be-leaf"] == 8 and s["nodes"]["be-spine"] == 2
    assert s["gpus"] == 32
    assert s["oversubscription"]["be-g1-r0"] == 1.0
    assert s["bom"]["optics"]["800G"] == 32  # 16 leaf-spine links, a transceiver at each end


def test_show_names_the_checks_a_one_group_design_cannot_exercise(capsys, tmp_path):
    topo = tmp_path / "onegroup.py"
    topo.write_text(textwrap.dedent("""
        from harness import Backend, Cluster, Frontend, GpuNodes
        cluster = Cluster(name="onegroup", gpu=GpuNodes(count=4, gpus_per_node=2),
                          backend=Backend(rails=2, groups=1, spines=2, uplinks_per_spine=1),
                          frontend=Frontend(spines=1, leaves=1, storage_servers=0))
    """))
    code, out, _ = run(capsys, "show", str(topo), "--json")
    na = json.loads(out)["not_applicable"]
    assert code == 0
    for case in ("ecmp", "failover-local", "failover-gray", "failover-spine", "rdma-path"):
        assert "one group" in na[case] and "Backend(groups=2)" in na[case], case
    assert "Dcqcn(" in json.loads(out)["assumed"][0]  # no tuning declared: the NICs' defaults
    code, out, _ = run(capsys, "show", str(topo))
    assert "note: ecmp, failover-local" in out and "cannot apply to this design" in out
    # the control: two groups, and a declared tuning (ai-cluster's)
    code, out, _ = run(capsys, "show", "ai-cluster", "--json")
    s = json.loads(out)
    assert code == 0 and "ecmp" not in s["not_applicable"] and "failover-gray" not in s["not_applicable"]
    assert s["assumed"] == [] and "super-spine" in s["not_applicable"]["ecmp-superspine"]


def test_show_table(capsys):
    code, out, _ = run(capsys, "show", "rail-only")
    assert code == 0 and "bill of materials" in out and "no uplinks" in out


def test_unknown_topology_lists_the_builtins(capsys):
    code, _, err = run(capsys, "show", "nope")
    assert code == 2 and "ai-cluster" in err and "rail-only" in err


def test_render_a_cluster_declared_in_a_file(capsys, tmp_path):
    topo = tmp_path / "mine.py"
    topo.write_text(textwrap.dedent("""
        from harness import Backend, Cluster, Frontend, GpuNodes
        cluster = Cluster(name="mine", gpu=GpuNodes(count=6, gpus_per_node=2),
                          backend=Backend(rails=2, groups=3, spines=3),
                          frontend=Frontend(spines=1, leaves=1, storage_servers=0))
    """))
    code, _, err = run(capsys, "render", str(topo), "-o", str(tmp_path / "out"))
    assert code == 0, err
    doc = yaml.safe_load((tmp_path / "out" / "mine.clab.yml").read_text())
    assert doc["name"] == "mine"
    assert "be-g3-r1" in doc["topology"]["nodes"]
    assert (tmp_path / "out" / "configs" / "be-s3" / "frr.conf").exists()


def test_render_with_a_lab_name(capsys, tmp_path):
    code, _, _ = run(capsys, "render", "rail-only", "-o", str(tmp_path), "--name", "lab7")
    assert code == 0 and (tmp_path / "lab7.clab.yml").exists()


def test_bad_declaration_exits_nonzero_lists_all_and_writes_nothing(capsys, tmp_path):
    topo = tmp_path / "bad.py"
    topo.write_text(textwrap.dedent("""
        from harness import Backend, Cable, Cluster, GpuNodes
        def build():
            return Cluster(name="bad", gpu=GpuNodes(count=3, gpus_per_node=4),
                           backend=Backend(rails=8, groups=2),
                           cables=(Cable("fe-l1", "be-s1"),))
    """))
    out_dir = tmp_path / "out"
    code, _, err = run(capsys, "render", str(topo), "-o", str(out_dir))
    assert code == 2
    for words in ("backend.rails", "backend.groups", "cables[0]", "joins the FE and the BE"):
        assert words in err
    assert not out_dir.exists()
    assert list(tmp_path.iterdir()) == [topo]


def test_file_without_cluster_is_explained(capsys, tmp_path):
    topo = tmp_path / "empty.py"
    topo.write_text("x = 1\n")
    code, _, err = run(capsys, "show", str(topo))
    assert code == 2 and "defines no cluster" in err
