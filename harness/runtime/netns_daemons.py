"""What the netns runtime starts in a booted fabric: the lossless data plane on the BE ports,
FRR on every switch (zebra first, then bgpd and bfdd once zebra listens), and the BFD data
plane; each pid on disk as soon as it exists."""
from __future__ import annotations

import json
import os
import time

from harness.core.plan import Plan
from harness.observe.convergence import cached_expectations
from harness.plumbing import interrupt, parallel
from harness.render.sonic import config_db_json
from harness.runtime import bfd_offload, lossless_dp
from harness.runtime.base import Progress
from harness.runtime.frr import frr_names, frr_node
from harness.runtime.state import Daemon, LabState, record_started
from harness.runtime.vty import VtyClient

PROGRESS_S = 10.0
# Below this many BFD sessions their packets cost little, and starting bfdd with bgpd converges
# sooner (measured: ai-cluster's 40 sessions).
DEFER_BFD_FROM = int(os.environ.get("FABLAB_DEFER_BFD_FROM", "1000"))
# From this many BGP sessions (counted at both ends) every fabric session is held shut while
# the daemons start and released once every bgpd runs. A bgpd started early otherwise tries
# each peer whose bgpd is not up yet once a second (`timers connect 1`): at gpu4096 the start
# took 12 minutes under a load of 500, the connects' link-local route lookups first in `perf`.
HOLD_FROM = int(os.environ.get("FABLAB_HOLD_SESSIONS_FROM", "5000"))
GROUP = "fabric"  # the peer group of fablab's render (frr.conf.j2) that holds every fabric session
HELD = f" neighbor {GROUP} shutdown"


def started(state: LabState, switch: str, pids: dict[str, int]) -> LabState:
    new = tuple(Daemon(switch, name, pid) for name, pid in pids.items())
    record_started(state.lab, new)  # every pid on disk as soon as it exists
    return state.with_(daemons=state.daemons + new)


def defer_bfd(plan: Plan) -> bool:
    if bfd_offload.uses_offload(plan.fabric.cluster.bfd):
        return False  # offloaded, BFD costs the CPU next to nothing
    return sum(e.bfd for e in cached_expectations(plan).values()) >= DEFER_BFD_FROM


def hold_sessions(plan: Plan, theirs: bool) -> bool:
    """Whether the fabric's sessions are held while the daemons start: fablab's own render
    (an engineer's configs keep their own peer groups) at HOLD_FROM sessions or more."""
    return not theirs and sum(e.sessions for e in cached_expectations(plan).values()) >= HOLD_FROM


def held(bgpd_part: str) -> str | None:
    """bgpd's part with the fabric peer group shut down, or None if it has no such group."""
    lines = bgpd_part.split("\n")
    for i, line in enumerate(lines):
        if line.strip() == f"neighbor {GROUP} peer-group":
            return "\n".join(lines[:i + 1] + [HELD] + lines[i + 1:])
    return None


def release(plan: Plan, lab: str, held_on: dict[str, str], progress: Progress) -> None:
    """Every held peer group opened, as an operator's `no neighbor fabric shutdown`: the
    running configuration is the rendered one again, and so is the part a bgpd started again
    would read (held_on: switch -> bgpd's part as rendered)."""
    asn = {sw.name: sw.asn for sw in plan.switches}
    progress("daemons", f"releasing the BGP sessions of {len(held_on)} switches, every bgpd running")

    def one(name: str) -> None:
        node = frr_node(lab, name)
        vty = VtyClient(node.directory / "bgpd.vty", timeout=60.0)  # not vtysh: each parses FRR's whole grammar
        try:
            for command in ("configure terminal", f"router bgp {asn[name]}", f"no {HELD.strip()}"):
                vty.command(command)
        finally:
            vty.close()
        node.daemon_config("bgpd").write_text(held_on[name])

    parallel.map_all(one, held_on, workers=4)  # an interrupt drops the rest: the teardown follows


def start(plan: Plan, lab: str, state: LabState, parts: dict[str, dict[str, str]], configs: dict[str, str],
          progress: Progress, defer: bool = False, config_dbs: dict[str, str] | None = None,
          hold: bool = False) -> LabState:
    """parts: node -> daemon -> the config it reads at start; configs: node -> its whole frr.conf.
    hold: the fabric's sessions held shut until every bgpd runs (`hold_sessions`)."""
    names = frr_names(plan)
    nodes = [frr_node(lab, name) for name in names]
    switches = {sw.name for sw in plan.switches}
    held_on: dict[str, str] = {}
    for name, node in zip(names, nodes):
        part = parts[name]
        if hold and name in switches and (shut := held(part["bgpd"])) is not None:
            held_on[name] = part["bgpd"]
            part = {**part, "bgpd": shut}
        node.prepare(configs[name], part)
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
    if held_on:
        release(plan, lab, held_on, progress)
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
