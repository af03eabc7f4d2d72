#!/usr/bin/env python3
"""What KSM saves of bgpd's zeroed rings, and what ksmd costs, on a lab that uses it.

    sudo .venv/bin/python scripts/bench_ksm.py [TOPOLOGY] [--minutes N] [--json]

Boots TOPOLOGY (default xlarge), then every 30 s for N minutes (default 8) prints the machine's
used memory (`free`'s used: MemTotal - MemFree - buffers - cache), the zero pages ksmd has
merged (`/sys/kernel/mm/ksm/ksm_zero_pages`) and ksmd's CPU over those 30 s; then tears the lab
down and checks ksmd's settings are back. Run it on an otherwise idle machine.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness.catalog import load_fabric  # noqa: E402
from harness.lab import Lab  # noqa: E402
from harness.plumbing import wait  # noqa: E402
from harness.plumbing import interrupt  # noqa: E402

PAGE_MB = os.sysconf("SC_PAGE_SIZE") / 2**20
KSM = Path("/sys/kernel/mm/ksm")  # what harness/runtime/ksm.py sets while a lab holds it
KEYS = ("run", "use_zero_pages", "pages_to_scan", "sleep_millisecs")


def used_mb() -> int:
    info = {line.split(":")[0]: int(line.split()[1]) for line in Path("/proc/meminfo").read_text().splitlines()}
    return (info["MemTotal"] - info["MemFree"] - info["Buffers"] - info["Cached"] - info["SReclaimable"]) // 1024


def ksmd_ticks() -> int:
    pid = subprocess.run(["pgrep", "-x", "ksmd"], capture_output=True, text=True).stdout.split()[0]
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime


def zero_pages() -> int:
    return int((KSM / "ksm_zero_pages").read_text())


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("topology", nargs="?", default="xlarge")
    ap.add_argument("--minutes", type=float, default=8.0)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    before = {k: int((KSM / k).read_text()) for k in KEYS}
    rows = [{"at_s": "before", "used_mb": used_mb()}]
    t0 = time.monotonic()
    lab = Lab.up(load_fabric(args.topology), name="bench-ksm", detached=True)
    rows.append({"at_s": "converged", "up_s": round(time.monotonic() - t0, 1), "used_mb": used_mb(),
                 "zero_pages_mb": round(zero_pages() * PAGE_MB)})
    try:
        hz = os.sysconf("SC_CLK_TCK")
        since = time.monotonic()
        while time.monotonic() - since < args.minutes * 60:
            ticks, t = ksmd_ticks(), time.monotonic()
            wait.pause_until(t + 30)
            rows.append({"at_s": round(time.monotonic() - since), "used_mb": used_mb(),
                         "zero_pages_mb": round(zero_pages() * PAGE_MB),
                         "ksmd_core_pct": round(100 * (ksmd_ticks() - ticks) / hz / (time.monotonic() - t), 1)})
            if not args.json:
                print(json.dumps(rows[-1]), flush=True)
    finally:
        lab.down()
    after = {k: int((KSM / k).read_text()) for k in KEYS}
    doc = {"topology": args.topology, "rows": rows, "ksm_settings_put_back": after == before}
    print(json.dumps(doc, indent=1))
    return 0 if after == before else 1


if __name__ == "__main__":
    sys.exit(interrupt.run_main(main))
