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

import json
import os
import shutil
import socket
import subprocess
from pathlib import Path

from harness.core.errors import LabError, PrerequisiteError
from harness.plumbing import priority, wait
from harness.plumbing.namespaces import NETNS_DIR
from harness.runtime import processes
from harness.runtime.state import Daemon, LabState, load, namespace, run_dir, save

SOURCE = Path(__file__).resolve().parents[1] / "dataplane" / "bfd_dp.c"
BINARY = SOURCE.parent / "build" / "fablab-bfd-dp"
NODE = "bfd-dp"  # the data plane's Daemon.node; its -N tag is namespace(lab, NODE)
SOCKET = "bfdd-dp.sock"
_UNIX_PATH_MAX = 107


def uses_offload(cluster_bfd) -> bool:
    return cluster_bfd.enabled and cluster_bfd.offload


def binary() -> Path:
    """The data plane's executable, compiled from the project's source when missing or older
    than it (about a second; `make deps` does it ahead)."""
    if BINARY.exists() and BINARY.stat().st_mtime >= SOURCE.stat().st_mtime:
        return BINARY
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        raise PrerequisiteError("BFD offload needs a C compiler to build fablab-bfd-dp: apt-get install gcc "
                                "libc6-dev (or `make deps`); or declare Bfd(offload=False) for software bfdd")
    BINARY.parent.mkdir(exist_ok=True)
    tmp = BINARY.with_name(f".{BINARY.name}.{os.getpid()}")
    run = subprocess.run([cc, "-O2", "-Wall", "-o", str(tmp), str(SOURCE)], capture_output=True, text=True)
    if run.returncode != 0:
        tmp.unlink(missing_ok=True)
        raise PrerequisiteError(f"building fablab-bfd-dp from {SOURCE} failed: {run.stderr.strip()[-800:]}")
    os.replace(tmp, BINARY)  # atomic: labs booting at once never run a half-written file
    return BINARY


def dplane_socket(lab: str, node: str) -> Path:
    return run_dir(lab) / node / SOCKET


def status_socket(lab: str) -> Path:
    return run_dir(lab) / "bfd-dp.status"


def log_path(lab: str) -> Path:
    return run_dir(lab) / "bfd-dp.log"


def tag(lab: str) -> str:
    return namespace(lab, NODE)


def check_paths(lab: str, names: list[str]) -> None:
    """Unix socket paths are limited to 107 bytes: say so before anything is made."""
    for path in [status_socket(lab)] + [dplane_socket(lab, n) for n in names]:
        if len(str(path).encode()) > _UNIX_PATH_MAX:
            raise LabError(f"{path} is longer than a unix socket path may be ({_UNIX_PATH_MAX} bytes): "
                           "use a shorter lab name or FABLAB_RUN_DIR")


def start(lab: str, names: list[str], timeout: float = 10.0) -> Daemon:
    """Start the lab's data plane for the FRR nodes `names`; it connects to each bfdd as soon
    as that bfdd listens (and again whenever it restarts)."""
    exe = binary()
    d = run_dir(lab)
    conf = d / "bfd-dp.conf"
    conf.write_text("".join(f"{n} {NETNS_DIR}/{namespace(lab, n)} {dplane_socket(lab, n)}\n" for n in names))
    status = status_socket(lab)
    status.unlink(missing_ok=True)
    with open(log_path(lab), "ab") as log:
        proc = subprocess.Popen([str(exe), "-N", tag(lab), "-c", str(conf), "-s", str(status),
                                 "-p", str(priority.BFD_DATAPLANE)],
                                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)

    def ready() -> bool:
        if proc.poll() is not None:
            raise LabError(f"the BFD data plane of {lab} exited at start ({proc.returncode}): {log_tail(lab)}")
        return status.exists()

    wait.until(ready, timeout, "the BFD data plane", interval=0.02)
    return Daemon(NODE, NODE, proc.pid)


def restart(lab: str) -> Daemon:
    """End the lab's data plane and start it again (a test of what bgpd sees meanwhile)."""
    state = load(lab)
    old = [d for d in state.daemons if d.node == NODE]
    processes.terminate({d.pid: tag(lab) for d in old})
    names = [line.split()[0] for line in (run_dir(lab) / "bfd-dp.conf").read_text().splitlines() if line.strip()]
    daemon = start(lab, names)
    save(state.with_(daemons=tuple(d for d in state.daemons if d.node != NODE) + (daemon,)))
    return daemon


def daemon_of(state: LabState) -> Daemon | None:
    return next((d for d in state.daemons if d.node == NODE), None)


def check_running(lab: str) -> None:
    """Raise if the lab's data plane was started and is gone: every offloaded BFD session
    is then down, whatever else a look would say."""
    try:
        daemon = daemon_of(load(lab))
    except LabError:
        return
    if daemon is None or (processes.alive(daemon.pid) and processes.is_ours(daemon.pid, tag(lab))):
        return
    raise LabError(f"the BFD data plane of {lab} (fablab-bfd-dp, pid {daemon.pid}) is not running: every "
                   f"offloaded BFD session is down (bfdd cannot receive without it). Its log ends: "
                   f"{log_tail(lab)}  Boot the lab again.")


def log_tail(lab: str, chars: int = 600) -> str:
    try:
        return log_path(lab).read_text(errors="replace")[-chars:].strip() or "(empty)"
    except OSError:
        return "(no log)"


def sessions(lab: str, timeout: float = 10.0) -> dict[str, list[dict]]:
    """The data plane's view of every session, per node: its own state and diagnostic (which
    bfdd does not show: FRR's protocol carries only the peer's), the peer's, timers and counters."""
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(timeout)
            s.connect(str(status_socket(lab)))
            chunks = []
            while chunk := s.recv(1 << 16):
                chunks.append(chunk)
    except OSError as e:
        raise LabError(f"the BFD data plane of {lab} did not answer on {status_socket(lab)}: {e}") from e
    doc = json.loads(b"".join(chunks))
    return {n["name"]: n["sessions"] for n in doc["nodes"]}
