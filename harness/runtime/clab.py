"""The containerlab runtime: the rendered <lab>.clab.yml on Docker, SONiC-VS switches.

`up` checks every prerequisite before anything is made, deploys, and then trusts nothing
containerlab says: it reads `containerlab inspect`, waits for each container's network
namespace (containerlab links it at /run/netns/<container>), for each switch's init script
(rendered next to config_db.json; it writes /tmp/fablab-init.status in the container), checks
independently that each switch loaded its config_db and has every planned port, and waits
for convergence by the same rule as the netns runtime (vtysh in the container, the kernel
FIB from the host). Containers are named fablab-<lab>-<node> (topology `prefix: fablab`).

It runs where Docker, containerlab and a docker-sonic-vs image exist (see the Vagrantfile);
elsewhere `up` stops at the prerequisite check with a message naming what is missing.
"""
from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
import time
from collections.abc import Callable, Collection, Iterable
from ipaddress import IPv4Network
from pathlib import Path

from harness.plumbing import interrupt, namespaces, wait
from harness.core.errors import InputError, LabError
from harness.core.capabilities import Feature, lacks
from harness.core.kinds import LabPhase, NodeKind, RuntimeName
from harness.core.model import Plane, Role, build, cluster_to_dict
from harness.core.plan import Plan, make_plan
from harness.render import artifacts, write_artifacts
from harness.core.switchconfigs import SwitchConfigs
from harness.render.configs import with_configs
from harness.render.containerlab import vs_shared_interfaces
from harness.runtime import processes
from harness.runtime.clab_boot import (Spawn, budget_of, check_prerequisites, deploy, images_of, missing_images,
                                       pull, sonic_image)
from harness.runtime.base import (CablingScope, shell_command, NamespaceAccess, Progress, TeardownReport, not_converged, quiet,
                                  session_counts, wait_converged)
from harness.runtime.clab_cli import (Container, InitStatus, deploy_argv, destroy_argv, init_steps, inspect_argv,
                                      parse_init_status, parse_inspect)
from harness.runtime.frr import json_documents
from harness.runtime.kinds import SWITCH_KINDS
from harness.runtime.logs import LIMIT as LOG_LIMIT
from harness.runtime.processes import start_time
from harness.runtime.state import (NS_PREFIX, LabState, check_lab_name, is_stale, lab_of_namespace, labs, load, run_dir,
                                   save)

Run = Callable[..., subprocess.CompletedProcess]
PREFIX = "fablab"
INIT_STATUS = "/tmp/fablab-init.status"
INIT_LOG = "/tmp/fablab-init.log"
MGMT_IFACE = "eth0"  # every container's interface on containerlab's management network
NAMESPACES_S = 60.0  # containers are running once deploy returns; their /run/netns links follow at once


def container_name(lab: str, node: str) -> str:
    return f"{PREFIX}-{lab}-{node}"


def poll_all(items: Iterable[str], probe: Callable[[str], bool], timeout: float, what: str,
             now: Callable[[], float] = time.monotonic, pause: Callable[[float], None] = time.sleep,
             progress: Progress = quiet, detail: Callable[[list[str]], str] | None = None,
             report_every: float = 10.0) -> None:
    """Poll `probe(item)` until every item is done (True); a probe raises to fail at once.
    Progress when the count changes, and every `report_every` s (what `detail` says of the
    items still waiting). At the deadline, raise naming the items still waiting."""
    waiting = list(items)
    total = len(waiting)
    said = {"count": -1, "at": now()}

    def ready() -> bool:
        nonlocal waiting
        waiting = [i for i in waiting if not probe(i)]
        return not waiting

    def between(seconds: float) -> None:  # between two looks: how far it got
        count = total - len(waiting)
        if count != said["count"] or now() - said["at"] >= report_every:
            said.update(count=count, at=now())
            more = detail(waiting) if detail else ""
            progress(what, f"{count}/{total} ready" + (f"; {more}" if more else ""))
        pause(seconds)

    wait.until(ready, timeout, what, interval=0.5, clock=now, sleep=between,
               error=lambda: LabError(f"{what}: {len(waiting)}/{total} not ready after {timeout:.0f} s: "
                                      + (detail(waiting) if detail else ", ".join(waiting[:8])
                                         + (" ..." if len(waiting) > 8 else ""))))


# ---------------------------------------------------------------------- the runtime

class ClabRuntime(NamespaceAccess):
    name = RuntimeName.CLAB
    switch_kind = SWITCH_KINDS[NodeKind.SONIC_VS]

    def __init__(self, run: Run = subprocess.run, which: Callable[[str], str | None] = shutil.which,
                 spawn: Spawn = subprocess.Popen) -> None:
        self._run = run
        self._which = which
        self._spawn = spawn
        self._plans: dict[str, Plan] = {}

    def check_prerequisites(self) -> None:
        check_prerequisites(sonic_image(), which=self._which, run=self._run)

    @staticmethod
    def topology_file(lab: str) -> Path:
        return run_dir(lab) / "clab" / f"{lab}.clab.yml"

    # ------------------------------------------------------------------ boot

    def up(self, plan: Plan, lab: str, topology: str, progress: Progress = quiet, replace: bool = False,
           timeout: float | None = None, detached: bool = False, configs: SwitchConfigs | None = None,
           mgmt: bool | None = None) -> LabState:
        """Pull what is missing, deploy, wait for every switch's init.sh, then for convergence,
        each phase in a budget of its own from the work it does (harness.core.budgets); `timeout`
        is the convergence phase's, as on the netns runtime."""
        check_lab_name(lab)
        if mgmt:
            raise InputError("fablab's mgmt services (sshd and lldpd in every node, a management station) are the "
                             "netns runtime's: on containerlab boot without --mgmt-services (docs/staged.md)")
        shared = vs_shared_interfaces(plan)
        if shared:  # before anything is made
            raise InputError(f"docker-sonic-vs wires one interface per row of a HwSKU's port_config.ini, and these "
                             f"ports were broken out of one row: {'; '.join(shared[:3])}"
                             f"{f' (+{len(shared) - 3} more)' if len(shared) > 3 else ''}. Declare for that role a "
                             "HwSKU whose rows are ports of the links' speed (`fablab hwskus`; e.g. "
                             "Arista-7060X6-64PE-C224O8 for 100G hosts), or run it on the netns runtime")
        image = sonic_image()
        check_prerequisites(image, which=self._which, run=self._run)
        to_pull = missing_images(images_of(plan, image)[1:], self._run)
        budget = budget_of(plan, len(to_pull), timeout)
        from harness.core.mgmtnet import lab_mgmt_network

        if lab in labs():
            if not replace:
                raise LabError(f"a lab named {lab!r} is already running: `fablab down {lab}` first, "
                                    "pick another --name, or pass --replace")
            progress("replace", f"removing the running lab {lab}")
            self.down(lab)
        # The declared mgmt range is the lab's mgmt network. Docker refuses overlapping subnets:
        # a lab whose declared range a running lab holds moves to a slot of its own, and says so.
        cluster = plan.fabric.cluster
        running = {other: IPv4Network(load(other).mgmt_network) for other in labs() if _clab_state(other)}
        holder = next((other for other, net in running.items() if net.overlaps(plan.mgmt_network)), None)
        network = plan.mgmt_network
        if holder is not None:
            taken = set(running.values()) | {net for p in (Plane.BE, Plane.FE) for net in plan.plane_nets[p]}
            network = lab_mgmt_network(lab, len(plan.fabric.nodes), taken=taken)
            progress("mgmt", f"the declared mgmt range {plan.mgmt_network} overlaps lab {holder}'s "
                             f"({running[holder]}): this lab's mgmt network is {network}")
        files = artifacts(plan, lab=lab, mgmt_network=network, sonic_image=image,  # before touching anything
                          init_step_s=budget.init_step_s)
        if configs is not None:
            files = with_configs(files, configs)
        progress("budget", budget.describe())
        pull(to_pull, budget.pull_s / max(1, len(to_pull)), progress, self._run)
        plan = clab_view(plan, network)
        state = LabState(lab=lab, runtime=self.name, topology=topology, cluster=cluster_to_dict(plan.fabric.cluster),
                         namespaces=tuple(container_name(lab, n.name) for n in plan.fabric.nodes),
                         runner_pid=os.getpid(), owner_pid=0 if detached else os.getpid(), created=time.time(),
                         runner_start=start_time(os.getpid()), owner_start=0 if detached else start_time(os.getpid()),
                         mgmt_network=str(network), configs=configs.label if configs else "")
        save(state)
        self._plans[lab] = plan
        timings: dict[str, float] = {}
        try:
            write_artifacts(files, self.topology_file(lab).parent)
            progress("deploy", f"containerlab deploy: {len(plan.switches)} SONiC-VS switches, "
                               f"{len(plan.hosts)} hosts, mgmt {network}")
            timings["deploy"] = deploy(deploy_argv(self.topology_file(lab), replace), self.topology_file(lab).parent,
                                       budget.deploy_s, progress, self._spawn)
            t = time.monotonic()
            self._wait_containers(plan, lab, time.monotonic() + NAMESPACES_S, progress)
            timings["containers"] = time.monotonic() - t
            t = time.monotonic()
            init_deadline = time.monotonic() + budget.init_s
            self._wait_switches(plan, lab, init_deadline, progress)
            self._wait_hosts(plan, lab, init_deadline, progress)
            timings["config"] = time.monotonic() - t
            t = time.monotonic()
            try:
                looks = wait_converged(self, plan, lab, budget.converge_s, progress)
            except LabError as e:
                state = state.with_(not_converged=not_converged(e, configs, progress))
                looks = self.observe(plan, lab)
            timings["converged"] = time.monotonic() - t
            interrupt.checkpoint()  # a signal swallowed during the boot (see harness/plumbing/interrupt.py)
        except BaseException:
            interrupt.handled()
            if os.getpid() == state.runner_pid:
                with interrupt.deferred():  # a Ctrl-C waits for the teardown's end (netns.py says why)
                    progress("teardown", f"boot of {lab} failed or was interrupted: removing what was made")
                    self.down(lab)
            raise
        timings["total"] = sum(timings.values())
        state = state.with_(phase=LabPhase.UP, timings={k: round(v, 3) for k, v in timings.items()},
                            converged=session_counts(looks))
        save(state)
        return state

    def inspect(self, lab: str) -> list[Container]:
        run = self._run(inspect_argv(lab), capture_output=True, text=True, timeout=60)
        if run.returncode != 0:
            raise LabError(f"containerlab inspect of {lab} failed: {(run.stderr or run.stdout).strip()[-500:]}")
        return parse_inspect(run.stdout)

    def _wait_containers(self, plan: Plan, lab: str, deadline: float, progress: Progress) -> None:
        """Every planned node a running container, its namespace linked under /run/netns."""
        running = {c.name: c for c in self.inspect(lab)}
        wanted = {container_name(lab, n.name): n.name for n in plan.fabric.nodes}
        missing = sorted(wanted[c] for c in wanted if c not in running)
        stopped = sorted(f"{wanted[c]} ({running[c].state})" for c in wanted
                         if c in running and running[c].state.lower() != "running")
        if missing or stopped:
            raise LabError(f"containerlab deployed {lab} without " + "; ".join(
                part for part in (f"nodes {', '.join(missing)}" if missing else "",
                                  f"running nodes {', '.join(stopped)}" if stopped else "") if part))
        poll_all([n.name for n in plan.fabric.nodes],
                 lambda node: os.path.exists(f"{namespaces.NETNS_DIR}/{container_name(lab, node)}"),
                 deadline - time.monotonic(), "namespaces", progress=progress)

    def switch_status(self, lab: str, switch: str) -> InitStatus:
        run = self._run(self.exec_argv(lab, switch, ["cat", INIT_STATUS]), capture_output=True, text=True, timeout=30)
        return parse_init_status(run.stdout if run.returncode == 0 else "")

    def _switch_ready(self, plan: Plan, lab: str, switch: str, seen: dict[str, InitStatus] | None = None) -> bool:
        status = self.switch_status(lab, switch)
        if seen is not None:
            seen[switch] = status
        if status.state == "failed":
            log = self._run(self.exec_argv(lab, switch, ["tail", "-n", "20", INIT_LOG]), capture_output=True,
                            text=True, timeout=30).stdout
            raise LabError(f"{switch}: init step {status.step!r} failed: {status.detail}\n{log.strip()}")
        if status.state != "ok":
            return False
        # The script said ok; check the two things everything else rests on, independently.
        hostname = self._run(self.exec_argv(lab, switch, ["sonic-db-cli", "CONFIG_DB", "HGET",
                                                          "DEVICE_METADATA|localhost", "hostname"]),
                             capture_output=True, text=True, timeout=30).stdout.strip()
        if hostname != switch:
            raise LabError(f"{switch}: CONFIG_DB holds hostname {hostname!r}, not {switch!r}: "
                                "the rendered config_db.json was not loaded")
        with self.netlink(lab, switch) as s:
            present = {link.get_attr("IFLA_IFNAME") for link in s.get_links()}
        sw = plan.switch(switch)
        absent = [p.name for p in sw.ports if p.name not in present]
        if absent:
            raise LabError(f"{switch}: ports {', '.join(absent)} do not exist in the container "
                                f"(HwSKU {getattr(sw, 'hwsku', '?')}): its lanemap does not match the config")
        return True

    def _wait_switches(self, plan: Plan, lab: str, deadline: float, progress: Progress) -> None:
        seen: dict[str, InitStatus] = {}
        poll_all([sw.name for sw in plan.switches], lambda sw: self._switch_ready(plan, lab, sw, seen),
                 deadline - time.monotonic(), "switch init", progress=progress,
                 detail=lambda waiting: init_steps(waiting, seen))

    def _wait_hosts(self, plan: Plan, lab: str, deadline: float, progress: Progress) -> None:
        def ready(host: str) -> bool:
            with self.netlink(lab, host) as s:
                have = {(a.get_attr("IFA_ADDRESS"), a["prefixlen"]) for a in s.get_addr(family=2)}
            want = {(str(n.address.ip), n.address.network.prefixlen) for n in plan.host(host).nics
                    if n.gateway is not None}
            return want <= have

        poll_all([h.name for h in plan.hosts], ready, deadline - time.monotonic(), "host addresses",
                 progress=progress)

    # ------------------------------------------------------------------ teardown

    def down(self, lab: str) -> TeardownReport:
        t = time.monotonic()
        topo = self.topology_file(lab)
        try:
            names = load(lab).namespaces
        except Exception:
            names = ()
        removed = 0
        # microVMs of the RDMA lane (their taps go with them)
        vms = {pid: tag for pid, tag in processes.vm_pids_by_tag(f"{NS_PREFIX}{lab}_").items()
               if lab_of_namespace(tag) == lab}
        processes.terminate(vms)
        if topo.exists() and self._which("containerlab"):
            run = self._run(destroy_argv(topo), capture_output=True, text=True, timeout=600, cwd=topo.parent)
            if run.returncode != 0:
                raise LabError(f"containerlab destroy of {lab} failed: {(run.stderr or run.stdout).strip()[-800:]}"
                                    f"; the lab's files stay in {run_dir(lab)}")
            left = [n for n in names if os.path.exists(f"{namespaces.NETNS_DIR}/{n}")]
            if left:
                raise LabError(f"containers of {lab} still present after destroy: {', '.join(left)}")
            removed = len(names)
        elif topo.exists() and self._which("docker"):
            raise LabError(f"lab {lab} was deployed with containerlab, which is not on PATH now: "
                                f"reinstall it, then `fablab down {lab}`")
        shutil.rmtree(run_dir(lab), ignore_errors=True)
        self._plans.pop(lab, None)
        return TeardownReport(lab, 0, removed, time.monotonic() - t)

    def leftovers(self, everything: bool = False) -> list[str]:
        """clab labs only: the netns runtime's labs are never this runtime's to remove."""
        found = [lab for lab in labs() if _clab_state(lab)]
        return found if everything else [lab for lab in found if is_stale(load(lab))]

    # ------------------------------------------------------------------ driving

    def plan_of(self, lab: str, plan: Plan) -> Plan:
        state = load(lab)
        return clab_view(plan, IPv4Network(state.mgmt_network) if state.mgmt_network else None)

    def _plan(self, lab: str) -> Plan:
        if lab not in self._plans:
            self._plans[lab] = self.plan_of(lab, make_plan(build(load(lab).declared_cluster())))
        return self._plans[lab]

    def exec_argv(self, lab: str, node: str, argv: list[str], tty: bool = False) -> list[str]:
        return ["docker", "exec", "-it" if tty else "-i", container_name(lab, node), *argv]

    def vtysh_argv(self, lab: str, node: str, tty: bool) -> list[str]:
        return self.exec_argv(lab, node, ["vtysh"], tty)

    def shell_argv(self, lab: str, node: str, tty: bool) -> list[str]:
        return self.exec_argv(lab, node, shell_command(lab, node), tty)

    def namespace(self, lab: str, node: str) -> str:
        return container_name(lab, node)

    def kernel_port_names(self, plan: Plan) -> dict[tuple[str, str], str]:
        """A SONiC port's cable ends on its containerlab endpoint ethN, not on EthernetN."""
        return {(sw.name, p.clab): p.name for sw in plan.switches for p in sw.ports}

    def cabling_scope(self, plan: Plan) -> CablingScope:
        """containerlab's management network is a Docker bridge outside the lab: the mgmt plane
        has no cables to audit here, and every node's eth0 leads to it."""
        return CablingScope((Plane.FE, Plane.BE), tuple(n.name for n in plan.fabric.nodes if n.role is not Role.OOB),
                            frozenset({MGMT_IFACE}),
                            "FE and BE cables in every node (mgmt is containerlab's management network)")

    def carrier_port(self, lab: str, node: str, port: str) -> str:
        """The veth end of a cable: a SONiC port's containerlab endpoint (ethN); a host NIC itself.
        Downing the SONiC tap (EthernetN) instead would leave the peer's carrier up."""
        plan = self._plan(lab)
        if node in {s.name for s in plan.switches}:
            for p in plan.switch(node).ports:
                if p.name == port:
                    return p.clab
            raise LabError(f"{node} has no port {port!r} in lab {lab}")
        return port

    # Gray failure stays on the port name (NamespaceAccess.gray_port): SONiC-VS copies frames
    # between ethN and the tap EthernetN, where the kernel routes, and its AF_PACKET socket on
    # ethN would see frames before an ingress drop there.

    def vtysh(self, lab: str, node: str, *commands: str) -> str:
        argv = ["vtysh"]
        for c in commands:
            argv += ["-c", c]
        try:
            run = self._run(self.exec_argv(lab, node, argv), capture_output=True, text=True, timeout=30)
        except subprocess.TimeoutExpired as e:
            raise LabError(f"vtysh in {container_name(lab, node)} timed out: {' / '.join(commands)}") from e
        if run.returncode != 0:
            raise LabError(f"vtysh in {container_name(lab, node)} failed ({run.returncode}): "
                                f"{(run.stderr or run.stdout).strip()[:500]}")
        return run.stdout

    def vtysh_json(self, lab: str, node: str, *commands: str) -> list[object]:
        return json_documents(self.vtysh(lab, node, *commands), len(commands),
                              f"vtysh in {container_name(lab, node)}")

    def logs(self, lab: str, nodes: Collection[str]) -> dict[str, str]:
        """SONiC's FRR logs to the container's syslog (rsyslogd under supervisord): its tail."""
        out = {}
        for node in sorted(nodes):
            run = self._run(self.exec_argv(lab, node, ["tail", "-c", str(LOG_LIMIT), "/var/log/syslog"]),
                            capture_output=True, text=True, timeout=30)
            if run.returncode == 0 and run.stdout:
                out[f"{node}/syslog"] = run.stdout
        return out

    def lossless_status(self, lab: str) -> dict:
        raise LabError(f"lab {lab} runs on containerlab: {lacks(RuntimeName.CLAB, Feature.LOSSLESS_DATA_PATH)}")

    def lossless_reload(self, lab: str, plan: Plan) -> None:
        return None  # SONiC's orchagent reads its own CONFIG_DB; nothing of fablab's acts on it

    def lossless_storm(self, lab: str, plan: Plan, node: str, port: str, priorities: frozenset[int]) -> None:
        self.lossless_status(lab)


def clab_view(plan: Plan, network: IPv4Network | None) -> Plan:
    """The plan as containerlab runs it: mgmt addresses in the lab's own subnet, and each
    host's management NIC is its eth0 on containerlab's management network (not mgmt0)."""
    from harness.core.mgmtnet import with_mgmt_network

    if network is not None:
        plan = with_mgmt_network(plan, network)
    hosts = {h.name for h in plan.hosts}
    change = dataclasses.replace

    def nic(n):
        return change(n, name=MGMT_IFACE) if n.plane is Plane.MGMT else n

    def cable(c):
        return change(c, a_port=MGMT_IFACE) if c.plane is Plane.MGMT and c.a_node in hosts else c

    return change(plan, hosts=tuple(change(h, nics=tuple(nic(n) for n in h.nics)) for h in plan.hosts),
                  cables=tuple(cable(c) for c in plan.cables))


def _clab_state(lab: str) -> bool:
    try:
        return load(lab).runtime is RuntimeName.CLAB
    except Exception:
        return False

