"""What the netns runtime starts in a booted fabric: the lossless data plane on the BE ports,
FRR on every switch (zebra first, then bgpd and bfdd once zebra listens), and the BFD data
plane; each pid on disk as soon as it exists."""
from __future__ import annotations

import json
import os
import time

from harness.core.plan import Plan
from harness.observe.convergence import cached_expectations
from harness.plumbing import interrupt
from harness.render.sonic import config_db_json
from harness.runtime import bfd_offload, lossless_dp
from harness.runtime.base import Progress
from harness.runtime.frr import frr_names, frr_node
from harness.runtime.state import Daemon, LabState, record_started

PROGRESS_S = 10.0
# Below this many BFD sessions their packets cost little, and starting bfdd with bgpd converges
# sooner (measured: ai-cluster's 40 sessions).
DEFER_BFD_FROM = int(os.environ.get("FABLAB_DEFER_BFD_FROM", "1000"))


def started(state: LabState, switch: str, pids: dict[str, int]) -> LabState:
    new = tuple(Daemon(switch, name, pid) for name, pid in pids.items())
    record_started(state.lab, new)  # every pid on disk as soon as it exists
    return state.with_(daemons=state.daemons + new)


def defer_bfd(plan: Plan) -> bool:
    if bfd_offload.uses_offload(plan.fabric.cluster.bfd):
        return False  # offloaded, BFD costs the CPU next to nothing
    return sum(e.bfd for e in cached_expectations(plan).values()) >= DEFER_BFD_FROM


def start(plan: Plan, lab: str, state: LabState, parts: dict[str, dict[str, str]], configs: dict[str, str],
          progress: Progress, defer: bool = False, config_dbs: dict[str, str] | None = None) -> LabState:
    """parts: node -> daemon -> the config it reads at start; configs: node -> its whole frr.conf."""
    names = frr_names(plan)
    nodes = [frr_node(lab, name) for name in names]
    for name, node in zip(names, nodes):
        node.prepare(configs[name], parts[name])
    running: dict[str, dict] = {}
    for sw in plan.switches:
        # kept for `fablab audit LAB`; the lossless data plane acts on it as an ASIC would
        text = (config_dbs or {}).get(sw.name) or config_db_json(plan, sw)
        (frr_node(lab, sw.name).directory / "config_db.json").write_text(text)
        if sw.lossless:
            running[sw.name] = json.loads(text)
    if lossless_dp.uses(plan):  # the ports as an ASIC runs them before any routing daemon sees them
        dp = lossless_dp.start(plan, lab, running, progress=progress)
        state = started(state, dp.node, {dp.name: dp.pid})
    hosts = f" and {len(names) - len(plan.switches)} dual-homed hosts" if len(names) > len(plan.switches) else ""
    progress("daemons", f"starting FRR (zebra, bgpd, bfdd) on {len(plan.switches)} switches{hosts}"
                        + (" (bfdd once BGP is up)" if defer else ""))
    for name, node in zip(names, nodes):
        state = started(state, name, node.start(("zebra",)))
    offload = bfd_offload.uses_offload(plan.fabric.cluster.bfd)
    if offload:  # before bfdd: it connects as each bfdd listens, before bgpd hands it sessions
        dp = bfd_offload.start(lab, names)
        state = started(state, dp.node, {dp.name: dp.pid})
    # bfdd and bgpd retry a missing zebra only every few seconds: start them once zebra listens.
    now = ("bgpd",) if defer else ("bfdd", "bgpd")
    said = time.monotonic()
    for i, (name, node) in enumerate(zip(names, nodes)):
        interrupt.checkpoint()  # a loop of minutes at scale, whose waits may never poll (sockets already there)
        if time.monotonic() - said > PROGRESS_S:
            progress("daemons", f"{' and '.join(now)} started on {i}/{len(names)} nodes")
            said = time.monotonic()
        node.wait_for(["zserv.api"])
        state = started(state, name, node.start(now, None if offload else plan.fabric.cluster.bfd.interval_ms,
                                                bfd_offload.dplane_socket(lab, name) if offload else None))
    for node in nodes:
        interrupt.checkpoint()
        node.wait_for([f"{daemon}.vty" for daemon in ("zebra",) + now])
    return state


def start_bfdd(plan: Plan, lab: str, state: LabState, progress: Progress) -> LabState:
    """bfdd on every node, once BGP has converged without it (`defer_bfd`)."""
    names = frr_names(plan)
    progress("bfd", f"starting bfdd on {len(names)} nodes")
    nodes = [frr_node(lab, name) for name in names]
    for name, node in zip(names, nodes):
        state = started(state, name, node.start(("bfdd",), plan.fabric.cluster.bfd.interval_ms))
    for node in nodes:
        node.wait_for(["bfdd.vty"])
    return state
