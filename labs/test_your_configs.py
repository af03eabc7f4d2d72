"""Lesson 13 — boot your own configs, judged by the declaration.

Claim: `fablab up TOPOLOGY --configs DIR` boots the switch configs in DIR (laid out as
`fablab render` writes them) on the declared cabling, and everything the checks expect still
comes from the declaration. Configs that never converge to the plan still give a lab:
`up` names what is missing, exits 3 and leaves the lab up, and `fablab check` says which
claim they break. `fablab diff` names the lines.

Why it matters in an AI data center: the configs that go on the switches come from the
operator's own automation, not from fablab. A leaf limited to one BGP path, BFD forgotten on
one leaf, an export filter that hides a rack: each passes a syntax check and a glance, and
each costs bandwidth, a failover budget or reachability once deployed.

Make it fail (every test here does): three hand-broken copies of ai-cluster's render, each
booted and caught by the check that owns the claim.
"""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from harness.checks.ecmp import default_pair
from harness.checks.registry import case, run_case
from harness.core.model import build
from harness.core.plan import make_plan
from harness.lab import Lab
from harness.render import artifacts, write_artifacts
from harness.render.configs import load_configs
from topologies.ai_cluster import ai_cluster


def _cli(*args: str, timeout: float = 240) -> tuple[int, dict]:
    run = subprocess.run([sys.executable, "-m", "harness.cli", *args, "--json"], capture_output=True, text=True,
                         timeout=timeout)
    return run.returncode, json.loads(run.stdout) if run.stdout.strip() else {"stderr": run.stderr}


@pytest.fixture()
def broken(tmp_path):
    """fablab's render of a cluster, and a function that rewrites one switch's frr.conf."""
    plan = make_plan(build(ai_cluster()))
    out = tmp_path / "configs"
    write_artifacts(artifacts(plan), out)

    def edit(switch: str, fn) -> Path:
        path = out / "configs" / switch / "frr.conf"
        path.write_text(fn(path.read_text()))
        return out
    return plan, out, edit


@pytest.fixture()
def booted(pytestconfig):
    labs: list[Lab] = []

    def boot(plan, directory, name, timeout=20.0):
        lab = Lab.up(plan, name=name, runtime=pytestconfig.getoption("runtime"), timeout=timeout,
                     configs=load_configs(plan, directory))
        labs.append(lab)
        return lab
    yield boot
    for lab in labs:
        Lab.remove(lab.name)


def test_a_leaf_limited_to_one_path_is_caught_by_ecmp(broken, pytestconfig):
    plan, _, edit = broken
    (src, _), _ = default_pair(plan)
    leaf = plan.host(src).nic("rail0").peer
    directory = edit(leaf, lambda t: t.replace("maximum-paths 64", "maximum-paths 1"))
    code, diff = _cli("diff", "ai-cluster", str(directory))
    assert code == 3 and [(d["switch"], d["behaviour"]) for d in diff["differences"]] == [(leaf, "multipath")]
    assert diff["differences"][0]["source"].endswith(f"configs/{leaf}/frr.conf:{diff['differences'][0]['lines'][0]}")
    name = "yc-paths"
    try:
        code, up = _cli("up", "ai-cluster", "--name", name, "--configs", str(directory),
                        "--timeout", "20", "--runtime", pytestconfig.getoption("runtime"))
        assert code == 3, up
        assert leaf in up["not_converged"] and up["configs"].startswith(str(directory))
        code, check = _cli("check", name, "--only", "ecmp")  # the lab stayed up
        assert code == 3 and check["failed"] == ["ecmp"], check
        assert leaf in check["checks"][0]["reason"]
        assert check["provenance"]["configs"] == up["configs"]  # the verdict names the configs it judged
    finally:
        _cli("down", name)


def test_bfd_off_on_one_leaf_is_caught_by_the_gray_failure(broken, booted, results):
    plan, _, edit = broken
    (src, _), _ = default_pair(plan)
    leaf = plan.host(src).nic("rail0").peer
    directory = edit(leaf, lambda t: re.sub(r" neighbor fabric bfd.*\n", "", t))
    lab = booted(plan, directory, "yc-bfd")
    assert "BFD" in lab.state.not_converged or "bfd" in lab.state.not_converged, lab.state.not_converged
    uplink = plan.switch(leaf).fabric_ports[0].name
    result = run_case(case("failover-gray"), lab, results, name="failover-gray-configs-without-bfd",
                      element=(leaf, uplink), detect_s=2.5)
    assert result.passed is False and result.detected_ms is None and "is BFD on" in result.reason


def test_a_leaf_that_hides_its_hosts_is_caught_by_ecmp(broken, booted, results):
    plan, _, edit = broken
    _, (dst, dst_nic) = default_pair(plan)
    far = plan.host(dst).nic(dst_nic).peer
    hosts = {str(p.address.network) for p in plan.switch(far).host_ports}
    directory = edit(far, lambda t: "".join(line for line in t.splitlines(keepends=True)
                                            if not (line.startswith("ip prefix-list ORIGINATED")
                                                    and line.split()[-1] in hosts)))
    lab = booted(plan, directory, "yc-hide")
    assert "missing" in lab.state.not_converged or "routes" in lab.state.not_converged, lab.state.not_converged
    result = run_case(case("ecmp"), lab, results, name="ecmp-configs-hiding-hosts")
    assert result.passed is False and result.lost > 0, result.reason
