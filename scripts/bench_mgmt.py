#!/usr/bin/env python3
"""What fablab's mgmt services cost, and what reading a lab over SSH costs against reading it directly.

    sudo .venv/bin/python scripts/bench_mgmt.py [TOPOLOGY] [--runs N] [--json]

Per run, alternately without and with the mgmt services (sshd and lldpd in every node, a
management station): the boot to converged (Lab.up returned), MemAvailable's drop at
converged, and, with them, the proportional set size (PSS) of every sshd and lldpd of the lab
summed (what they hold of the machine's memory, shared pages divided among the processes
sharing them). Then on the last lab with them: `cabling,routing,isolation,lossless-audit`
read directly and over SSH (`--via ssh`), each case's seconds, and isolation once more with its
probes sent by fablab's agent on every node (`--allow-traffic`). Run it on an otherwise idle
machine: every figure here is timed.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness.catalog import load_cluster  # noqa: E402
from harness.checks.registry import case, run_case  # noqa: E402
from harness.lab import Lab  # noqa: E402
from harness.plumbing import meminfo  # noqa: E402
from harness.remote.view import RemoteView  # noqa: E402
from harness.plumbing import interrupt  # noqa: E402

CASES = ("cabling", "routing", "isolation", "lossless-audit")


def lab_daemons(lab: str) -> list[int]:
    """The lab's sshd and lldpd processes: sshd's title names its config under the lab's run
    directory, lldpd's namespace holds its control socket there."""
    mark = f"/run/fablab/{lab}/"
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if not entry.name.isdigit() or (entry / "exe").readlink().name not in ("sshd", "lldpd"):
                continue
            if mark in (entry / "cmdline").read_text(errors="replace") or \
                    mark in (entry / "net" / "unix").read_text(errors="replace"):
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def pss_mb(pids: list[int]) -> float:
    total = 0
    for pid in pids:
        try:
            for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
                if line.startswith("Pss:"):
                    total += int(line.split()[1])
        except OSError:
            continue
    return total / 1024


def boot(cluster, name: str, mgmt: bool) -> dict:
    before = meminfo.available_mb()
    t = time.monotonic()
    lab = Lab.up(cluster, name=name, mgmt_services=mgmt)
    row = {"mgmt": mgmt, "up_s": round(time.monotonic() - t, 2), "memory_mb": round(before - meminfo.available_mb()),
           "nodes": len(lab.plan.fabric.nodes)}
    if mgmt:
        pids = lab_daemons(name)
        row.update(processes=len(pids), pss_mb=round(pss_mb(pids), 1),
                   mgmt_s=lab.state.timings.get("mgmt"))
    return row | {"lab": lab}


def reads(lab: Lab) -> dict:
    out = {}
    with RemoteView(lab.plan, lab.mgmt_reach(), f"{lab.name}-ssh") as remote:
        for name in CASES:
            row = {}
            for how, view in (("direct", lab), ("ssh", remote)):
                t = time.monotonic()
                outcome = run_case(case(name), view)
                row[how] = {"seconds": round(time.monotonic() - t, 2), "passed": outcome.passed}
            out[name] = row
        out["ssh_commands"] = len(remote.ssh.transcript)
    # isolation with fablab's probes over SSH: the agent copied to and started on every node, then the round
    with RemoteView(lab.plan, lab.mgmt_reach(), f"{lab.name}-agent", allow_traffic=True) as remote:
        t = time.monotonic()
        outcome = run_case(case("isolation"), remote)
        out["isolation"]["ssh_agent"] = {"seconds": round(time.monotonic() - t, 2), "passed": outcome.passed,
                                         "probes": outcome.probes, "probe_seconds": outcome.probe_seconds}
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("topology", nargs="?", default="ai-cluster")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    cluster = load_cluster(args.topology)
    rows, checks = [], None
    for i in range(args.runs):
        for mgmt in (False, True):
            row = boot(cluster, f"bm{i}{'m' if mgmt else 'n'}", mgmt)
            lab = row.pop("lab")
            try:
                if mgmt and i == args.runs - 1:
                    checks = reads(lab)
            finally:
                lab.down()
            rows.append(row)
            if not args.json:
                print(json.dumps(row), flush=True)
    summary = {}
    for mgmt in (False, True):
        mine = [r for r in rows if r["mgmt"] is mgmt]
        summary["with" if mgmt else "without"] = {
            "up_s_median": statistics.median(r["up_s"] for r in mine),
            "memory_mb_median": statistics.median(r["memory_mb"] for r in mine),
            **({"pss_mb_median": statistics.median(r["pss_mb"] for r in mine),
                "processes": mine[0]["processes"], "mgmt_s_median": statistics.median(r["mgmt_s"] for r in mine)}
               if mgmt else {})}
    doc = {"topology": args.topology, "runs": rows, "summary": summary, "reads": checks}
    print(json.dumps(doc if args.json else {"summary": summary, "reads": checks}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(interrupt.run_main(main))
