"""A check is a plug-in (harness/checks/base.py): the registry loads each module's CHECK late,
every result is an Outcome whose reason is built one way, and the example of
docs/adding-a-check.md is a real check. No root: the labs here are stand-ins."""
from __future__ import annotations

import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from harness.checks.base import Case, Check, Outcome
from harness.checks.registry import MODULES, NAMES, load, run_checks, select
from harness.core.errors import InputError
from harness.core.model import Plane

from fakelab import FakeLab

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "docs" / "examples" / "check_example.py"


def test_the_doc_shows_the_example_as_it_is():
    doc = (ROOT / "docs" / "adding-a-check.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", doc, re.S)
    assert EXAMPLE.read_text() in blocks


def test_every_registered_module_exports_its_check():
    checks = select(None)
    assert [c.name for c in checks] == list(NAMES) == [name for name, _ in MODULES]
    for check in checks:
        assert isinstance(check, Check) and check.claim and check.cases
        assert all(isinstance(case, Case) and callable(case.measure) and callable(case.judge) for case in check.cases)
    cases = [case.name for check in checks for case in check.cases]
    assert len(cases) == len(set(cases))  # each case has a name of its own in the reports


def test_the_loader_takes_a_path_or_a_module_and_refuses_a_module_without_a_check():
    assert load(str(EXAMPLE)).name == "host-mtu"
    assert load("harness.checks.cabling").name == "cabling"
    with pytest.raises(InputError, match="exports CHECK"):
        load("harness.checks.common.bounds")
    with pytest.raises(InputError, match="no such check module"):
        load(str(ROOT / "docs" / "examples" / "missing.py"))


def _imported(*args: str) -> set[str]:
    run = subprocess.run([sys.executable, "-X", "importtime", *args], capture_output=True, text=True, timeout=120,
                         cwd=ROOT)
    return set(re.findall(r"\|\s+([\w.]+)\s*$", run.stderr, re.M))


def test_the_cli_loads_no_check_and_no_scipy_or_matplotlib():
    modules = _imported("-m", "harness.cli", "check", "--help")
    assert not {m for m in modules if m.split(".")[0] in ("scipy", "matplotlib")}
    checks = {m for m in modules if m.startswith("harness.checks.")}
    assert checks <= {"harness.checks.base", "harness.checks.registry"}, checks


@dataclass(frozen=True)
class _Spread(Outcome):
    flows: int
    per_path: dict

    held, broken = "spread", "NOT spread"
    shown = 2

    def sentence(self) -> str:
        return f"{self.flows} flows: " + ", ".join(f"{k} {v}" for k, v in self.per_path.items())


def test_one_way_to_word_a_verdict():
    ok = _Spread(8, {"a": 4, "b": 4}, seconds=1.0)
    assert ok.passed is True and ok.reason == "spread: 8 flows: a 4, b 4"
    bad = _Spread(8, {"a": 8, "b": 0}, problems=("a carried 8", "b carried 0", "1 lost"))
    assert bad.passed is False and bad.reason == "NOT spread: a carried 8; b carried 0 (+1 more) | 8 flows: a 8, b 0"
    assert bad.figures() == {"seconds": 0.0, "flows": 8, "per_path": {"a": 8, "b": 0}}
    assert _Spread(1, {}, seconds=2.5).seconds == 2.5 and _Spread(1, {}).problems == ()


def _Lab(plan, lowered: tuple[str, str, int] | None = None) -> FakeLab:
    """A lab whose hosts' kernels have the plan's MTUs, one NIC `lowered` (host, nic, MTU)."""
    mtus = {h.name: {n.name: n.mtu for n in h.nics} for h in plan.hosts}
    if lowered:
        mtus[lowered[0]][lowered[1]] = lowered[2]
    return FakeLab(plan, mtus=mtus)


def test_the_example_judges_the_kernel_by_the_plan(ai_plan):
    check = load(str(EXAMPLE))
    (clean,) = run_checks(_Lab(ai_plan), (check,))
    assert clean.passed is True and clean.reason.startswith("every host NIC at its planned MTU")
    host = next(h for h in ai_plan.hosts if any(n.rail == 1 for n in h.nics))
    nic = next(n for n in host.nics if n.rail == 1 and n.plane is Plane.BE)
    (lowered,) = run_checks(_Lab(ai_plan, (host.name, nic.name, 1500)), (check,))
    assert lowered.passed is False
    assert lowered.problems == (f"{host.name}:{nic.name} has MTU 1500, the plan's is {nic.mtu}",)
    assert lowered.reason.startswith("NOT at the planned MTU: ") and lowered.result.differ == {
        f"{host.name}:{nic.name}": 1500}


def test_the_example_judge_needs_no_lab_and_its_observation_round_trips(ai_plan):
    from harness.core.codec import from_plain, to_plain

    (case,) = load(str(EXAMPLE)).cases
    seen = case.measure(_Lab(ai_plan))
    again = from_plain(type(seen), to_plain(seen))
    assert again == seen
    host = ai_plan.hosts[0]
    nic = next(n for n in host.nics if n.plane is Plane.BE)
    table = [  # (what the kernels showed, verdict)
        (seen.mtus, True),
        ({**seen.mtus, host.name: {**seen.mtus[host.name], nic.name: 1500}}, False),
        ({k: v for k, v in seen.mtus.items() if k != host.name}, False),  # a host whose links are gone
    ]
    for mtus, passed in table:
        outcome = case.judge(ai_plan, type(seen)(mtus))
        assert outcome.passed is passed, outcome.reason


def test_run_case_measures_judges_and_records_the_observation(ai_plan, tmp_path):
    import json

    from harness.checks.registry import run_case
    from harness.report.results import Results

    (case,) = load(str(EXAMPLE)).cases
    results = Results(tmp_path, "probe")
    host = ai_plan.hosts[0]
    nic = next(n for n in host.nics if n.plane is Plane.BE)
    outcome = run_case(case, _Lab(ai_plan, (host.name, nic.name, 1500)), results, name="host-mtu-lowered")
    assert outcome.passed is False and outcome.seconds >= 0
    recorded = json.loads(results.path("host-mtu-lowered.observation.json").read_text())
    assert recorded["case"] == "host-mtu" and recorded["passed"] is False and recorded["reason"] == outcome.reason
    assert recorded["type"].endswith(":HostMtus") and recorded["observation"]["mtus"][host.name][nic.name] == 1500
    assert results.path("host-mtu-lowered.json").exists()
    assert recorded["cluster"]["name"] == ai_plan.fabric.cluster.name  # the lab's own declaration, not the run's


def test_a_recorded_observation_is_judged_on_the_declaration_it_holds(ai_plan, tmp_path):
    from harness.checks.registry import run_case
    from harness.report.recorded import plan_of, read
    from harness.report.results import Results

    (case,) = load(str(EXAMPLE)).cases
    results = Results(tmp_path, "probe")  # no provenance: the run names no topology at all
    run_case(case, _Lab(ai_plan), results)
    recorded = read(results.path("host-mtu.observation.json"))
    assert plan_of(recorded).switches == ai_plan.switches


def test_a_measure_that_returns_no_observation_is_refused(ai_plan):
    from harness.checks.registry import run_case

    bad = Case("bad", lambda lab: Outcome(), lambda plan, seen: Outcome())
    with pytest.raises(TypeError, match="not an Observation"):
        run_case(bad, _Lab(ai_plan))


def test_tally_names_how_many_and_the_first():
    from harness.checks.base import tally

    assert tally((), "leaks") == ()
    assert tally(("a->b", "c->d"), "controls not delivered", 7, then=" (proves nothing)") == (
        "2/7 controls not delivered (proves nothing), e.g. a->b",)
    assert tally(["x"], "routes missing") == ("1 routes missing, e.g. x",)


def test_a_case_that_needs_what_the_data_plane_lacks_is_not_applicable(ai_plan):
    from harness.checks.base import Observation
    from harness.core.capabilities import Feature

    case = Case("acl-frames", lambda lab: Observation(), lambda plan, seen: _Spread(1, {}),
                needs=(Feature.ACL_DATA_PATH,))
    check = Check("acl", "frames filtered", (case,))
    (lacking,) = run_checks(FakeLab(ai_plan, lacks={Feature.ACL_DATA_PATH: "vslib filters nothing"}), (check,))
    assert lacking.passed is None and lacking.reason == (
        "not applicable: the data plane lacks acl-data-path: vslib filters nothing")
    (able,) = run_checks(FakeLab(ai_plan), (check,))  # the control: a data plane that filters
    assert able.passed is True


def test_a_case_that_did_not_pass_keeps_the_logs_of_the_nodes_it_names(ai_plan, tmp_path):
    """A failure keeps its evidence (issue 37): the FRR logs of the nodes its result names, and
    no others; a pass and a negative control (failing on purpose) keep none."""
    from harness.checks.registry import run_case
    from harness.report.results import Results

    (case,) = load(str(EXAMPLE)).cases
    results = Results(tmp_path, "probe")
    host = ai_plan.hosts[0]
    nic = next(n for n in host.nics if n.plane is Plane.BE)
    failing = _Lab(ai_plan, (host.name, nic.name, 1500))
    run_case(case, failing, results, name="lowered")
    kept = results.path("lowered.logs")
    assert failing.logs_asked == (host.name,)
    assert (kept / host.name / "bgpd.log").read_text() == f"{host.name}: the log a failed case keeps\n"
    assert [p.name for p in kept.iterdir()] == [host.name]

    passing = _Lab(ai_plan)  # control: a pass keeps nothing
    run_case(case, passing, results, name="clean")
    assert "logs" not in passing.asked and not results.path("clean.logs").exists()
    sabotaged = _Lab(ai_plan, (host.name, nic.name, 1500))  # a negative control fails on purpose
    run_case(case, sabotaged, results, name="lowered-on-purpose", sabotage="an MTU lowered")
    assert "logs" not in sabotaged.asked and not results.path("lowered-on-purpose.logs").exists()


def test_a_case_that_could_not_run_keeps_the_logs_of_the_nodes_its_error_names(ai_plan, tmp_path):
    """An error from the measurement (a guest that hung, a tool that failed) is a failure too:
    the nodes it names keep their logs and the error is written beside them; a case that is
    not measurable (said, not failed) keeps none."""
    from harness.checks.base import NotMeasurable
    from harness.checks.registry import run_case
    from harness.core.errors import LabError
    from harness.report.results import Results

    host, other = ai_plan.hosts[0].name, ai_plan.hosts[1].name

    def hangs(lab):
        raise LabError(f"the RDMA guest did not start its client within 90 s; rping {host}:rail0 -> {other}:rail0")

    def unconverged(lab):
        raise NotMeasurable("the fabric never converged")

    results = Results(tmp_path, "probe")
    lab = _Lab(ai_plan)
    with pytest.raises(LabError):
        run_case(Case("hangs", hangs, lambda plan, seen: None), lab, results)
    kept = results.path("hangs.logs")
    assert lab.logs_asked == tuple(sorted((host, other)))
    assert sorted(p.name for p in kept.iterdir()) == sorted((host, other, "README"))
    assert "could not run: the RDMA guest did not start its client" in (kept / "README").read_text()

    quiet = _Lab(ai_plan)  # the control: not measurable is no failure, and keeps nothing
    with pytest.raises(NotMeasurable):
        run_case(Case("unconverged", unconverged, lambda plan, seen: None), quiet, results)
    assert "logs" not in quiet.asked and not results.path("unconverged.logs").exists()
