#!/usr/bin/env python3
"""Gray failures made from outside fablab, on a converged lab: how long until the leaf's
routes leave the failed link, against the gray objective.

    sudo .venv/bin/python scripts/bench_gray.py [xlarge] [--trials 5] [--rest 30] [--bfd 300x3,200x3] [--progress]

Boots the topology (netns runtime), once per BFD timer set of `--bfd` (interval ms x
multiplier; default: the topology's own), lets it rest `rest` seconds, measuring what BFD
costs at rest (bfdd and the BFD data plane, as a share of all cores), then per trial takes another
leaf uplink and drops every frame arriving at both of its ends with plain `nft` in the two
namespaces (a netdev ingress table of this script's own, not fablab's fault API; carriers stay
up), and polls the leaf's kernel route to a far prefix until it no longer uses that port (as the
failover checks time it), then the whole FIB until no route does. Then it removes the
tables and waits until the fabric has converged again. Prints each trial's time and, per
timer set, the range and median against the declared gray objective (`Objectives.gray_ms`)
and the margin the worst trial left.
"""
from __future__ import annotations

import argparse
import dataclasses
import statistics
import subprocess
import sys
import time
from ipaddress import IPv4Network
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness.catalog import load_cluster  # noqa: E402
from harness.lab import Lab  # noqa: E402
from harness.core.model import Plane  # noqa: E402
from harness.observe.route_watch import route_change_ms  # noqa: E402
from harness.plumbing import priority, wait  # noqa: E402
from harness.plumbing import interrupt  # noqa: E402
from harness.runtime.base import quiet  # noqa: E402
from bench_boot import progress_lines, steady_cpu  # noqa: E402  (scripts/ is this script's own path)

TABLE = "fablab_bench_gray"


def nft(ns: str, ruleset: str) -> None:
    subprocess.run(["ip", "netns", "exec", ns, "nft", "-f", "-"], input=ruleset, text=True, check=True)


def drop_all(ns: str, port: str, on: bool) -> None:
    if on:
        nft(ns, f'table netdev {TABLE} {{\n chain in {{\n  type filter hook ingress device "{port}" priority -10; '
                f'policy drop;\n }}\n}}\n')
    else:
        nft(ns, f"delete table netdev {TABLE}\n")


def uses_port(ns: str, port: str) -> bool:
    out = subprocess.run(["ip", "-n", ns, "-o", "-4", "route", "show"], capture_output=True, text=True).stdout
    return f"dev {port} " in out


def far_prefix(lab: Lab, leaf: str) -> IPv4Network:
    """The prefix of a BE NIC on another leaf, which the leaf reaches over every uplink."""
    nic = next(n for h in lab.plan.hosts for n in h.nics if n.plane is Plane.BE and n.peer != leaf)
    return lab.plan.route_prefix(nic)


def trial(lab: Lab, leaf: str, port: str, peer: str, peer_port: str) -> tuple[float, float]:
    """(ms until the route to one far prefix left the port, ms until no route used it)."""
    a, b = lab.namespace(leaf), lab.namespace(peer)
    prefix = far_prefix(lab, leaf)
    assert port in lab.route(leaf, prefix).interfaces, f"{leaf} routes {prefix} not over {port}: nothing to measure"
    t = time.monotonic()
    drop_all(a, port, True)
    drop_all(b, peer_port, True)
    try:
        # The one-prefix poll at SCHED_FIFO, as the failover checks do; the whole-FIB poll (a
        # subprocess reading 1,100 routes of 16 hops) at normal priority, or it starves zebra.
        with priority.realtime():
            one = route_change_ms(lab, leaf, prefix, port, present=False, since=t, deadline=t + 30)
        every = wait.within(lambda: not uses_port(a, port), 30, since=t, interval=0.05)
        if one is None or every is None:
            raise SystemExit(f"{leaf}:{port}: the routes did not leave the port within 30 s")
        return one, every * 1000
    finally:
        drop_all(a, port, False)
        drop_all(b, peer_port, False)
        wait.until(lambda: lab.shortfalls() == [], 300, "the fabric converged again", interval=0.5)


def timers(text: str) -> list[tuple[int, int]]:
    out = []
    for part in text.split(","):
        ms, _, mult = part.strip().partition("x")
        if not ms.isdigit() or not (mult or "3").isdigit():
            raise SystemExit(f"--bfd {text!r}: each set is INTERVAL_MSxMULTIPLIER, e.g. 300x3,200x3")
        out.append((int(ms), int(mult or 3)))
    return out


def measure(cluster, trials: int, rest: float, show: bool = False) -> str:
    # the default budget: gpu4096 converges in minutes
    with Lab.up(cluster, name=f"gray-{cluster.name}"[:24],
                progress=progress_lines(time.monotonic()) if show else quiet) as lab:
        cost = steady_cpu(lab, rest)  # the converged lab at rest before the first failure
        leaves = [sw for sw in lab.plan.switches if sw.fabric_ports and sw.host_ports and sw.plane is Plane.BE]
        times, alls = [], []
        for i in range(trials):
            sw = leaves[(i * 7) % len(leaves)]
            fp = sw.fabric_ports[i % len(sw.fabric_ports)]
            ms, every_ms = trial(lab, sw.name, fp.name, fp.peer, fp.peer_port)
            times.append(ms)
            alls.append(every_ms)
            print(f"# {sw.name}:{fp.name} <-> {fp.peer}:{fp.peer_port}: the route left it in {ms:.0f} ms, "
                  f"every route in {every_ms:.0f} ms", file=sys.stderr, flush=True)
    objective = cluster.objectives.gray_ms
    med = statistics.median(times)
    bfd = "offloaded" if cluster.bfd.offload else "bfdd"
    return (f"{cluster.name} (BFD {bfd}, {cluster.bfd.interval_ms} ms x {cluster.bfd.multiplier}): "
            f"{len(times)} gray failures, {min(times):.0f}-{max(times):.0f} ms, median {med:.0f} ms "
            f"(every route: {min(alls):.0f}-{max(alls):.0f} ms); objective {objective:.0f} ms: "
            f"{'ok' if max(times) <= objective else 'MISSED'}, margin {100 * (1 - max(times) / objective):.0f} %; "
            f"at rest BFD {cost.get('BFD', 0.0):.1f} % of the cores, the machine {cost['machine']:.1f} %")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("topology", nargs="?", default="xlarge")
    p.add_argument("--trials", type=int, default=5)
    p.add_argument("--rest", type=float, default=30.0)
    p.add_argument("--bfd", default="", help="timer sets to compare, e.g. 300x3,200x3 (default: the topology's)")
    p.add_argument("--progress", action="store_true", help="each boot's progress lines on stderr")
    args = p.parse_args()
    cluster = load_cluster(args.topology)
    sets = timers(args.bfd) if args.bfd else [(cluster.bfd.interval_ms, cluster.bfd.multiplier)]
    rows = []
    for ms, mult in sets:
        variant = dataclasses.replace(cluster, bfd=dataclasses.replace(cluster.bfd, interval_ms=ms, multiplier=mult))
        rows.append(measure(variant, args.trials, args.rest, args.progress))
        print(f"# {rows[-1]}", file=sys.stderr, flush=True)
    print("\n".join(rows))
    return 0


if __name__ == "__main__":
    sys.exit(interrupt.run_main(main))
