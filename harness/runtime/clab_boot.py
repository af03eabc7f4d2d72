"""The slow steps of a containerlab boot, each with a budget from the work it does
(harness.core.budgets): the images a lab needs, pulled before anything is made, and
`containerlab deploy`, which is never killed.

A deploy killed half-way leaves containers, veths and a Docker network that containerlab's
own destroy may not find; so a deploy past its budget is let finish (with progress on the way)
and the lab is then destroyed whole. A signal does the same: containerlab got it too (same
process group) or finishes on its own; either way the caller destroys after it exits.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from harness.core.budgets import ClabBudget, clab_budget
from harness.core.errors import LabError, PrerequisiteError
from harness.core.plan import Plan
from harness.render.containerlab import HOST_IMAGE, ROUTED_HOST_IMAGE, SONIC_IMAGE
from harness.runtime.base import Progress, quiet

Run = Callable[..., subprocess.CompletedProcess]
Spawn = Callable[..., subprocess.Popen]
SCALE_ENV = "FABLAB_CLAB_BUDGET_SCALE"
OFFLINE = ("on a machine that reaches the registry: docker pull {image} && docker save {image} -o images.tar; "
           "here: docker load -i images.tar (docs/runtimes.md, \"Offline\")")
REPORT_EVERY_S = 15.0
IMAGE_ENV = "FABLAB_SONIC_IMAGE"
DOCS = "docs/runtimes.md (the containerlab runtime)"


def sonic_image() -> str:
    return os.environ.get(IMAGE_ENV, SONIC_IMAGE)


def check_prerequisites(image: str | None = None, which: Callable[[str], str | None] = shutil.which,
                        run: Run = subprocess.run) -> None:
    """Everything the clab runtime needs, checked before anything is made. The SONiC image is
    on no registry: it must be loaded (the others are pulled when missing: `pull`)."""
    image = image or sonic_image()
    missing = [] if os.geteuid() == 0 else ["root (containerlab, and host tools in the containers' namespaces): "
                                             "run with sudo"]
    missing += [f"{tool}: {how}" for tool, how in (
        ("docker", "apt-get install docker.io"),
        ("containerlab", "see https://containerlab.dev/install/ (or use --runtime netns)"),
        ("nft", "apt-get install nftables"), ("nsenter", "apt-get install util-linux")) if which(tool) is None]
    if missing:  # all of it at once: whoever fixes one should not meet the next only afterwards
        raise PrerequisiteError(f"the clab runtime needs {'; '.join(missing)}")
    info = run(["docker", "info", "--format", "{{.ServerVersion}}"], capture_output=True, text=True)
    if info.returncode != 0:
        raise PrerequisiteError("the Docker daemon does not answer (`docker info` failed: "
                                f"{info.stderr.strip()[:200]}): systemctl start docker")
    if missing_images([image], run):
        raise PrerequisiteError(f"the SONiC image {image} is not loaded: docker load -i docker-sonic-vs.gz "
                                f"&& docker tag <loaded image> {image} (or set {IMAGE_ENV}); see {DOCS}")


def images_of(plan: Plan, sonic_image: str) -> list[str]:
    """Every image the lab's clab file names, the SONiC one first."""
    out = [sonic_image] if plan.switches else []
    if any(not h.routed for h in plan.hosts):
        out.append(HOST_IMAGE)
    if any(h.routed for h in plan.hosts):
        out.append(ROUTED_HOST_IMAGE)
    return out


def missing_images(images: list[str], run: Run = subprocess.run) -> list[str]:
    return [i for i in images
            if run(["docker", "image", "inspect", "--format", "{{.Id}}", i], capture_output=True,
                   text=True).returncode != 0]


def budget_scale() -> float:
    text = os.environ.get(SCALE_ENV, "1")
    try:
        return float(text)
    except ValueError:
        raise PrerequisiteError(f"{SCALE_ENV}={text!r} is not a number: give a factor such as 2 "
                                "(it multiplies every clab boot budget)") from None


def budget_of(plan: Plan, images_to_pull: int, timeout: float | None, cpus: int | None = None) -> ClabBudget:
    links = sum(1 for c in plan.cables if c.plane.value != "mgmt")
    return clab_budget(len(plan.switches) + len(plan.hosts), len(plan.switches), links, cpus or os.cpu_count() or 1,
                       images_to_pull, timeout, budget_scale())


def pull(images: list[str], each_s: float, progress: Progress = quiet, run: Run = subprocess.run) -> None:
    """`docker pull` each image; one that cannot be pulled (offline, a registry down) is a
    prerequisite named with the offline way in. Nothing of the lab exists yet."""
    for image in images:
        progress("pull", f"{image} is not on this machine: docker pull (budget {each_s:.0f} s)")
        try:
            done = run(["docker", "pull", "--quiet", image], capture_output=True, text=True, timeout=each_s)
        except subprocess.TimeoutExpired:
            raise PrerequisiteError(f"docker pull {image} did not finish in {each_s:.0f} s; "
                                    + OFFLINE.format(image=image)) from None
        if done.returncode != 0:
            raise PrerequisiteError(f"docker pull {image} failed: {(done.stderr or done.stdout).strip()[-300:]}; "
                                    + OFFLINE.format(image=image))


def deploy(argv: list[str], cwd: Path, budget_s: float, progress: Progress = quiet,
           spawn: Spawn = subprocess.Popen, clock: Callable[[], float] = time.monotonic,
           report_every: float = REPORT_EVERY_S) -> float:
    """Run `containerlab deploy` to its end; seconds it took. Past `budget_s` it is let finish,
    then LabError (the caller destroys the lab); a signal waits for it the same way."""
    start = clock()
    proc = spawn(argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    over = False
    try:
        # Not wait.until: the deploy is never given up at its budget (a killed deploy leaves
        # containers behind); the loop only reports on it until it ends.
        while True:
            try:
                out, err = proc.communicate(timeout=report_every)
                break
            except subprocess.TimeoutExpired:
                elapsed = clock() - start
                if elapsed > budget_s and not over:
                    over = True
                    progress("deploy", f"containerlab deploy is past its budget of {budget_s:.0f} s: letting it "
                                       "finish (a killed deploy leaves containers behind), then removing the lab")
                else:
                    progress("deploy", f"containerlab deploy running, {elapsed:.0f} s of {budget_s:.0f} s")
    except BaseException:
        progress("deploy", "interrupted: waiting for containerlab deploy to end before the lab is removed")
        proc.wait()
        raise
    took = clock() - start
    if proc.returncode != 0:
        raise LabError(f"containerlab deploy failed ({proc.returncode}) after {took:.0f} s: "
                       f"{(err or out).strip()[-2000:]}")
    if over:
        raise LabError(f"containerlab deploy took {took:.0f} s, over its budget of {budget_s:.0f} s; the lab was "
                       f"removed. On a slower machine set {SCALE_ENV} (e.g. 2) to scale every clab boot budget")
    return took
