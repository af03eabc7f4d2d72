"""What fablab prints from an engineer's input reaches the terminal as written (issue 68, item 4):
a file:line such as `links.csv:100:` is no emoji code, on either console."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from harness.cli.console import err, out

ROOT = Path(__file__).resolve().parents[2]


def test_a_line_number_between_colons_is_printed_as_written():
    for console in (out, err):
        with console.capture() as captured:
            console.print("links.csv:100: cabled twice; plan.csv:1: ok :smile:")
        assert captured.get().strip() == "links.csv:100: cabled twice; plan.csv:1: ok :smile:"


def test_an_error_naming_line_100_keeps_it(tmp_path):
    """Through the CLI: the example cabling plan padded to 99 rows, its 100th a bad speed."""
    rows = (ROOT / "docs" / "examples" / "plan" / "sonic_lab_links.csv").read_text().splitlines()
    lines = rows + [rows[1]] * (99 - len(rows)) + ["gpu-a01,enp12s0np0,rtsw-g1-r0,Ethernet0,notaspeed,,"]
    plan = tmp_path / "links.csv"
    plan.write_text("\n".join(lines) + "\n")
    run = subprocess.run([sys.executable, "-m", "harness.cli", "show", str(plan)], capture_output=True, text=True,
                         timeout=60)
    assert run.returncode == 2 and "Traceback" not in run.stderr
    assert f"{plan}:100: BandWidth 'notaspeed' is not a speed" in run.stderr and "\U0001f4af" not in run.stderr
