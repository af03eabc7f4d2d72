"""What `fablab view` shows of a running lab, looked at now: every cable's state and counters,
every switch's BGP and BFD sessions, the faults in place and the last check verdicts, drawn
on the lab's topology (planes, rails, pods).

On a lab with the lossless data plane each BE link also shows its scaled rate, its load since
the page was made before, its drops, queue depth and pause state, and each switch's uplinks
the packets they carried since then (harness.report.fabric_load); the reads are passed from
one snapshot to the next (`Snapshot.reading`).

A cable is `down` when either end has lost its carrier, `failed` when its carriers are up but
a BGP or BFD session on it is not (a gray failure looks like this: only BFD can tell), else
`up`. Nothing here is told by fablab's fault injection: a cable broken by hand shows the same.
"""
from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass
from pathlib import Path

from harness.core.capabilities import Feature
from harness.core.errors import HarnessError
from harness.core.model import Plane
from harness.plumbing.labview import LabView
from harness.render.diagram import LinkNote, topology_svg
from harness.report.fabric_load import EndReading, LinkLoad, Reading, UplinkShare, link_loads, uplink_spread
from harness.render.templates import render_template

REFRESH_S = 3


@dataclass(frozen=True)
class LinkView:
    a: str  # node:port
    b: str
    plane: str
    state: str  # up | failed | down
    why: str  # what made it failed or down
    a_rx: int
    a_tx: int
    b_rx: int
    b_tx: int


@dataclass(frozen=True)
class SessionView:
    switch: str
    bgp_up: int
    bgp: int
    bfd_up: int
    bfd: int
    down: tuple[str, ...]  # "Ethernet0 BGP Active", "Ethernet0 BFD down"


@dataclass(frozen=True)
class Snapshot:
    lab: str
    topology: str
    runtime: str
    taken: str
    links: tuple[LinkView, ...]
    sessions: tuple[SessionView, ...]
    faults: tuple[dict, ...]
    verdicts: tuple[dict, ...]  # the last `fablab check` of this lab: check, passed, reason
    verdicts_from: str
    svg: str
    reading: Reading  # this look's counters, for the next snapshot's "since then"
    since_s: float | None  # seconds since the look before; None on the first
    time_scale: int
    lossless_why: str  # why the lab has no lossless data plane; "" where it has one
    be_links: tuple[LinkLoad, ...] = ()
    uplinks: tuple[UplinkShare, ...] = ()


def snapshot(lab: LabView, topology: str, runtime: str, faults: list[dict], results: Path | None = None,
             before: Reading | None = None) -> Snapshot:
    """The lab now; `before`: the previous snapshot's reading, for what happened since."""
    plan = lab.plan
    counters = {}
    for node in {n for c in plan.cables if c.plane is not Plane.MGMT for n in (c.a_node, c.b_node)}:
        counters[node] = lab.counters(node)
    why = lab.lacks(Feature.LOSSLESS_DATA_PATH) or ""
    lossless = None
    if not why:
        try:
            lossless = lab.lossless_counters()
        except HarnessError as e:  # its data plane is gone: the rest of the page still tells the truth
            why = str(e)
    reading = Reading(time.monotonic(), tuple(
        EndReading(node, port, x.rx_packets, x.tx_packets)
        for c in plan.cables if c.plane is Plane.BE for node, port in ((c.a_node, c.a_port), (c.b_node, c.b_port))
        if (x := counters[node].get(port)) is not None), lossless)
    bad: dict[tuple[str, str], str] = {}  # (switch, port) -> what is not up on it
    sessions = []
    routed = [s.name for s in plan.switches] + [h.name for h in plan.hosts if h.routed]
    for node in routed:
        bgp, bfd = lab.bgp_peers(node), lab.bfd_peers(node)
        down = [f"{p.peer} BGP {p.state}" for p in bgp if not p.established]
        down += [f"{p.interface} BFD {p.status}" for p in bfd if not p.up]
        for p in bgp:
            if not p.established:
                bad[(node, p.peer)] = f"BGP {p.state} on {node}:{p.peer}"
        for p in bfd:
            if not p.up:
                bad[(node, p.interface)] = f"BFD {p.status} on {node}:{p.interface}"
        sessions.append(SessionView(node, sum(p.established for p in bgp), len(bgp), sum(p.up for p in bfd), len(bfd),
                                    tuple(down)))
    links = []
    for c in plan.cables:
        if c.plane is Plane.MGMT:
            continue
        ca = counters[c.a_node].get(c.a_port)
        cb = counters[c.b_node].get(c.b_port)
        if ca is None or cb is None or not (ca.carrier and cb.carrier):
            state, why = "down", "no carrier" if ca and cb else "an end is missing"
        elif (c.a_node, c.a_port) in bad or (c.b_node, c.b_port) in bad:
            state, why = "failed", bad.get((c.a_node, c.a_port)) or bad[(c.b_node, c.b_port)]
        else:
            state, why = "up", ""
        links.append(LinkView(f"{c.a_node}:{c.a_port}", f"{c.b_node}:{c.b_port}", c.plane.value, state, why,
                              ca.rx_packets if ca else 0, ca.tx_packets if ca else 0,
                              cb.rx_packets if cb else 0, cb.tx_packets if cb else 0))
    states = {(lv.a, lv.b): lv.state for lv in links}
    verdicts, source = last_verdicts(results, lab.name) if results else ((), "")
    loads = link_loads(plan, reading, before)
    notes = tuple(LinkNote(lv.a, lv.b, lv.label, lv.alert) for lv in loads)
    return Snapshot(lab.name, topology, runtime, time.strftime("%Y-%m-%d %H:%M:%S"), tuple(links), tuple(sessions),
                    tuple(faults), verdicts, source, topology_svg(plan, states, notes), reading,
                    round(reading.at_s - before.at_s, 1) if before is not None else None,
                    plan.fabric.cluster.lossless.time_scale, why, loads, uplink_spread(plan, reading, before))


def last_verdicts(results: Path, lab: str) -> tuple[tuple[dict, ...], str]:
    """The newest run of `fablab check` on this lab under `results` (its summary.json)."""
    runs = sorted(p for p in results.glob(f"*-{lab}-*")
                  if re.fullmatch(rf"\d{{8}}T\d{{6}}Z-{re.escape(lab)}-[0-9a-f]+", p.name) and (p / "summary.json").exists())
    if not runs:
        return (), ""
    checks = json.loads((runs[-1] / "summary.json").read_text()).get("checks", {})
    return tuple({"check": k, "passed": v.get("passed"), "reason": v.get("reason", "")} for k, v in checks.items()), \
        runs[-1].name


def page(snap: Snapshot) -> str:
    return render_template("view.html.j2", s=snap, refresh_s=REFRESH_S,
                           failed=[lv for lv in snap.links if lv.state != "up"],
                           paused=[lv for lv in snap.be_links if lv.pause.value],
                           dropped=[lv for lv in snap.be_links if lv.drops])
