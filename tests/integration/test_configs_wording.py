"""`fablab up --configs` boots whatever FRR 8.4 accepts, worded as the engineer's automation
words it: here fablab's own render of ai-cluster with every `exit`, `exit-address-family` and
`exit-vni` line removed (as SONiC's templates and FRR < 8.2 write configs). One lab, booted
once, for every assertion; a config FRR refuses boots nothing."""
from __future__ import annotations

import os
import re
import subprocess

import pytest

from harness.core.model import build
from harness.core.plan import make_plan
from harness.lab import Lab
from harness.render import artifacts, write_artifacts
from harness.render.configs import load_configs
from harness.plumbing.frr_check import check_configs
from topologies import BUILTINS

from .conftest import fablab as _fablab, leftovers_of

EXITS = re.compile(r"(?m)^\s*(exit|exit-address-family|exit-vni)\s*\n")



@pytest.fixture(scope="module")
def without_exits(tmp_path_factory):
    plan = make_plan(build(BUILTINS["ai-cluster"]()))
    out = tmp_path_factory.mktemp("theirs")
    write_artifacts(artifacts(plan), out)
    for conf in (out / "configs").glob("*/frr.conf"):
        text = EXITS.sub("", conf.read_text())
        assert not EXITS.search(text)
        conf.write_text(text)
    check_configs(load_configs(plan, out), out)  # FRR 8.4 itself accepts every file as it is
    return out


@pytest.fixture(scope="module")
def lab(without_exits):
    name = f"h2w{os.getpid() % 10000}"
    run = _fablab("up", "ai-cluster", "--name", name, "--configs", str(without_exits), "--json")
    try:
        assert run.returncode == 0, run.stderr[-2000:]
        yield Lab.attach(name)
    finally:
        _fablab("down", name)
        assert leftovers_of(name) == []


def test_every_bgp_and_bfd_session_comes_up(lab):
    assert lab.shortfalls() == []
    for sw in lab.plan.switches:
        peers = lab.bgp_peers(sw.name) if sw.fabric_ports else ()
        assert len(peers) == len(sw.fabric_ports) and all(p.established for p in peers), (sw.name, peers)
        assert all(b.up for b in (lab.bfd_peers(sw.name) if peers else ())), sw.name


def test_zebra_never_took_bgps_vni_as_its_own(lab):
    conf = lab.run_dir / "fe-l1"
    zebra = subprocess.run(["vtysh", "--vty_socket", str(conf), "-d", "zebra", "-c", "show running-config"],
                           capture_output=True, text=True, timeout=30, check=True).stdout
    bgpd = subprocess.run(["vtysh", "--vty_socket", str(conf), "-d", "bgpd", "-c", "show running-config"],
                          capture_output=True, text=True, timeout=30, check=True).stdout
    assert not [line for line in zebra.splitlines() if line.strip().startswith("vni ")]
    assert "  vni 10100" in bgpd.splitlines()


def test_a_config_frr_refuses_exits_2_naming_file_and_line_and_boots_nothing(without_exits, tmp_path):
    bad = tmp_path / "bad"
    subprocess.run(["cp", "-r", str(without_exits), str(bad)], check=True)
    conf = bad / "configs" / "be-s2" / "frr.conf"
    lines = conf.read_text().splitlines(True)
    conf.write_text("".join(lines[:11] + [" no such command\n"] + lines[11:]))
    name = f"h2x{os.getpid() % 10000}"
    run = _fablab("up", "ai-cluster", "--name", name, "--configs", str(bad))
    assert run.returncode == 2, run.stderr[-2000:]
    assert f"{conf}:12: Unknown command: no such command" in run.stderr
    netns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True).stdout
    assert name not in netns and leftovers_of(name) == []
