"""What the deadlock check reads of a running lab: each BE switch's FIB (the routes that can
carry a BE host's address), the PFC priorities of each of its ports as its running CONFIG_DB
has them, and the switch-to-switch cables as the kernels peer them. Nothing here is a
verdict: graph.py builds the buffer dependencies, judge.py judges them against the plan."""
from __future__ import annotations

from dataclasses import dataclass

from harness.checks.base import Observation


@dataclass(frozen=True)
class FibRoute:
    """One route of a switch's kernel FIB (main table), the one the kernel uses for its prefix."""

    prefix: str  # "10.0.1.0/31"; the default route is "0.0.0.0/0"
    ports: tuple[str, ...]  # the plan's names of its next hops' ports, sorted; (): blackhole, unreachable
    protocol: str  # "bgp", "kernel" (connected), "static" ...: how it got there, for a reader of the finding


@dataclass(frozen=True)
class Wire:
    """A cable between two BE switches, as their kernels peer its two ends ("switch:port")."""

    a: str
    b: str


@dataclass(frozen=True)
class DeadlockSeen(Observation):
    fibs: dict[str, tuple[FibRoute, ...]]  # BE switch -> its routes that overlap the BE block
    pfc: dict[str, dict[str, tuple[int, ...]]]  # BE switch -> port -> priorities with pfc_enable (no row: absent)
    wires: tuple[Wire, ...]  # every BE switch-to-switch cable the kernels show, planned or not
