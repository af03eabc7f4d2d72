"""Boot budgets come from the work: more nodes, switches and links, fewer CPUs, images to pull."""
from __future__ import annotations

import re

import pytest

from harness.core.budgets import clab_budget, convergence_s, init_step_s, resolve_timeout
from harness.core.errors import InputError, PrerequisiteError
from harness.core.model import build
from harness.core.plan import make_plan
from harness.render import artifacts
from harness.runtime.clab_boot import SCALE_ENV, budget_of
from topologies import BUILTINS


@pytest.fixture(scope="module")
def small():
    return make_plan(build(BUILTINS["ai-cluster"]()))


@pytest.fixture(scope="module")
def large():
    return make_plan(build(BUILTINS["xlarge"]()))


def test_every_clab_phase_grows_with_the_fabric(small, large):
    a, b = budget_of(small, 0, None, cpus=8), budget_of(large, 0, None, cpus=8)
    assert len(large.switches) > len(small.switches)
    assert b.deploy_s > a.deploy_s and b.init_s > a.init_s and b.converge_s > a.converge_s
    assert b.total > a.total


def test_the_switch_boot_budget_grows_on_fewer_cpus(small):
    assert budget_of(small, 0, None, cpus=2).init_s > budget_of(small, 0, None, cpus=8).init_s


def test_images_to_pull_get_time_of_their_own(small):
    assert budget_of(small, 2, None).pull_s > budget_of(small, 1, None).pull_s > budget_of(small, 0, None).pull_s == 0


def test_the_rendered_init_sh_step_timeout_grows_with_the_switch_count(small, large):
    def step(plan):
        text = artifacts(plan)[f"configs/{plan.switches[0].name}/init.sh"]
        return int(re.search(r"STEP_TIMEOUT=\$\{FABLAB_INIT_STEP_TIMEOUT:-(\d+)\}", text).group(1))

    assert step(large) > step(small) >= 180


def test_the_runtime_renders_its_own_step_timeout(small):
    text = artifacts(small, init_step_s=777)[f"configs/{small.switches[0].name}/init.sh"]
    assert "FABLAB_INIT_STEP_TIMEOUT:-777}" in text


def test_the_runtime_waits_longer_than_one_init_step(small):
    """A stuck switch names its step itself (init.sh's own timeout) before the runtime gives up."""
    b = budget_of(small, 0, None, cpus=4)
    assert b.init_s > b.init_step_s == init_step_s(len(small.switches), 4)


def test_convergence_default_and_an_explicit_timeout(small):
    assert resolve_timeout(None, len(small.switches)) == convergence_s(len(small.switches)) > 120
    assert resolve_timeout(30, 86) == 30
    assert convergence_s(86) == 206  # xlarge: a second a switch
    assert convergence_s(366) > 1.5 * 601  # gpu4096: its 601 s with room
    assert clab_budget(10, 4, 8, 2, timeout=45).converge_s == 45


@pytest.mark.parametrize("bad", [0, -5])
def test_a_timeout_that_is_not_positive_is_refused(bad):
    with pytest.raises(InputError, match=r"timeout: 0 s|timeout: -5 s"):
        resolve_timeout(bad, 4)


def test_a_budget_scale_multiplies_every_phase(small, monkeypatch):
    base = budget_of(small, 1, 60)
    monkeypatch.setenv(SCALE_ENV, "2")
    twice = budget_of(small, 1, 60)
    assert twice.deploy_s == pytest.approx(2 * base.deploy_s, abs=1)
    assert twice.init_step_s == pytest.approx(2 * base.init_step_s, abs=1) and twice.pull_s == 2 * base.pull_s
    assert twice.converge_s == base.converge_s == 60  # --timeout is the engineer's own


def test_a_budget_scale_that_is_not_a_number_is_named(small, monkeypatch):
    monkeypatch.setenv(SCALE_ENV, "fast")
    with pytest.raises(PrerequisiteError, match=SCALE_ENV):
        budget_of(small, 0, None)
