"""A render replaces its output directory whole or not at all (harness.render.write_artifacts),
and lab names are checked before anything is written. Real files under tmp_path; failures are
injected at the OS layer (os.rename, the libc's renameat2) or by an artifact path that cannot
be written."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import harness.render as rendering
from harness.cli.main import main
from harness.core.errors import InputError, RenderError, TopologyError
from harness.core.model import check_lab_name
from harness.render import MANIFEST, OutputDirRefused, write_artifacts


def snapshot(root: Path) -> dict[str, object]:
    """Every entry under `root` (and `root` itself): a file's bytes, a symlink's target, a
    directory as 'dir'."""
    tree: dict[str, object] = {}
    if not os.path.lexists(root):
        return tree
    tree["."] = "dir" if root.is_dir() else root.read_bytes()
    if not root.is_dir():
        return tree
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = Path(dirpath, name)
            rel = str(path.relative_to(root))
            if path.is_symlink():
                tree[rel] = ("link", os.readlink(path))
            elif path.is_dir():
                tree[rel] = "dir"
            else:
                tree[rel] = path.read_bytes()
    return tree


def temps(parent: Path, name: str) -> list[str]:
    """Temporary directories of renders of `name` left in `parent`."""
    return sorted(p.name for p in parent.iterdir() if p.name.startswith(f".{name}."))


def render(*argv: str) -> int:
    return main(["render", *argv])


@pytest.fixture
def earlier(tmp_path) -> Path:
    """An earlier fablab render of rail-only in tmp_path/out."""
    out = tmp_path / "out"
    assert render("rail-only", "-o", str(out)) == 0
    return out


# ----------------------------------------------------------------------- all or nothing


def test_a_render_blocked_halfway_leaves_an_earlier_render_as_it_was(earlier):
    before = snapshot(earlier)
    # "a" is written, then "a/b" cannot be: the render stops halfway through writing.
    with pytest.raises(RenderError, match=r"cannot write a/b of the render of .*out: .*out is unchanged"):
        write_artifacts({"a": "x", "a/b": "y"}, earlier)
    assert snapshot(earlier) == before
    assert temps(earlier.parent, "out") == []


def test_a_render_blocked_halfway_leaves_no_target_when_there_was_none(tmp_path):
    with pytest.raises(RenderError):
        write_artifacts({"a": "x", "a/b": "y"}, tmp_path / "new")
    assert list(tmp_path.iterdir()) == []


def test_a_failed_swap_puts_the_earlier_render_back(earlier, monkeypatch):
    """No renameat2 (old libc): two renames; the second fails, the first is undone."""
    before = snapshot(earlier)
    monkeypatch.setattr(rendering, "_renameat2", None)
    real, calls = os.rename, []

    def rename(src, dst, *args, **kwargs):
        calls.append((src, dst))
        if len(calls) == 2:
            raise OSError(28, "No space left on device")
        return real(src, dst, *args, **kwargs)

    monkeypatch.setattr(os, "rename", rename)
    with pytest.raises(RenderError, match="cannot move the new render into .*out: No space left on device; "
                                          ".*out is unchanged"):
        render_rail_only_over(earlier)
    assert len(calls) == 3  # aside, in (fails), back
    assert snapshot(earlier) == before
    assert temps(earlier.parent, "out") == []


def test_a_swap_refused_at_the_first_rename_changes_nothing(earlier, monkeypatch):
    before = snapshot(earlier)
    monkeypatch.setattr(rendering, "_renameat2", None)

    def rename(src, dst, *args, **kwargs):
        raise OSError(1, "Operation not permitted")

    monkeypatch.setattr(os, "rename", rename)
    with pytest.raises(RenderError, match="Operation not permitted; .*out is unchanged"):
        render_rail_only_over(earlier)
    assert snapshot(earlier) == before
    assert temps(earlier.parent, "out") == []


def test_an_exchange_the_file_system_refuses_changes_nothing(earlier, monkeypatch):
    """renameat2 fails with an error that is no 'unsupported': nothing is tried after it."""
    before = snapshot(earlier)

    def renameat2(*args):
        import ctypes

        ctypes.set_errno(13)  # EACCES
        return -1

    monkeypatch.setattr(rendering, "_renameat2", renameat2)
    with pytest.raises(RenderError, match="Permission denied; .*out is unchanged"):
        render_rail_only_over(earlier)
    assert snapshot(earlier) == before
    assert temps(earlier.parent, "out") == []


def render_rail_only_over(out: Path) -> None:
    from harness.core.model import build
    from harness.core.plan import make_plan
    from topologies import BUILTINS

    write_artifacts(rendering.artifacts(make_plan(build(BUILTINS["rail-only"]()))), out)


# ----------------------------------------------------------------------- exactly this render


def test_a_render_over_another_topology_leaves_no_stale_file(earlier, tmp_path):
    assert render("ai-cluster", "-o", str(earlier)) == 0
    assert sorted(p.name for p in earlier.glob("*.clab.yml")) == ["ai-cluster.clab.yml"]
    assert not (earlier / "configs" / "be-r0").exists()  # a rail-only switch
    fresh = tmp_path / "fresh"
    assert render("ai-cluster", "-o", str(fresh)) == 0
    assert snapshot(earlier) == snapshot(fresh)
    assert temps(tmp_path, "out") == []


def test_the_two_rename_swap_leaves_no_stale_file_either(earlier, tmp_path, monkeypatch):
    monkeypatch.setattr(rendering, "_renameat2", None)
    assert render("ai-cluster", "-o", str(earlier)) == 0
    assert sorted(p.name for p in earlier.glob("*.clab.yml")) == ["ai-cluster.clab.yml"]
    fresh = tmp_path / "fresh"
    assert render("ai-cluster", "-o", str(fresh)) == 0
    assert snapshot(earlier) == snapshot(fresh)
    assert temps(tmp_path, "out") == []


def test_the_manifest_says_what_was_rendered(earlier):
    doc = json.loads((earlier / MANIFEST).read_text())
    assert doc["topology"] == "rail-only" and doc["cluster"] == "rail-only" and doc["lab"] == "rail-only"
    assert doc["fablab"]
    on_disk = {str(p.relative_to(earlier)) for p in earlier.rglob("*") if p.is_file()}
    assert set(doc["files"]) == on_disk - {MANIFEST}


def test_an_empty_directory_takes_a_render_and_keeps_its_mode(tmp_path):
    out = tmp_path / "out"
    out.mkdir(mode=0o750)
    os.chmod(out, 0o750)
    assert render("rail-only", "-o", str(out)) == 0
    assert (out / "rail-only.clab.yml").is_file()
    assert out.stat().st_mode & 0o777 == 0o750
    assert temps(tmp_path, "out") == []


def test_a_new_directory_gets_the_umask_mode_not_mkdtemps_0700(tmp_path):
    out = tmp_path / "a" / "b"
    assert render("rail-only", "-o", str(out)) == 0
    mask = os.umask(0)
    os.umask(mask)
    assert out.stat().st_mode & 0o777 == 0o777 & ~mask


def test_a_symlink_to_a_directory_is_followed_and_kept(tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    link = tmp_path / "link"
    link.symlink_to(real)
    assert render("rail-only", "-o", str(link)) == 0
    assert render("ai-cluster", "-o", str(link)) == 0
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert sorted(p.name for p in real.glob("*.clab.yml")) == ["ai-cluster.clab.yml"]
    assert temps(tmp_path, "real") == [] and temps(tmp_path, "link") == []


# ----------------------------------------------------------------------- refused before anything is written


def test_a_directory_fablab_did_not_render_is_refused_and_untouched(tmp_path, capsys):
    out = tmp_path / "mine"
    (out / "configs").mkdir(parents=True)
    (out / "notes.txt").write_text("mine")
    (out / "configs" / "fe-l1").write_text("a file where a render has a directory")
    before = snapshot(out)
    assert render("ai-cluster", "-o", str(out)) == 2
    err = capsys.readouterr().err
    assert "fablab did not render it" in err and "choose an empty or new directory, or remove" in err
    assert snapshot(out) == before
    assert temps(tmp_path, "mine") == []


def test_files_the_earlier_render_did_not_write_are_refused_and_untouched(earlier, capsys):
    """The user's case: configs/fe-l1 a file where this render puts a directory."""
    assert render("ai-cluster", "-o", str(earlier)) == 0
    for path in (earlier / "configs" / "fe-l1").iterdir():
        path.unlink()
    (earlier / "configs" / "fe-l1").rmdir()
    (earlier / "configs" / "fe-l1").write_text("not fablab's")
    before = snapshot(earlier)
    assert render("ai-cluster", "-o", str(earlier)) == 2
    err = capsys.readouterr().err
    assert "did not write (configs/fe-l1)" in err and "move them out of" in err
    assert snapshot(earlier) == before
    assert temps(earlier.parent, "out") == []


def test_an_unreadable_manifest_is_refused(earlier):
    (earlier / MANIFEST).write_text("{}")
    before = snapshot(earlier)
    with pytest.raises(OutputDirRefused, match="is not a fablab render manifest"):
        render_rail_only_over(earlier)
    assert snapshot(earlier) == before


def test_a_file_as_the_output_directory_is_refused(tmp_path):
    out = tmp_path / "out"
    out.write_text("a file")
    with pytest.raises(OutputDirRefused, match=r"out is a file: render into a directory") as e:
        render_rail_only_over(out)
    assert isinstance(e.value, InputError) and isinstance(e.value, RenderError)
    assert out.read_text() == "a file" and list(tmp_path.iterdir()) == [out]


def test_the_current_directory_is_refused(earlier, monkeypatch):
    monkeypatch.chdir(earlier)
    before = snapshot(earlier)
    with pytest.raises(OutputDirRefused, match="is the current directory"):
        render_rail_only_over(Path("."))
    assert snapshot(earlier) == before


def test_an_artifact_path_outside_the_render_is_refused(tmp_path):
    with pytest.raises(RenderError, match="not a plain relative path"):
        write_artifacts({"../escape": "x"}, tmp_path / "out")
    assert list(tmp_path.iterdir()) == []


# ----------------------------------------------------------------------- a killed render, cleaned next time


def dead_pid() -> int:
    child = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    return int(child.stdout)


def test_leftovers_of_a_killed_render_are_removed_by_the_next(earlier, tmp_path):
    pid = dead_pid()
    old = tmp_path / f".out.fablab-old-{pid}-abcd_123"  # the swap was killed between its renames
    new = tmp_path / f".out.fablab-new-{pid}-xyz98765"
    (old / "configs").mkdir(parents=True)
    (old / MANIFEST).write_text("{}")
    new.mkdir()
    assert render("rail-only", "-o", str(earlier)) == 0
    assert temps(tmp_path, "out") == []


def test_the_temporary_directory_of_a_running_render_is_left_alone(earlier, tmp_path):
    busy = tmp_path / f".out.fablab-new-{os.getpid()}-abcdefgh"  # this process is alive
    busy.mkdir()
    assert render("rail-only", "-o", str(earlier)) == 0
    assert temps(tmp_path, "out") == [busy.name]


# ----------------------------------------------------------------------- lab names


@pytest.mark.parametrize("name", ["bad name!", "Lab1", "1lab", "lab_1", "a" * 25, "lab1\n", ""])
def test_a_bad_lab_name_is_refused_and_nothing_written(tmp_path, capsys, name):
    out = tmp_path / "out"
    assert render("rail-only", "-o", str(out), "--name", name) == 2
    err = capsys.readouterr().err
    assert "--name" in err and "is not a usable lab name" in err and "at most 24" in err
    assert list(tmp_path.iterdir()) == []


def test_a_bad_lab_name_is_reported_with_the_declarations_problems(tmp_path, capsys):
    topo = tmp_path / "bad.py"
    topo.write_text("from harness import Backend, Cluster, GpuNodes\n"
                    "cluster = Cluster(name='bad', gpu=GpuNodes(count=3, gpus_per_node=4), "
                    "backend=Backend(rails=8, groups=2))\n")
    assert render(str(topo), "-o", str(tmp_path / "out"), "--name", "bad name!") == 2
    err = capsys.readouterr().err
    assert "--name" in err and "backend.rails" in err
    assert list(tmp_path.iterdir()) == [topo]


@pytest.mark.parametrize("name", ["pt12345l", "pt99999c", "lab7", "x", "a" * 24, "ai-cluster", "rail-only"])
def test_the_lab_names_that_work_today_still_do(name):
    assert check_lab_name(name) == []


def test_lab_up_refuses_a_bad_name_before_booting():
    """An unknown runtime would be refused next (InputError): the name is checked first."""
    from harness.lab import Lab
    from topologies import BUILTINS

    with pytest.raises(TopologyError, match=r"name: 'bad name!' is not a usable lab name \(hint: .*at most 24"):
        Lab.up(BUILTINS["rail-only"](), name="bad name!", runtime="no-such-runtime")


def test_lab_up_names_the_cluster_when_its_default_name_is_too_long():
    from dataclasses import replace

    from harness.lab import Lab
    from topologies import BUILTINS

    cluster = replace(BUILTINS["rail-only"](), name="a-cluster-name-of-thirty-one")
    with pytest.raises(TopologyError, match=r"name \(default: the cluster's name\)"):
        Lab.up(cluster, runtime="no-such-runtime")
