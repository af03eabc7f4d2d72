"""Routing converged as planned: every planned BGP and BFD session up, and every planned prefix in
each switch's kernel FIB at its planned ECMP width (and every dual-homed host's).

It is what `fablab up` waits for, judged as a check, read-only: on a staged fabric reached over
SSH it is the first verdict after the cabling (a session down names its port and why: "BGP
Active (no TCP connection to the peer)"), and on a lab changed by hand it says whether the
fabric came back whole. What each switch must show comes from the plan
(harness/observe/convergence.py), never from the switch.
"""
from __future__ import annotations

from dataclasses import dataclass

from harness.checks.base import Case, Check, Observation, Outcome, Table
from harness.core.observed import Shortfall
from harness.core.plan import Plan
from harness.observe.convergence import cached_expectations
from harness.plumbing.labview import LabView


@dataclass(frozen=True)
class RoutingSeen(Observation):
    short: tuple[Shortfall, ...]  # every speaker short of a session or a route at its width; () when converged


@dataclass(frozen=True)
class RoutingResult(Outcome):
    speakers: int
    sessions: int  # BGP sessions the plan expects
    bfd: int
    prefixes: int  # (speaker, prefix) pairs at a planned width
    short: tuple[str, ...]

    held, broken = "converged as planned", "NOT converged as planned"
    shown = 4

    def sentence(self) -> str:
        figures = (f"{self.speakers} BGP speakers: {self.sessions} BGP and {self.bfd} BFD sessions, "
                   f"{self.prefixes} prefixes at their ECMP width")
        if self.passed:
            return f"every one up: {figures}"
        return f"{len(self.short)} of {self.speakers} speakers short; planned {figures}"

    def findings_table(self) -> Table | None:
        if not self.short:
            return None
        return Table(("speaker", "short of"), tuple(tuple(s.split(": ", 1)) for s in self.short))  # type: ignore[misc]


def measure_routing(lab: LabView) -> RoutingSeen:
    return RoutingSeen(short=tuple(s for s in lab.shortfalls() if not s.ok))


def judge_routing(plan: Plan, seen: RoutingSeen) -> RoutingResult:
    exp = cached_expectations(plan)
    short = tuple(str(s) for s in seen.short if not s.ok)
    return RoutingResult(seconds=seen.seconds, problems=short, speakers=len(exp),
                         sessions=sum(e.sessions for e in exp.values()), bfd=sum(e.bfd for e in exp.values()),
                         prefixes=sum(len(e.routes) for e in exp.values()), short=short)


CHECK = Check("routing", "every planned BGP and BFD session up, every planned prefix in each FIB at its ECMP width",
              (Case("routing", measure_routing, judge_routing),))
