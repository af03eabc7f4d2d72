"""Every fault of the table on a running lab, as a negative control: the check case that
catches it passes before (the positive control), fails while the fault is in place and names
where, and passes again once `fablab fix`, in another process, has undone it from the lab's
faults.json. The with-block form on the same protocol. (The mysteries and `fix --all` boot a
lab of their own, in test_mystery_lab.py: two halves that run side by side.)"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.checks.registry import case, run_case
from harness.cli.main import main
from harness.core.model import build
from harness.core.plan import make_plan
from harness.faults import BY_NAME, applied, controls
from harness.faults.store import in_place
from harness.lab import Lab
from harness.pytest_plugin import measured
from topologies import BUILTINS

from .conftest import leftovers_of

ROOT = Path(__file__).resolve().parents[2]
TOPOLOGY = "ai-cluster"
CONTROLS = list(controls(make_plan(build(BUILTINS[TOPOLOGY]()))))


@pytest.fixture(scope="module")
def lab():
    name = f"t{os.getpid() % 100000}f"
    with Lab.up(BUILTINS[TOPOLOGY](), name=name) as running:
        yield running
    assert leftovers_of(name) == []


@pytest.fixture(scope="module")
def before(lab, results):
    """Each case's positive control, run once a module, on the lab as declared (recorded: one
    that does not pass keeps its logs)."""
    seen: dict[tuple, object] = {}

    def passed(name: str, options: dict):
        key = (name, tuple(sorted(options.items())))
        if key not in seen:
            seen[key] = run_case(case(name), lab, results, name=f"faults-{name}-before-{len(seen) + 1}", **options)
        return seen[key]

    return passed


def fix_elsewhere(lab, *args: str) -> None:
    """`fablab fix` as a learner runs it later: another process, with only the lab's run
    directory to go by."""
    run = subprocess.run([sys.executable, "-m", "harness.cli", "fix", lab.name, *args], capture_output=True,
                         text=True, cwd=ROOT, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]


def places(lab, entry: dict) -> set[str]:
    """The nodes a finding may name for this fault: those its target names, their neighbours
    (a failover case names the element that failed, beside a switch whose FIB lags), and what
    its state holds."""
    found = set(BY_NAME[entry["fault"]].target(entry["on"]).nodes())
    for c in lab.plan.cables:
        if {c.a_node, c.b_node} & found:
            found |= {c.a_node, c.b_node}
    return found | {str(v) for v in entry["state"].values() if isinstance(v, (str, int))}


# ecn-off's case is an incast that runs until its steady state has been watched (9-11 s of
# traffic a run, three runs here): what this table proves of it is proven elsewhere, on the
# same fault and case. labs/test_dcqcn_incast.py: the positive control, then the fault named
# at its port; lesson 10 (test_lessons_second_half.py): `fablab break` and `fablab fix` as
# processes of their own, the lab left as found; its undo is pfc-priority's and dscp-map's
# (ConfigDbField), run here.
COVERED_ELSEWHERE = {"ecn-off"}


@pytest.mark.parametrize("row", [c for c in CONTROLS if c.fault.name not in COVERED_ELSEWHERE],
                         ids=[c.fault.name for c in CONTROLS if c.fault.name not in COVERED_ELSEWHERE])
def test_a_fault_fails_its_case_where_it_is_and_fix_from_another_process_undoes_it(lab, before, row, results,
                                                                                   capsys):
    good = measured(before(row.case, row.options))  # a timed control the machine could not tell: skipped
    assert good.passed is True, good.reason  # the positive control
    assert main(["break", lab.name, row.fault.name, "--on", str(row.target)]) == 0
    (entry,) = in_place(lab)
    assert entry["on"] == str(row.target)
    try:
        bad = run_case(case(row.case), lab, **row.options)
        assert bad.passed is False, f"{row.fault.name} in place, {row.case} still passes: {bad.reason}"
        text = " ".join([bad.reason, *map(str, bad.problems)])
        assert any(p in text for p in places(lab, entry)), (places(lab, entry), text[:600])
    finally:
        fix_elsewhere(lab, row.fault.name)
    assert in_place(lab) == []
    after = measured(run_case(case(row.case), lab, results, name=f"faults-{row.case}-after-fixing-{row.fault.name}",
                              **row.options))
    assert after.passed is True, after.reason


def test_what_the_table_leaves_to_others_is_undone_as_one_it_runs():
    undo = {c.fault.name: c.fault.undo_ for c in CONTROLS}
    assert COVERED_ELSEWHERE <= set(undo)
    assert all(undo[f] in {undo["pfc-priority"], undo["dscp-map"]} for f in COVERED_ELSEWHERE)


def test_the_with_block_form_undoes_on_leaving(lab, before):
    f = BY_NAME["l3-hashing"]
    assert before(f.caught_by, {}).passed is True
    with applied(lab, f) as broken:
        bad = run_case(case(f.caught_by), lab)
    assert bad.passed is False and "hash policy 0" in broken.description
    assert run_case(case(f.caught_by), lab).passed is True


def _classes(lab, node: str, port: str) -> set[int]:
    out = subprocess.run(["tc", "-n", lab.namespace(node), "class", "show", "dev", port], capture_output=True,
                         text=True, check=True).stdout
    return {int(line.split()[2].split(":")[1], 16) - 0x10 for line in out.splitlines()
            if line.startswith("class htb fb:") and line.split()[2] != "fb:1"}


def test_a_config_db_change_brings_the_classes_its_queues_need(lab):
    # Each BE port has a class only for the queues its program uses (lossless_dp.queues_of); a
    # DSCP_TO_TC_MAP edit that sends DSCP 10 to a traffic class whose queue has none brings it.
    # (Faults run before may have added classes; nothing removes one.)
    from harness.runtime import lossless_dp
    node = "be-g1-r0"
    ports = [s.port for s in lossless_dp.port_specs(lab.plan) if s.node == node]
    (name,) = lab.running_config_db(node)["DSCP_TO_TC_MAP"]
    have = {p: _classes(lab, node, p) for p in ports}
    assert all({0, 3, 6} <= have[p] for p in ports)  # RoCE, CNPs and the default
    new = min(set(range(8)) - set().union(*have.values()))  # the control: no port has its class yet
    old = lab.set_config_db(node, "DSCP_TO_TC_MAP", name, "10", str(new))
    try:
        assert all(_classes(lab, node, p) == have[p] | {new} for p in ports)
        replay = (lossless_dp.run_dir(lab.name) / f"lossless-tc.{node}.{ports[0]}").read_text()
        assert f"classid fb:{0x10 + new:x} " in replay  # a port made anew gets it too
    finally:
        lab.set_config_db(node, "DSCP_TO_TC_MAP", name, "10", old)


def test_a_status_reader_that_hangs_up_does_not_end_the_data_planes(lab):
    # Measured: fablab-lossless-dp ended silently (SIGPIPE) when a reader closed before the end
    # of its document, and every PFC of the lab with it.
    import socket

    from harness.runtime import bfd_offload, lossless_dp
    before = lab.lossless_counters()  # the control: it answers
    assert before.ports
    for process in (lossless_dp, bfd_offload):
        for _ in range(3):
            with socket.socket(socket.AF_UNIX) as s:
                s.connect(str(process.status_socket(lab.name)))
    assert len(lab.lossless_counters().ports) == len(before.ports)
    assert bfd_offload.sessions(lab.name)
    assert lossless_dp.PROCESS.running(lab.name) is not None and bfd_offload.PROCESS.running(lab.name) is not None


def test_a_case_that_fails_keeps_the_logs_of_the_switches_it_names(lab, tmp_path):
    """A failure's evidence stays with its results (issue 37): the FRR logs of the switches its
    result names, as FRR wrote them, and the BFD data plane's lines about them; the same case
    passing afterwards keeps none."""
    from harness.report.results import Results

    results = Results(tmp_path, "kept")
    f = BY_NAME["l3-hashing"]
    with applied(lab, f):
        bad = run_case(case(f.caught_by), lab, results, name="broken")
    assert bad.passed is False
    kept = results.path("broken.logs")
    named = {p.parent.name for p in kept.glob("*/bgpd.log")}
    text = " ".join([bad.reason, *bad.problems])
    assert named <= {sw.name for sw in lab.plan.switches} and any(n in text for n in named), (named, text[:400])
    some = sorted(named)[0]
    assert "bgpd 8." in (kept / some / "bgpd.log").read_text()  # FRR's own start line
    assert {"zebra.log", "bfdd.log"} <= {p.name for p in (kept / some).iterdir()}
    dp = (kept / "bfd-dp.log").read_text().splitlines()
    assert dp and all(any(n in line for n in named) for line in dp)
    good = run_case(case(f.caught_by), lab, results, name="fixed")
    assert good.passed is True and not results.path("fixed.logs").exists()
