#!/usr/bin/env python3
"""The nightly-size run of the input fuzzer (issue 68, item 5): mutated engineer's files (cable
lists, devices files, sonic-mgmt CSVs, .clab.yml, numbering.csv, config_db.json, frr.conf,
inventories) through the commands that read them. No root needed; no lab.

    .venv/bin/python scripts/bench_fuzz_inputs.py [--cases 540] [--seed 68] [--jobs 2] [--keep DIR]

Each case runs in a worker process (a memory limit; killed past its deadline). Prints, per
format: cases, exits 0/2/3, tracebacks, hangs, broken inputs accepted (exit 0), other failures
(a neutral change read otherwise, too much printed), median and max seconds per case; then each
failure once per cause, with how many cases showed it. --keep DIR writes every failing case as
a corpus entry (tests/corpus/inputs/ takes them). Exits 1 on any failure.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from queue import Queue

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from inputfuzz import DEADLINE_S, FORMATS, SEED, spread  # noqa: E402
from inputfuzz_run import Worker, keep  # noqa: E402


CRASH = ("traceback", "a traceback", "exit 1", "the worker")
MAJOR = CRASH + ("hang", "exit 0 on")


def cause(case, failure: str) -> str:
    """What failures of one root cause share: where the exception was, or the kind and the mutation."""
    if failure.startswith("traceback: "):
        return failure.split(": ", 2)[1] if ": " in failure[11:] else failure
    if failure.startswith("hang"):
        return f"hang · {case.fmt} · {case.mutation.split('+')[0]}"
    kind = failure.split(":")[0]
    kind = "exit 0 on a broken input" if kind.startswith("exit 0 on") else kind
    kind = "read otherwise" if "unmutated" in kind else kind
    kind = "too much printed" if "lines printed" in kind else kind
    return f"{kind} · {case.fmt} · {case.mutation.split('+')[0]}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=60 * len(FORMATS), help="cases in all, the formats in turn")
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--jobs", type=int, default=2, help="worker processes")
    parser.add_argument("--formats", help=f"comma-separated, of {', '.join(FORMATS)}")
    parser.add_argument("--keep", type=Path, metavar="DIR", help="write each failing case here, as a corpus entry")
    parser.add_argument("--deadline", type=float, default=DEADLINE_S, help="seconds a case may take")
    args = parser.parse_args()
    wanted = tuple(args.formats.split(",")) if args.formats else None
    unknown = set(wanted or ()) - set(FORMATS)
    if unknown:
        parser.error(f"--formats: no format {', '.join(sorted(unknown))}")
    cases = spread(args.seed, args.cases, wanted)
    workers = [Worker() for _ in range(args.jobs)]
    idle: Queue[Worker] = Queue()
    for w in workers:
        idle.put(w)
    t0 = time.monotonic()

    def run(i: int):
        case, worker = cases[i], idle.get()  # one case at a time in each worker
        try:
            result, found = worker.run({"seed": args.seed, "fmt": case.fmt, "index": case.index}, args.deadline)
        finally:
            idle.put(worker)
        return case, result, found

    by_fmt: dict[str, list] = defaultdict(list)
    causes: dict[str, list] = defaultdict(list)
    with ThreadPoolExecutor(args.jobs) as pool:
        for n, (case, result, found) in enumerate(pool.map(run, range(len(cases))), 1):
            by_fmt[case.fmt].append((case, result, found))
            for f in found:
                causes[cause(case, f)].append((case, f))
            if found and args.keep:
                keep(case, found, args.keep)
            if n % 50 == 0:
                print(f"  {n}/{len(cases)} cases, {time.monotonic() - t0:.0f} s", file=sys.stderr)
    for w in workers:
        w.close()
    print(f"input fuzz: seed {args.seed}, {len(cases)} cases, {time.monotonic() - t0:.0f} s, deadline "
          f"{args.deadline:g} s a case")
    cols = ("format", "cases", "exit 0", "exit 2", "exit 3", "traceback", "hang", "broken ok", "other", "median s",
            "max s")
    print(" ".join(f"{c:>10}" for c in cols))
    total_failed = 0
    for fmt in FORMATS:
        rows = by_fmt.get(fmt, [])
        if not rows:
            continue
        codes = [r.code for _, r, _ in rows]
        tb = sum(any(f.startswith(CRASH) for f in fs) for _, _, fs in rows)
        hang = sum(any(f.startswith("hang") for f in fs) for _, _, fs in rows)
        broken = sum(any(f.startswith("exit 0 on") for f in fs) for _, _, fs in rows)
        failed = sum(bool(fs) for _, _, fs in rows)
        other = sum(any(not f.startswith(MAJOR) for f in fs) for _, _, fs in rows)
        total_failed += failed
        secs = [r.seconds for _, r, _ in rows]
        figures = (fmt, len(rows), codes.count(0), codes.count(2), codes.count(3), tb, hang, broken, other,
                   f"{statistics.median(secs):.2f}", f"{max(secs):.2f}")
        print(" ".join(f"{x:>10}" for x in figures))
    if causes:
        print(f"\n{len(causes)} causes of failure ({total_failed} failing cases):")
        for key, hits in sorted(causes.items(), key=lambda kv: -len(kv[1])):
            case, f = hits[0]
            print(f"- {len(hits):>3} × {key}\n        e.g. {case.name} [{case.expect}] {case.note[:100]}"
                  f"\n        `fablab {' '.join(case.command)}`: {f[:220]}")
    if args.keep and causes:
        print(f"\nfailing cases written to {args.keep}/ (tests/corpus/inputs/ takes them as they are)")
    return 1 if causes else 0


if __name__ == "__main__":
    sys.exit(main())
