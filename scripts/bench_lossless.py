#!/usr/bin/env python3
"""The lossless data plane's cost and the highest rate it keeps lossless, on this machine.

    sudo .venv/bin/python scripts/bench_lossless.py [--scales 8000 4000 2000 1000 500] [--runs 2] [--json]

For each `Lossless.time_scale` it boots ai-cluster with it (a 400G NIC then runs at 400 / scale
Gbit/s) and runs the `pfc` case: a 7 -> 1 incast on the RoCE priority, every sender at 2/3 of
the receiver's port, with a victim flow. Per run it prints the port's rate, what was lost,
completion against the ideal (all the incast's bytes at the port's rate), the pause frames the
leaf sent, and the CPU seconds fablab-lossless-dp used over the incast (its getrusage, from
its status socket). The data plane keeps a rate when the incast loses nothing and completes
within 1.25 x the ideal; the Python senders are part of what is measured (they are what
drives it). Run it alone: on 2 cores every other process is part of the figure.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness.catalog import load_cluster  # noqa: E402
from harness.checks.pfc import judge_pfc, measure_pfc  # noqa: E402
from harness.core.model import Lossless  # noqa: E402
from harness.lab import Lab  # noqa: E402
from harness.plumbing import interrupt  # noqa: E402


def run(scale: int, runs: int) -> list[dict]:
    base = load_cluster("ai-cluster")
    cluster = dataclasses.replace(base, name=f"ai-cluster-x{scale}",
                                  lossless=dataclasses.replace(base.lossless, time_scale=scale))
    out = []
    with Lab.up(cluster, name=f"llb{scale}", timeout=240) as lab:
        for i in range(runs):
            before = lab.lossless_counters()
            t0 = time.monotonic()
            seen = measure_pfc(lab)
            wall = time.monotonic() - t0
            cpu = lab.lossless_counters().cpu_s - before.cpu_s
            r = judge_pfc(lab.plan, seen)
            out.append({"time_scale": scale, "run": i + 1, "port_mbit": r.port_mbit, "offered_mbit": r.offered_mbit,
                        "loss_pct": r.loss_pct, "completion_ms": r.completion_ms, "ideal_ms": r.ideal_ms,
                        "pauses_by_leaf": r.pauses_by_leaf, "dp_cpu_s": round(cpu, 3), "wall_s": round(wall, 1),
                        "kept": r.loss_pct == 0 and not r.drops and r.completion_ms <= 1.25 * r.ideal_ms,
                        "passed": r.passed})
            print(json.dumps(out[-1]), file=sys.stderr)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scales", type=int, nargs="+", default=[8000, 4000, 2000, 1000, 500])
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    rows = [row for scale in args.scales for row in run(scale, args.runs)]
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    print("| time_scale | port | offered | loss | done / ideal | PFC by the leaf | data plane CPU | kept |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['time_scale']} | {r['port_mbit']:g} Mbit/s | {r['offered_mbit']:g} Mbit/s | {r['loss_pct']:g} % "
              f"| {r['completion_ms']:.0f} / {r['ideal_ms']:.0f} ms | {r['pauses_by_leaf']} | {r['dp_cpu_s']} s "
              f"| {'yes' if r['kept'] else 'no'} |")
    return 0


if __name__ == "__main__":
    sys.exit(interrupt.run_main(main))
