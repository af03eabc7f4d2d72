"""Every command a lesson of docs/learn/ shows, run in order on the lesson's own lab, with the
exit status the lesson says (`# exit 3` where a check must fail; 0 otherwise): the lessons
cannot rot. The lab's name `mylab` is replaced by one of the test's own."""
from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from harness.cli.learn import lessons

from .conftest import leftovers_of

NOTE = re.compile(r"\s+#\s*exit (\d+)\s*$")


@pytest.mark.parametrize("lesson", lessons(), ids=lambda x: f"{x.number:02d}-{x.path.stem[3:]}")
def test_every_command_of_a_lesson_runs_as_it_says(lesson, tmp_path):
    name = f"l{os.getpid() % 10000}n{lesson.number:02d}"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "fablab").write_text(f'#!/bin/sh\nexec {sys.executable} -m harness.cli "$@"\n')
    (bin_dir / "fablab").chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "NO_COLOR": "1", "COLUMNS": "200"}
    try:
        for line in lesson.commands:
            found = NOTE.search(line)
            expected = int(found.group(1)) if found else 0
            command = NOTE.sub("", line).replace("mylab", name)
            run = subprocess.run(["bash", "-c", command], cwd=tmp_path, env=env, capture_output=True, text=True,
                                 timeout=900)
            assert run.returncode == expected, (f"{lesson.path.name}: `{line}` exited {run.returncode}, the lesson "
                                                f"says {expected}\n{run.stdout[-2000:]}\n{run.stderr[-2000:]}")
    finally:
        subprocess.run([sys.executable, "-m", "harness.cli", "down", name], capture_output=True, timeout=300)
    assert leftovers_of(name) == []
