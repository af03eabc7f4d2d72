#!/usr/bin/env python3
"""How long building and planning a declaration takes, from the smallest built-in to the largest
declaration fablab plans (1,021 nodes, 16,246 links: near both limits). No root, no lab.

    .venv/bin/python scripts/bench_plan.py [--runs N]

Prints, per declaration, its size and the min / median / max seconds of build + make_plan over
N runs in this process. Run it on an otherwise idle machine.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness import build, make_plan  # noqa: E402
from topologies import BUILTINS  # noqa: E402
from topologies.edge import edge  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    print(f"{'declaration':<14} {'nodes':>6} {'links':>6}   build+plan s (min / median / max of {args.runs})")
    for name, declare in [*sorted(BUILTINS.items()), ("edge", edge)]:
        times, plan = [], None
        for _ in range(args.runs):
            t0 = time.monotonic()
            plan = make_plan(build(declare()))
            times.append(time.monotonic() - t0)
        print(f"{name:<14} {len(plan.fabric.nodes):>6} {len(plan.fabric.links):>6}   "
              f"{min(times):.2f} / {statistics.median(times):.2f} / {max(times):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
