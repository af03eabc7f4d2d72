"""The containerlab runtime: hands the rendered <lab>.clab.yml to the containerlab CLI.

It runs where Docker, containerlab and a docker-sonic-vs image exist (see the Vagrantfile);
on this project's CI machine it stops at the prerequisite check with a clear message.
Nodes are driven with `docker exec` on the container names containerlab gives them
(prefix `fablab`: fablab-<lab>-<node>).
"""
from __future__ import annotations

import os
import shutil
import subprocess
import time

from pyroute2 import IPRoute

from harness.errors import PrerequisiteError, RuntimeError_
from harness.plan import Plan
from harness.render import artifacts, write_artifacts
from harness.runtime.base import Progress, TeardownReport, quiet
from harness.runtime.processes import start_time
from harness.runtime.state import LabState, check_lab_name, is_stale, labs, load, run_dir, save


def check_prerequisites() -> None:
    for tool, how in (("docker", "apt-get install docker.io"),
                      ("containerlab", "see https://containerlab.dev/install/ (or use --runtime netns)")):
        if shutil.which(tool) is None:
            raise PrerequisiteError(f"the clab runtime needs {tool}: {how}")


class ClabRuntime:
    name = "clab"

    def _topology(self, lab: str):
        return run_dir(lab) / "clab" / f"{lab}.clab.yml"

    def up(self, plan: Plan, lab: str, topology: str, progress: Progress = quiet, replace: bool = False,
           timeout: float = 600.0, detached: bool = False) -> LabState:
        check_lab_name(lab)
        check_prerequisites()
        if lab in labs() and not replace:
            raise RuntimeError_(f"a lab named {lab!r} is already running: `fablab down {lab}` or --replace")
        from harness.model import cluster_to_dict

        state = LabState(lab=lab, runtime=self.name, topology=topology, cluster=cluster_to_dict(plan.fabric.cluster),
                         namespaces=(), runner_pid=os.getpid(),
                         owner_pid=0 if detached else os.getpid(), created=time.time(),
                         runner_start=start_time(os.getpid()), owner_start=0 if detached else start_time(os.getpid()))
        save(state)
        write_artifacts(artifacts(plan, lab=lab), run_dir(lab) / "clab")
        progress("deploy", f"containerlab deploy -t {self._topology(lab)}")
        t = time.monotonic()
        run = subprocess.run(["containerlab", "deploy", "-t", str(self._topology(lab))] + (["--reconfigure"] if replace else []),
                             capture_output=True, text=True, timeout=timeout)
        if run.returncode != 0:
            self.down(lab)
            raise RuntimeError_(f"containerlab deploy failed: {run.stderr.strip()[-2000:]}")
        state = state.with_(phase="up", timings={"deploy": round(time.monotonic() - t, 3)})
        save(state)
        return state

    def down(self, lab: str) -> TeardownReport:
        t = time.monotonic()
        topo = self._topology(lab)
        if topo.exists() and shutil.which("containerlab"):
            subprocess.run(["containerlab", "destroy", "-t", str(topo), "--cleanup"], capture_output=True, text=True)
        shutil.rmtree(run_dir(lab), ignore_errors=True)
        return TeardownReport(lab, 0, 0, time.monotonic() - t)

    def leftovers(self, everything: bool = False) -> list[str]:
        found = [lab for lab in labs() if _runtime_of(lab) == self.name]
        return found if everything else [lab for lab in found if is_stale(load(lab))]

    def exec_argv(self, lab: str, node: str, argv: list[str]) -> list[str]:
        return ["docker", "exec", f"fablab-{lab}-{node}", *argv]

    def namespace(self, lab: str, node: str) -> str:
        raise RuntimeError_("probing namespaces directly is a netns-runtime feature")

    def netlink(self, lab: str, node: str) -> IPRoute:
        raise RuntimeError_("netlink access to nodes is a netns-runtime feature; use exec on clab")

    def set_link(self, lab: str, node: str, ifname: str, up: bool) -> None:
        self._run(lab, node, ["ip", "link", "set", ifname, "up" if up else "down"])

    def set_gray(self, lab: str, node: str, ifname: str, on: bool) -> None:
        if on:
            rules = (f'table netdev fablab_gray_{ifname} {{ chain ingress {{ type filter hook ingress '
                     f'device "{ifname}" priority 0; policy drop; }} }}')
        else:
            rules = f"delete table netdev fablab_gray_{ifname}"
        self._run(lab, node, ["nft", rules])

    def vtysh_json(self, lab: str, node: str, *commands: str) -> list[object]:
        import json

        docs = []
        for c in commands:
            docs.append(json.loads(self._run(lab, node, ["vtysh", "-c", c])))
        return docs

    def _run(self, lab: str, node: str, argv: list[str]) -> str:
        run = subprocess.run(self.exec_argv(lab, node, argv), capture_output=True, text=True)
        if run.returncode != 0:
            raise RuntimeError_(f"{node}: {' '.join(argv)}: {run.stderr.strip()}")
        return run.stdout


def _runtime_of(lab: str) -> str:
    try:
        return load(lab).runtime
    except Exception:
        return "netns"
