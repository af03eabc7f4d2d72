"""fablab's traffic agent (harness/remote/agent.py), run as the node runs it: a python3 process
speaking JSON lines on its standard input and output, here through pipes in place of an SSH
channel. No socket is opened in this machine's namespace: the rounds' sockets are exercised
on a lab (tests/integration/test_staged_ssh.py)."""
from __future__ import annotations

import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from harness.core.inventory import InventoryNode, RemoteKind
from harness.remote import agent as agent_source
from harness.remote.agents import SOURCE, Agent, AgentEnd, AgentError
from harness.traffic import probe


class PipeChannel:
    """The part of a paramiko Channel the agent's link uses, over a local process's pipes."""

    def __init__(self, argv: list[str]) -> None:
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)

    def fileno(self) -> int:
        return self.proc.stdout.fileno()

    def sendall(self, data: bytes) -> None:
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def recv_ready(self) -> bool:
        return bool(select.select([self.proc.stdout], [], [], 0)[0])

    def recv(self, n: int) -> bytes:
        return os.read(self.proc.stdout.fileno(), n)

    def recv_stderr_ready(self) -> bool:
        return bool(select.select([self.proc.stderr], [], [], 0)[0]) and self.proc.poll() is not None

    def recv_stderr(self, n: int) -> bytes:
        return os.read(self.proc.stderr.fileno(), n)

    def exit_status_ready(self) -> bool:
        return self.proc.poll() is not None

    def recv_exit_status(self) -> int:
        return self.proc.wait()

    def shutdown_write(self) -> None:
        self.proc.stdin.close()

    def close(self) -> None:
        for f in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if not f.closed:
                f.close()
        self.proc.wait()


class LocalPool:
    """SshPool's start/note, the command run here: the file copied, then the agent started."""

    def __init__(self, tmp: Path) -> None:
        self.tmp, self.transcript, self.case = tmp, [], "isolation"
        self.copied: dict[str, str] = {}
        self.prefix: list[str] = []

    def start(self, node, command, files):
        self.copied.update(files)
        (path, text), = files.items()
        local = self.tmp / Path(path).name
        local.write_text(text)
        local.chmod(0o644)
        return PipeChannel(self.prefix + [sys.executable, "-u", "-I", str(local), "--unlink"])

    def note(self, ran) -> None:
        self.transcript.append(ran)


NODE = InventoryNode("gpu01", "10.250.0.2", RemoteKind.LINUX, "eng")


def test_the_probe_format_is_fablabs():
    assert (agent_source.MAGIC, agent_source.PROBE_PORT, agent_source.NONCE_BYTES) == (
        probe.MAGIC, probe.PROBE_PORT, probe.NONCE_BYTES)
    data = probe.payload(7, b"\x01" * probe.NONCE_BYTES)
    assert agent_source.PAYLOAD.unpack(data) == (probe.MAGIC, 7, b"\x01" * probe.NONCE_BYTES)
    assert (agent_source.IP_PKTINFO, agent_source.SIOCGIFHWADDR) == (probe.IP_PKTINFO, probe.SIOCGIFHWADDR)


def test_the_agent_needs_nothing_but_pythons_standard_library():
    imported = [line.split()[1] for line in SOURCE.read_text().splitlines() if line.startswith(("import ", "from "))]
    assert imported and all(name.split(".")[0] in sys.stdlib_module_names for name in imported), imported


def test_it_answers_in_lines_names_what_it_refuses_and_leaves_no_file(tmp_path):
    copy = tmp_path / "fablab-floor-agent-gpu01.py"
    shutil.copy(SOURCE, copy)
    requests = [{"op": "send", "port": "eth0", "frame": "00", "copies": 1}, {"op": "jump"}, {"op": "end"},
                {"op": "quit"}]
    done = subprocess.run([sys.executable, "-u", str(copy), "--unlink"], capture_output=True, timeout=30,
                          input="".join(json.dumps(r) + "\n" for r in requests).encode())
    said = [json.loads(line) for line in done.stdout.decode().splitlines()]
    assert done.returncode == 0 and done.stderr == b""
    assert said[0]["ready"]["uid"] == os.getuid()
    assert said[1:] == [{"error": "RuntimeError: send before open"}, {"error": "RuntimeError: unknown op 'jump'"},
                        {"ended": {"sent": 0, "heard": 0}}]
    assert not copy.exists()  # --unlink: nothing of it stays on the node


def test_it_exits_when_its_channel_closes(tmp_path):
    copy = tmp_path / "agent.py"
    shutil.copy(SOURCE, copy)
    done = subprocess.run([sys.executable, "-u", str(copy)], input=b"", capture_output=True, timeout=30)
    assert done.returncode == 0 and b'"ready"' in done.stdout


def test_the_link_keeps_probes_of_this_round_only_and_closes_into_the_transcript(tmp_path):
    pool = LocalPool(tmp_path)
    agent = Agent(pool, NODE, "floor")  # type: ignore[arg-type]
    assert list(pool.copied) == ["/tmp/fablab-floor-agent-gpu01.py"]  # the lab's name and the node's
    assert agent.command == "python3 -u /tmp/fablab-floor-agent-gpu01.py --unlink"
    end = object.__new__(AgentEnd)  # a round as the agent reports it, without its sockets
    end._agent, end.node = agent, "gpu01"
    agent.arrivals[:] = [[3, "aa" * 8, 5, "10.0.0.3", "eth1"], [4, "bb" * 8, 5, "10.0.0.3", "eth1"]]
    got = end.read({3: b"\xaa" * 8, 4: b"\xcc" * 8})
    assert [(a.probe, a.node, a.port, a.dst) for a in got] == [(3, "gpu01", "eth1", "10.0.0.3")]
    agent.close()
    (ran,) = pool.transcript
    assert (ran.node, ran.exit_status, ran.case) == ("gpu01", 0, "isolation") and "traffic agent" in ran.command


def test_a_round_without_root_names_the_node_and_the_fix(tmp_path):
    """As a user the agent cannot open a packet socket: the error names the node, the user and the fix.
    (Run as root, the agent is dropped to nobody first, so no socket opens here either way.)"""
    from harness.traffic.probe import OpenProbes

    home = Path(tempfile.mkdtemp(prefix="fablab-unit-agent-"))
    home.chmod(0o755)
    pool = LocalPool(home)
    if os.getuid() == 0:
        pool.prefix = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
    agent = Agent(pool, NODE, "floor")  # type: ignore[arg-type]
    try:
        assert agent.uid != 0
        with pytest.raises(AgentError, match=r"on gpu01 \(10.250.0.2\): PermissionError.*runs as eng; AF_PACKET "
                                             r"needs root: log in as root or give the node `sudo: true`"):
            AgentEnd(agent, OpenProbes("gpu01", False, (), ()))
    finally:
        agent.close()
        shutil.rmtree(home)
