"""A cabling plan as an engineer's tools save it (issue 68): UTF-8 with the BOM a spreadsheet's
"CSV UTF-8" writes, or UTF-16 with its BOM, is the same plan; a file in a Windows code page is
refused naming the file and the byte, never a traceback."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from harness.core.cabling.load import read_plan
from harness.core.errors import InputError

ROOT = Path(__file__).resolve().parents[2]
PLAN = ROOT / "docs" / "examples" / "plan" / "sonic_lab_links.csv"


@pytest.mark.parametrize("encoding", ["utf-8-sig", "utf-16"])
def test_a_plan_saved_with_a_byte_order_mark_is_the_same_plan(tmp_path, encoding):
    saved = tmp_path / PLAN.name
    saved.write_bytes(PLAN.read_text().encode(encoding))
    assert saved.read_bytes()[:2] in (b"\xef\xbb", b"\xff\xfe", b"\xfe\xff")
    def cables(path):
        return [(c.a, c.b, c.where.line, c.speed_mbps) for c in read_plan(path).cables]

    assert cables(saved) == cables(PLAN) and cables(PLAN)  # the control: the plan as shipped


def test_a_plan_in_a_windows_code_page_is_refused_naming_the_byte(tmp_path):
    text = PLAN.read_text().replace("gpu-a01", "gpu-a01\u2019", 1)  # a right quote, as Excel writes it
    saved = tmp_path / PLAN.name
    saved.write_bytes(text.encode("cp1252"))
    with pytest.raises(InputError, match=rf"{saved}:\d+: not UTF-8 text \(byte \d+ is 0x92"):
        read_plan(saved)
    run = subprocess.run([sys.executable, "-m", "harness.cli", "show", str(saved)], capture_output=True, text=True,
                         timeout=60)
    assert run.returncode == 2 and "Traceback" not in run.stderr and "not UTF-8 text" in run.stderr
