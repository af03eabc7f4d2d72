"""TCP bulk transfer over kernel sockets, and an iperf3 wrapper for machines that have it.

    nsenter --net=/run/netns/NS -- python -m harness.traffic.tcp [--spec FILE|-]

The spec decides the role: a TcpServerSpec listens (printing `READY <port>` on stderr
once listening), a TcpClientSpec sends. Both print a TcpResult as JSON on stdout.
"""
from __future__ import annotations

import json
import selectors
import shutil
import socket
import struct
import subprocess
import threading
import time
from collections.abc import Callable, Sequence

from harness.traffic import process
from harness.traffic.flows import SpecError, TcpClientSpec, TcpServerSpec, TrafficError, from_dict
from harness.traffic.results import TcpResult, TcpStream
from harness.traffic.runner import run_in_netns, wait_listening
from harness.plumbing import wait
from harness.plumbing.wait import pause_until

READY = "READY"
_CHUNK = 256 * 1024
STALL_RECORD_MS = 20  # a wait between two reads longer than this is kept, with when it began
_STALLS_KEPT = 256
_PACED = 16 * 1024
# struct tcp_info (linux/tcp.h) up to tcpi_total_retrans: 8 one-byte fields, then 24 u32
_TCP_INFO = struct.Struct("=8B24I")
_RTO_STEP_US = 4000  # a change of the timeout under this (a jiffy at HZ=250) is not kept
_RTO_KEPT = 512


class TcpError(TrafficError):
    """A TCP transfer failed (refused, reset, timed out)."""


def _name(addr: tuple) -> str:
    return f"{addr[0]}:{addr[1]}"


def serve(spec: TcpServerSpec, on_ready: Callable[[], None] | None = None) -> TcpResult:
    """Accept spec.streams connections and read each to EOF, all at once in one thread."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind((spec.bind, spec.port))
    except OSError as exc:
        listener.close()
        raise TcpError(f"cannot listen on {spec.bind}:{spec.port}: {exc}") from exc
    listener.listen(spec.streams)
    listener.setblocking(False)
    server = _Server(spec, listener)
    if on_ready is not None:
        on_ready()
    try:
        # interval 0: each round blocks in select itself, returning as soon as a socket has data
        wait.until(server.round, spec.timeout_s, "", interval=0,
                   error=lambda: TcpError(f"server: {len(server.done)} of {spec.streams} streams done "
                                          f"after {spec.timeout_s} s"))
    finally:
        server.close()
    done = server.done
    return TcpResult("server", tuple(done), min(s.start_ns for s in done), max(s.end_ns for s in done))


class _Server:
    """The server's sockets and what each stream has read so far; `round` serves one select."""

    def __init__(self, spec: TcpServerSpec, listener: socket.socket):
        self.spec, self.listener = spec, listener
        self.sel = selectors.DefaultSelector()
        self.sel.register(listener, selectors.EVENT_READ, None)
        self.open: dict[socket.socket, list] = {}  # conn -> [local, remote, bytes, start_ns, ...]
        self.done: list[TcpStream] = []
        self.accepted = 0
        self.buf = bytearray(_CHUNK)

    def round(self) -> bool:
        """Serve what one select returns (at most 0.5 s); True once every stream is read to EOF."""
        for key, _ in self.sel.select(0.5):
            if key.data is None:
                self._accept()
            else:
                self._read(key.data)
        return len(self.done) >= self.spec.streams

    def _accept(self) -> None:
        conn, peer = self.listener.accept()
        conn.setblocking(False)
        now = time.time_ns()
        # local, remote, bytes, start, last read, longest gap, its start, stalls
        self.open[conn] = [_name(conn.getsockname()), _name(peer), 0, now, now, 0, 0, []]
        self.sel.register(conn, selectors.EVENT_READ, conn)
        self.accepted += 1
        if self.accepted == self.spec.streams:
            self.sel.unregister(self.listener)

    def _read(self, conn: socket.socket) -> None:
        try:
            n = conn.recv_into(self.buf)
        except (BlockingIOError, InterruptedError):
            return
        except ConnectionError as exc:
            raise TcpError(f"server: stream from {self.open[conn][1]} broke: {exc}") from exc
        state = self.open[conn]
        if n:
            now = time.time_ns()
            gap = now - state[4]
            if gap > state[5]:
                state[5], state[6] = gap, state[4]
            if gap > STALL_RECORD_MS * 1_000_000 and len(state[7]) < _STALLS_KEPT:
                state[7].append((state[4], gap))
            state[2] += n
            state[4] = now
            return
        self.sel.unregister(conn)
        conn.close()
        del self.open[conn]
        self.done.append(TcpStream(state[0], state[1], state[2], state[3], time.time_ns(), state[5], state[6],
                                   tuple(state[7])))

    def close(self) -> None:
        for conn in self.open:
            conn.close()
        self.sel.close()
        self.listener.close()


class _RtoLog:
    """The sender's retransmission timeout and retransmissions as its kernel had them, read
    from TCP_INFO after each write: a stall at the receiver is judged against the timeout that
    was armed when it began, not the 200 ms floor (a loaded host's RTT variance raises it)."""

    def __init__(self, sock: socket.socket):
        self.sock = sock
        self.rto: list[tuple[int, int, int]] = []
        self.retransmits: list[int] = []
        self._retrans = 0

    def read(self) -> None:
        try:
            info = _TCP_INFO.unpack_from(self.sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, _TCP_INFO.size))
        except (OSError, struct.error):
            return
        backoff, rto_us, total_retrans = info[4], info[8], info[31]
        now = time.time_ns()
        last = self.rto[-1] if self.rto else None
        if len(self.rto) < _RTO_KEPT and (last is None or backoff != last[2] or abs(rto_us - last[1]) >= _RTO_STEP_US):
            self.rto.append((now, rto_us, backoff))
        if total_retrans > self._retrans:
            self._retrans = total_retrans
            if len(self.retransmits) < _RTO_KEPT:
                self.retransmits.append(now)


def _one_stream(spec: TcpClientSpec, index: int, out: list, errors: list) -> None:
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            if spec.device:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_BINDTODEVICE, spec.device.encode())
            if spec.sport:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                sock.bind(("", spec.sport + index))
            sock.settimeout(spec.timeout_s)
            sock.connect((spec.dst, spec.port))
            local, remote = _name(sock.getsockname()), _name(sock.getpeername())  # gone once closed
            start = time.time_ns()
            log = _RtoLog(sock)
            log.read()
            chunk = memoryview(bytes(_CHUNK))
            sent = 0
            if spec.bytes_per_stream is not None:
                while sent < spec.bytes_per_stream:
                    part = chunk[:min(_CHUNK, spec.bytes_per_stream - sent)]
                    sock.sendall(part)
                    sent += len(part)
            else:
                # Paced (rate_mbps), a stall shows as a gap at the server, not as a queue the sender filled.
                piece = chunk[:_PACED] if spec.rate_mbps else chunk
                every = _PACED * 8 / (spec.rate_mbps * 1e6) if spec.rate_mbps else 0.0
                begin = time.monotonic()
                stop_at = begin + (spec.duration_s or 0)
                k = 0
                # A timed stream's pacing loop (piece k due at begin + k * every), not wait.until:
                # it waits for no condition, it sends until the duration is over.
                while time.monotonic() < stop_at:
                    pause_until(begin + k * every)
                    sock.sendall(piece)
                    log.read()
                    sent += len(piece)
                    k += 1
            # The server closes once it has read everything: that, not our last write, ends the transfer.
            sock.shutdown(socket.SHUT_WR)
            while sock.recv(4096):
                pass
            log.read()
            out[index] = TcpStream(local, remote, sent, start, time.time_ns(), rto=tuple(log.rto),
                                   retransmits=tuple(log.retransmits))
    except OSError as exc:
        errors.append(f"stream {index} to {spec.dst}:{spec.port}: {exc}")


def transfer(spec: TcpClientSpec) -> TcpResult:
    """Send over spec.streams parallel connections (threads: sendall releases the GIL)."""
    out: list = [None] * spec.streams
    errors: list[str] = []
    threads = [threading.Thread(target=_one_stream, args=(spec, i, out, errors), daemon=True)
               for i in range(spec.streams)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise TcpError("; ".join(errors))
    streams = tuple(out)
    return TcpResult("client", streams, min(s.start_ns for s in streams), max(s.end_ns for s in streams))


# ---------------------------------------------------------------------------- iperf3


def iperf3_path() -> str | None:
    return shutil.which("iperf3")


def iperf3_server_argv(port: int, bind: str | None = None) -> list[str]:
    """A one-shot iperf3 server (exits after one test)."""
    return ["iperf3", "-s", "-1", "-J", "-p", str(port)] + (["-B", bind] if bind else [])


def iperf3_client_argv(spec: TcpClientSpec) -> list[str]:
    argv = ["iperf3", "-c", spec.dst, "-p", str(spec.port), "-P", str(spec.streams), "-J"]
    if spec.bytes_per_stream is not None:
        argv += ["-n", str(spec.bytes_per_stream * spec.streams)]
    else:
        argv += ["-t", str(spec.duration_s)]
    if spec.sport:
        argv += ["--cport", str(spec.sport)]
    return argv


def parse_iperf3(text: str) -> TcpResult:
    """A TcpResult from `iperf3 -c ... -J` output (the sender's view of each stream)."""
    try:
        data = json.loads(text)
        if "error" in data:
            raise TcpError(f"iperf3: {data['error']}")
        epoch_ns = int(data["start"]["timestamp"]["timesecs"]) * 1_000_000_000
        peers = {c["socket"]: c for c in data["start"]["connected"]}
        streams = []
        for entry in data["end"]["streams"]:
            sender = entry["sender"]
            conn = peers[sender["socket"]]
            streams.append(TcpStream(f"{conn['local_host']}:{conn['local_port']}",
                                     f"{conn['remote_host']}:{conn['remote_port']}", int(sender["bytes"]),
                                     epoch_ns + int(sender["start"] * 1e9), epoch_ns + int(sender["end"] * 1e9)))
    except (KeyError, TypeError, ValueError) as exc:
        raise TcpError(f"unexpected iperf3 JSON: {exc!r}") from exc
    return TcpResult("client", tuple(streams), min(s.start_ns for s in streams),
                     max(s.end_ns for s in streams), tool="iperf3")


def run_iperf3(client_ns: str, server_ns: str, spec: TcpClientSpec, timeout_s: float = 120.0) -> TcpResult:
    """iperf3 between two namespaces (only where iperf3 is installed)."""
    if iperf3_path() is None:
        raise TcpError("iperf3 is not installed")
    server = run_in_netns(server_ns, iperf3_server_argv(spec.port), stdin=subprocess.DEVNULL)
    try:
        wait_listening(server.pid, spec.port, timeout_s=10.0)
        client = run_in_netns(client_ns, iperf3_client_argv(spec), stdin=subprocess.DEVNULL)
        try:
            out, err = client.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            client.kill()
            client.communicate()
            raise TcpError(f"iperf3 client still running after {timeout_s} s; killed") from None
        if client.returncode != 0 and not out:
            raise TcpError(f"iperf3 client failed: {err.decode(errors='replace').strip()}")
        return parse_iperf3(out.decode())
    finally:
        if server.poll() is None:
            server.kill()
        server.communicate()


def _read(text: str, group: bool) -> TcpServerSpec | TcpClientSpec:
    """The spec decides the role: one with a `dst` is a client's."""
    data = json.loads(text)
    if not isinstance(data, dict):
        raise SpecError("a TCP spec is a JSON object")
    return from_dict(TcpClientSpec if "dst" in data else TcpServerSpec, data)


def _run(spec: TcpServerSpec | TcpClientSpec, stop: threading.Event) -> TcpResult:
    if isinstance(spec, TcpClientSpec):
        return transfer(spec)
    return serve(spec, on_ready=lambda: process.say(f"{READY} {spec.port}"))


def main(argv: Sequence[str] | None = None) -> int:
    return process.serve("harness.traffic.tcp", __doc__, _read, _run, argv, stop_signals=())


if __name__ == "__main__":
    raise SystemExit(main())
