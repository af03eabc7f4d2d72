#!/usr/bin/env python3
"""Boot-to-converged and teardown of topologies on the netns runtime, with CPU and memory.

    sudo .venv/bin/python scripts/bench_boot.py [ai-cluster large xlarge | FILE.py ...] [--runs N] [--json] [--progress]

A topology is a built-in's name or a topology file (`cluster = ...`), e.g. a built-in with
`routing=Routing(summarize_hosts=True)`.

Per run: the phases of the boot, converged (Lab.up returned: every session up, every prefix
at its ECMP width), teardown, the machine's CPU seconds (user + system, all processes, from
/proc/stat) during boot and teardown, and memory as the drop in MemAvailable: when converged
and the peak while booting (sampled every 0.2 s); then, with --steady S (default 60), the
converged lab at rest for S seconds: CPU per component (bfdd and the BFD data plane together
as "BFD", bgpd, zebra) as a share of all cores, and of the machine. Run it on an otherwise
idle machine.
Targets (this 2-core, 24 GB machine): ai-cluster <= 4 s, large <= 10 s, xlarge <= 45 s within
3 GB and torn down in <= 3 s, gpu4096 (docs/examples/gpu4096.py) <= 15 min within 20 GB (issue 36);
teardown <= half of boot.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness.lab import Lab  # noqa: E402
from harness.plumbing import meminfo  # noqa: E402
from harness.catalog import load_cluster  # noqa: E402
from harness.core.errors import HarnessError  # noqa: E402
from harness.runtime.base import quiet  # noqa: E402
from harness.plumbing import interrupt  # noqa: E402

# by the cluster's name, so a topology file (docs/examples/gpu4096.py) meets its own
TARGETS = {"ai-cluster": 4.0, "large": 10.0, "xlarge": 45.0, "gpu4096": 900.0}


def _cpu_seconds() -> float:
    fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    busy = sum(int(v) for i, v in enumerate(fields) if i not in (3, 4))  # all but idle and iowait
    return busy / os.sysconf("SC_CLK_TCK")


def _process_cpu_seconds(pid: int) -> float:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


COMPONENTS = {"bfdd": "BFD", "bfd-dp": "BFD", "bgpd": "bgpd", "zebra": "zebra"}


def steady_cpu(lab: Lab, seconds: float) -> dict[str, float]:
    """Percent of all cores each component used over `seconds` of the converged lab at rest
    ("machine": every process on it), and BFD sessions down or flapped meanwhile."""
    pids = [(COMPONENTS.get(d.name, d.name), d.pid) for d in lab.state.daemons]
    before = {pid: _process_cpu_seconds(pid) for _, pid in pids}
    machine0, t0 = _cpu_seconds(), time.monotonic()
    time.sleep(seconds)  # the measurement window itself
    span = (time.monotonic() - t0) * (os.cpu_count() or 1)
    used: dict[str, float] = {}
    for component, pid in pids:
        used[component] = used.get(component, 0.0) + _process_cpu_seconds(pid) - before[pid]
    shares = {k: round(100 * v / span, 1) for k, v in sorted(used.items())}
    shares["machine"] = round(100 * (_cpu_seconds() - machine0) / span, 1)
    return shares


class _PeakMemory:
    """The largest drop in MemAvailable since start, sampled in a thread."""

    def __init__(self) -> None:
        self.base = meminfo.available_mb()
        self.peak = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(0.2):
            self.peak = max(self.peak, self.base - meminfo.available_mb())

    def __enter__(self) -> _PeakMemory:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def progress_lines(t0: float) -> Callable[[str, str], None]:
    """A boot's progress on stderr as `fablab up` prints it, in seconds from t0 (time.monotonic())."""
    def say(phase: str, message: str) -> None:
        print(f"[{time.monotonic() - t0:7.2f}s] {phase}: {message}", file=sys.stderr, flush=True)
    return say


def quiet_machine(most_s: float = 30.0, busy_pct: float = 10.0) -> float:
    """Seconds waited until the machine is idle (under busy_pct over half a second): the kernel
    goes on freeing a torn-down lab's namespaces after `down` returns (about 2 s of a core at
    xlarge), and a run started at once shares the machine with it."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < most_s:
        before, t = _cpu_seconds(), time.monotonic()
        time.sleep(0.5)
        if 100 * (_cpu_seconds() - before) / ((time.monotonic() - t) * (os.cpu_count() or 1)) < busy_pct:
            break
    return time.monotonic() - t0


def one(topology: str, run: int, steady_s: float, show: bool = False) -> dict:
    cluster = load_cluster(topology)  # a built-in, or a topology file (e.g. a variant of one)
    quiet_machine()
    name = f"bench-{cluster.name}-{run}"[:24]
    cpu0 = _cpu_seconds()
    t0 = time.monotonic()
    with _PeakMemory() as mem:  # the default budget, as `fablab up` gives it
        lab = Lab.up(cluster, name=name, progress=progress_lines(t0) if show else quiet)
    up_s = time.monotonic() - t0
    cpu_up = _cpu_seconds() - cpu0
    timings = dict(lab.state.timings)
    try:
        steady = steady_cpu(lab, steady_s) if steady_s > 0 else {}
        short = [s.switch for s in lab.shortfalls()] if steady else []  # the window counts if the fabric stayed whole
    except BaseException:
        lab.down()  # interrupted at rest: nothing of the run is left
        raise
    cpu1 = _cpu_seconds()
    t1 = time.monotonic()
    lab.down()
    return {"topology": topology, "cluster": cluster.name, "nodes": len(lab.plan.fabric.nodes), "switches": len(lab.plan.switches),
            "up_s": round(up_s, 2), "down_s": round(time.monotonic() - t1, 2),
            "cpu_up_s": round(cpu_up, 1), "cpu_down_s": round(_cpu_seconds() - cpu1, 1),
            "memory_mb": round(timings.pop("memory_mb", 0.0)), "peak_memory_mb": round(mem.peak),
            "phases_s": timings, "steady_cpu_pct": steady, "short_after_rest": short,
            "bfd": "offload" if cluster.bfd.offload else "bfdd"}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("topologies", nargs="*", default=["ai-cluster", "large", "xlarge"])
    p.add_argument("--runs", type=int, default=1)
    p.add_argument("--json", action="store_true")
    p.add_argument("--steady", type=float, default=60.0, metavar="S",
                   help="seconds of the converged lab at rest to measure CPU per component (0: none)")
    p.add_argument("--progress", action="store_true",
                   help="the boot's progress lines on stderr, as `fablab up` prints them (a long boot, e.g. gpu4096)")
    args = p.parse_args()
    for t in args.topologies:
        try:
            load_cluster(t)
        except HarnessError as e:
            p.error(str(e))
    results = []
    for t in args.topologies:
        for r in range(args.runs):
            results.append(one(t, r, args.steady, args.progress))
            row = results[-1]
            steady = ", ".join(f"{k} {v}%" for k, v in row["steady_cpu_pct"].items())
            print(f"# {t} run {r + 1}: up {row['up_s']} s, down {row['down_s']} s, cpu {row['cpu_up_s']} s, "
                  f"mem {row['memory_mb']} MB (peak {row['peak_memory_mb']})"
                  + (f"; at rest ({row['bfd']}): {steady}" if steady else "")
                  + (f"; NOT converged after the rest: {', '.join(row['short_after_rest'][:5])}"
                     if row["short_after_rest"] else ""), file=sys.stderr, flush=True)
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    print(f"{'topology':<11}{'nodes':>6}{'sw':>4}{'up s':>7}{'down s':>7}{'cpu s':>7}{'mem MB':>8}{'peak MB':>8}"
          "  target          phases (last run)")
    for t in args.topologies:
        rows = [r for r in results if r["topology"] == t]

        def med(key: str) -> float:
            return statistics.median(r[key] for r in rows)

        up, target = med("up_s"), TARGETS.get(rows[0]["cluster"])
        verdict = "" if target is None else f"{'ok' if up <= target else 'MISSED'} <= {target:.0f}s"
        phases = ", ".join(f"{k} {v:.1f}" for k, v in rows[-1]["phases_s"].items() if k != "total")
        print(f"{t:<11}{rows[0]['nodes']:>6}{rows[0]['switches']:>4}{up:>7.1f}{med('down_s'):>7.1f}"
              f"{med('cpu_up_s'):>7.0f}{med('memory_mb'):>8.0f}{med('peak_memory_mb'):>8.0f}  {verdict:<14}  {phases}")
        if rows[0]["steady_cpu_pct"]:
            keys = list(rows[0]["steady_cpu_pct"])
            shares = ", ".join(f"{k} {statistics.median(r['steady_cpu_pct'].get(k, 0.0) for r in rows):.1f}%"
                               for k in keys)
            print(f"{'':<11}at rest, share of all cores ({rows[0]['bfd']}): {shares}"
                  + (f"  (BFD budget 15%: {'ok' if statistics.median(r['steady_cpu_pct'].get('BFD', 0.0) for r in rows) <= 15 else 'MISSED'})"
                     if "BFD" in keys else ""))
    return 0


if __name__ == "__main__":
    sys.exit(interrupt.run_main(main))
