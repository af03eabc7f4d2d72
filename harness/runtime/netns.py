"""The embedded runtime: every node a network namespace, every cable a veth pair, every
switch FRR with the rendered frr.conf. Links, addresses and routes go through netlink
(pyroute2), from a thread that has entered the node's namespace; nothing is created in the
root namespace.
"""
from __future__ import annotations

import os
import shutil
import threading
import time
from collections.abc import Collection
from contextlib import ExitStack
from functools import partial
from pathlib import Path

from harness.plumbing import interrupt, meminfo, namespaces, parallel, priority
from harness.core.budgets import resolve_timeout
from harness.core.errors import HarnessError, LabError, PrerequisiteError
from harness.core.kinds import LabPhase, NodeKind, RuntimeName
from harness.core.model import Plane, Role, cluster_to_dict
from harness.observe.convergence import Shortfall
from harness.core.inventory import Reach
from harness.core.plan import CableRow, Plan
from harness.render.frr import frr_conf, host_frr_conf
from harness.core.switchconfigs import SwitchConfigs
from harness.runtime import (bfd_offload, frr_parts, ksm, lossless_dp, mgmt_services, neighbours, netns_daemons, processes,
                             tenants)
from harness.runtime.kinds import SWITCH_KINDS
from harness.runtime.logs import netns_logs
from harness.runtime.base import (CablingScope, NamespaceAccess, Progress, TeardownReport, not_converged, quiet,
                                  session_counts, wait_converged)
from harness.runtime.frr import (DAEMONS, FRR_CONFIG, FRR_STATE, check_installed, frr_names, frr_node, json_documents,
                                 pathspace_dirs, remove_path)
from harness.runtime.netns_setup import (HOST_SYSCTLS, address_lines, gateways_permanent, restore_link_local,
                                         routed_host_sysctls, switch_rules, switch_sysctls, veth_lines)
from harness.runtime.processes import start_time
from harness.runtime.state import (NS_PREFIX, LabState, check_lab_name, lab_of_namespace, labs, load, namespace,
                                   run_dir, runtime_of, save, stale)
from harness.runtime.vty import VtyClient, daemon_of

LINK_WORKERS = 2  # ip processes at once: this machine's cores


def check_prerequisites() -> None:
    if os.geteuid() != 0:
        raise PrerequisiteError("the netns runtime needs root (network namespaces, veth, FRR): run with sudo")
    check_installed()
    for tool, package in (("nft", "nftables"), ("nsenter", "util-linux"), ("ip", "iproute2")):
        if shutil.which(tool) is None:
            raise PrerequisiteError(f"{tool} is missing: apt-get install {package}")
    if not Path("/proc/sys/net/ipv4/fib_multipath_hash_policy").exists():
        raise PrerequisiteError("this kernel lacks multipath routing (net.ipv4.fib_multipath_hash_policy)")


class NetnsRuntime(NamespaceAccess):
    name = RuntimeName.NETNS
    switch_kind = SWITCH_KINDS[NodeKind.FRR_NETNS]

    def __init__(self) -> None:
        self._vty: dict[tuple[str, str, str], VtyClient] = {}
        self._vty_lock = threading.Lock()

    def check_prerequisites(self) -> None:
        check_prerequisites()

    # ------------------------------------------------------------------ boot

    def up(self, plan: Plan, lab: str, topology: str, progress: Progress = quiet, replace: bool = False,
           timeout: float | None = None, detached: bool = False, configs: SwitchConfigs | None = None,
           mgmt: bool | None = None) -> LabState:
        """configs: the engineer's own (frr.conf, and config_db.json kept for the audit) instead of
        fablab's render. A boot from them that does not converge still leaves the lab up, with
        what is missing in `not_converged`: the configs are what is wrong, not the boot. mgmt:
        sshd and lldpd in every node, and a management station (runtime/mgmt_services.py; None:
        for a lab of up to mgmt_services.AUTO_UP_TO nodes)."""
        check_lab_name(lab)
        converge_s = resolve_timeout(timeout, len(plan.switches))
        check_prerequisites()
        mgmt = mgmt_services.wanted(plan, mgmt)
        if mgmt:
            mgmt_services.check_installed()
        if lab in labs() or any(lab_of_namespace(ns) == lab for ns in namespaces.list_namespaces()):
            if not replace:
                raise LabError(f"a lab named {lab!r} is already running: `fablab down {lab}` first, "
                                    "pick another --name, or pass --replace")
            progress("replace", f"removing the running lab {lab}")
            self.down(lab)
        tenants.check_supported(plan)
        if bfd_offload.uses_offload(plan.fabric.cluster.bfd):
            bfd_offload.binary()
            bfd_offload.check_paths(lab, frr_names(plan))
        if lossless_dp.uses(plan):
            lossless_dp.build()
            lossless_dp.check_paths(lab)
        frr = dict(configs.frr) if configs else {sw.name: frr_conf(plan, sw) for sw in plan.switches}  # before anything
        frr.update({h.name: host_frr_conf(plan, h) for h in plan.hosts if h.routed})  # the hosts' are fablab's
        parts = frr_parts.Background(frr)  # each daemon's part, as vtysh hands it out, while links are made
        names = [n.name for n in plan.fabric.nodes]
        state = LabState(lab=lab, runtime=self.name, topology=topology, cluster=cluster_to_dict(plan.fabric.cluster),
                         namespaces=tuple(namespace(lab, n) for n in names), runner_pid=os.getpid(),
                         owner_pid=0 if detached else os.getpid(), created=time.time(),
                         runner_start=start_time(os.getpid()), owner_start=0 if detached else start_time(os.getpid()),
                         configs=configs.label if configs else "")
        with interrupt.deferred():  # before anything is made: the teardown of a boot needs it whole
            import pyroute2  # noqa: F401
        run_dir(lab).parent.mkdir(parents=True, exist_ok=True)
        # Another lab's timed experiment (a failover, an incast) and this boot wait for each
        # other while the boot makes its namespaces and links (the kernel's RTNL lock is the
        # machine's, and they hold it for seconds) and starts its daemons (the CPU of every
        # switch's config parse); not while it converges: that is a wait, and `make test`'s
        # labs queued for it (41 boots held the machine's turn 206 s of its 823).
        with ExitStack() as turn:
            waited = turn.enter_context(priority.timed_turn(run_dir(lab)))
            if waited > 1:
                progress("turn", f"waited {waited:.0f} s for another lab's timed experiment to end")
            save(state)
            return self._boot(plan, lab, state, parts, frr, progress, converge_s, configs, mgmt, turn)

    def _boot(self, plan: Plan, lab: str, state: LabState, parts: frr_parts.Background, frr: dict[str, str],
              progress: Progress, converge_s: float, configs: SwitchConfigs | None, mgmt: bool,
              turn: ExitStack) -> LabState:
        mem_before = meminfo.available_mb()
        timings: dict[str, float] = {}
        starting = None
        try:
            neighbours.hold(lab, len(plan.cables), progress)
            ksm.hold(lab, plan, progress)
            t = time.monotonic()
            self._namespaces(plan, lab, progress)
            timings["namespaces"] = time.monotonic() - t
            t = time.monotonic()
            self._links(plan, lab, progress)
            timings["links"] = time.monotonic() - t
            t = time.monotonic()
            defer_bfd = netns_daemons.defer_bfd(plan)
            daemon_parts = parts.result(set(configs.frr) if configs else set(), progress)
            held_on = netns_daemons.holding(plan, daemon_parts) \
                if netns_daemons.hold_sessions(plan, configs is not None) else {}
            with ksm.mergeable(ksm.wanted(plan)):
                state = netns_daemons.start(plan, lab, state, daemon_parts, frr, progress, defer_bfd,
                                            dict(configs.config_db) if configs else {}, held_on)
            timings["daemons"] = time.monotonic() - t
            turn.close()  # the machine's timed turn, held since the namespaces
            starting = mgmt_services.Background(plan, lab, progress) if mgmt else None  # while it converges
            deadline = time.monotonic() + converge_s  # as on clab: from the moment every daemon runs
            looks = None
            try:
                if defer_bfd:
                    state, looks = self._bgp_then_bfd(plan, lab, state, deadline, progress, timings)
                if looks is None:
                    t = time.monotonic()
                    looks = wait_converged(self, plan, lab, max(1.0, deadline - t), progress)
                    timings["converged"] = time.monotonic() - t
            except LabError as e:
                state = state.with_(not_converged=not_converged(e, configs, progress))
                looks = self.observe(plan, lab)
            netns_daemons.settle(plan, lab, held_on, progress)
            if starting is not None:
                for node, pids in starting.result().items():
                    state = netns_daemons.started(state, node, pids)
                timings["mgmt"] = starting.seconds
            interrupt.checkpoint()  # a signal swallowed during the boot (see harness/plumbing/interrupt.py)
        except BaseException:
            interrupt.handled()
            if starting is not None:
                starting.wait()  # nothing may start after the teardown below has looked
            if os.getpid() == state.runner_pid:  # never from a forked helper process
                # A Ctrl-C now would stop the teardown half-way and leave the lab (seen at gpu4096,
                # 50 s of teardown after a boot that ran out of time): it waits for the end.
                with interrupt.deferred():
                    progress("teardown", f"boot of {lab} failed or was interrupted: removing what was made")
                    self.down(lab)
            raise
        timings["total"] = sum(timings.values())
        timings["memory_mb"] = max(0.0, mem_before - meminfo.available_mb())
        ksm.rest(lab)
        state = state.with_(phase=LabPhase.UP, timings={k: round(v, 3) for k, v in timings.items()},
                            converged=session_counts(looks))
        save(state)
        return state

    def _namespaces(self, plan: Plan, lab: str, progress: Progress) -> None:
        nodes = plan.fabric.nodes
        progress("namespaces", f"creating {len(nodes)} namespaces")
        hash_of = {sw.name: sw.hash_policy for sw in plan.switches}
        fe_hash = next((sw.hash_policy for sw in plan.switches if sw.plane is Plane.FE), 1)
        routed = {h.name: fe_hash for h in plan.hosts if h.routed}
        for node in nodes:
            ns = namespace(lab, node.name)
            namespaces.create(ns)
            if node.role.is_routed:
                values = switch_sysctls(node.name, hash_of[node.name])
            elif node.name in routed:
                values = routed_host_sysctls(node.name, routed[node.name])
            else:
                values = dict(HOST_SYSCTLS)
            namespaces.write_sysctls(ns, values)

    def _links(self, plan: Plan, lab: str, progress: Progress) -> None:
        """One `ip -batch` per node for its cables, then one for its addresses and routes, two
        nodes at a time (iproute2 in C: through pyroute2 xlarge's took 5 s of Python's CPU)."""
        rows = plan.cables
        progress("links", f"cabling {len(rows)} veth pairs, addresses and routes")
        mtu = {Plane.BE: plan.fabric.cluster.backend.mtu, Plane.FE: plan.fabric.cluster.frontend.mtu,
               Plane.MGMT: 1500}
        made_at: dict[str, list[CableRow]] = {}
        peer_ends: dict[str, list[str]] = {}
        for row in rows:
            made_at.setdefault(row.a_node, []).append(row)
            peer_ends.setdefault(row.b_node, []).append(row.b_port)
        ns = partial(namespace, lab)
        parallel.map_all(lambda item: namespaces.ip_batch(ns(item[0]), veth_lines(item[1], lambda c: mtu[c.plane], ns)),
                         made_at.items(), workers=LINK_WORKERS)
        switches = {sw.name: sw for sw in plan.switches}
        hosts = {h.name: h for h in plan.hosts}
        if plan.tenants:
            tenants.apply(plan, ns)
        parallel.map_all(lambda node: namespaces.ip_batch(ns(node.name), address_lines(
            plan, peer_ends.get(node.name, []), switches.get(node.name), hosts.get(node.name), node.role is Role.OOB)),
            plan.fabric.nodes, workers=LINK_WORKERS)
        for sw in plan.switches:
            namespaces.nft(namespace(lab, sw.name), switch_rules(sw))
        gateways_permanent(plan, ns)
        added = [f"{sw.name} {port}" for sw, ports in zip(plan.switches, parallel.map_all(
            lambda sw: restore_link_local(ns(sw.name), [p.name for p in (*sw.fabric_ports, *sw.host_ports)]),
            plan.switches, workers=LINK_WORKERS)) for port in ports]
        if added:
            progress("links", f"the kernel left {len(added)} port(s) without their fe80::/64 route, added: "
                              + ", ".join(added[:8]) + (" ..." if len(added) > 8 else ""))

    def _bgp_then_bfd(self, plan: Plan, lab: str, state: LabState, deadline: float, progress: Progress,
                      timings: dict[str, float]) -> tuple[LabState, list[Shortfall] | None]:
        """Converge BGP and check every FIB while bfdd is not running, then start bfdd and wait
        for every BFD session. At a thousand sessions BFD's packets (3.3 a second each way per
        session at 300 ms) take most of both cores, which slowed BGP and every FIB read.
        bgpd registers its sessions again when bfdd comes (zebra replays them). The FIBs need
        no second read if no BGP session went down since they were checked (a route here only
        changes with a session: the counts of sessions gone down are compared); returns the
        last look, or None when one did, for a full look."""
        t = time.monotonic()
        checked = wait_converged(self, plan, lab, max(1.0, deadline - t), progress, bfd=False, phase="bgp")
        drops = {s.switch: s.drops for s in checked}  # a session may have flapped while the boot began
        timings["bgp"] = time.monotonic() - t
        t = time.monotonic()
        state = netns_daemons.start_bfdd(plan, lab, state, progress)
        looks = wait_converged(self, plan, lab, max(1.0, deadline - time.monotonic()), progress, fib=False,
                               phase="bfd")
        dropped = [s.switch for s in looks if s.drops != drops[s.switch]]
        if dropped:
            progress("bfd", f"BGP sessions went down since the FIBs were checked ({', '.join(dropped[:5])}): "
                            "looking at every FIB again")
        timings["bfd"] = time.monotonic() - t
        return state, None if dropped else looks

    # ------------------------------------------------------------------ teardown

    def down(self, lab: str) -> TeardownReport:
        """Remove exactly what the lab owns: its FRR daemons, namespaces, run and FRR dirs."""
        t = time.monotonic()
        self._close_vty(lab)
        prefix = f"{NS_PREFIX}{lab}_"
        pids: dict[int, str] = {}
        owned = {ns for ns in namespaces.list_namespaces() if lab_of_namespace(ns) == lab}
        frr: set[int] = set()
        try:
            state = load(lab)
            owned |= set(state.namespaces)
            pids |= {d.pid: namespace(lab, d.node) for d in state.daemons}
            frr |= {d.pid for d in state.daemons if d.name in DAEMONS}
        except Exception:  # no or broken state: what the naming convention finds is enough
            pass
        found = [processes.frr_pids_by_namespace(prefix), processes.dataplane_pids_by_tag(prefix),
                 processes.vm_pids_by_tag(prefix), mgmt_services.pids_of(lab)]
        frr |= {pid for pid, ns in found[0].items() if lab_of_namespace(ns) == lab}
        pids |= {pid: tag for pids_of in found for pid, tag in pids_of.items() if lab_of_namespace(tag) == lab}
        run_dir(lab).parent.mkdir(parents=True, exist_ok=True)
        with priority.timed_turn(run_dir(lab)):  # as a boot: another lab's timed experiment waits
            # FRR killed: its graceful exit (zebras withdrawing every route) held xlarge's teardown 5 s
            killed = processes.terminate(pids, kill=frr)
            removed = [ns for ns in sorted(owned) if namespaces.remove(ns)]
            left = namespaces.wait_gone(owned)
        for ns in owned | _pathspaces_of(lab):
            for path in pathspace_dirs(ns):
                remove_path(path)
        neighbours.release(lab)
        ksm.release(lab)
        shutil.rmtree(run_dir(lab), ignore_errors=True)
        if left:
            raise LabError(f"namespaces of {lab} still present after teardown: {', '.join(left)}")
        return TeardownReport(lab, len(killed), len(removed), time.monotonic() - t)

    def leftovers(self, everything: bool = False) -> list[str]:
        """Labs left behind: no readable state, or a dead owner (see state.is_stale); with
        `everything`, every lab with anything on the system. Labs of another runtime are
        never this runtime's to remove."""
        found = set(labs())
        found |= {lab for ns in namespaces.list_namespaces() if (lab := lab_of_namespace(ns))}
        found |= {lab for ns in processes.frr_pids_by_namespace(NS_PREFIX).values() if (lab := lab_of_namespace(ns))}
        found |= {lab for tag in processes.dataplane_pids_by_tag(NS_PREFIX).values() if (lab := lab_of_namespace(tag))}
        found |= {lab for tag in processes.vm_pids_by_tag(NS_PREFIX).values() if (lab := lab_of_namespace(tag))}
        found |= {lab for ns in _pathspaces() if (lab := lab_of_namespace(ns))}
        found = {lab for lab in found if runtime_of(lab) in (None, self.name)}
        if not everything:
            found = {lab for lab in found if stale(lab)}
        return sorted(found)

    # ------------------------------------------------------------------ driving

    def logs(self, lab: str, nodes: Collection[str]) -> dict[str, str]:
        return netns_logs(lab, nodes)

    def daemon_pids(self, lab: str, nodes: Collection[str]) -> dict[str, int]:
        try:
            state = load(lab)
        except HarnessError:
            return {}
        wanted = set(nodes)
        return {f"{d.node}/{d.name}": d.pid for d in state.daemons if d.node in wanted}

    def lossless_status(self, lab: str) -> dict:
        return lossless_dp.status(lab, required=True)

    def lossless_reload(self, lab: str, plan: Plan) -> None:
        if lossless_dp.running(lab) is not None:
            lossless_dp.reload(plan, lab, lossless_dp.running_dbs(plan, partial(self._config_db, lab)))

    def lossless_storm(self, lab: str, plan: Plan, node: str, port: str, priorities: frozenset[int]) -> None:
        lossless_dp.status(lab, required=True)  # says why, where there is no data plane
        dbs = lossless_dp.running_dbs(plan, partial(self._config_db, lab))
        lossless_dp.set_storm(plan, lab, node, port, priorities, dbs)

    def _config_db(self, lab: str, switch: str) -> dict:
        return self.switch_kind.running_config_db(self.node_access(lab, switch))

    def observe(self, plan: Plan, lab: str, only: Collection[str] | None = None, fib: bool = True,
                bfd: bool = True) -> list[Shortfall]:
        if bfd and bfd_offload.uses_offload(plan.fabric.cluster.bfd):
            bfd_offload.check_running(lab)  # a dead data plane, named, rather than BFD sessions down
        return super().observe(plan, lab, only, fib, bfd)

    def exec_argv(self, lab: str, node: str, argv: list[str]) -> list[str]:
        return namespaces.exec_argv(namespace(lab, node), argv)

    def vtysh_argv(self, lab: str, node: str, tty: bool) -> list[str]:
        return ["vtysh", "--vty_socket", str(frr_node(lab, node).directory)]

    def namespace(self, lab: str, node: str) -> str:
        return namespace(lab, node)

    def lldp_socket(self, lab: str, node: str) -> Path | None:
        path = mgmt_services.lldp_socket(lab, node)
        return path if path.exists() else None

    def mgmt_reach(self, plan: Plan, lab: str) -> Reach:
        return mgmt_services.reach(plan, lab)

    def kernel_port_names(self, plan: Plan) -> dict[tuple[str, str], str]:
        """None differ: every cable end is a veth named as the plan names the port."""
        return {}

    def cabling_scope(self, plan: Plan) -> CablingScope:
        return CablingScope(tuple(Plane), tuple(n.name for n in plan.fabric.nodes),
                            frozenset({mgmt_services.STATION_PORT}),
                            "every veth in every node's namespace; mgmt through the OOB switch's bridge")

    def vtysh(self, lab: str, node: str, *commands: str) -> str:
        return frr_node(lab, node).vtysh(*commands)

    def vtysh_json(self, lab: str, node: str, *commands: str) -> list[object]:
        daemons = [daemon_of(c) for c in commands]
        if None in daemons:
            return frr_node(lab, node).vtysh_json(*commands)
        where = f"vty of {node} in lab {lab}"
        return [json_documents(self._client(lab, node, d).command(c), 1, where)[0]  # type: ignore[arg-type]
                for c, d in zip(commands, daemons)]

    def _client(self, lab: str, node: str, daemon: str) -> VtyClient:
        with self._vty_lock:
            key = (lab, node, daemon)
            if key not in self._vty:
                self._vty[key] = VtyClient(frr_node(lab, node).directory / f"{daemon}.vty")
            return self._vty[key]

    def _close_vty(self, lab: str) -> None:
        with self._vty_lock:
            for key in [k for k in self._vty if k[0] == lab]:
                self._vty.pop(key).close()


def _pathspaces() -> set[str]:
    """Names under FRR's state and config directories that look like fablab namespaces; none
    from a directory this user may not list (FRR's are root's and frr's: `fablab status` as
    another user still answers, for the labs it can see)."""
    found = set()
    for d in (FRR_STATE, FRR_CONFIG):
        try:
            found |= {p.name for p in d.iterdir() if p.name.startswith(NS_PREFIX)}
        except (FileNotFoundError, NotADirectoryError, PermissionError):
            continue
    return found


def _pathspaces_of(lab: str) -> set[str]:
    return {ns for ns in _pathspaces() if lab_of_namespace(ns) == lab}
