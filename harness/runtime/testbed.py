"""Two namespaces joined by one veth pair: the bench for the traffic generators' self-tests and
benchmarks, a lab without a plan.

Its namespaces carry a lab's name (fl_<lab>_a, fl_<lab>_b) like any lab's, so `fablab clean`
finds them; its owner, written in the lab's run directory before anything is made, keeps
`fablab clean` off it while that process lives, and lets it remove what a killed one left.
"""
from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager

from harness.runtime.state import claim_testbed, namespace, run_dir
from harness.traffic.flows import TrafficError
from harness.plumbing import wait
from harness.traffic.runner import netns_exists


@contextmanager
def veth_testbed(lab: str, addr_a: str = "10.99.0.0/31", addr_b: str = "10.99.0.1/31",
                 dev: str = "veth0") -> Iterator[tuple[str, str]]:
    """Namespaces fl_<lab>_a and fl_<lab>_b joined by `dev`; yields the two bare addresses.

    Nothing is created in the root namespace: the pair is born in the first namespace with its
    peer moved to the second in the same call. Namespaces of these names left by an earlier run
    are replaced; both are deleted on exit, whatever happened."""
    ns_a, ns_b = namespace(lab, "a"), namespace(lab, "b")
    claim_testbed(lab)
    try:
        for ns in (ns_a, ns_b):
            delete_netns(ns)
            _ip("netns", "add", ns)
        _ip("-n", ns_a, "link", "add", dev, "type", "veth", "peer", "name", dev, "netns", ns_b)
        for ns, addr in ((ns_a, addr_a), (ns_b, addr_b)):
            _ip("-n", ns, "addr", "add", addr, "dev", dev)
            _ip("-n", ns, "link", "set", "lo", "up")
            _ip("-n", ns, "link", "set", dev, "up")
        yield addr_a.split("/")[0], addr_b.split("/")[0]
    finally:
        failures = []
        for ns in (ns_a, ns_b):
            try:
                delete_netns(ns)
            except TrafficError as exc:
                failures.append(str(exc))
        if not failures:
            shutil.rmtree(run_dir(lab), ignore_errors=True)
        if failures:
            raise TrafficError("; ".join(failures))


def _ip(*args: str) -> None:
    done = subprocess.run(["ip", *args], capture_output=True, text=True)
    if done.returncode != 0:
        raise TrafficError(f"ip {' '.join(args)}: {done.stderr.strip()}")


def delete_netns(ns: str, timeout_s: float = 10.0) -> None:
    """Delete a namespace by name and poll until its name is gone."""
    if netns_exists(ns):
        _ip("netns", "del", ns)

    def gone() -> bool:
        return not netns_exists(ns) and ns not in subprocess.run(["ip", "netns", "list"], capture_output=True,
                                                                 text=True).stdout.split()

    wait.until(gone, timeout_s, f"network namespace {ns} to go", interval=0.01,
               error=lambda: TrafficError(f"network namespace {ns} still present {timeout_s} s after deletion"))
