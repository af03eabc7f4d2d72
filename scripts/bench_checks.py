#!/usr/bin/env python3
"""How often the ECMP verdict is wrong, on real kernels, for 2, 8 and 16 uplinks.

    sudo .venv/bin/python scripts/bench_checks.py [--uplinks 2 8 16] [--fair 100] [--l3 10] [--skew 20]
                                                  [--weight 2] [--json]

Per uplink count k it boots a minimal fabric (2 GPU nodes with one BE NIC each, in two
groups, so their leaves join through k spines; a 1 × 1 FE) and runs the `ecmp` case on it:

- fair: the leaf hashes on L4 (policy 1) with a new random `fib_multipath_hash_seed` each
  run, so every run is an independent fair hash. Goal: false-fail rate < 1 % (designed 0.1 %).
- L3: `fib_multipath_hash_policy=0` on the source leaf (every QP of the pair on one path).
- skew: the source leaf's route to the destination weights one uplink at `--weight` (2 by
  default: twice the others), still with a new seed each run.
Goal for both: detected (verdict fails) 100 % of runs, for the right reason.

Run it under the shared lab lock; each k boots and tears down its own lab.
"""
from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness.checks.registry import case as check_case, run_case  # noqa: E402
from harness.checks.common.bounds import qps_for  # noqa: E402
from harness.faults.sabotage import hash_seed, l3_hashing, weighted_uplink  # noqa: E402
from harness.lab import Lab  # noqa: E402
from harness.core.model import Backend, Cluster, Frontend, GpuNodes  # noqa: E402
from harness.plumbing import interrupt  # noqa: E402


def bench_cluster(uplinks: int) -> Cluster:
    return Cluster(name=f"ecmp-k{uplinks}", gpu=GpuNodes(count=2, gpus_per_node=1),
                   backend=Backend(rails=1, groups=2, spines=uplinks, leaf_ports=64, spine_ports=64),
                   frontend=Frontend(spines=1, leaves=1, storage_servers=0, gateways=0))


def right_reason(case: str, result, heavy: str) -> bool:
    if case == "l3":
        return "fib_multipath_hash_policy=0" in result.reason
    if case == "skew":
        return any(p.uplink == heavy and p.qps > p.high for p in result.paths) or \
            any(f"{heavy}:" in s or f":{heavy} " in s for s in result.problems)
    return True


def runs_for(lab, k: int, case: str, runs: int, weight: int, rng: random.Random) -> list[dict]:
    plan = lab.plan
    src = plan.host("gpu01").nic("rail0")
    leaf = src.peer
    dst_prefix = str(plan.host("gpu02").nic("rail0").address.network)
    heavy = plan.switch(leaf).fabric_ports[0].name
    out = []
    for i in range(runs):
        seed = rng.randrange(1, 1 << 32)
        with hash_seed(lab, leaf, seed):
            if case == "l3":
                with l3_hashing(lab, [leaf]):
                    r = run_case(check_case("ecmp"), lab)
            elif case == "skew":
                with weighted_uplink(lab, leaf, dst_prefix, heavy, weight):
                    r = run_case(check_case("ecmp"), lab)
            else:
                r = run_case(check_case("ecmp"), lab)
        row = {"k": k, "case": case, "run": i, "seed": seed, "passed": r.passed, "seconds": r.seconds,
               "qps": r.qps, "band": [r.low, r.high], "per_path": r.per_path, "split": r.split_qps,
               "lost": r.lost, "reordered": r.reordered, "right_reason": r.passed or right_reason(case, r, heavy)}
        if not r.passed and case == "fair":
            row["reason"] = r.reason
        out.append(row)
        print(json.dumps(row), file=sys.stderr, flush=True)
    return out


def bench(k: int, fair: int, l3: int, skew: int, weight: int, rng: random.Random) -> dict:
    t0 = time.monotonic()
    with Lab.up(bench_cluster(k), name=f"i8eb{k}", timeout=240) as lab:
        boot_s = time.monotonic() - t0
        rows = (runs_for(lab, k, "fair", fair, weight, rng) + runs_for(lab, k, "l3", l3, weight, rng)
                + runs_for(lab, k, "skew", skew, weight, rng))
    summary = {"uplinks": k, "qps": qps_for(k), "boot_s": round(boot_s, 1)}
    for case in ("fair", "l3", "skew"):
        sel = [r for r in rows if r["case"] == case]
        if not sel:
            continue
        failed = [r for r in sel if not r["passed"]]
        summary[case] = {"runs": len(sel), "failed": len(failed),
                         "right_reason": sum(1 for r in failed if r["right_reason"]),
                         "seconds_per_run": round(statistics.median(r["seconds"] for r in sel), 2),
                         "distinct_outcomes": len({json.dumps(r["per_path"], sort_keys=True) for r in sel})}
    summary["rows"] = rows
    return summary


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--uplinks", type=int, nargs="+", default=[2, 8, 16])
    p.add_argument("--fair", type=int, default=100, help="runs with a fair hash (new seed each)")
    p.add_argument("--l3", type=int, default=10, help="runs with L3-only hashing")
    p.add_argument("--skew", type=int, default=20, help="runs with one uplink weighted --weight")
    p.add_argument("--weight", type=int, default=2)
    p.add_argument("--seed", type=int, default=None, help="seed of the seeds (default: random)")
    p.add_argument("--json", action="store_true")
    args = p.parse_args()
    rng = random.Random(args.seed)
    results = [bench(k, args.fair, args.l3, args.skew, args.weight, rng) for k in args.uplinks]
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    print(f"{'k':>3}{'QPs':>6}{'band':>10}  {'fair runs':>9}{'false-fail':>11}  {'L3 runs':>7}{'detected':>9}  "
          f"{'skew runs':>9}{'detected':>9}  s/run (fair)")
    for s in results:
        band = s["rows"][0]["band"]
        f, l3, sk = s.get("fair", {}), s.get("l3", {}), s.get("skew", {})

        def rate(c: dict, key: str = "failed") -> str:
            return f"{c[key] / c['runs']:.1%}" if c.get("runs") else "-"

        print(f"{s['uplinks']:>3}{s['qps']:>6}{f'{band[0]}..{band[1]}':>10}  {f.get('runs', 0):>9}{rate(f):>11}  "
              f"{l3.get('runs', 0):>7}{rate(l3, 'right_reason'):>9}  {sk.get('runs', 0):>9}"
              f"{rate(sk, 'right_reason'):>9}  {f.get('seconds_per_run', '-')}")
    return 0


if __name__ == "__main__":
    sys.exit(interrupt.run_main(main))
