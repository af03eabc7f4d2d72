"""Run senders, receivers and TCP ends inside named network namespaces, and read their typed results.

Each runs as `nsenter --net=/run/netns/NS -- <this python> -m harness.traffic.X --spec -`,
gets its spec as JSON on stdin and prints its result as JSON on stdout; receivers and
servers print `READY` on stderr once bound, which `wait_ready` polls for.
"""
from __future__ import annotations

import os
import selectors
import signal
import subprocess
import sys
from collections.abc import Sequence
from typing import Any, Generic, TypeVar

from harness.plumbing import wait
from harness.plumbing.namespaces import NETNS_DIR, exec_argv
from harness.plumbing.priority import SENDER, TRAFFIC
from harness.traffic.flows import (ReceiveGroupSpec, ReceiveSpec, SendGroupSpec, SendSpec, TcpClientSpec, TcpServerSpec,
                                   TrafficError, from_json, to_json)
from harness.traffic.results import ReceiveGroupResult, ReceiveResult, SendGroupResult, SendResult, TcpResult

R = TypeVar("R")
_READ_S = 0.05  # how long wait_ready blocks on the stderr pipe per look


def realtime_argv(priority: int = TRAFFIC) -> list[str]:
    """A modest real-time priority (harness/plumbing/priority.py): above every FRR daemon, below
    the lab's data planes; the processes it is used for sleep or block between packets."""
    return ["chrt", "--fifo", str(priority)]


def netns_argv(ns: str, argv: Sequence[str]) -> list[str]:
    """argv that runs `argv` in the named network namespace (the process keeps its pid: nsenter execs)."""
    if not ns or "/" in ns or ns in (".", ".."):
        raise TrafficError(f"invalid namespace name {ns!r}")
    return exec_argv(ns, argv)


def run_in_netns(ns: str, argv: Sequence[str], **popen: Any) -> subprocess.Popen:
    """Start `argv` in namespace `ns`; stdin/stdout/stderr are pipes unless given."""
    if not os.path.exists(f"{NETNS_DIR}/{ns}"):
        raise TrafficError(f"network namespace {ns!r} does not exist")
    for stream in ("stdin", "stdout", "stderr"):
        popen.setdefault(stream, subprocess.PIPE)
    return subprocess.Popen(netns_argv(ns, argv), **popen)


class TrafficProcess(Generic[R]):
    """One traffic process in a namespace; `result()` waits for it and returns its typed result."""

    def __init__(self, ns: str, module: str, spec: Any, result_type: type[R], args: Sequence[str] = (),
                 realtime: bool = False, priority: int = TRAFFIC) -> None:
        self.ns = ns
        self._result_type = result_type
        self._stderr_head = b""
        # realtime: SCHED_FIFO from exec on, so that on a machine the lab keeps busy (xlarge:
        # 86 bfdd and zebra) the interpreter starts, and the loop runs, when the experiment says.
        prio = realtime_argv(priority) if realtime else []
        self.proc = run_in_netns(ns, [*prio, sys.executable, "-m", module, *args, "--spec", "-"])
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(to_json(spec).encode())
            self.proc.stdin.close()
        except BrokenPipeError:
            pass  # it died at once; result() reports why
        self.proc.stdin = None  # closed by us: communicate() must not flush it

    @property
    def pid(self) -> int:
        return self.proc.pid

    def wait_ready(self, timeout_s: float = 15.0, marker: bytes = b"READY") -> None:
        """Poll stderr until the process reports `marker` (READY: bound; SENDING: a sender's
        first packet is due); raise if it exits or the deadline passes."""
        assert self.proc.stderr is not None
        fd = self.proc.stderr.fileno()

        def said() -> bool:
            return any(line.startswith(marker) for line in self._stderr_head.split(b"\n")[:-1])

        def reported() -> bool:  # reads what stderr has, blocking a moment: no sleep between reads
            if not said() and sel.select(_READ_S):
                chunk = os.read(fd, 4096)
                if not chunk:
                    raise TrafficError(f"{self._what()} exited before it was ready: {self._failure()}")
                self._stderr_head += chunk
            return said()

        def give_up() -> TrafficError:
            self.kill()
            return TrafficError(f"{self._what()} did not report {marker.decode()} within {timeout_s} s")

        with selectors.DefaultSelector() as sel:
            sel.register(fd, selectors.EVENT_READ)
            wait.until(reported, timeout_s, f"{marker.decode()} on stderr", interval=0, error=give_up)

    def result(self, timeout_s: float | None = None, grace_s: float = 0.0) -> R:
        """Its result once it ends, within timeout_s (else it is killed). grace_s: let it end on
        its own for that long first, then ask it to finish (stop): a receiver still taking in
        what a sender of 97,280 QPs sent it is not cut off at the sender's last packet."""
        if grace_s > 0:
            try:
                out, err = self.proc.communicate(timeout=grace_s)  # a retry after the timeout loses no output
                return self._parsed(out, err)
            except subprocess.TimeoutExpired:
                self.stop()
        try:
            out, err = self.proc.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self.kill()
            raise TrafficError(f"{self._what()} still running after {timeout_s} s; killed") from None
        return self._parsed(out, err)

    def _parsed(self, out: bytes, err: bytes) -> R:
        if self.proc.returncode != 0:
            raise TrafficError(f"{self._what()} failed (exit {self.proc.returncode}): "
                               f"{(self._stderr_head + err).decode(errors='replace').strip()}")
        return from_json(self._result_type, out.decode())

    def stop(self) -> None:
        """Ask it to finish now (it still prints its result)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()

    def __enter__(self) -> TrafficProcess[R]:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc.poll() is None:
            self.kill()
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()

    def _what(self) -> str:
        return f"{self._result_type.__name__} process {self.pid} in netns {self.ns}"

    def _failure(self) -> str:
        self.proc.wait()
        rest = self.proc.stderr.read() if self.proc.stderr else b""
        return f"exit {self.proc.returncode}: {(self._stderr_head + rest).decode(errors='replace').strip()}"


def _start_ready(ns: str, module: str, spec: Any, result_type: type[R], timeout_s: float,
                 args: Sequence[str] = (), realtime: bool = False) -> TrafficProcess[R]:
    """A process that reports READY once bound; killed if it does not."""
    proc = TrafficProcess(ns, module, spec, result_type, args, realtime)
    try:
        proc.wait_ready(timeout_s)
    except BaseException:
        proc.kill()
        raise
    return proc


def start_receiver(ns: str, spec: ReceiveSpec, ready_timeout_s: float = 15.0,
                   realtime: bool = False) -> TrafficProcess[ReceiveResult]:
    """A receiver in `ns`, bound and ready when this returns (realtime: under SCHED_FIFO)."""
    return _start_ready(ns, "harness.traffic.receiver", spec, ReceiveResult, ready_timeout_s, realtime=realtime)


def _group_netns(specs: Sequence[tuple[str, Any]]) -> tuple[str, ...]:
    if not specs:
        raise TrafficError("a group needs at least one member")
    missing = sorted({ns for ns, _ in specs if not netns_exists(ns)})
    if missing:
        raise TrafficError(f"network namespace(s) {', '.join(missing)} do not exist")
    return tuple(ns for ns, _ in specs)


def start_receivers(specs: Sequence[tuple[str, ReceiveSpec]],
                    ready_timeout_s: float = 30.0) -> TrafficProcess[ReceiveGroupResult]:
    """Receivers in many namespaces, one process for them all (a collective's 128 GPUs were
    128 interpreters, minutes of CPU on this 2-core machine), every socket bound when this
    returns; `.result()` holds one ReceiveResult per spec, in order."""
    netns = _group_netns(specs)
    group = ReceiveGroupSpec(netns, tuple(spec for _, spec in specs))
    return _start_ready(netns[0], "harness.traffic.receiver", group, ReceiveGroupResult, ready_timeout_s,
                        args=("--group",))


def start_senders(specs: Sequence[tuple[str, SendSpec]]) -> TrafficProcess[SendGroupResult]:
    """Senders in many namespaces, one process and one schedule for them all: they must share
    packets, rate, duration and start time (SendGroupSpec says which differ)."""
    netns = _group_netns(specs)
    group = SendGroupSpec(netns, tuple(spec for _, spec in specs))
    return TrafficProcess(netns[0], "harness.traffic.sender", group, SendGroupResult, args=("--group",),
                          realtime=group.specs[0].realtime, priority=SENDER)


def start_sender(ns: str, spec: SendSpec) -> TrafficProcess[SendResult]:
    """A sender in `ns`; one with spec.realtime runs under SCHED_FIFO from its start."""
    return TrafficProcess(ns, "harness.traffic.sender", spec, SendResult, realtime=spec.realtime, priority=SENDER)


def run_sender(ns: str, spec: SendSpec, timeout_s: float = 120.0) -> SendResult:
    with start_sender(ns, spec) as proc:
        return proc.result(timeout_s)


def wait_listening(pid: int, port: int, timeout_s: float = 10.0) -> None:
    """Poll until a TCP socket listens on `port` in the network namespace of process `pid`.

    /proc/PID/net/tcp{,6} show that process's namespace, so no helper process is needed.
    """
    wanted = f":{port:04X}"

    def listening() -> bool:
        rows = []
        try:
            for table in ("tcp", "tcp6"):  # a dual-stack listener (iperf3's) shows only in tcp6
                with open(f"/proc/{pid}/net/{table}", encoding="ascii") as lines:
                    rows += [line.split() for line in lines.readlines()[1:]]
        except FileNotFoundError:
            raise TrafficError(f"process {pid} exited before listening on port {port}") from None
        return any(row[1].endswith(wanted) and row[3] == "0A" for row in rows)  # 0A: TCP_LISTEN

    wait.until(listening, timeout_s, f"TCP port {port} to listen", interval=0.01,
               error=lambda: TrafficError(f"nothing listens on TCP port {port} in process {pid}'s namespace "
                                          f"after {timeout_s} s"))


def start_tcp_server(ns: str, spec: TcpServerSpec, ready_timeout_s: float = 15.0,
                     realtime: bool = False) -> TrafficProcess[TcpResult]:
    """A TCP server in `ns`, listening when this returns (realtime: under SCHED_FIFO)."""
    return _start_ready(ns, "harness.traffic.tcp", spec, TcpResult, ready_timeout_s, realtime=realtime)


def run_tcp_client(ns: str, spec: TcpClientSpec, timeout_s: float = 120.0) -> TcpResult:
    with TrafficProcess(ns, "harness.traffic.tcp", spec, TcpResult) as proc:
        return proc.result(timeout_s)


def netns_exists(ns: str) -> bool:
    return os.path.exists(f"{NETNS_DIR}/{ns}")
