"""Talk to an FRR daemon's vty socket directly, the way vtysh does, without starting vtysh.

Each vtysh process parses FRR's whole command graph before it sends anything: tens of ms of
CPU. The convergence poll asks every switch twice per round, so at 86 switches on two busy
cores one round took minutes (measured: 224-260 s with 2,048 BFD sessions up), while the same
two questions over a daemon's socket take a few ms. The protocol is vtysh's: a command
ends with NUL; the answer ends with three NULs and a status byte (0 = success).
"""
from __future__ import annotations

import socket
import threading
from pathlib import Path

from harness.core.errors import LabError

END = b"\0\0\0"
# Which daemon answers a `show` command (vtysh learns this from its command table).
_DAEMON_OF = (("show bfd", "bfdd"), ("show bgp", "bgpd"), ("show ip bgp", "bgpd"))


def daemon_of(command: str) -> str | None:
    for prefix, daemon in _DAEMON_OF:
        if command.startswith(prefix):
            return daemon
    return None


class VtyClient:
    """One connection to one daemon's vty socket, kept open, reopened after an error."""

    def __init__(self, path: Path, timeout: float = 10.0):
        self.path = path
        self.timeout = timeout
        self._sock: socket.socket | None = None
        self._lock = threading.Lock()

    def command(self, command: str) -> str:
        with self._lock:
            try:
                return self._ask(command)
            except OSError:
                self.close()  # the daemon restarted or went away: one fresh try
                try:
                    return self._ask(command)
                except OSError as e:
                    self.close()
                    raise LabError(f"vty {self.path}: {command!r}: {e}") from e

    def _ask(self, command: str) -> str:
        if self._sock is None:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.settimeout(self.timeout)
            sock.connect(str(self.path))
            self._sock = sock
            self._roundtrip("enable")  # `show` commands with json live in the enable node
        status, text = self._roundtrip(command)
        if status != 0:
            raise LabError(f"vty {self.path}: {command!r} failed ({status}): {text.strip()[:300]}")
        return text

    def _roundtrip(self, command: str) -> tuple[int, str]:
        assert self._sock is not None
        self._sock.sendall(command.encode() + b"\0")
        chunks: list[bytes] = []
        tail = b""
        while True:
            chunk = self._sock.recv(1 << 16)
            if not chunk:
                raise ConnectionResetError("the daemon closed the connection")
            chunks.append(chunk)
            tail = (tail + chunk)[-4:]
            if len(tail) == 4 and tail[:3] == END:
                break
        data = b"".join(chunks)
        return data[-1], data[:-4].decode(errors="replace")

    def close(self) -> None:
        if self._sock is not None:
            try:
                self._sock.close()
            finally:
                self._sock = None
