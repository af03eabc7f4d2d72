"""No lossless priority of the BE can deadlock: its buffers have no cyclic dependency.

PFC stops a sender when the receiver's ingress buffer fills; if the buffers of a set of links
each wait on the next and the last on the first, none ever drains (PFC deadlock), and the
watchdog only breaks it by dropping what the priority promised not to drop. The routes decide
which buffer waits on which: up-down routing (every path climbs, then descends) makes no
cycle; one route that sends a destination down to the wrong leaf, which sends it back up, does.

One case, static: `measure` reads each BE switch's kernel FIB, its running CONFIG_DB's
pfc_enable per port and the cables between BE switches as the kernels peer them (measure.py);
`judge` builds the buffer dependency graph per lossless priority (graph.py) from every BE GPU
address the plan declares and names every cycle link by link, with the routes that make each
step (judge.py). It sends no traffic, so it holds on every runtime: the FIBs and CONFIG_DB are
what SONiC-VS and the netns switches forward by, PFC or not.

It applies to rail-only plans too: it reads the kernels' cables, not the plan's, so a cable
between BE switches that nobody planned (and the routes over it) is judged; with none, no
buffer can wait on another switch's, and the verdict says that is why it holds.
"""
from __future__ import annotations

from harness.checks.base import Case, Check
from harness.checks.deadlock.graph import Channel, Lpm, components, dependencies, shortest_cycle
from harness.checks.deadlock.judge import Cycle, DeadlockResult, judge_deadlock
from harness.checks.deadlock.measure import fib_routes, measure_deadlock
from harness.checks.deadlock.observation import DeadlockSeen, FibRoute, Wire
from harness.core.plan import Plan

__all__ = ["CHECK", "Channel", "Cycle", "DeadlockResult", "DeadlockSeen", "FibRoute", "Lpm", "Wire", "components",
           "dependencies", "fib_routes", "judge_deadlock", "measure_deadlock", "shortest_cycle"]


def lossless_be(plan: Plan) -> str | None:
    if any(s.lossless for s in plan.switches):
        return None
    return "no switch carries the lossless contract: no PFC, so no buffer ever waits on another"


CHECK = Check("deadlock", "no cyclic buffer dependency on any lossless priority of the BE, from the running FIBs, "
              "cables and PFC priorities (no route that goes down and back up into a cycle)",
              (Case("deadlock", measure_deadlock, judge_deadlock),), lossless_be)
