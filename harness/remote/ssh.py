"""SSH to the nodes of a fabric (paramiko), one connection per node, opened once and kept for
the run; every command and what it cost kept in a transcript (never the credentials).

Where the connection starts is the caller's: `connect` makes the TCP socket (on the emulation,
in the management station's namespace; on a staging floor, from this machine), paramiko runs
SSH over it.
"""
from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from harness.core.errors import HarnessError
from harness.core.inventory import InventoryNode

Connect = Callable[[str, int, float], socket.socket]  # address, port, timeout -> a connected socket
TIMEOUT_S = 10.0


class Unreachable(HarnessError):
    """A node that could not be reached: names the node and why."""


class CommandFailed(HarnessError):
    """A node that was reached, whose command exited non-zero: names the node, the command, its error."""


@dataclass(frozen=True)
class Ran:
    """One command run on one node, for the report: what decided a verdict."""

    node: str
    address: str
    command: str
    exit_status: int
    seconds: float
    case: str = ""  # the check case it ran for, where one was running


def direct(address: str, port: int, timeout: float) -> socket.socket:
    return socket.create_connection((address, port), timeout=timeout)


class SshPool:
    def __init__(self, connect: Connect = direct, host_keys: Path | None = None) -> None:
        """host_keys: a known_hosts file the nodes' keys must be in (the lab's own); None:
        a key first seen is accepted and its fingerprint kept (`fingerprints`)."""
        self._connect = connect
        self._host_keys = host_keys
        self._clients: dict[str, object] = {}
        self._lock = threading.Lock()
        self._node_locks: dict[str, threading.Lock] = {}
        self.transcript: list[Ran] = []
        self.fingerprints: dict[str, str] = {}
        self.unreachable: dict[str, str] = {}  # node -> why
        self.case = ""

    def run(self, node: InventoryNode, command: str, timeout: float = 60.0) -> str:
        """The command's standard output; Unreachable when the node cannot be reached,
        CommandFailed when the command exits non-zero (with its standard error)."""
        client = self._client(node)
        t0 = time.monotonic()
        try:
            _, stdout, stderr = client.exec_command(command, timeout=timeout)  # type: ignore[attr-defined]
            out = stdout.read().decode(errors="replace")
            err = stderr.read().decode(errors="replace")
            status = stdout.channel.recv_exit_status()
        except (OSError, EOFError) as e:
            raise self._lost(node, f"`{command}` failed: {type(e).__name__}: {e}") from None
        self.note(Ran(node.name, node.address, command, status, round(time.monotonic() - t0, 3), self.case))
        if status != 0:
            raise CommandFailed(f"{node.name} ({node.address}): `{command}` exited {status}: "
                              f"{(err.strip() or out.strip())[:300]}")
        return out

    def start(self, node: InventoryNode, command: str, files: dict[str, str] | None = None) -> object:
        """A long-running `command` on `node`, its SSH channel returned open (stdin, stdout);
        `files` (path -> text) copied there first over SFTP. Unreachable / CommandFailed as `run`."""
        import paramiko

        client = self._client(node)
        try:
            if files:
                sftp = client.open_sftp()  # type: ignore[attr-defined]
                try:
                    for path, text in files.items():
                        with sftp.open(path, "w") as f:
                            f.write(text)
                        sftp.chmod(path, 0o600)
                finally:
                    sftp.close()
            channel = client.get_transport().open_session()  # type: ignore[attr-defined]
            channel.exec_command(command)
        except paramiko.SSHException as e:
            raise CommandFailed(f"{node.name} ({node.address}): `{command}` could not start: {e}") from None
        except (OSError, EOFError) as e:
            raise self._lost(node, f"`{command}` failed: {type(e).__name__}: {e}") from None
        return channel

    def note(self, ran: Ran) -> None:
        with self._lock:
            self.transcript.append(ran)

    def close(self) -> None:
        with self._lock:
            clients, self._clients = list(self._clients.values()), {}
        for c in clients:
            c.close()  # type: ignore[attr-defined]

    def _lost(self, node: InventoryNode, why: str) -> Unreachable:
        with self._lock:
            self._clients.pop(node.name, None)
            self.unreachable.setdefault(node.name, why)
        return Unreachable(f"{node.name} ({node.address}): {why}")

    def _client(self, node: InventoryNode) -> object:
        with self._lock:
            if node.name in self._clients:
                return self._clients[node.name]
            if node.name in self.unreachable:  # once per run: a dead node does not cost a timeout a read
                raise Unreachable(f"{node.name} ({node.address}): {self.unreachable[node.name]}")
            lock = self._node_locks.setdefault(node.name, threading.Lock())
        with lock:
            with self._lock:
                if node.name in self._clients:
                    return self._clients[node.name]
            client = self._open(node)
            with self._lock:
                self._clients[node.name] = client
            return client

    def _open(self, node: InventoryNode) -> object:
        import paramiko  # here: only a run over SSH loads it

        client = paramiko.SSHClient()
        if self._host_keys is not None:
            client.load_host_keys(str(self._host_keys))
            client.set_missing_host_key_policy(paramiko.RejectPolicy())
        else:
            client.set_missing_host_key_policy(paramiko.AutoAddPolicy())
        try:
            sock = self._connect(node.address, node.port, TIMEOUT_S)
        except OSError as e:
            raise self._lost(node, f"no TCP connection to port {node.port}: {e.strerror or e}") from None
        try:
            key = str(Path(node.key).expanduser()) if node.key else None
            client.connect(node.address, port=node.port, username=node.user, key_filename=key, sock=sock,
                           timeout=TIMEOUT_S, banner_timeout=TIMEOUT_S, auth_timeout=TIMEOUT_S,
                           allow_agent=key is None, look_for_keys=key is None)
        except paramiko.AuthenticationException:
            sock.close()
            raise self._lost(node, f"SSH authentication as {node.user} failed (the key is not accepted)") from None
        except paramiko.BadHostKeyException as e:
            sock.close()
            raise self._lost(node, f"its host key is not the one expected ({e.key.get_name()})") from None
        except paramiko.SSHException as e:
            sock.close()
            raise self._lost(node, f"SSH failed: {e}") from None
        except OSError as e:
            sock.close()
            raise self._lost(node, f"SSH failed: {e.strerror or e}") from None
        host_key = client.get_transport().get_remote_server_key()  # type: ignore[union-attr]
        self.fingerprints[node.name] = f"{host_key.get_name()} {host_key.fingerprint}"
        return client
