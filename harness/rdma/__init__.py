"""RDMA with real rdma_rxe between two GPU NICs of a running lab (docs/rdma.md).

    from harness import rdma
    result = rdma.run(lab, "gpu01", "rail0", "gpu05", "rail0", test="write_bw", qps=4)
    with rdma.start(lab, "gpu01", "rail0", "gpu05", "rail0", test="rping") as run:
        run.wait_for_client()
        ...  # fail a link meanwhile
        result = run.result()

A lane above the lab, not part of it: `Lab` knows nothing of it (DESIGN.md, "The Lab is the
only door"); it uses what any check may (`harness.plumbing.labview.LabView`).
"""
from __future__ import annotations

from harness.rdma.session import RdmaResult, RdmaRun, RdmaSpec, run_rdma
from harness.plumbing.labview import LabView
from harness.runtime.base import Progress, quiet


def run(lab: LabView, src_node: str, src_nic: str, dst_node: str, dst_nic: str, test: str = "write_bw",
        qps: int = 1, size: int = 0, duration: float = 5.0, iterations: int = 1000, force_route: bool = False,
        progress: Progress = quiet, timeout: float | None = None) -> RdmaResult:
    """One RDMA test with real rdma_rxe between two GPU NICs: write_bw (perftest, `qps` QPs for
    `duration` s), send_lat (`iterations`) or rping (`iterations` ping-pongs, data verified).
    Figures, rxe counters, QPNs and their UDP source ports come back in an RdmaResult; a test
    that fails to run is a result with ok=False. With `force_route`, each endpoint also routes
    the other's prefix via its own gateway (to try a path the plan does not give, e.g. between
    rails)."""
    spec = RdmaSpec(src_node, src_nic, dst_node, dst_nic, test, qps, size, duration, iterations, force_route)
    return run_rdma(lab, spec, progress, timeout)


def start(lab: LabView, src_node: str, src_nic: str, dst_node: str, dst_nic: str, test: str = "write_bw",
          qps: int = 1, size: int = 0, duration: float = 5.0, iterations: int = 1000, force_route: bool = False,
          progress: Progress = quiet, timeout: float | None = None) -> RdmaRun:
    """`run` started, not waited for: act on the lab while it runs (fail a link), then
    `.result()`. Use as a context manager."""
    spec = RdmaSpec(src_node, src_nic, dst_node, dst_nic, test, qps, size, duration, iterations, force_route)
    return RdmaRun(lab, spec, progress, timeout)
