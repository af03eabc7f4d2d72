"""How long the machine kept the CPU from the kernel's own packet work while an experiment ran.

An emulated port's rate is a tbf qdisc: its packets leave when the kernel's transmit softirq
runs. Under load the kernel hands softirqs to ksoftirqd/N, an ordinary nice-0 thread per CPU,
which waits behind every lab's realtime senders and receivers and FRR at nice -5; on a VM the
hypervisor may also take a vCPU away (steal). A full queue then sends nothing while the fabric
does its part, and an incast takes longer than its bytes need. The kernel counts both: a
thread's time waiting for a CPU (/proc/PID/schedstat, its second field, ns) and each vCPU's
steal (/proc/stat, clock ticks). Reading them changes nothing; where they cannot be read (a
container with its own pid namespace) the figures are 0 and claim nothing.

The same count for a lab's daemons (`daemons_now`): a reroute that is bgpd's and zebra's work
(a remote or gray failure) takes as long as they waited for a CPU, on top of what they did,
where a switch's control plane has a CPU of its own.
"""
from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

PROC = Path("/proc")
_TICK_MS = 1000 / os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class CpuWait:
    """Milliseconds, cumulative since boot as read (`minus` gives a window's): each CPU's
    ksoftirqd waiting for that CPU, and each CPU's steal, in the same CPU order."""

    softirq_ms: tuple[float, ...] = ()
    steal_ms: tuple[float, ...] = ()

    def minus(self, before: CpuWait) -> CpuWait:
        def sub(now: tuple[float, ...], then: tuple[float, ...]) -> tuple[float, ...]:
            return tuple(round(a - b, 1) for a, b in zip(now, then)) if len(now) == len(then) else ()
        return CpuWait(sub(self.softirq_ms, before.softirq_ms), sub(self.steal_ms, before.steal_ms))

    @property
    def withheld_ms(self) -> float:
        """The longest any one CPU's packet work surely could not run: the larger of its
        ksoftirqd's wait and its steal (the two overlap: a thread waiting while its vCPU is
        stolen counts both), over the CPUs the worst (a port's qdisc is served on one CPU at a
        time, and the CPUs' waits overlap in time too)."""
        per_cpu = [max(a, b) for a, b in zip(self.softirq_ms, self.steal_ms)] or list(self.softirq_ms)
        return round(max(per_cpu, default=0.0), 1)

    def words(self) -> str:
        soft = ", ".join(f"{v:.0f}" for v in self.softirq_ms) or "?"
        steal = ", ".join(f"{v:.0f}" for v in self.steal_ms) or "?"
        return f"the kernel's packet work (ksoftirqd per CPU) waited {soft} ms for a CPU, the hypervisor stole {steal} ms"


def _softirqd() -> list[tuple[int, int]]:
    """(cpu, pid) of every ksoftirqd this process can see, by CPU."""
    out = []
    for entry in PROC.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            comm = (entry / "comm").read_text().strip()
        except OSError:
            continue
        if comm.startswith("ksoftirqd/") and comm[10:].isdigit():
            out.append((int(comm[10:]), int(entry.name)))
    return sorted(out)


_threads: list[list[tuple[int, int]]] = []  # found once: kernel threads live as long as the machine


def run_delay_ns(pid: int) -> int | None:
    """The task's time runnable but not running so far (its main thread's: FRR's daemons do
    their work there), or None where it is gone or cannot be read."""
    try:
        return parse_schedstat((PROC / str(pid) / "schedstat").read_text())
    except OSError:
        return None


def parse_schedstat(text: str) -> int | None:
    """run_delay (ns) from a schedstat line: "exec_runtime run_delay timeslices"."""
    fields = text.split()
    return int(fields[1]) if len(fields) >= 2 and fields[1].isdigit() else None


def _waits() -> tuple[float, ...]:
    if not _threads:
        _threads.append(_softirqd())
    out = []
    for _, pid in _threads[0]:
        ns = run_delay_ns(pid)
        if ns is None:
            return ()
        out.append(ns / 1e6)
    return tuple(out)


def daemons_now(pids: Mapping[str, int]) -> dict[str, int]:
    """label ("node/daemon") -> its run delay now (ns), for those that can be read."""
    return {label: ns for label, pid in pids.items() if (ns := run_delay_ns(pid)) is not None}


def daemons_waited_ms(before: Mapping[str, int], after: Mapping[str, int]) -> tuple[tuple[str, float], ...]:
    """(label, ms it waited for a CPU between the two reads), sorted, of those read both times."""
    return tuple((label, round(max(0, after[label] - ns) / 1e6, 1)) for label, ns in sorted(before.items())
                 if label in after)


def _steal() -> tuple[float, ...]:
    try:
        lines = (PROC / "stat").read_text().splitlines()
    except OSError:
        return ()
    out = []
    for line in lines:
        head, _, rest = line.partition(" ")
        if head.startswith("cpu") and head[3:].isdigit():
            fields = rest.split()
            out.append(int(fields[7]) * _TICK_MS if len(fields) > 7 else 0.0)
    return tuple(out)


def cpu_wait_now() -> CpuWait:
    """The counters now (see CpuWait); subtract an earlier read for a window's."""
    return CpuWait(_waits(), _steal())
