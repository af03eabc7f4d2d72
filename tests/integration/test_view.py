"""`fablab view LAB` in headless Chromium: the page's URL is the first line printed; a gray
link put in with `fablab break` shows as failed (seen from BFD and BGP, not told), with the
fault listed; after `fablab fix` every cable is up again."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.cli.main import main
from harness.faults import Cable
from harness.faults.store import in_place
from harness.lab import Lab
from topologies import BUILTINS

from .conftest import leftovers_of

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def lab():
    name = f"t{os.getpid() % 100000}v"
    with Lab.up(BUILTINS["ai-cluster"](), name=name) as running:
        yield running
    assert leftovers_of(name) == []


@pytest.fixture
def browser():
    found = shutil.which("chromium")
    if found is None:
        pytest.skip("chromium is missing: apt-get install chromium (make test installs it)")
    return found


@pytest.fixture
def view(lab, tmp_path):
    proc = subprocess.Popen([sys.executable, "-m", "harness.cli", "view", lab.name, "--results", str(tmp_path)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        url = proc.stdout.readline().strip()
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+/", url), (url, proc.stderr.read() if proc.poll() else "")
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def dom(browser: str, url: str, profile: Path) -> str:
    run = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", f"--user-data-dir={profile}",
                          "--dump-dom", url], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    return run.stdout


def until_page(browser: str, url: str, profile: Path, holds, timeout: float = 60.0) -> str:
    deadline = time.monotonic() + timeout
    while True:
        page = dom(browser, url, profile)
        if holds(page) or time.monotonic() > deadline:
            return page
        time.sleep(1)


def test_a_gray_link_shows_as_failed_and_fix_brings_it_back(lab, view, browser, tmp_path):
    profile = tmp_path / "profile"
    page = dom(browser, url=view, profile=profile)
    assert "every cable is up" in page and 'class="link failed"' not in page  # the control
    assert main(["break", lab.name, "gray-link"]) == 0
    (entry,) = in_place(lab)
    on = Cable.parse(entry["on"])  # the cable's two ends, as the store wrote them
    ends = {(on.a.node, on.a.port), (on.b.node, on.b.port)}
    cable = next(c for c in lab.plan.cables if {(c.a_node, c.a_port), (c.b_node, c.b_port)} == ends)
    key = f"{cable.a_node}:{cable.a_port} {cable.b_node}:{cable.b_port}"
    try:
        page = until_page(browser, view, profile, lambda p: f'class="link failed" data-link="{key}"' in p)
        assert f'class="link failed" data-link="{key}"' in page  # drawn red on the topology
        assert re.search(rf'<tr class="failed" data-link="{re.escape(key)}">', page)  # and listed
        assert "gray-link" in page and "BFD" in page  # the fault in place, and what saw it
    finally:
        assert main(["fix", lab.name, "gray-link"]) == 0
    page = until_page(browser, view, profile, lambda p: "every cable is up" in p)
    assert "every cable is up" in page
