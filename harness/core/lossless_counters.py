"""What the lossless data plane counted, per BE port: PFC frames per priority (as SONiC's `show
pfc counters`), each queue's packets, drops, ECN marks, depth and pause state (`show queue
counters`, `show pfc watchdog stats`), CNPs. Read from fablab-lossless-dp's status document;
`minus` gives what happened between two reads, which is what a check judges."""
from __future__ import annotations

from dataclasses import dataclass, fields, replace


@dataclass(frozen=True)
class PriorityCounters:
    pfc_rx: int = 0  # PFC frames received with this priority's bit (pause or XON)
    pfc_tx: int = 0  # sent
    pfc_rx_ignored: int = 0  # received where PFC is off for it (or its queue's storm is being dropped)
    in_drops: int = 0  # packets that came in by this port, dropped at an egress queue (no headroom left)
    holding_peer: bool = False  # this port keeps its peer paused now
    # The pauses this port sent, timed from the XOFF that began each hold to its peer's queue
    # paused: how many, how many took longer than this port's headroom lasts at the peer's rate
    # (what was in flight meanwhile could overrun it: the lag plus the frame's own transit,
    # which what the peer had sent took the other way; or the pause ran out at the peer while
    # this port still held it, `pauses_expired`), their lags summed, and the worst since the
    # data plane started (a state, not a count: the later read's)
    pauses_timed: int = 0
    pauses_late: int = 0
    pauses_expired: int = 0
    pause_lag_ms: float = 0.0
    pause_lag_max_ms: float = 0.0


@dataclass(frozen=True)
class QueueCounters:
    enq_pkts: int = 0
    enq_bytes: int = 0
    deq_pkts: int = 0
    drop_pkts: int = 0
    drop_bytes: int = 0
    wd_drops: int = 0  # dropped by the PFC watchdog (a storm)
    marked: int = 0  # CE marks (WRED/ECN)
    peak_bytes: int = 0  # deepest since boot
    depth_bytes: int = 0  # now
    xoff: bool = False  # past xoff now: its feeders are paused
    paused: bool = False  # paused by the peer now
    paused_ms: float = 0.0  # in all
    storm: bool = False  # the watchdog drops it now
    storms: int = 0
    restores: int = 0


_PRIORITY_COUNTS = ("pfc_rx", "pfc_tx", "pfc_rx_ignored", "in_drops", "pauses_timed", "pauses_late", "pauses_expired",
                    "pause_lag_ms")
_COUNTS = ("enq_pkts", "enq_bytes", "deq_pkts", "drop_pkts", "drop_bytes", "wd_drops", "marked", "paused_ms",
           "storms", "restores")


@dataclass(frozen=True)
class PortCounters:
    node: str
    port: str
    rate_bps: int  # the port's scaled rate
    pfc: frozenset[int]  # priorities with PFC on
    priorities: tuple[PriorityCounters, ...]
    queues: tuple[QueueCounters, ...]
    cnp_tx: int = 0
    ce_rx: int = 0

    @property
    def name(self) -> str:
        return f"{self.node}:{self.port}"


@dataclass(frozen=True)
class LosslessCounters:
    ports: tuple[PortCounters, ...]
    cpu_s: float = 0.0  # the data plane's CPU time since it started

    def port(self, node: str, port: str) -> PortCounters | None:
        return next((p for p in self.ports if p.node == node and p.port == port), None)

    def of(self, node: str) -> tuple[PortCounters, ...]:
        return tuple(p for p in self.ports if p.node == node)

    def minus(self, before: LosslessCounters) -> LosslessCounters:
        """What was counted since `before`; states (depth, pause, xoff) and peaks are the later read's."""
        old = {(p.node, p.port): p for p in before.ports}
        out = []
        for p in self.ports:
            b = old.get((p.node, p.port))
            if b is None:
                out.append(p)
                continue
            prios = tuple(replace(a, **{k: getattr(a, k) - getattr(o, k) for k in _PRIORITY_COUNTS})
                          for a, o in zip(p.priorities, b.priorities))
            queues = tuple(replace(a, **{k: getattr(a, k) - getattr(o, k) for k in _COUNTS})
                           for a, o in zip(p.queues, b.queues))
            out.append(replace(p, priorities=prios, queues=queues, cnp_tx=p.cnp_tx - b.cnp_tx, ce_rx=p.ce_rx - b.ce_rx))
        return LosslessCounters(tuple(out), round(self.cpu_s - before.cpu_s, 3))


def _known(cls, data: dict) -> dict:
    names = {f.name for f in fields(cls)}
    return {k: v for k, v in data.items() if k in names}


def from_status(doc: dict) -> LosslessCounters:
    ports = []
    for p in doc.get("ports", []):
        ports.append(PortCounters(
            node=p["node"], port=p["port"], rate_bps=int(p.get("rate_bps", 0)),
            pfc=frozenset(i for i in range(8) if int(p.get("pfc", 0)) >> i & 1),
            priorities=tuple(PriorityCounters(**{k: (bool(v) if k == "holding_peer" else
                                                     float(v) if k.endswith("_ms") else int(v))
                                                 for k, v in _known(PriorityCounters, x).items()})
                             for x in p.get("priorities", [])),
            queues=tuple(QueueCounters(**{k: (bool(v) if k in ("xoff", "paused", "storm")
                                              else float(v) if k == "paused_ms" else int(v))
                                          for k, v in _known(QueueCounters, x).items()})
                         for x in p.get("queues", [])),
            cnp_tx=int(p.get("cnp_tx", 0)), ce_rx=int(p.get("ce_rx", 0))))
    return LosslessCounters(tuple(ports), float(doc.get("cpu_s", 0.0)))
