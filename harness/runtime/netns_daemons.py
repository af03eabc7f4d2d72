"""What the netns runtime starts in a booted fabric: the lossless data plane on the BE ports,
FRR on every switch (zebra first, then bgpd and bfdd once zebra listens), and the BFD data
plane; each pid on disk as soon as it exists."""
from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Collection

from harness.core.declarations import Role
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
# On xlarge (4,128) both ends of every session dialling each second collided: about 2,000
# Cease/Connection-Collision and 450 Hold-Timer-Expired notifications in one boot; held and
# released from the top, 51-55 s to converged against 60-71 s the same evening, and 85-92 s of
# CPU against 105-127 s (bench_boot.py xlarge). `large` (1,056) is below, unchanged.
HOLD_FROM = int(os.environ.get("FABLAB_HOLD_SESSIONS_FROM", "2000"))
GROUP = "fabric"  # the peer group of fablab's render (frr.conf.j2) that holds every fabric session
HELD = f" neighbor {GROUP} shutdown"
# ... and each bgpd in FRR's read-only mode (`update-delay`) from its first session up until
# every one of its peers is (or this many seconds): no best path, no update sent, no route
# installed while its sessions come up, then its tables once. 0: not used.
UPDATE_DELAY_S = int(os.environ.get("FABLAB_UPDATE_DELAY_S", "300"))
# ... and a peer not up is tried again only this often, not each second: released tier by tier
# from the top, an upper switch's first try meets a peer still shut and it then waits for the
# lower end to connect, so each session is one connection. Released all at once, both ends of
# every session connected each second and collided (2,354 collisions on one super-spine in
# 5 minutes at gpu4096), and under that load OPENs went unanswered for the 9 s hold time.
CONNECT_HELD_S = int(os.environ.get("FABLAB_CONNECT_HELD_S", "30"))
_CONNECT = f"neighbor {GROUP} timers connect"
# the order the tiers are released in: the upper end of every session first
_TIER = {Role.BE_SUPERSPINE: 0, Role.BE_SPINE: 1, Role.FE_SPINE: 1, Role.BE_LEAF: 2, Role.FE_LEAF: 2}


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
    """bgpd's part with the fabric peer group shut down, read-only until its peers are up and
    slow to retry them, or None if it has no such group."""
    lines = [x for x in bgpd_part.split("\n") if not x.strip().startswith(_CONNECT)]
    for i, line in enumerate(lines):
        if line.strip() == f"neighbor {GROUP} peer-group":
            holding = [HELD, f" {_CONNECT} {CONNECT_HELD_S}"]
            holding += [f" update-delay {UPDATE_DELAY_S}"] if UPDATE_DELAY_S else []
            return "\n".join(lines[:i + 1] + holding + lines[i + 1:])
    return None


def holding(plan: Plan, parts: dict[str, dict[str, str]]) -> dict[str, str]:
    """The switches whose sessions a held boot holds (those with the fabric group): switch ->
    bgpd's part as rendered."""
    return {sw.name: parts[sw.name]["bgpd"] for sw in plan.switches
            if "bgpd" in parts.get(sw.name, {}) and held(parts[sw.name]["bgpd"]) is not None}


def _each(plan: Plan, lab: str, switches: Collection[str], commands: Callable[[str], list[str]]) -> None:
    """`commands(switch)` under `router bgp` on each switch's bgpd, 4 at a time over its vty
    socket (not vtysh: each parses FRR's whole grammar)."""
    asn = {sw.name: sw.asn for sw in plan.switches}

    def one(name: str) -> None:
        vty = VtyClient(frr_node(lab, name).directory / "bgpd.vty", timeout=60.0)
        try:
            for command in ["configure terminal", f"router bgp {asn[name]}", *commands(name)]:
                vty.command(command)
        finally:
            vty.close()

    parallel.map_all(one, sorted(switches), workers=4)  # an interrupt drops the rest: the teardown follows


def release(plan: Plan, lab: str, held_on: dict[str, str], progress: Progress) -> None:
    """Every held peer group opened, as an operator's `no neighbor fabric shutdown`, tier by
    tier from the top; bgpd's part on disk is the rendered one again, what a bgpd started
    again would read (held_on: switch -> bgpd's part as rendered)."""
    tier = {sw.name: _TIER.get(sw.role, 2) for sw in plan.switches}
    tiers = sorted({tier[name] for name in held_on})
    progress("daemons", f"releasing the BGP sessions of {len(held_on)} switches, every bgpd running"
                        + (f", in {len(tiers)} tiers from the top" if len(tiers) > 1 else ""))
    for rank in tiers:
        interrupt.checkpoint()
        _each(plan, lab, [name for name in held_on if tier[name] == rank], lambda name: [f"no {HELD.strip()}"])
    for name, part in held_on.items():
        frr_node(lab, name).daemon_config("bgpd").write_text(part)


def settle(plan: Plan, lab: str, held_on: dict[str, str], progress: Progress) -> None:
    """Once the boot has converged (or given up), the held switches' running configuration
    made the rendered one again: their connect timer as rendered (no session that is up is
    touched), no read-only mode (a later `clear bgp *` behaves as on any lab)."""
    if not held_on:
        return
    progress("daemons", f"the BGP timers of {len(held_on)} switches as rendered again")

    def rendered(name: str) -> list[str]:
        connect = [x.strip() for x in held_on[name].split("\n") if x.strip().startswith(_CONNECT)]
        return (connect or [f"no {_CONNECT}"]) + (["no update-delay"] if UPDATE_DELAY_S else [])

    _each(plan, lab, held_on, rendered)


def start(plan: Plan, lab: str, state: LabState, parts: dict[str, dict[str, str]], configs: dict[str, str],
          progress: Progress, defer: bool = False, config_dbs: dict[str, str] | None = None,
          held_on: dict[str, str] | None = None) -> LabState:
    """parts: node -> daemon -> the config it reads at start; configs: node -> its whole frr.conf.
    held_on: the switches whose fabric sessions are held shut until every bgpd runs (`holding`)."""
    names = frr_names(plan)
    nodes = [frr_node(lab, name) for name in names]
    held_on = held_on or {}
    for name, node in zip(names, nodes):
        part = parts[name]
        if name in held_on:
            part = {**part, "bgpd": held(part["bgpd"])}
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
