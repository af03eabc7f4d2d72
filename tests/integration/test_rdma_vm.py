"""The RDMA lane's microVM on a real lab: it takes the nodes' NICs while it runs, gives them
back afterwards, and nothing of it outlives the run, the lab, or an interrupted `fablab rdma`."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness import rdma
from harness.lab import Lab
from harness.runtime import processes
from topologies import BUILTINS

from .conftest import leftovers_of

FABLAB = [sys.executable, "-m", "harness.cli"]


pytestmark = pytest.mark.usefixtures("rdma_lane")


@pytest.fixture(scope="module")
def lab():
    name = f"t{os.getpid() % 100000}v"
    with Lab.up(BUILTINS["ai-cluster"](), name=name, timeout=90) as running:
        yield running
    assert leftovers_of(name) == []


def _spliced(lab, node: str, nic: str) -> tuple[bool, bool]:
    """(the tap exists, the NIC mirrors what it receives to it) in the node's namespace."""
    links = lab.ns_exec(node, ["ip", "-o", "link", "show"]).stdout
    filters = lab.ns_exec(node, ["tc", "filter", "show", "dev", nic, "ingress"]).stdout
    return f"vm-{nic}" in links, "mirred" in filters


def _gateway_answers(lab, node: str, nic: str) -> bool:
    gw = str(lab.plan.host(node).nic(nic).gateway)
    return lab.exec(node, ["ping", "-c1", "-W2", "-I", nic, gw]).returncode == 0


def test_the_vm_takes_the_nics_and_gives_them_back(lab):
    assert _gateway_answers(lab, "gpu01", "rail0")
    with rdma.start(lab, "gpu01", "rail0", "gpu05", "rail0", test="rping", iterations=300) as run:
        run.wait_for_client()
        assert _spliced(lab, "gpu01", "rail0") == (True, True)  # the control: the check can see a splice
        assert _spliced(lab, "gpu05", "rail0") == (True, True)
        result = run.result()
    assert result.ok and result.rping.verified, result.summary()
    assert _spliced(lab, "gpu01", "rail0") == (False, False)
    assert _spliced(lab, "gpu05", "rail0") == (False, False)
    assert _gateway_answers(lab, "gpu01", "rail0") and _gateway_answers(lab, "gpu05", "rail0")
    assert processes.vm_pids_by_tag(f"fl_{lab.name}_") == {}


def _client_started(lab) -> bool:
    return any("step client" in p.read_text() for p in Path(lab.run_dir).glob("rdma-*/guest.log"))


def test_an_interrupted_fablab_rdma_leaves_nothing(lab):
    """SIGTERM, as `kill` or a CI runner's timeout sends it; Ctrl-C takes the same way out of
    `fablab rdma` (harness.plumbing.interrupt), and a microVM boot to its client is 20 s of CPU."""
    sig = signal.SIGTERM
    for p in Path(lab.run_dir).glob("rdma-*"):
        for f in p.iterdir():
            f.unlink()
        p.rmdir()
    proc = subprocess.Popen(FABLAB + ["rdma", lab.name, "gpu02:rail1", "gpu06:rail1", "--test", "rping",
                                      "--iterations", "100000"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)
    deadline = time.monotonic() + 90
    while not _client_started(lab):
        assert proc.poll() is None and time.monotonic() < deadline, "the guest's client never started"
        time.sleep(0.2)
    proc.send_signal(sig)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 130, out
    assert processes.vm_pids_by_tag(f"fl_{lab.name}_") == {}
    assert _spliced(lab, "gpu02", "rail1") == (False, False) and _spliced(lab, "gpu06", "rail1") == (False, False)
    assert _gateway_answers(lab, "gpu02", "rail1")


def test_teardown_ends_a_running_vm(lab_name):
    running = Lab.up(BUILTINS["ai-cluster"](), name=lab_name, timeout=90)
    run = rdma.start(running, "gpu01", "rail0", "gpu05", "rail0", test="rping", iterations=100000)
    run.wait_for_client()
    assert processes.vm_pids_by_tag(f"fl_{lab_name}_")  # the control: the VM is there to be found
    running.down()  # as `fablab down` from another shell would, while the test runs
    assert leftovers_of(lab_name) == []
    run.vm.close()
