"""How long each phase of a boot may take, from the work the phase has to do.

One rule on both runtimes: `timeout` (`fablab up --timeout`) is the time the fabric has to
converge once every node's routing daemons run; its default grows with the number of
switches (BGP and BFD sessions to bring up). What comes before that differs by runtime:

- netns: namespaces, veths and FRR processes, seconds even at 86 switches; no budget of
  its own (each step fails at once or not at all).
- clab: `containerlab deploy` (containers, veths, each sonic-vs kind's post-deploy), then
  every switch's init.sh (SONiC's redis, swss, syncd and FRR inside each container, all
  switches at once on the machine's CPUs), then convergence. Images not on the machine are
  pulled before the deploy, each with its own budget, so a slow registry is named as such.

The clab figures are estimates from how SONiC-VS boots (about a minute alone, tens of
CPU-seconds of Python daemons per switch), not measurements: no SONiC image has run where
this was written (docs/runtimes.md). FABLAB_CLAB_BUDGET_SCALE multiplies them for a slow
machine.
"""
from __future__ import annotations

from dataclasses import dataclass

from harness.core.errors import InputError

CONVERGE_BASE_S = 120.0  # netns ai-cluster converges in a few seconds; a loaded CI machine needs far more
CONVERGE_PER_SWITCH_S = 1.0
# ... times switches / this, from this many: a switch's sessions and routes grow with the fabric,
# so the whole grows faster than its switches (gpu4096's 366 switches converged in 601 s here).
CONVERGE_SCALE_SWITCHES = 100
DEPLOY_BASE_S = 120.0  # containerlab's own start, the mgmt network, Docker's first container
DEPLOY_PER_NODE_S = 6.0  # create + start one container, its sysctls, binds and post-deploy
DEPLOY_PER_LINK_S = 0.5  # one veth pair moved into two namespaces
PULL_PER_IMAGE_S = 600.0  # a few hundred MB from a registry
INIT_BASE_S = 180.0  # one docker-sonic-vs from supervisord to FRR answering, alone on a core
INIT_CPU_S_PER_SWITCH = 60.0  # its Python daemons and syncd starting, shared over the machine's CPUs
INIT_GRACE_S = 30.0  # after init.sh's own step timeout, so that a stuck switch names its step itself


def convergence_s(switches: int) -> float:
    """The default `--timeout`: seconds to converge once every routing daemon runs."""
    return CONVERGE_BASE_S + CONVERGE_PER_SWITCH_S * switches * max(1.0, switches / CONVERGE_SCALE_SWITCHES)


def resolve_timeout(timeout: float | None, switches: int) -> float:
    if timeout is None:
        return convergence_s(switches)
    if timeout <= 0:
        raise InputError(f"timeout: {timeout:g} s; give the seconds the fabric has to converge (> 0), "
                         f"or leave it out for the default ({convergence_s(switches):.0f} s here)")
    return float(timeout)


@dataclass(frozen=True)
class ClabBudget:
    """Seconds per phase of a containerlab boot; `total` is their sum."""
    pull_s: float  # every image not yet on the machine
    deploy_s: float  # `containerlab deploy` until it exits
    init_step_s: float  # one init.sh step in one switch (rendered into the script)
    init_s: float  # every switch's init.sh to `ok`, from the end of the deploy
    converge_s: float  # the `--timeout`

    @property
    def total(self) -> float:
        return self.pull_s + self.deploy_s + self.init_s + self.converge_s

    def phases(self) -> dict[str, float]:
        return {"pull": self.pull_s, "deploy": self.deploy_s, "init": self.init_s, "converge": self.converge_s}

    def describe(self) -> str:
        return ", ".join(f"{k} {v:.0f} s" for k, v in self.phases().items() if v) + f" (total {self.total:.0f} s)"


def init_step_s(switches: int, cpus: int, scale: float = 1.0) -> float:
    """One init.sh step may take as long as every switch's whole boot: when all of them start
    at once the slowest step (redis and CONFIG_DB, usually) is where a switch waits for the CPUs."""
    return round(scale * (INIT_BASE_S + INIT_CPU_S_PER_SWITCH * switches / max(1, cpus)))


def clab_budget(nodes: int, switches: int, links: int, cpus: int, images_to_pull: int = 0,
                timeout: float | None = None, scale: float = 1.0) -> ClabBudget:
    if scale <= 0:
        raise InputError(f"FABLAB_CLAB_BUDGET_SCALE: {scale:g}; give a factor > 0 (2 doubles every boot budget)")
    step = init_step_s(switches, cpus, scale)
    return ClabBudget(pull_s=scale * PULL_PER_IMAGE_S * images_to_pull,
                      deploy_s=round(scale * (DEPLOY_BASE_S + DEPLOY_PER_NODE_S * nodes + DEPLOY_PER_LINK_S * links)),
                      init_step_s=step, init_s=step + INIT_GRACE_S,
                      converge_s=resolve_timeout(timeout, switches))
