"""One of a lab's data-plane processes (fablab-bfd-dp, fablab-lossless-dp): C programs fablab
compiles from its own sources, one per lab, each writing a log and answering a status socket in
the lab's run directory. What the two share lives here: compiling, the files, starting and
waiting for the socket, asking it, and saying so when the process is gone.
"""
from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from harness.core.errors import LabError, PrerequisiteError
from harness.plumbing import wait
from harness.runtime import processes
from harness.runtime.state import Daemon, LabState, load, namespace, run_dir

_UNIX_PATH_MAX = 107


def compile_to(target: Path, argv: list[str]) -> None:
    """Run a compiler whose last argument is the output file, into a temporary name first:
    labs booting at once never run a half-written file."""
    target.parent.mkdir(exist_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}")
    run = subprocess.run([*argv, str(tmp)], capture_output=True, text=True)
    if run.returncode != 0:
        tmp.unlink(missing_ok=True)
        raise PrerequisiteError(f"building {target.name} failed: {run.stderr.strip()[-800:]}")
    os.replace(tmp, target)


def stale(target: Path, sources: tuple[Path, ...]) -> bool:
    return not target.exists() or target.stat().st_mtime < max(s.stat().st_mtime for s in sources)


def built_with_cc(target: Path, source: Path, flags: list[str], no_compiler: str) -> Path:
    """`target` compiled from the one C `source` when missing or older; `no_compiler`: the
    error that says what needs it and how to get a compiler."""
    if not stale(target, (source,)):
        return target
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        raise PrerequisiteError(no_compiler)
    compile_to(target, [cc, "-O2", "-Wall", *flags, str(source), "-o"])
    return target


@lru_cache(maxsize=8)
def takes_from_shared_library(binary: Path, symbol: str) -> bool:
    """`binary` calls `symbol` through its dynamic symbols (so a preloaded library's `symbol` is
    the one it runs): what a preload into an FRR daemon needs, true of Debian's FRR 8.4, whose
    daemons take libfrr's functions from libfrr.so; false where it is missing or unreadable."""
    try:
        run = subprocess.run(["nm", "-D", "--undefined-only", str(binary)], capture_output=True, text=True,
                             timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return run.returncode == 0 and any(line.split()[-1:] == [symbol] for line in run.stdout.splitlines())


@dataclass(frozen=True)
class DataPlaneProcess:
    node: str  # its Daemon.node, and its files' stem: <run dir>/<node>.status, <node>.log
    title: str  # "the BFD data plane", as messages name it
    consequence: str  # what stops working when it is gone

    def status_socket(self, lab: str) -> Path:
        return run_dir(lab) / f"{self.node}.status"

    def log_path(self, lab: str) -> Path:
        return run_dir(lab) / f"{self.node}.log"

    def tag(self, lab: str) -> str:
        """Its -N argument, which names the process as this lab's."""
        return namespace(lab, self.node)

    def check_paths(self, lab: str, others: tuple[Path, ...] = ()) -> None:
        """Unix socket paths are limited to 107 bytes: say so before anything is made."""
        for path in (self.status_socket(lab), *others):
            if len(str(path).encode()) > _UNIX_PATH_MAX:
                raise LabError(f"{path} is longer than a unix socket path may be ({_UNIX_PATH_MAX} bytes): "
                               "use a shorter lab name or FABLAB_RUN_DIR")

    def start(self, lab: str, argv: list[str], timeout: float) -> Daemon:
        """Start it (`argv` without -N and -s, which this adds) and wait for its status socket."""
        status = self.status_socket(lab)
        status.unlink(missing_ok=True)
        with open(self.log_path(lab), "ab") as log:
            proc = subprocess.Popen([argv[0], "-N", self.tag(lab), "-s", str(status), *argv[1:]],
                                    stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                    start_new_session=True)

        def ready() -> bool:
            if proc.poll() is not None:
                raise LabError(f"{self.title} of {lab} exited at start ({proc.returncode}): {self.log_tail(lab)}")
            return status.exists()

        wait.until(ready, timeout, self.title, interval=0.02)
        return Daemon(self.node, self.node, proc.pid)

    def daemon_of(self, state: LabState) -> Daemon | None:
        return next((d for d in state.daemons if d.node == self.node), None)

    def running(self, lab: str) -> Daemon | None:
        """The lab's process, or None when it has none; raises when it had one and it died."""
        try:
            daemon = self.daemon_of(load(lab))
        except LabError:
            return None
        if daemon is None or (processes.alive(daemon.pid) and processes.is_ours(daemon.pid, self.tag(lab))):
            return daemon
        raise LabError(f"{self.title} of {lab} (pid {daemon.pid}) is not running: {self.consequence}. Its log "
                       f"ends: {self.log_tail(lab)}  Boot the lab again.")

    def ask(self, lab: str, timeout: float = 10.0) -> dict:
        """What its status socket answers, as JSON."""
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
                s.settimeout(timeout)
                s.connect(str(self.status_socket(lab)))
                chunks = []
                while chunk := s.recv(1 << 16):
                    chunks.append(chunk)
        except OSError as e:
            raise LabError(f"{self.title} of {lab} did not answer on {self.status_socket(lab)}: {e}") from e
        return json.loads(b"".join(chunks))

    def log_tail(self, lab: str, chars: int = 600) -> str:
        try:
            return self.log_path(lab).read_text(errors="replace")[-chars:].strip() or "(empty)"
        except OSError:
            return "(no log)"
