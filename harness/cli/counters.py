"""`fablab counters LAB NODE [--pfc] [--queues] [--json] [--watch [SECONDS]]`: what the lab's
lossless data plane counted on one node's BE ports, printed as a SONiC switch prints it, so an
engineer reads it as they would on the real box: `show pfc counters` (Port Rx / Port Tx, PFC0..7)
and `show queue counters` (UC0..UC7 packets, bytes, drops), with what SONiC spreads over `show
queue wredcounters`, `show queue watermark` and `show pfc watchdog stats` beside the queue rows.

The rows are built from `LosslessCounters` by pure functions (tested on counters built by hand);
only `cmd_counters` reads a lab.
"""
from __future__ import annotations

import argparse
import json
import re
import time
from dataclasses import asdict, dataclass
from enum import Enum

from rich import box
from rich.console import Console, Group
from rich.table import Table
from rich.text import Text

from harness.cli.console import out
from harness.core.capabilities import Feature
from harness.core.errors import HarnessError, InputError
from harness.core.lossless_counters import LosslessCounters, PortCounters, QueueCounters
from harness.core.model import Plane
from harness.lab import Lab

PRIORITIES = 8  # 802.1Qbb: one PFC class per priority, one egress queue per class
WATCH_DEFAULT_S = 2.0  # --watch with no value
NAMES_LISTED = 24  # an error lists at most this many BE nodes (a 4096-GPU lab has thousands)


class Direction(Enum):
    """Which PFC table: frames the port received (its peer paused it) or sent (it paused its peer)."""

    RX = "Rx"
    TX = "Tx"


class QueueState(Enum):
    """What a queue is doing now (the data plane's flags at the read)."""

    XOFF = "xoff"  # past its xoff threshold: this port pauses the ports feeding it
    PAUSED = "paused"  # its peer paused it: it sends nothing on this priority
    STORM = "storm"  # the PFC watchdog found it paused too long and drops what it holds


@dataclass(frozen=True)
class PfcRow:
    port: str
    frames: tuple[int, ...]  # per priority 0..7


@dataclass(frozen=True)
class QueueRow:
    port: str
    queue: int
    tx_pkts: int  # SONiC's Counter/pkts: what the queue sent
    tx_bytes: int  # Counter/bytes
    drop_pkts: int  # at the queue: past its headroom (lossless) or its threshold (lossy)
    drop_bytes: int
    ecn_marked: int  # CE marks by its WRED profile
    wd_drops: int  # dropped by the PFC watchdog during a storm
    depth_bytes: int  # now
    peak_bytes: int  # since the data plane started (a watermark SONiC never clears by itself)
    paused_ms: float  # held by its peer's pauses, in the lab's (scaled) time
    storms: int  # storms the watchdog detected
    states: tuple[QueueState, ...]


@dataclass(frozen=True)
class PortRow:
    port: str
    rate_bps: int  # scaled
    speed_g: int  # the declared speed: rate_bps * time_scale
    pfc_on: tuple[int, ...]
    holding_peer: tuple[int, ...]  # priorities on which this port keeps its peer paused now
    cnp_tx: int  # CNPs sent (a GPU NIC answering CE marks)
    ce_rx: int  # CE-marked RoCEv2 packets received (a GPU NIC)


@dataclass(frozen=True)
class NodeCounters:
    """One node's rows, as one read (or the difference of two reads, `interval_s` apart) gives them."""

    lab: str
    node: str
    time_scale: int
    interval_s: float | None  # None: counted since the data plane started
    ports: tuple[PortRow, ...]
    pfc_rx: tuple[PfcRow, ...]
    pfc_tx: tuple[PfcRow, ...]
    pfc_rx_ignored: tuple[PfcRow, ...]  # frames for a priority with PFC off (or whose storm is dropped)
    in_drops: tuple[PfcRow, ...]  # packets in by this port, per priority, dropped at an egress queue
    queues: tuple[QueueRow, ...]


def _port_key(name: str) -> tuple:
    """Ethernet8 before Ethernet256, as SONiC orders ports (by number, not by text)."""
    return tuple(int(p) if p.isdigit() else p for p in re.split(r"(\d+)", name))


def _tx_bytes(q: QueueCounters) -> int:
    # The data plane counts bytes in (dropped ones are not enqueued) and what is still queued;
    # what left is the difference.
    return max(q.enq_bytes - q.depth_bytes, 0)


def _states(q: QueueCounters) -> tuple[QueueState, ...]:
    return tuple(s for s, on in ((QueueState.XOFF, q.xoff), (QueueState.PAUSED, q.paused),
                                 (QueueState.STORM, q.storm)) if on)


def node_counters(lab: str, node: str, time_scale: int, now: LosslessCounters,
                  before: LosslessCounters | None = None, interval_s: float | None = None) -> NodeCounters:
    """The rows of `node`'s ports: totals of `now`, or with `before` what was counted between the
    two reads (states, depths and peaks are `now`'s)."""
    ports = sorted(now.of(node), key=lambda p: _port_key(p.port))
    old = {p.port: p for p in before.of(node)} if before is not None else {}
    diff = {p.port: p for p in now.minus(before).of(node)} if before is not None else {}

    def counted(p: PortCounters) -> PortCounters:
        return diff.get(p.port, p)

    def per_priority(field: str) -> tuple[PfcRow, ...]:
        return tuple(PfcRow(p.port, tuple(getattr(x, field) for x in counted(p).priorities)) for p in ports)

    queues = []
    for p in ports:
        b = old.get(p.port)
        for i, (q, d) in enumerate(zip(p.queues, counted(p).queues)):
            tx_bytes = _tx_bytes(q) - (_tx_bytes(b.queues[i]) if b is not None and i < len(b.queues) else 0)
            queues.append(QueueRow(p.port, i, d.deq_pkts, tx_bytes, d.drop_pkts, d.drop_bytes, d.marked, d.wd_drops,
                                   q.depth_bytes, q.peak_bytes, round(d.paused_ms, 1), d.storms, _states(q)))
    rows = tuple(PortRow(p.port, p.rate_bps, round(p.rate_bps * time_scale / 1e9), tuple(sorted(p.pfc)),
                         tuple(i for i, x in enumerate(p.priorities) if x.holding_peer), counted(p).cnp_tx,
                         counted(p).ce_rx) for p in ports)
    return NodeCounters(lab, node, time_scale, interval_s, rows, per_priority("pfc_rx"), per_priority("pfc_tx"),
                        per_priority("pfc_rx_ignored"), per_priority("in_drops"), tuple(queues))


# ---------------------------------------------------------------------------------------- text

def _n(value: int) -> str:
    return f"{value:,}"  # SONiC's pfcstat and queuestat print counts with thousands separators


def _rate(bps: int) -> str:
    return f"{bps / 1e9:g} Gbit/s" if bps >= 1e9 else f"{bps / 1e6:g} Mbit/s" if bps >= 1e6 else f"{bps / 1e3:g} kbit/s"


def _pfc_table(rows: tuple[PfcRow, ...], head: str) -> Table:
    t = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False)
    t.add_column(head, justify="right")
    for i in range(PRIORITIES):
        t.add_column(f"PFC{i}", justify="right")
    for r in rows:
        t.add_row(r.port, *(_n(x) for x in r.frames))
    return t


def pfc_tables(c: NodeCounters) -> list[Table | Text]:
    """SONiC's `show pfc counters`: Port Rx, then Port Tx; then, only where any is counted, the
    frames ignored and the packets dropped per priority (SONiC has no table of its own for them)."""
    parts: list[Table | Text] = [_pfc_table(c.pfc_rx, "Port Rx"), _pfc_table(c.pfc_tx, "Port Tx")]
    if any(any(r.frames) for r in c.pfc_rx_ignored):
        parts.append(_pfc_table(c.pfc_rx_ignored, "Rx ignored"))
    if any(any(r.frames) for r in c.in_drops):
        parts.append(_pfc_table(c.in_drops, "In drops"))
    holding = [f"{p.port} (PFC{', PFC'.join(map(str, p.holding_peer))})" for p in c.ports if p.holding_peer]
    if holding:
        parts.append(Text("holding its peer paused now: " + ", ".join(holding)))
    return parts


def queue_tables(c: NodeCounters) -> list[Table]:
    """Each port's rate, PFC priorities and CNPs; then SONiC's `show queue counters` (one row per
    port and unicast queue) with the ECN marks, watermark, pause time and watchdog beside it."""
    ports = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False)
    for col, just in (("Port", "right"), ("Rate (scaled)", "right"), ("Speed", "right"), ("PFC on", "left"),
                      ("CNP/tx", "right"), ("CE/rx", "right")):
        ports.add_column(col, justify=just)  # type: ignore[arg-type]
    for p in c.ports:
        ports.add_row(p.port, _rate(p.rate_bps), f"{p.speed_g}G", ",".join(map(str, p.pfc_on)) or "none",
                      _n(p.cnp_tx), _n(p.ce_rx))
    t = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False)
    for col in ("Port", "TxQ", "Counter/pkts", "Counter/bytes", "Drop/pkts", "Drop/bytes", "EcnMarked/pkts",
                "WdDrop/pkts", "Depth/bytes", "Peak/bytes", "Paused/ms", "Storms"):
        t.add_column(col, justify="right")
    t.add_column("State")
    for q in c.queues:
        t.add_row(q.port, f"UC{q.queue}", _n(q.tx_pkts), _n(q.tx_bytes), _n(q.drop_pkts), _n(q.drop_bytes),
                  _n(q.ecn_marked), _n(q.wd_drops), _n(q.depth_bytes), _n(q.peak_bytes), f"{q.paused_ms:,.1f}",
                  _n(q.storms), " ".join(s.value for s in q.states))
    return [ports, t]


def title(c: NodeCounters) -> str:
    when = "since the data plane started" if c.interval_s is None else f"in the last {c.interval_s:.1f} s"
    return f"{c.lab} {c.node}: lossless data plane counters, {when}"


def footer(c: NodeCounters) -> str:
    """What is scaled and what is real, with this node's own speeds as the example."""
    speeds = sorted({(p.speed_g, p.rate_bps) for p in c.ports}, reverse=True)
    examples = ", ".join(f"{g}G → {_rate(bps)}" for g, bps in speeds)
    return (f"scaled: every port runs at its speed / time_scale {c.time_scale} ({examples}), and times (Paused/ms, "
            f"pause quanta, the watchdog's) run {c.time_scale}× longer than on hardware; packets, bytes and queue "
            "depths are real")


def renderable(c: NodeCounters, pfc: bool, queues: bool) -> Group:
    parts: list = [Text(title(c), style="bold")]
    for part in (pfc_tables(c) if pfc else []) + (queue_tables(c) if queues else []):
        parts += [Text(""), part]  # a blank line between tables, as SONiC prints Port Rx and Port Tx
    parts += [Text(""), Text(footer(c), style="dim")]
    return Group(*parts)


def document(c: NodeCounters, pfc: bool, queues: bool) -> dict:
    """The --json document: the same rows, each field named."""
    doc: dict = {"lab": c.lab, "node": c.node, "time_scale": c.time_scale, "interval_s": c.interval_s,
                 "ports": [asdict(p) for p in c.ports], "scaled": footer(c)}
    if pfc:
        doc["pfc"] = {"rx": [asdict(r) for r in c.pfc_rx], "tx": [asdict(r) for r in c.pfc_tx],
                      "rx_ignored": [asdict(r) for r in c.pfc_rx_ignored], "in_drops": [asdict(r) for r in c.in_drops]}
    if queues:
        doc["queues"] = [{**asdict(q), "states": [s.value for s in q.states]} for q in c.queues]
    return doc


# ----------------------------------------------------------------------------------------- lab

def _listing(names: list[str]) -> str:
    shown = ", ".join(names[:NAMES_LISTED])
    return shown + (f", ... ({len(names)} in all)" if len(names) > NAMES_LISTED else "")


def _checked(lab: Lab, node: str) -> None:
    """The node is one of the lab's BE nodes and the lab runs the lossless data plane; else an
    InputError (exit 2) that says which nodes there are, or why the lab counts nothing."""
    be = lab.nodes(Plane.BE)
    if node not in be:
        what = f"{node!r} has no BE port (the lossless data plane counts BE ports only)" if node in lab.nodes() \
            else f"lab {lab.name} has no node {node!r}"
        raise InputError(f"{what}; BE nodes (switches and GPU nodes): {_listing(be)}")
    why = lab.lacks(Feature.LOSSLESS_DATA_PATH)
    if why is not None:
        raise InputError(f"lab {lab.name} ({lab.state.runtime}) has no lossless data plane to count: {why}")


def cmd_counters(args: argparse.Namespace) -> int:
    from harness.plumbing import wait

    if args.json and args.watch is not None:
        raise InputError("--json prints one document and --watch redraws: give one of them")
    if args.watch is not None and args.watch <= 0:
        raise InputError(f"--watch {args.watch:g}: the seconds between reads must be more than 0")
    pfc, queues = (args.pfc or not args.queues), (args.queues or not args.pfc)  # neither flag: both
    lab = Lab.attach(args.lab)
    _checked(lab, args.node)
    scale = lab.plan.fabric.cluster.lossless.time_scale

    def read() -> tuple[LosslessCounters, float]:
        counters = lab.lossless_counters()
        if not counters.of(args.node):
            raise HarnessError(f"the lossless data plane of lab {lab.name} counts no port of {args.node}, a BE node; "
                               "`fablab status` and `fablab down`/`up` bring it back")
        return counters, time.monotonic()

    now, at = read()
    first = node_counters(lab.name, args.node, scale, now)
    if args.json:
        print(json.dumps(document(first, pfc, queues), indent=2))
        return 0
    if args.watch is None:
        out.print(renderable(first, pfc, queues), soft_wrap=True)
        return 0
    return _watch(lab.name, args.node, scale, (now, at), read, args.watch, pfc, queues, wait.pause_until)


def _watch(lab: str, node: str, scale: int, first: tuple[LosslessCounters, float], read, every_s: float,
           pfc: bool, queues: bool, pause_until) -> int:
    """Totals first, then every `every_s` what was counted since the read before, until Ctrl-C.
    On a terminal each read replaces the last (rich's Live); into a pipe they follow each other."""
    from rich.live import Live

    before, at = first
    shown = node_counters(lab, node, scale, before)
    live = Live(renderable(shown, pfc, queues), console=out, auto_refresh=False) if out.is_terminal else None
    try:
        if live is None:
            out.print(renderable(shown, pfc, queues), soft_wrap=True)
        else:
            live.start()
        next_at = at + every_s
        while True:  # a sampler, not a wait: it ends on Ctrl-C only
            pause_until(next_at)
            now, now_at = read()
            shown = node_counters(lab, node, scale, now, before, round(now_at - at, 1))
            if live is None:
                out.print(renderable(shown, pfc, queues), soft_wrap=True)
            else:
                live.update(renderable(shown, pfc, queues), refresh=True)
            before, at, next_at = now, now_at, next_at + every_s
    except KeyboardInterrupt:
        return 130
    finally:
        if live is not None:
            live.stop()


def print_to(console: Console, c: NodeCounters, pfc: bool = True, queues: bool = True) -> None:
    """The text `fablab counters` prints, on any console (a test's recording one)."""
    console.print(renderable(c, pfc, queues), soft_wrap=True)


def _seconds(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected seconds, e.g. 2 or 0.5") from None


def register(sub: argparse._SubParsersAction) -> None:
    s = sub.add_parser("counters", help="a BE node's PFC and queue counters from the lab's lossless data plane, as "
                                        "SONiC's show pfc counters / show queue counters print them")
    s.add_argument("lab", help="a lab booted by `fablab up` (netns runtime, lossless data plane on)")
    s.add_argument("node", help="a BE switch or a GPU node")
    s.add_argument("--pfc", action="store_true", help="PFC frames per port and priority, Rx and Tx (show pfc counters)")
    s.add_argument("--queues", action="store_true",
                   help="per port and queue: packets, bytes, drops, ECN marks, depth now and peak, paused ms, "
                        "watchdog storms (show queue counters); neither flag: both")
    s.add_argument("--json", action="store_true", help="one JSON document with the same rows")
    s.add_argument("--watch", type=_seconds, nargs="?", const=WATCH_DEFAULT_S, default=None, metavar="SECONDS",
                   help=f"read again every SECONDS (default {WATCH_DEFAULT_S:g}) and show what was counted since the "
                        "read before, until Ctrl-C")
    s.set_defaults(func=cmd_counters)
