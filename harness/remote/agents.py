"""fablab's traffic agent on the nodes of a fabric reached over SSH (`--allow-traffic`): copied
over SFTP, run with the node's python3, spoken to in JSON lines over its SSH channel
(harness/remote/agent.py), and closed with the view. `AgentEnd` is a node's part of a round of
probes (harness/traffic/probe.py's `ProbeEnd`), so `ProbeSession`, and the isolation check
above it, run over SSH as they run in a namespace.
"""
from __future__ import annotations

import json
import shlex
import time
from pathlib import Path

from harness.core.errors import HarnessError
from harness.core.inventory import InventoryNode
from harness.plumbing import wait
from harness.remote.ssh import Ran, SshPool
from harness.traffic.probe import Arrival, OpenProbes

SOURCE = Path(__file__).with_name("agent.py")
START_S = 20.0  # copied, python3 started, its first line read: a loaded node takes seconds
ANSWER_S = 15.0


class AgentError(HarnessError):
    """The agent on a node could not start or answered with an error: names the node."""


class Agent:
    """The agent on one node, one SSH channel, for the life of a view."""

    def __init__(self, pool: SshPool, node: InventoryNode, lab: str) -> None:
        self.node = node
        self._pool = pool
        path = f"/tmp/fablab-{lab}-agent-{node.name}.py"  # the lab's name and the node's, deleted by the agent
        self.command = f"{'sudo -n ' if node.sudo else ''}python3 -u {shlex.quote(path)} --unlink"
        self._t0 = time.monotonic()
        self._channel = pool.start(node, self.command, {path: SOURCE.read_text()})
        self._buffer = b""
        self._lines: list[dict] = []
        self.arrivals: list[list] = []
        ready = self._answer("ready", START_S)
        self.uid = int(ready.get("uid", -1))

    def fileno(self) -> int:
        return self._channel.fileno()  # type: ignore[attr-defined]

    def tell(self, request: dict) -> None:
        try:
            self._channel.sendall((json.dumps(request, separators=(",", ":")) + "\n").encode())  # type: ignore[attr-defined]
        except OSError as e:
            raise AgentError(f"{self._who()}: its channel closed ({e})") from None

    def ask(self, request: dict, answer: str) -> dict:
        self.tell(request)
        return self._answer(answer, ANSWER_S)

    def pump(self) -> None:
        """What the agent said so far, without blocking: arrivals kept, errors raised."""
        chan = self._channel
        while chan.recv_ready():  # type: ignore[attr-defined]
            self._buffer += chan.recv(1 << 16)  # type: ignore[attr-defined]
        *lines, self._buffer = self._buffer.split(b"\n")
        for line in lines:
            if not line.strip():
                continue
            said = json.loads(line)
            if "arrival" in said:
                self.arrivals.append(said["arrival"])
            elif "error" in said:
                raise AgentError(f"{self._who()}: {said['error']}{self._root_hint(said['error'])}")
            else:
                self._lines.append(said)

    def close(self) -> None:
        """Quit, wait for its exit (its file is already gone), and keep the run in the transcript."""
        status = -1
        try:
            self.tell({"op": "quit"})
            self._channel.shutdown_write()  # type: ignore[attr-defined]
            if wait.within(self._channel.exit_status_ready, 5.0) is not None:  # type: ignore[attr-defined]
                status = self._channel.recv_exit_status()  # type: ignore[attr-defined]
        except (AgentError, OSError):
            pass
        finally:
            self._channel.close()  # type: ignore[attr-defined]
        self._pool.note(Ran(self.node.name, self.node.address, self.command + "  (fablab's traffic agent)", status,
                            round(time.monotonic() - self._t0, 3), self._pool.case))

    def _answer(self, key: str, timeout: float) -> dict:
        def said():
            self.pump()
            found = next((line for line in self._lines if key in line), None)
            if found is not None:
                self._lines.remove(found)
                return found[key] or {"": ""}
            if self._channel.exit_status_ready() and not self._channel.recv_ready():  # type: ignore[attr-defined]
                raise AgentError(f"{self._who()}: it exited {self._channel.recv_exit_status()} "  # type: ignore[attr-defined]
                                 f"before saying {key!r}{self._stderr()}")
            return None

        return wait.until(said, timeout, f"{self._who()} to say {key!r}",
                          error=lambda: AgentError(f"{self._who()}: no {key!r} within {timeout:.0f} s"))  # type: ignore[return-value]

    def _stderr(self) -> str:
        chan = self._channel
        text = b""
        while chan.recv_stderr_ready():  # type: ignore[attr-defined]
            text += chan.recv_stderr(1 << 16)  # type: ignore[attr-defined]
        text_s = text.decode(errors="replace").strip()
        if "python3" in text_s and ("not found" in text_s or "No such file" in text_s):
            return ": the node has no python3 (the agent needs Python 3.7 or newer)"
        return f": {text_s[-300:]}" if text_s else ""

    def _root_hint(self, error: str) -> str:
        if "PermissionError" in error and getattr(self, "uid", 0) != 0:
            return (f" (the agent runs as {self.node.user}; AF_PACKET needs root: log in as root or give the "
                    "node `sudo: true` in the inventory)")
        return ""

    def _who(self) -> str:
        return f"fablab's traffic agent on {self.node.name} ({self.node.address})"


class AgentEnd:
    """A node's part of a round of probes, held by its agent (a `ProbeEnd`)."""

    def __init__(self, agent: Agent, request: OpenProbes) -> None:
        self._agent = agent
        self.node = request.node
        self.listening = request.listen
        self.ports = frozenset(request.sends)
        agent.arrivals.clear()  # an earlier round's stragglers: their nonces would not match anyway
        opened = agent.ask({"op": "open", "listen": request.listen, "sends": list(request.sends),
                            "macs": list(request.macs)}, "opened")
        self.macs = {port: bytes.fromhex(mac) for port, mac in opened.get("macs", {}).items()}

    def fileno(self) -> int:
        return self._agent.fileno()

    def send(self, port: str, data: bytes, copies: int) -> None:
        self._agent.tell({"op": "send", "port": port, "frame": data.hex(), "copies": copies})

    def read(self, nonces: dict[int, bytes]) -> list[Arrival]:
        self._agent.pump()
        got, self._agent.arrivals[:] = list(self._agent.arrivals), []
        return [Arrival(int(pid), self.node, int(ifindex), str(dst), str(port))
                for pid, nonce, ifindex, dst, port in got if nonces.get(int(pid)) == bytes.fromhex(nonce)]

    def close(self) -> None:
        try:
            self._agent.ask({"op": "end"}, "ended")
        except (AgentError, HarnessError):
            pass  # the view's close quits the agent whatever its state
