"""Results with provenance, one directory per run: no root, no lab booted. Real files in tmp_path;
the CLI's check and validate run with the lab and the checks stood in for."""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest

from harness.report import provenance as prov
from harness.catalog import load_cluster
from harness.checks.registry import Verdict
from harness.core.model import cluster_from_dict, cluster_to_dict
from harness.report.provenance import Provenance, collect, declaration_sha256, parse_frr_version
from harness.report.results import Results, junit_xml, new_run_dir
from harness.report.html import html_report


@dataclasses.dataclass(frozen=True)
class _Result:
    flows: int
    passed: bool = True
    reason: str = "8 flows spread"


def _provenance(**changes) -> Provenance:
    base = Provenance(fablab_version="0.1.0", commit="0123456789abcdef0123456789abcdef01234567", dirty=False,
                      topology="ai-cluster", cluster="ai-cluster", declaration_sha256="ab" * 32, runtime="netns",
                      lab="prov1", kernel="6.1.0", python="3.11.7", frr_version="8.4.4",
                      command=("fablab", "check", "prov1"), started="2026-01-02T03:04:05+00:00")
    return dataclasses.replace(base, **changes)


def _summary(directory: Path) -> dict:
    return json.loads((directory / "summary.json").read_text())


# --------------------------------------------------------------------------- one directory per run


def test_two_runs_under_one_parent_keep_both_and_latest_is_the_second(tmp_path):
    first = Results(tmp_path, "ai-cluster", _provenance(lab="one"))
    first.record("ecmp", _Result(8))
    second = Results(tmp_path, "ai-cluster", _provenance(lab="two"))
    second.record("ecmp", _Result(16, False, "l3 hashing"))
    first.finish()

    assert first.directory != second.directory and first.directory.parent == second.directory.parent == tmp_path
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([first.directory.name, second.directory.name,
                                                                 "latest"])
    assert re.fullmatch(r"\d{8}T\d{6}Z-ai-cluster-[0-9a-f]{6}", first.directory.name)
    one, two = _summary(first.directory), _summary(second.directory)
    assert one["provenance"]["lab"] == "one" and one["checks"]["ecmp"]["passed"] is True
    assert two["provenance"]["lab"] == "two" and two["checks"]["ecmp"]["passed"] is False
    assert json.loads((first.directory / "ecmp.json").read_text())["flows"] == 8  # not overwritten by the second
    assert one["provenance"]["ended"] is not None and two["provenance"]["ended"] is None  # two: still running
    assert (tmp_path / "latest").is_symlink() and os.readlink(tmp_path / "latest") == second.directory.name
    assert (tmp_path / "latest").resolve() == second.directory.resolve()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary left behind


def test_a_run_directory_is_never_shared(tmp_path, monkeypatch):
    names = iter(["20260101T000000Z-x-aaaaaa", "20260101T000000Z-x-aaaaaa", "20260101T000000Z-x-bbbbbb"])
    monkeypatch.setattr("harness.report.results.run_dir_name", lambda label: next(names))
    a, b = new_run_dir(tmp_path, "x"), new_run_dir(tmp_path, "x")
    assert (a.name, b.name) == ("20260101T000000Z-x-aaaaaa", "20260101T000000Z-x-bbbbbb")


def test_a_topology_path_labels_the_run_by_its_stem(tmp_path):
    run = Results(tmp_path / "res", "topologies/my lab.py")
    assert re.fullmatch(r"\d{8}T\d{6}Z-my_lab-[0-9a-f]{6}", run.directory.name)
    assert _summary(run.directory)["provenance"] is None  # without provenance: still a summary


def test_every_check_json_carries_the_provenance_and_the_summary_its_end(tmp_path):
    run = Results(tmp_path, "prov1", _provenance())
    path = run.record("ecmp", _Result(8), plots=(run.path("ecmp.png"),))
    data = json.loads(path.read_text())
    assert data["flows"] == 8 and data["provenance"]["commit"] == _provenance().commit
    assert data["provenance"]["command"] == ["fablab", "check", "prov1"] and data["provenance"]["ended"] is None
    assert _summary(run.directory)["checks"]["ecmp"]["plots"] == [str(run.directory / "ecmp.png")]
    run.amend(frr_version="9.1")
    run.finish()
    summary = _summary(run.directory)["provenance"]
    assert summary["frr_version"] == "9.1" and summary["started"] == "2026-01-02T03:04:05+00:00"
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00", summary["ended"])


# --------------------------------------------------------------------------- provenance fields


def test_equal_declarations_hash_equal_and_a_change_hashes_differently():
    cluster = load_cluster("ai-cluster")
    again = load_cluster("ai-cluster")
    assert cluster is not again and declaration_sha256(cluster) == declaration_sha256(again)
    # a running lab's state holds the declaration as JSON: the same declaration, the same hash
    stored = json.loads(json.dumps(cluster_to_dict(cluster)))
    assert declaration_sha256(stored) == declaration_sha256(cluster_from_dict(stored)) == declaration_sha256(cluster)
    renamed = dataclasses.replace(cluster, name="ai-cluster2")
    fewer_gpus = dataclasses.replace(cluster, gpu=dataclasses.replace(cluster.gpu, count=cluster.gpu.count // 2))
    hashes = {declaration_sha256(c) for c in (cluster, renamed, fewer_gpus)}
    assert len(hashes) == 3 and all(re.fullmatch(r"[0-9a-f]{64}", h) for h in hashes)
    assert declaration_sha256(cluster) != declaration_sha256(load_cluster("rail-only"))


def test_collect_fills_every_field():
    cluster = load_cluster("ai-cluster")
    p = collect(cluster, "ai-cluster", "netns", "prov1", command=["fablab", "validate", "ai-cluster"],
                frr_version="9.1.2")
    assert (p.topology, p.cluster, p.runtime, p.lab) == ("ai-cluster", "ai-cluster", "netns", "prov1")
    assert p.declaration_sha256 == declaration_sha256(cluster) and p.frr_version == "9.1.2"
    assert p.command == ("fablab", "validate", "ai-cluster") and p.ended is None
    assert p.fablab_version and p.kernel and p.python
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00", p.started)
    assert collect().command == tuple(sys.argv) and collect().declaration_sha256 is None


def test_the_commit_of_this_checkout(monkeypatch):
    commit, dirty = prov.git_commit()
    if commit is None:
        pytest.skip("fablab does not run from a git checkout here (or git is missing)")
    assert re.fullmatch(r"[0-9a-f]{40}", commit) and isinstance(dirty, bool)


def test_no_git_or_no_checkout_gives_none_not_an_error(tmp_path, monkeypatch):
    monkeypatch.setattr(prov, "_HARNESS", tmp_path)  # a directory no repository tracks
    assert prov.git_commit() == (None, None)
    monkeypatch.setenv("PATH", str(tmp_path))  # no git at all
    assert prov.git_commit() == (None, None)
    assert collect().commit is None


def test_an_installed_copy_inside_another_repository_does_not_borrow_its_commit(tmp_path, monkeypatch):
    if subprocess.run(["git", "--version"], capture_output=True).returncode != 0:
        pytest.skip("git is missing")
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    package = tmp_path / "site-packages" / "harness"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")  # present, but not tracked by that repository
    monkeypatch.setattr(prov, "_HARNESS", package)
    assert prov.git_commit() == (None, None)


@pytest.mark.parametrize("text, version", [
    ("zebra version 8.4.4\nCopyright 1996-2005 Kunihiro Ishiguro, et al.\n", "8.4.4"),
    ("\nHello, this is FRRouting (version 8.5.1-sonic).\nCopyright 1996-2005\n", "8.5.1-sonic"),
    ("FRRouting 10.0.1 (be-g1-r0) on Linux(6.1.0-18-amd64).\nCopyright 1996-2005", "10.0.1"),
    ("vtysh: unrecognized option '--version'", None),
    ("", None),
])
def test_frr_versions_are_read_from_what_frr_prints(text, version):
    assert parse_frr_version(text) == version


class _VtyLab:  # a running lab as far as asking its FRR goes
    def __init__(self, plan, answer):
        self.plan, self.answer, self.asked = plan, answer, []

    def vtysh(self, node, *commands):
        self.asked.append((node, commands))
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


def test_the_frr_the_lab_runs_or_none(ai_plan):
    from harness.core.errors import HarnessError

    lab = _VtyLab(ai_plan, "FRRouting 9.1.2 (fe-l1) on Linux(6.1.0).\n")
    assert prov.lab_frr_version(lab) == "9.1.2" and lab.asked == [(ai_plan.switches[0].name, ("show version",))]
    assert prov.lab_frr_version(_VtyLab(ai_plan, HarnessError("vtysh: no such daemon"))) is None


# --------------------------------------------------------------------------- the reports carry it


def _verdicts():
    return [Verdict("ecmp", True, "8 flows spread", 1.5, (), (), _Result(8)),
            Verdict("failover-local", None, "not applicable: no spine tier", 0.0)]


def test_junit_carries_the_provenance_as_testsuite_properties():
    p = _provenance(dirty=True, frr_version=None)
    root = ET.fromstring(junit_xml(_verdicts(), "fablab check prov1", p).encode())
    (suite,) = root.findall("testsuite")
    assert list(suite)[0].tag == "properties"  # before the testcases, as the JUnit schema has it
    props = {e.get("name"): e.get("value") for e in suite.find("properties").findall("property")}
    assert props["commit"] == p.commit and props["dirty"] == "true" and props["frr_version"] == ""
    assert props["declaration_sha256"] == p.declaration_sha256 and props["topology"] == "ai-cluster"
    assert props["command"] == "fablab check prov1" and props["ended"] == ""
    assert set(props) == {f.name for f in dataclasses.fields(Provenance)}
    assert suite.get("timestamp") == "2026-01-02T03:04:05"
    assert junit_xml(_verdicts(), "x").count("<properties") == 0  # without provenance, none


def test_html_shows_the_provenance_in_a_header_table(ai_plan):
    p = _provenance(dirty=True)
    text = html_report(_verdicts(), ai_plan, "fablab check prov1", provenance=p)
    table = re.search(r'<table id="provenance">(.*?)</table>', text).group(1)
    assert text.index('id="provenance"') < text.index('id="verdicts"')  # a header, above the verdicts
    assert f"{p.commit} (modified)" in table and p.declaration_sha256 in table
    assert re.search(r'data-field="topology"><th>topology</th><td><code>ai-cluster<', table)
    assert 'id="provenance"' not in html_report(_verdicts(), ai_plan, "x")


# --------------------------------------------------------------------------- fablab check and validate


def _report_args(tmp_path, **kw) -> argparse.Namespace:
    return argparse.Namespace(**{"json": True, "junit": None, "html": None, "results": str(tmp_path), **kw})


def test_report_json_names_the_run_directory_and_its_provenance(tmp_path, ai_plan, capsys):
    from harness.cli.labs import _report

    run = Results(tmp_path / "results", "prov1", _provenance())
    run.finish()
    args = _report_args(tmp_path, junit=str(tmp_path / "ci" / "junit.xml"), html=str(tmp_path / "report.html"))
    code = _report(args, "fablab check prov1", _verdicts(), ai_plan, {"lab": "prov1"}, run)
    doc = json.loads(capsys.readouterr().out)
    assert code == 0 and doc["results"] == str(run.directory) and doc["lab"] == "prov1"
    assert doc["provenance"] == _summary(run.directory)["provenance"] and doc["provenance"]["ended"]
    suite = ET.parse(tmp_path / "ci" / "junit.xml").getroot().find("testsuite")
    assert {e.get("name") for e in suite.find("properties")} >= {"commit", "declaration_sha256", "lab"}
    assert _provenance().declaration_sha256 in (tmp_path / "report.html").read_text()


def test_report_table_names_the_run_directory(tmp_path, ai_plan, capsys):
    from harness.cli.labs import _report

    run = Results(tmp_path, "prov1", _provenance())
    code = _report(_report_args(tmp_path, json=False), "fablab check prov1", _verdicts(), ai_plan, {}, run)
    text = " ".join(capsys.readouterr().out.split())  # the console wraps long lines
    assert code == 0 and run.directory.name in text and "latest" in text


def _stand_in_checks(lab, checks, results, progress):
    results.record("ecmp", _Result(8))
    return _verdicts()


def test_validate_json_has_the_results_directory_and_provenance(tmp_path, monkeypatch, capsys):
    import harness.cli.validate
    from harness.cli.main import main

    def validate(plan, results, **kw):  # no boot: the checks run on no lab
        assert kw["name"] == "prov1" and kw["topology"] == "ai-cluster"
        verdicts = _stand_in_checks(None, kw["checks"], results, kw["progress"])
        results.finish()
        return verdicts

    monkeypatch.setattr(harness.cli.validate, "validate", validate)
    code = main(["validate", "ai-cluster", "--name", "prov1", "--results", str(tmp_path), "--json"])
    doc = json.loads(capsys.readouterr().out)
    run = Path(doc["results"])
    assert code == 0 and run.parent == tmp_path and (tmp_path / "latest").resolve() == run.resolve()
    p = doc["provenance"]
    assert (p["topology"], p["cluster"], p["lab"], p["runtime"]) == ("ai-cluster", "ai-cluster", "prov1", "netns")
    assert p["declaration_sha256"] == declaration_sha256(load_cluster("ai-cluster")) and p["ended"]
    assert _summary(run)["provenance"] == p
    assert json.loads((run / "ecmp.json").read_text())["provenance"]["declaration_sha256"] == p["declaration_sha256"]


def test_check_json_has_the_results_directory_and_the_labs_frr(tmp_path, monkeypatch, capsys, ai_plan):
    import harness.checks.registry
    from harness.cli import labs as cli_lab
    from harness.cli.main import main
    from harness.runtime.state import LabState

    cluster = ai_plan.fabric.cluster
    state = LabState(lab="prov1", runtime="netns", topology="ai-cluster", cluster=cluster_to_dict(cluster),
                     namespaces=(), phase="up")

    class _Lab(_VtyLab):
        name = "prov1"
        stale = False

        @classmethod
        def attach(cls, name):
            lab = cls(ai_plan, "FRRouting 9.1.2 (fe-l1) on Linux(6.1.0).\n")
            lab.state = state
            return lab

    monkeypatch.setattr(cli_lab, "Lab", _Lab)
    monkeypatch.setattr(harness.checks.registry, "run_checks", _stand_in_checks)
    code = main(["check", "prov1", "--results", str(tmp_path), "--json"])
    doc = json.loads(capsys.readouterr().out)
    run = Path(doc["results"])
    assert code == 0 and run.parent == tmp_path and run.name.split("-")[1] == "prov1"
    p = doc["provenance"]
    assert (p["lab"], p["topology"], p["frr_version"]) == ("prov1", "ai-cluster", "9.1.2")
    assert p["declaration_sha256"] == declaration_sha256(cluster) and p["ended"]
    assert _summary(run)["provenance"] == p and (run / "ecmp.json").exists()


# --------------------------------------------------------------------------- the pytest plugin

_LAB_FILE = '''
from dataclasses import dataclass

@dataclass(frozen=True)
class R:
    flows: int
    passed: bool = True
    reason: str = "ok"

def test_records(results):
    results.record("ecmp", R(4))
'''


def _pytest(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)


def test_the_pytest_results_fixture_has_its_own_run_and_provenance(tmp_path):
    (tmp_path / "test_lab.py").write_text(_LAB_FILE)
    (tmp_path / "test_stop.py").write_text(_LAB_FILE + "\n\ndef test_stop():\n    raise KeyboardInterrupt\n")
    done = _pytest(tmp_path, "test_lab.py", "--results-dir", "res", "--topology", "rail-only")
    assert done.returncode == 0, done.stdout + done.stderr
    stopped = _pytest(tmp_path, "test_stop.py", "--results-dir", "res", "--topology", "rail-only")
    assert stopped.returncode == 2, stopped.stdout + stopped.stderr  # interrupted
    latest = (tmp_path / "res" / "latest").resolve()
    runs = sorted((p for p in (tmp_path / "res").iterdir() if p.name != "latest"), key=lambda p: p.resolve() == latest)
    assert len(runs) == 2 and runs[1].resolve() == latest  # the second session's
    first, second = (_summary(r)["provenance"] for r in runs)
    assert first["command"] == ["pytest", "-q", "-p", "no:cacheprovider", "test_lab.py", "--results-dir", "res",
                                "--topology", "rail-only"]
    assert first["topology"] == first["cluster"] == "rail-only" and first["runtime"] == "netns"
    assert first["declaration_sha256"] == declaration_sha256(load_cluster("rail-only"))
    assert first["ended"] is not None and second["ended"] is None  # the interrupted session has no end
    assert json.loads((runs[0] / "ecmp.json").read_text())["provenance"]["topology"] == "rail-only"
