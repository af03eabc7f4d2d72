#!/usr/bin/env python3
"""A soak: the same verdicts, run after run, to find the ones that do not hold.

    sudo .venv/bin/python scripts/bench_soak.py [--topology ai-cluster] [--runs N]
        [--cases failover,break-fix,faults,labs] [--beside] [--keep DIR] [--minutes M]
        [--frr-debug]

Cases, each run N times on one lab booted for the soak (`fablab up TOPOLOGY --name soak`):
- failover: `fablab check soak --only failover`, which must pass.
- break-fix: the lessons' loop on BFD as a new user runs it: `fablab break soak bfd-off`,
  `fablab check soak --only failover` (must fail, exit 3), `fablab fix soak --all`, the same
  check again (must pass). Each of the two checks is counted.
- faults: that loop over every fault of `fablab faults` that applies to the topology: break,
  the check that catches it (must fail), fix, the same check (must pass).
- labs: `pytest labs/ --topology TOPOLOGY` on a clean tree (it boots labs of its own).

--beside boots a second lab (`soak-b`) and runs `fablab check soak-b` over and over beside
the cases, its own verdicts counted too. Every failing run keeps its results, the output of
each command and the lab's FRR and data-plane logs under DIR/<case>-<run>/ (default
results/soak-<UTC time>). Prints pass counts per case; exits 3 if any run failed. --minutes M
starts no run after M minutes (a soak too long for one sitting, done in parts at one commit):
the runs done are counted, each whole.
--frr-debug turns FRR's debug logs on in every switch of the soak's labs (FRR_DEBUGS), so that
a failing run's kept logs say what bgpd and zebra told each other.
Run it on a machine where nothing else runs: its figures are the machine's as much as fablab's.
"""
from __future__ import annotations

import argparse
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from harness.faults.table import FAULTS, check_of  # noqa: E402
from harness.runtime.state import run_dir  # noqa: E402

FABLAB = [sys.executable, "-m", "harness.cli"]
CASES = ("failover", "break-fix", "faults", "labs")
LAB, BESIDE = "soak", "soak-b"
PASS, FAIL = 0, 3  # fablab check's exit statuses
# --frr-debug: what tells a session that never came back from its switches' logs (the zapi
# messages between zebra and bgpd, bgpd's state machine, the kernel's link and address events)
FRR_DEBUGS = ("debug bgp zebra", "debug bgp neighbor-events", "debug bgp nht", "debug zebra events",
              "debug zebra kernel", "debug zebra nht")


@dataclass
class Tally:
    passed: dict[str, int] = field(default_factory=dict)
    failed: dict[str, int] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)  # over every run of the step
    lock: threading.Lock = field(default_factory=threading.Lock)

    def count(self, name: str, ok: bool, seconds: float = 0.0) -> None:
        with self.lock:
            book = self.passed if ok else self.failed
            book[name] = book.get(name, 0) + 1
            self.passed.setdefault(name, 0)
            self.seconds[name] = self.seconds.get(name, 0.0) + seconds

    def mean_s(self, name: str) -> float:
        runs = self.passed.get(name, 0) + self.failed.get(name, 0)
        return self.seconds.get(name, 0.0) / runs if runs else 0.0


@dataclass(frozen=True)
class Step:
    argv: tuple[str, ...]
    want: int  # the exit status that counts as the verdict holding
    name: str  # what the pass count is kept under


def run(argv: list[str], log: Path, timeout: float = 1800) -> int:
    with log.open("a") as out:
        out.write(f"$ {' '.join(argv)}\n")
        out.flush()
        t0 = time.monotonic()
        try:
            rc = subprocess.run(argv, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, timeout=timeout).returncode
        except subprocess.TimeoutExpired:
            out.write(f"timed out after {timeout:.0f} s\n")
            return -1
        out.write(f"# exit {rc} after {time.monotonic() - t0:.1f} s\n")  # where a loop's time goes
        return rc


def keep(dest: Path, lab: str | None, results: Path, log: Path) -> None:
    """A failing run's evidence: its results, its commands' output, the lab's logs."""
    dest.mkdir(parents=True, exist_ok=True)
    if results.exists():
        shutil.copytree(results, dest / "results", dirs_exist_ok=True, symlinks=False,
                        ignore=shutil.ignore_patterns("latest"))
    if log.exists():
        shutil.copy(log, dest / "output.txt")
    if lab is None:
        return
    for path in run_dir(lab).rglob("*.log"):
        target = dest / "logs" / path.relative_to(run_dir(lab))
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(path, target)


def check(lab: str, only: str, results: Path) -> list[str]:
    return [*FABLAB, "check", lab, "--only", only, "--results", str(results)]


def sequence(case: str, topology: str) -> list[list[Step]]:
    """Each of a case's runs as its steps (the labs case boots its own)."""
    if case == "failover":
        return [[Step(("check", "failover"), PASS, "failover")]]
    if case == "break-fix":
        return [[Step(("break", "bfd-off"), 0, ""), Step(("check", "failover"), FAIL, "bfd-off: caught"),
                 Step(("fix",), 0, ""), Step(("check", "failover"), PASS, "bfd-off: fixed, passes")]]
    if case == "faults":
        loops = []
        for f in FAULTS:
            only = check_of(f.caught_by)
            loops.append([Step(("break", f.name), 0, ""), Step(("check", only), FAIL, f"{f.name}: caught"),
                          Step(("fix",), 0, ""), Step(("check", only), PASS, f"{f.name}: fixed, passes")])
        return loops
    return [[Step(("pytest", topology), 0, "labs")]]


def argv_of(step: Step, results: Path) -> list[str]:
    verb = step.argv[0]
    if verb == "check":
        return check(LAB, step.argv[1], results)
    if verb == "break":
        return [*FABLAB, "break", LAB, step.argv[1]]
    if verb == "fix":
        return [*FABLAB, "fix", LAB, "--all"]
    return [sys.executable, "-m", "pytest", "-q", "labs", "--topology", step.argv[1], "--results-dir", str(results)]


def soak_case(case: str, args, tally: Tally, keep_dir: Path, deadline: float) -> None:
    for i in range(1, args.runs + 1):
        if time.monotonic() > deadline:
            print(f"# {case}: {i - 1} of {args.runs} runs done by --minutes {args.minutes:g}", file=sys.stderr)
            return
        for loop in sequence(case, args.topology):
            work = keep_dir / ".work" / f"{case}-{i}"
            shutil.rmtree(work, ignore_errors=True)
            work.mkdir(parents=True)
            log, results, failed = work / "output.txt", work / "results", False
            for step in loop:
                t0 = time.monotonic()
                rc = run(argv_of(step, results), log)
                if step.name:
                    tally.count(step.name, rc == step.want, time.monotonic() - t0)
                    failed |= rc != step.want
                elif rc == 2 and step.argv[0] == "break":
                    break  # the fault does not apply to this topology
                elif rc != 0:
                    tally.count(f"{step.argv[0]} {' '.join(step.argv[1:])}".strip(), False)
                    failed = True
                    break
            if failed:
                name = loop[0].argv[1] if case == "faults" else case
                keep(keep_dir / f"{name}-{i}", None if case == "labs" else LAB, results, log)
                print(f"# {case} run {i}: FAILED, kept in {keep_dir / f'{name}-{i}'}", file=sys.stderr)
                run([*FABLAB, "fix", LAB, "--all"], log)  # the next run starts from a clean fabric
            shutil.rmtree(work, ignore_errors=True)
        print(f"# {case} run {i} of {args.runs} done", file=sys.stderr)


def beside(stop: threading.Event, tally: Tally, keep_dir: Path) -> None:
    i = 0
    while not stop.is_set():
        i += 1
        work = keep_dir / ".work" / f"beside-{i}"
        work.mkdir(parents=True, exist_ok=True)
        t0 = time.monotonic()
        rc = run([*FABLAB, "check", BESIDE, "--results", str(work / "results")], work / "output.txt")
        tally.count("beside: fablab check (every check)", rc == PASS, time.monotonic() - t0)
        if rc != PASS:
            keep(keep_dir / f"beside-{i}", BESIDE, work / "results", work / "output.txt")
        shutil.rmtree(work, ignore_errors=True)


def frr_debug_argv(lab: str, switch: str) -> list[str]:
    argv = [*FABLAB, "vtysh", lab, switch, "-c", "configure terminal"]
    for command in FRR_DEBUGS:
        argv += ["-c", command]
    return argv


def frr_debugs_on(lab: str, log: Path) -> None:
    """FRR_DEBUGS on every switch of the lab: a few MB of logs a loop on ai-cluster, which is
    why it is a soak's choice and not every lab's (at xlarge `debug bgp zebra` logs every route)."""
    from harness import Lab
    for switch in Lab.attach(lab).plan.switches:
        if run(frr_debug_argv(lab, switch.name), log) != 0:
            raise SystemExit(f"fablab vtysh {lab} {switch.name} failed: {log}")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--topology", default="ai-cluster")
    p.add_argument("--runs", type=int, default=20)
    p.add_argument("--cases", default="failover,break-fix")
    p.add_argument("--beside", action="store_true", help="a second lab checked beside the cases")
    p.add_argument("--keep", type=Path, default=None, help="where failing runs are kept")
    p.add_argument("--minutes", type=float, default=0.0, help="start no run after this many minutes")
    p.add_argument("--frr-debug", action="store_true",
                   help="FRR's debug logs on every switch of the soak's labs (kept with a failing run)")
    args = p.parse_args()
    # Started in the background (`cmd &`), a shell leaves SIGINT ignored: kill -INT or -TERM then
    # ends the soak as Ctrl-C does, its labs torn down and its counts printed.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    cases = [c.strip() for c in args.cases.split(",") if c.strip()]
    unknown = [c for c in cases if c not in CASES]
    if unknown:
        p.error(f"--cases takes {', '.join(CASES)}, not {', '.join(unknown)}")
    if args.runs < 1 or args.minutes < 0:
        p.error(f"--runs takes 1 or more (got {args.runs}), --minutes 0 or more (got {args.minutes:g})")
    keep_dir = args.keep or ROOT / "results" / time.strftime("soak-%Y%m%dT%H%M%SZ", time.gmtime())
    keep_dir.mkdir(parents=True, exist_ok=True)
    tally, stop, log = Tally(), threading.Event(), keep_dir / "soak.log"
    labs = [LAB] * any(c != "labs" for c in cases) + [BESIDE] * args.beside
    t0 = time.monotonic()
    deadline = t0 + args.minutes * 60 if args.minutes else float("inf")
    thread = None
    try:
        for lab in labs:
            print(f"# booting {lab} ({args.topology})", file=sys.stderr)
            if run([*FABLAB, "up", args.topology, "--name", lab, "--replace", "--no-mgmt-services"], log) != 0:
                print(f"fablab up {args.topology} --name {lab} failed: {log}", file=sys.stderr)
                return 1
        if args.frr_debug:
            for lab in labs:
                frr_debugs_on(lab, log)
        if args.beside:
            thread = threading.Thread(target=beside, args=(stop, tally, keep_dir), daemon=True)
            thread.start()
        for case in cases:
            soak_case(case, args, tally, keep_dir, deadline)
    except KeyboardInterrupt:
        print("# interrupted: the counts so far", file=sys.stderr)
    finally:
        stop.set()
        if thread is not None:
            thread.join()
        for lab in labs:
            run([*FABLAB, "down", lab], log)
        shutil.rmtree(keep_dir / ".work", ignore_errors=True)
    print(f"{'case':<44} {'passed':>6} {'failed':>6} {'mean s':>7}")
    for name in tally.passed:
        print(f"{name:<44} {tally.passed[name]:>6} {tally.failed.get(name, 0):>6} {tally.mean_s(name):>7.1f}")
    print(f"# {time.monotonic() - t0:.0f} s; failing runs kept in {keep_dir}")
    return 3 if tally.failed else 0


if __name__ == "__main__":
    sys.exit(main())
