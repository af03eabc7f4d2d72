"""`fablab check`'s input errors, and its reports (JSON, JUnit XML, HTML) from verdicts.
No root: the verdicts are made here; the HTML report is rendered by headless Chromium."""
from __future__ import annotations

import base64
import json
import os
import re
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from xml.etree import ElementTree as ET

import pytest

from harness.checks.cabling import CableFinding, CablingResult
from harness.checks.registry import NAMES, UnknownCheck, Verdict, select
from harness.cli.main import main
from harness.checks.base import pyplot
from harness.report.results import check_document, junit_xml
from harness.report.html import html_report, write_html

from fakelab import FakeLab


@dataclass(frozen=True)
class _Spread:  # a stand-in for a check's result with figures
    flows: int
    per_path: dict
    seconds: float
    problems: tuple[str, ...] = field(default=())

    @property
    def passed(self) -> bool:
        return not self.problems

    @property
    def reason(self) -> str:
        return f"{self.flows} QPs: " + ", ".join(f"{k} {v}" for k, v in self.per_path.items())


def _verdicts(tmp_path):
    finding = CableFinding("unknown", "fe-l1", "Ethernet120", "", "be-g1-r0:Ethernet120", ("joins FE and BE",))
    cabling = CablingResult(88, 89, 88, (finding,), "every veth", seconds=0.61, problems=(str(finding),))
    spread = _Spread(256, {"Ethernet16": 2541, "Ethernet20": 2835}, 3.2)
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(3, 2))
    ax.bar(["a", "b"], [1, 2])
    png = tmp_path / "ecmp.png"
    fig.savefig(png)
    plt.close(fig)
    return [Verdict("cabling", False, cabling.reason, 0.61, cabling.problems, (), cabling),
            Verdict("ecmp", True, spread.reason, 3.2, (), (str(png),), spread),
            Verdict("failover-local", None, "not applicable: no spine tier", 0.0)]


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_an_unknown_check_name_exits_2_listing_the_valid_ones(capsys):
    code, _, err = run(capsys, "check", "anylab", "--only", "cabling,wiring")
    assert code == 2
    assert "wiring" in err and all(name in err for name in NAMES)


def test_validate_refuses_an_unknown_check_before_booting(capsys):
    code, _, err = run(capsys, "validate", "ai-cluster", "--only", "nope")
    assert code == 2 and "the checks: cabling" in err


def test_a_lab_that_is_not_running_exits_2(capsys):
    code, _, err = run(capsys, "check", "nosuchlab-i8c")
    assert code == 2 and "no lab named 'nosuchlab-i8c' is running" in err and "fablab up" in err


def test_a_lab_still_booting_exits_2(capsys, monkeypatch, tmp_path):
    from harness.core.model import cluster_to_dict
    from harness.runtime import state
    from harness.runtime.processes import start_time
    from topologies import BUILTINS

    monkeypatch.setattr(state, "RUN_ROOT", tmp_path)
    state.save(state.LabState(lab="booting1", runtime="netns", topology="ai-cluster",
                              cluster=cluster_to_dict(BUILTINS["ai-cluster"]()), namespaces=(),
                              runner_pid=os.getpid(), runner_start=start_time(os.getpid())))
    code, _, err = run(capsys, "check", "booting1")
    assert code == 2 and "still booting" in err


def test_only_selects_in_registry_order():
    assert [c.name for c in select("failover, cabling")] == ["cabling", "failover"]
    assert [c.name for c in select(None)] == list(NAMES)
    # a case, as `fablab faults` names the one that catches a fault: its check, that case alone
    picked = select("failover-gray,routing")
    assert [(c.name, [x.name for x in c.cases]) for c in picked] == [("routing", ["routing"]),
                                                                     ("failover", ["failover-gray"])]
    with pytest.raises(UnknownCheck, match="no check or case failover-grey"):
        select("failover-grey")


def test_json_document_holds_every_result_and_its_cost(tmp_path):
    doc = json.loads(json.dumps(check_document(_verdicts(tmp_path), lab="x"), default=str))
    assert doc["passed"] is False and doc["failed"] == ["cabling"]
    cabling = doc["checks"][0]
    assert cabling["seconds"] == 0.61 and cabling["result"]["findings"][0]["actual_peer"] == "be-g1-r0:Ethernet120"
    assert cabling["result"]["passed"] is False and cabling["result"]["reason"].startswith("NOT cabled")
    assert doc["checks"][2]["passed"] is None


def test_junit_has_one_testcase_per_check(tmp_path):
    root = ET.fromstring(junit_xml(_verdicts(tmp_path), "fablab check x").encode())
    assert root.tag == "testsuites" and root.get("tests") == "3" and root.get("failures") == "1"
    (suite,) = root.findall("testsuite")
    cases = {c.get("name"): c for c in suite.findall("testcase")}
    assert list(cases) == ["cabling", "ecmp", "failover-local"]
    assert "fe-l1:Ethernet120" in cases["cabling"].find("failure").text
    assert cases["ecmp"].find("failure") is None and cases["ecmp"].get("time") == "3.200"
    assert cases["failover-local"].find("skipped") is not None


def test_html_is_self_contained(tmp_path, ai_plan):
    text = html_report(_verdicts(tmp_path), ai_plan, "fablab check x")
    assert not re.search(r'(src|href)="(?!data:)', text)  # nothing fetched from anywhere
    uris = re.findall(r'src="data:([^;]+);base64,([^"]+)"', text)
    assert [mime for mime, _ in uris] == ["image/png", "image/svg+xml"]
    assert base64.b64decode(uris[0][1]).startswith(b"\x89PNG")
    ET.fromstring(base64.b64decode(uris[1][1]))  # the topology diagram is well-formed SVG
    assert "be-g1-r0:Ethernet120" in text and "joins FE and BE" in text


def test_html_renders_in_headless_chromium(tmp_path, ai_plan):
    browser = shutil.which("chromium")
    if browser is None:
        pytest.skip("chromium is missing: apt-get install chromium (make test installs it)")
    verdicts = _verdicts(tmp_path)
    path = write_html(tmp_path / "report.html", verdicts, ai_plan, "fablab check x")
    t0 = time.monotonic()
    run = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", f"--user-data-dir={tmp_path / 'profile'}",
                          "--dump-dom", path.as_uri()], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    dom = run.stdout
    rows = re.findall(r'<tr class="verdict" data-check="([^"]+)"', dom)
    assert rows == [v.check for v in verdicts]
    decoded = re.findall(r'<img [^>]*data-decoded="([^"]+)"', dom)
    assert len(decoded) == 2, f"images decoded: {decoded} ({time.monotonic() - t0:.1f} s)"
    for size in decoded:  # the browser decoded each embedded image to a real size
        w, h = (int(n) for n in size.split("x"))
        assert w > 0 and h > 0
    assert "fe-l1" in dom and "FAIL" in dom


def _PlanOnly(plan) -> FakeLab:  # what run_checks reads of a lab to decide that a check does not apply
    return FakeLab(plan)


def test_checks_that_do_not_apply_are_not_applicable_not_passed():
    from harness.checks.registry import run_checks
    from harness.core.model import build
    from harness.core.plan import make_plan
    from topologies import BUILTINS

    plan = make_plan(build(BUILTINS["rail-only"]()))
    verdicts = run_checks(_PlanOnly(plan), select("ecmp,failover"))
    assert [(v.check, v.passed, v.seconds) for v in verdicts] == [
        ("ecmp", None, 0.0), ("failover-local", None, 0.0), ("failover-remote", None, 0.0),
        ("failover-gray", None, 0.0), ("failover-spine", None, 0.0), ("failover-superspine-link", None, 0.0),
        ("failover-superspine", None, 0.0)]
    assert all("no spine tier" in v.reason for v in verdicts)


def test_the_superspine_cases_do_not_apply_to_a_3_stage_fabric(ai_plan):
    from harness.checks.registry import Check, run_checks

    (failover,) = select("failover")
    only = Check(failover.name, failover.claim, tuple(c for c in failover.cases if "superspine" in c.name),
                 failover.applies)
    verdicts = run_checks(_PlanOnly(ai_plan), (only,))
    assert [(v.check, v.passed) for v in verdicts] == [("failover-superspine-link", None), ("failover-superspine", None)]
    assert all("no super-spine tier" in v.reason for v in verdicts)


def test_a_check_that_cannot_run_has_failed(ai_plan):
    from harness.checks.registry import Case, Check, run_checks
    from harness.core.errors import HarnessError

    def broken(lab):
        raise HarnessError("gpu01 has no NIC rail9")

    (v,) = run_checks(_PlanOnly(ai_plan), (Check("broken", "raises", (Case("broken", broken, lambda plan, seen: None),)),))
    assert v.passed is False and v.reason == "could not run: gpu01 has no NIC rail9"


def test_the_registry_runs_every_failover_case():
    from harness.checks.failover import CASES

    (failover,) = select("failover")
    assert [c.name for c in failover.cases] == [f"failover-{c}" for c in CASES]
