"""Fixtures for tests that boot real labs: root, FRR and nftables are needed, and every lab
gets a unique name and is always torn down."""
from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from harness.plumbing import namespaces
from harness.pytest_plugin import skip_reason
from harness.runtime import mgmt_services, processes
from harness.runtime.state import NS_PREFIX


# The files that take longest, longest first (seconds of wall clock four at a time, as make test
# runs them: docs/performance.md). xdist's --dist loadfile hands files out in collection order
# only when told --no-loadscope-reorder (by default it sorts them by how many tests each holds,
# and this order went unused until 2026-12-05), so these start first and the workers end
# together rather than one running on alone.
LONGEST_FIRST = ("tests/integration/test_faults_lab.py", "tests/integration/test_netns_runtime.py",
                 "tests/integration/test_lessons.py", "labs/test_rdma.py", "tests/integration/test_mystery_lab.py",
                 "tests/integration/test_lessons_second_half.py", "labs/test_failover.py",
                 "tests/integration/test_rdma_vm.py", "labs/test_tenants.py", "labs/test_your_configs.py",
                 "tests/integration/test_staged_ssh.py", "labs/test_dual_homed.py",
                 "tests/integration/test_bfd_offload.py", "labs/test_pods.py", "tests/integration/test_your_plan.py",
                 "labs/test_fe_tcp.py", "tests/integration/test_sonic_init_run.py")


def pytest_collection_modifyitems(config, items):
    reason = skip_reason("netns")
    if reason:
        for item in items:
            if "integration" in str(item.fspath):
                item.add_marker(pytest.mark.skip(reason=reason))
    rank = {path: i for i, path in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::")[0], len(rank)))  # stable: a file keeps its order


@pytest.fixture
def lab_name():
    """A fresh lab name; whatever the test leaves of that lab is removed afterwards."""
    name = f"t{uuid.uuid4().hex[:7]}"
    yield name
    from harness.runtime.netns import NetnsRuntime

    NetnsRuntime().down(name)


def _agents_running(lab: str) -> list[int]:
    """fablab's traffic agents of this lab (their command line names their file, gone or not)."""
    mark = f"/tmp/fablab-{lab}-agent-".encode()
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if mark in (entry / "cmdline").read_bytes():
                    pids.append(int(entry.name))
            except OSError:
                continue
    return pids


def leftovers_of(lab: str) -> list[str]:
    prefix = f"{NS_PREFIX}{lab}_"
    found = [ns for ns in namespaces.list_namespaces() if ns.startswith(prefix)]
    found += [f"pid {pid}" for pid in processes.frr_pids_by_namespace(prefix)]
    found += [f"microVM pid {pid}" for pid in processes.vm_pids_by_tag(prefix)]
    found += [f"BFD data plane pid {pid}" for pid in processes.dataplane_pids_by_tag(prefix)]
    found += [f"sshd or lldpd pid {pid}" for pid in mgmt_services.leftover_pids(lab)]
    found += [str(p) for p in Path("/tmp").glob(f"fablab-{lab}-agent-*")]  # the traffic agent's file (over SSH)
    found += [f"traffic agent pid {pid}" for pid in _agents_running(lab)]
    for path in (f"/run/fablab/{lab}",):
        if os.path.exists(path):
            found.append(path)
    for directory in ("/var/run/frr", "/etc/frr"):
        if os.path.isdir(directory):
            found += [f"{directory}/{d}" for d in os.listdir(directory) if d.startswith(prefix)]
    return found


def fablab(*argv: str, timeout: float = 600) -> subprocess.CompletedProcess:
    """The fablab command as an engineer runs it, in a process of its own."""
    return subprocess.run([sys.executable, "-m", "harness.cli", *argv], capture_output=True, text=True,
                          timeout=timeout)


@contextlib.contextmanager
def up_with_configs(plan: Path, prefix: str, configs: Path):
    """`fablab up PLAN --configs DIR` as a user runs it (a lab named `prefix` + pid), every session
    of the configs able to come up, and nothing of it left after."""
    name = f"{prefix}{os.getpid() % 100000}"
    run = fablab("up", str(plan), "--name", name, "--configs", str(configs), "--json")
    try:
        assert run.returncode == 0, run.stderr[-2000:]
        assert json.loads(run.stdout)["sessions_that_cannot_come_up"] == []
        yield name
    finally:
        fablab("down", name)
        assert leftovers_of(name) == []
