#!/usr/bin/env python3
"""Boot-to-converged and teardown times of built-in topologies on the netns runtime.

    sudo .venv/bin/python scripts/bench_boot.py [ai-cluster large] [--runs N]

Memory is the drop in the system's MemAvailable between before boot and converged (not a
sum of RSS). Targets: ai-cluster converged <= 10 s, large <= 60 s within 8 GB.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness.lab import Lab  # noqa: E402
from topologies import BUILTINS  # noqa: E402

TARGETS = {"ai-cluster": 10.0, "large": 60.0}


def one(topology: str, run: int) -> dict:
    name = f"bench-{topology}-{run}"[:24]
    t0 = time.monotonic()
    lab = Lab.up(BUILTINS[topology](), name=name, timeout=180)
    up_s = time.monotonic() - t0
    timings = dict(lab.state.timings)
    t1 = time.monotonic()
    lab.down()
    return {"topology": topology, "nodes": len(lab.plan.fabric.nodes), "switches": len(lab.plan.switches),
            "up_s": round(up_s, 2), "down_s": round(time.monotonic() - t1, 2),
            "memory_mb": round(timings.pop("memory_mb", 0.0)), "phases_s": timings}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("topologies", nargs="*", default=["ai-cluster", "large"])
    p.add_argument("--runs", type=int, default=1)
    p.add_argument("--json", action="store_true")
    args = p.parse_args()
    results = [one(t, r) for t in args.topologies for r in range(args.runs)]
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    print(f"{'topology':<12}{'nodes':>6}{'switches':>9}{'up s':>8}{'down s':>8}{'mem MB':>8}  target  phases")
    for t in args.topologies:
        rows = [r for r in results if r["topology"] == t]
        up = statistics.median(r["up_s"] for r in rows)
        down = statistics.median(r["down_s"] for r in rows)
        mem = statistics.median(r["memory_mb"] for r in rows)
        target = TARGETS.get(t)
        verdict = "" if target is None else f"{'ok' if up <= target else 'MISSED'} <= {target:.0f}s"
        phases = ", ".join(f"{k} {v:.1f}" for k, v in rows[-1]["phases_s"].items() if k != "total")
        print(f"{t:<12}{rows[0]['nodes']:>6}{rows[0]['switches']:>9}{up:>8.1f}{down:>8.1f}{mem:>8.0f}  {verdict}  {phases}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
