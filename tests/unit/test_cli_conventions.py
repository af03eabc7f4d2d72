"""The CLI's conventions, the same on every command (docs/cli.md): exit 0 pass, 1 fablab's own
failure, 2 bad input or usage, 3 a check or audit found a problem; --version; a closed pipe
ends quietly; NO_COLOR and a non-TTY give plain text; --json carries errors as JSON."""
from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest

from harness.cli.main import main

FABLAB = [sys.executable, "-m", "harness.cli"]
NO_LAB = "nolab-x9"  # a lab name nothing on this machine carries


def _run(*args: str, env: dict | None = None, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([*FABLAB, *args], capture_output=True, text=True, timeout=120,
                          env={**os.environ, **(env or {})}, **kw)


def test_version_names_the_release(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--version"])
    assert e.value.code == 0
    assert capsys.readouterr().out.startswith("fablab 0.")


@pytest.mark.parametrize("argv", [
    ["down", NO_LAB], ["status", NO_LAB], ["exec", NO_LAB, "gpu01", "--", "true"],
    ["link", NO_LAB, "gpu01", "be-g1-r0", "down"], ["rdma", NO_LAB, "gpu01:rail0", "gpu05:rail0"],
    ["check", NO_LAB], ["audit", NO_LAB], ["break", NO_LAB, "l3-hashing"], ["fix", NO_LAB, "--all"],
    ["mystery", NO_LAB], ["vtysh", NO_LAB, "be-s1"], ["shell", NO_LAB, "gpu01"], ["view", NO_LAB],
])
def test_an_unknown_lab_is_bad_input_on_every_command(argv, capsys):
    assert main(argv) == 2
    assert f"'{NO_LAB}'" in capsys.readouterr().err


def test_an_unknown_lab_lists_the_running_ones(capsys):
    main(["down", NO_LAB])
    assert "running:" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [["show", "no-such-topology"], ["render", "no-such-topology", "-o", "x"],
                                  ["up", "no-such-topology"], ["validate", "no-such-topology"]])
def test_an_unknown_topology_is_bad_input(argv, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    assert "built-ins:" in capsys.readouterr().err
    assert not any(tmp_path.iterdir())


def test_a_usage_error_is_exit_2():
    assert _run("show").returncode == 2


def test_show_json_carries_declaration_errors_as_json(tmp_path, capsys):
    path = tmp_path / "bad.py"
    path.write_text("from harness.core.model import *\n"
                    "cluster = Cluster(name='bad', gpu=GpuNodes(count=0))\n")
    assert main(["show", str(path), "--json"]) == 2
    doc = json.loads(capsys.readouterr().out)
    assert doc["exit"] == 2 and doc["kind"] == "TopologyError"
    assert any(p["field"] == "gpu.count" and p["hint"] for p in doc["problems"])


def test_a_closed_pipe_ends_quietly():
    # The reader is gone before fablab writes: every write to stdout fails with EPIPE.
    read, write = os.pipe()
    os.close(read)
    try:
        for args in (["list"], ["show", "ai-cluster", "--json"]):
            run = subprocess.run([*FABLAB, *args], stdout=write, stderr=subprocess.PIPE, text=True, timeout=120)
            assert run.returncode == 141, args
            assert run.stderr == "", run.stderr  # no traceback, no "Exception ignored"
    finally:
        os.close(write)


def test_output_into_a_pipe_is_plain_text():
    run = _run("show", "ai-cluster", env={"TERM": "xterm-256color"})
    assert run.returncode == 0 and "\x1b" not in run.stdout and "nodes per role" in run.stdout


def _on_a_terminal(*args: str, env: dict) -> bytes:
    leader, follower = pty.openpty()
    try:
        subprocess.run([*FABLAB, *args], stdout=follower, stderr=follower, timeout=120,
                       env={**os.environ, "TERM": "xterm-256color", **env})
    finally:
        os.close(follower)
    data = b""
    while True:
        try:
            chunk = os.read(leader, 1 << 16)
        except OSError:  # EIO: the terminal's other end is closed and drained
            break
        if not chunk:
            break
        data += chunk
    os.close(leader)
    return data


def test_no_color_gives_plain_text_on_a_terminal():
    styled = _on_a_terminal("show", "ai-cluster", env={"NO_COLOR": ""})
    assert b"\x1b[" in styled  # positive control: on a terminal, styles are on by default
    plain = _on_a_terminal("show", "ai-cluster", env={"NO_COLOR": "1"})
    assert b"\x1b[" not in plain and b"nodes per role" in plain


def test_every_command_documents_the_exit_codes():
    text = (Path(__file__).resolve().parents[2] / "docs" / "cli.md").read_text()
    for code in ("| 0 |", "| 1 |", "| 2 |", "| 3 |"):
        assert code in text
