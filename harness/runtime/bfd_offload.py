"""BFD offloaded to the lab's data plane, as SONiC offloads it to the ASIC.

Each node's bfdd runs with `--dplaneaddr unix:<run dir>/<node>/bfdd-dp.sock` (FRR's
distributed BFD): it keeps the configuration and tells zebra and bgpd about state changes,
and opens no BFD socket of its own. One process per lab, fablab-bfd-dp (C, built from
harness/dataplane/bfd_dp.c), connects to every bfdd, sends and receives the BFD packets from
inside each node's namespace through its own interfaces, and runs RFC 5880's state machine
and detection. Why C: docs/performance.md ("BFD offload").

A data plane that dies takes every offloaded session down (bfdd cannot receive without it):
`check_running` says so, and `observe` calls it before reading any BFD state.
"""
from __future__ import annotations

from pathlib import Path

from harness.plumbing import priority
from harness.plumbing.namespaces import NETNS_DIR
from harness.runtime import processes
from harness.runtime.dataplane_process import DataPlaneProcess, built_with_cc
from harness.runtime.state import Daemon, load, namespace, run_dir, save

SOURCE = Path(__file__).resolve().parents[1] / "dataplane" / "bfd_dp.c"
BINARY = SOURCE.parent / "build" / "fablab-bfd-dp"
NODE = "bfd-dp"  # the data plane's Daemon.node; its -N tag is namespace(lab, NODE)
SOCKET = "bfdd-dp.sock"
PROCESS = DataPlaneProcess(NODE, "the BFD data plane",
                           "every offloaded BFD session is down (bfdd cannot receive without it)")


def uses_offload(cluster_bfd) -> bool:
    return cluster_bfd.enabled and cluster_bfd.offload


def binary() -> Path:
    """The data plane's executable, compiled from the project's source when missing or older
    than it (about a second; `make deps` does it ahead)."""
    return built_with_cc(BINARY, SOURCE, [], "BFD offload needs a C compiler to build fablab-bfd-dp: apt-get install "
                         "gcc libc6-dev (or `make deps`); or declare Bfd(offload=False) for software bfdd")


def dplane_socket(lab: str, node: str) -> Path:
    return run_dir(lab) / node / SOCKET


status_socket = PROCESS.status_socket
log_path = PROCESS.log_path
tag = PROCESS.tag
log_tail = PROCESS.log_tail
daemon_of = PROCESS.daemon_of


def check_paths(lab: str, names: list[str]) -> None:
    """Unix socket paths are limited to 107 bytes: say so before anything is made."""
    PROCESS.check_paths(lab, tuple(dplane_socket(lab, n) for n in names))


def start(lab: str, names: list[str], timeout: float = 10.0) -> Daemon:
    """Start the lab's data plane for the FRR nodes `names`; it connects to each bfdd as soon
    as that bfdd listens (and again whenever it restarts)."""
    exe = binary()
    conf = run_dir(lab) / "bfd-dp.conf"
    conf.write_text("".join(f"{n} {NETNS_DIR}/{namespace(lab, n)} {dplane_socket(lab, n)}\n" for n in names))
    return PROCESS.start(lab, [str(exe), "-c", str(conf), "-p", str(priority.BFD_DATAPLANE)], timeout)


def restart(lab: str) -> Daemon:
    """End the lab's data plane and start it again (a test of what bgpd sees meanwhile)."""
    state = load(lab)
    old = [d for d in state.daemons if d.node == NODE]
    processes.terminate({d.pid: tag(lab) for d in old})
    names = [line.split()[0] for line in (run_dir(lab) / "bfd-dp.conf").read_text().splitlines() if line.strip()]
    daemon = start(lab, names)
    save(state.with_(daemons=tuple(d for d in state.daemons if d.node != NODE) + (daemon,)))
    return daemon


def check_running(lab: str) -> None:
    """Raise if the lab's data plane was started and is gone: every offloaded BFD session
    is then down, whatever else a look would say."""
    PROCESS.running(lab)


def sessions(lab: str, timeout: float = 10.0) -> dict[str, list[dict]]:
    """The data plane's view of every session, per node: its own state and diagnostic (which
    bfdd does not show: FRR's protocol carries only the peer's), the peer's, timers and counters."""
    return {n["name"]: n["sessions"] for n in PROCESS.ask(lab, timeout)["nodes"]}
