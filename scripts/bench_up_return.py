#!/usr/bin/env python3
"""How soon `fablab up` returns after it has seen convergence (issue 9: within 0.5 s).

    sudo .venv/bin/python scripts/bench_up_return.py [ai-cluster large] [--runs N]

Runs `fablab up TOPOLOGY` as a user would, timestamps every line it prints as it arrives,
and reports the time from the `converged:` progress line to the process's exit, then
takes the lab down. Run it on an otherwise idle machine.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

FABLAB = [sys.executable, "-m", "harness.cli"]
ROOT = Path(__file__).resolve().parents[1]


def one(topology: str, name: str) -> tuple[float, float]:
    """(seconds until the converged line, seconds from it to exit)."""
    t0 = time.monotonic()
    proc = subprocess.Popen([*FABLAB, "up", topology, "--name", name], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, cwd=ROOT)
    converged = None
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            if converged is None and "] converged:" in line:
                converged = time.monotonic() - t0
        proc.wait()
        end = time.monotonic() - t0
    finally:
        subprocess.run([*FABLAB, "down", name], capture_output=True, cwd=ROOT)
    if proc.returncode != 0 or converged is None:
        raise SystemExit(f"fablab up {topology} failed (exit {proc.returncode})")
    return converged, end - converged


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("topologies", nargs="*", default=["ai-cluster", "large"])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    for topology in args.topologies:
        gaps = []
        for r in range(args.runs):
            converged, gap = one(topology, f"bu{os.getpid() % 10000}r{r}")
            gaps.append(gap)
            print(f"# {topology} run {r + 1}: converged line at {converged:.2f} s, exit {gap:.2f} s later")
        print(f"{topology:<12} up returns {max(gaps):.2f} s at worst after convergence (target <= 0.5 s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
