"""Every file an engineer gives fablab, mutated (issue 68, item 5): cable lists and their
devices.csv, sonic-mgmt's links and devices CSVs, .clab.yml, numbering.csv, config_db.json,
frr.conf and inventories, changed by their structure (an Excel export, a hand-edited YAML, a
Windows editor) and by their bytes (tests/inputfuzz.py makes the cases, seeded), each through the
command an engineer uses on it, in this process (fablab's main()):

- never a traceback (no exception out of main, none printed, never exit 1), never past the
  deadline, never more than a screenful printed;
- a neutral change (BOM, CRLF, order, whitespace) exits as the unmutated file does, with the
  same result; a broken file never exits 0.

What may blow up (alias bombs, 10,000 levels, 10 MB) runs in a worker process with a memory
limit. The corpus (tests/corpus/inputs/) keeps the cases found, replayed here. The nightly size:
scripts/bench_fuzz_inputs.py. FABLAB_FUZZ_SEED=N draws other cases.
"""
from __future__ import annotations

import importlib
import os
import time

import pytest

from inputfuzz import FORMATS, SEED, Case, cases
from inputfuzz_run import CONTROL, Result, Worker, baseline, judge, load_corpus, run_argv, run_case

SEED_NOW = int(os.environ.get("FABLAB_FUZZ_SEED", SEED))
PER_FORMAT = 30  # 270 cases: about 30 s on two cores (FRR reads each mutated frr.conf: ~0.5 s)
CASES = cases(SEED_NOW, PER_FORMAT)
CORPUS = load_corpus()


@pytest.fixture(scope="module")
def worker():
    w = Worker()
    yield w
    w.close()


def _said(case: Case, r: Result, found: list[str]) -> str:
    out = CONTROL.sub(lambda m: repr(m.group())[1:-1], (r.err + r.out)[-1500:])  # shown, not acted on
    return (f"{case.name} [{case.expect}] {case.note}\n  fablab {' '.join(case.command)} -> exit {r.code} in "
            f"{r.seconds:.1f} s\n  " + "\n  ".join(found) + f"\n--- what it printed (the end) ---\n{out}")


def _run(case: Case, tmp_path, worker: Worker, request: dict, stored=None) -> tuple[Result, list[str]]:
    if case.heavy:
        return worker.run(request, case.deadline)
    r = run_case(case, tmp_path, stored)
    return r, judge(case, r)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_a_mutated_input_never_crashes_hangs_or_passes_broken(case, tmp_path, worker):
    r, found = _run(case, tmp_path, worker, {"seed": SEED_NOW, "fmt": case.fmt, "index": case.index})
    assert not found, _said(case, r, found)


@pytest.mark.parametrize("entry", CORPUS, ids=lambda e: e[0].name)
def test_every_case_in_the_corpus_stays_fixed(entry, tmp_path, worker):
    stored, case = entry
    r, found = _run(case, tmp_path, worker, {"corpus": str(stored)}, stored)
    assert not found, _said(case, r, found)


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_the_unmutated_files_pass_every_command_that_reads_them(fmt):
    """The control: what each case is measured against exits 0 (the baseline asserts it)."""
    for command in sorted({c.command for c in cases(SEED_NOW, 40, (fmt,)) if not c.heavy}):
        assert baseline(fmt, command).code == 0


def test_the_cases_are_the_same_on_every_run():
    a, b = cases(SEED_NOW, 5), cases(SEED_NOW, 5)
    assert [(c.name, c.note, c.changes, c.steps) for c in a] == [(c.name, c.note, c.changes, c.steps) for c in b]
    assert {c.expect for c in cases(SEED_NOW, PER_FORMAT)} == {"same", "faithful", "broken", "any"}


def test_the_judge_sees_each_kind_of_failure():
    """Positive controls: a test that cannot fail proves nothing."""
    case = Case("cable-csv", 0, "x", "", "broken", "cabling.csv", ("show", "{d}/cabling.csv"), max_lines=3)
    assert judge(case, Result(code=0)) == ["exit 0 on a broken input"]
    assert judge(case, Result(code=2, crash="TypeError at harness/x.py:1 (f)"))[0].startswith("traceback")
    assert judge(case, Result(code=2, err="Traceback (most recent call last):\n"))[0].startswith("a traceback")
    assert judge(case, Result(code=1)) == ["exit 1"]
    assert judge(case, Result(code=2, seconds=11.0))[0].startswith("hang")
    assert judge(case, Result(code=2, err="a\n" * 5)) == ["5 lines printed (10 characters)"]
    assert judge(case, Result(code=2)) == []


def test_a_hang_is_ended_and_said(monkeypatch):
    """Where fablab would hang: in this process the alarm ends it and says where; a worker that
    does not answer is killed."""
    cli = importlib.import_module("harness.cli.main")  # the module: harness.cli's `main` is the function
    monkeypatch.setattr(cli, "main", lambda argv: time.sleep(30))
    start = time.monotonic()
    r = run_argv(["show", "x"], 0.5)
    assert r.hang and "Hang at" in r.crash and time.monotonic() - start < 5
    w = Worker(grace=1.0)
    try:
        r, found = w.run({"sleep": 30}, 0.5)
    finally:
        w.close()
    assert r.hang and found == ["hang: killed after 1.5 s"] and r.seconds < 10
