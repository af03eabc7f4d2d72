"""fablab's pytest plugin: `pytest labs/` gets a booted lab and a results directory.

Options: --topology (built-in name or .py path, default ai-cluster), --runtime (netns),
--results-dir (default results/: the parent of the session's own run directory, see
harness.report.results). Fixtures: `cluster` (the declaration), `lab` (booted once per session,
always torn down), `results` (JSON and PNG per check, with the session's provenance: the
`cluster` declaration, the runtime, the pytest command line; the end time is written when
the session finishes, not when it is interrupted), `control` (runs a positive control, kept in
`results`). `measured(outcome)` for a timed claim.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("fablab")
    group.addoption("--topology", default="ai-cluster", help="built-in topology, a .py file, or a cabling plan "
                    "(.csv, .clab.yml)")
    group.addoption("--runtime", default="netns", help="runtime for the lab fixture (netns or clab)")
    group.addoption("--results-dir", default="results",
                    help="parent of this session's results directory (<UTC time>-<topology>-<random>/: JSON, PNG, "
                         "summary.json with provenance); DIR/latest points at the newest run")


def pytest_configure(config: pytest.Config) -> None:
    """An unknown runtime, or clab without what it needs, stops the run at once: asked for
    explicitly, it must not turn into a run of skipped labs."""
    name = config.getoption("runtime", default="netns")
    if name == "netns":
        return
    from harness.core.errors import HarnessError
    from harness.runtime import RUNTIMES

    if name not in RUNTIMES:
        raise pytest.UsageError(f"--runtime {name}: unknown; valid runtimes: {', '.join(RUNTIMES)}")
    from harness.runtime import get_runtime

    try:
        get_runtime(name).check_prerequisites()
    except HarnessError as e:
        raise pytest.UsageError(f"--runtime {name}: {e}") from None


def skip_reason(runtime: str) -> str | None:
    """Why a netns lab cannot boot here, or None: the runtime's own prerequisites (root,
    FRR, nftables, ...). The labs skip with it rather than fail."""
    if runtime != "netns":
        return None
    from harness.core.errors import PrerequisiteError
    from harness.runtime import get_runtime

    try:
        get_runtime(runtime).check_prerequisites()
    except PrerequisiteError as e:
        return f"{e} (`make test` installs what is missing; CI runs as root)"
    return None


def measured(outcome):
    """The outcome of a case whose figures could be told, else the test skipped with the case's
    own reason (passed None: the sender fell behind, or the kernel's packet work waited for a
    CPU, on a machine whose kernel preempts no kernel code and whose vCPUs are shared): not a
    pass, and not a failure of the fabric either. No retry: the skip says what stood in the way."""
    if outcome.passed is None:
        pytest.skip(f"not measurable on this machine: {outcome.reason}")
    return outcome


@pytest.fixture(scope="session")
def cluster(pytestconfig: pytest.Config):
    from harness.catalog import load_cluster

    return load_cluster(pytestconfig.getoption("topology"))


def boot(cluster, runtime: str, suffix: str):
    """Boot `cluster` as a session-unique lab; a generator for fixtures (tears down)."""
    from harness.lab import Lab

    reason = skip_reason(runtime)
    if reason:
        pytest.skip(reason)
    name = f"pt{os.getpid() % 100000}{suffix}"
    lab = Lab.up(cluster, name=name, runtime=runtime)
    try:
        yield lab
    finally:
        lab.down()


@pytest.fixture(scope="session")
def lab(cluster, pytestconfig: pytest.Config):
    yield from boot(cluster, pytestconfig.getoption("runtime"), "l")


@pytest.fixture(scope="session")
def rdma_lane():
    """Skips, with the reason, where the RDMA lane cannot run (`make rdma-deps` sets it up)."""
    from harness.core.errors import PrerequisiteError
    from harness.rdma.vmimage import boot_files, switched_off

    if switched_off():
        pytest.skip(switched_off())
    try:
        return boot_files()
    except PrerequisiteError as e:
        pytest.skip(f"no rdma_rxe here and no microVM: {e}")


_RESULTS = pytest.StashKey[object]()


@pytest.fixture(scope="session")
def results(pytestconfig: pytest.Config, cluster):
    from harness.report.provenance import collect
    from harness.report.results import Results

    topology = pytestconfig.getoption("topology")
    runtime = pytestconfig.getoption("runtime")
    command = ["pytest", *pytestconfig.invocation_params.args]
    run = Results(Path(pytestconfig.getoption("results_dir")), topology,
                  collect(cluster, topology, runtime, command=command))
    pytestconfig.stash[_RESULTS] = run
    return run


def control_name(test: str, case: str, n: int) -> str:
    """Where the `n`th control of `case` in `test` is recorded: one name per test and run, so a
    later control that passes never overwrites an earlier one that failed."""
    short = re.sub(r"[^A-Za-z0-9_.-]+", "-", test.removeprefix("test_")).strip("-")
    return f"{case}-control-{short}" + (f"-{n}" if n > 1 else "")


@pytest.fixture
def control(request: pytest.FixtureRequest, results):
    """`control(case, lab, **options)`: a case that must pass before (or after) a test breaks the
    lab, run and recorded in `results` under the test's own name, so that a control that does
    not pass keeps its result and the logs of the nodes it names (issue 37) as a failing check does."""
    from harness.checks.registry import run_case

    runs: dict[str, int] = {}

    def run(case, lab, **options):
        runs[case.name] = runs.get(case.name, 0) + 1
        return run_case(case, lab, results, name=control_name(request.node.name, case.name, runs[case.name]),
                        **options)
    return run


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """The session's results get their end time, unless it was interrupted (then `ended` stays null)."""
    run = session.config.stash.get(_RESULTS, None)
    if run is not None and exitstatus != pytest.ExitCode.INTERRUPTED:
        run.finish()
