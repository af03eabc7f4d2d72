#!/usr/bin/env python3
"""Gray failures made from outside fablab, on a converged lab: how long until the leaf's
routes leave the failed link, against the gray objective.

    sudo .venv/bin/python scripts/bench_gray.py [xlarge] [--trials 5] [--rest 30]

Boots the topology (netns runtime), lets it rest `rest` seconds, then per trial takes another
leaf uplink and drops every frame arriving at both of its ends with plain `nft` in the two
namespaces (a netdev ingress table of this script's own, not fablab's fault API; carriers stay
up), and polls the leaf's kernel route to a far prefix until it no longer uses that port (as the
failover checks time it), then the whole FIB until no route does. Then it removes the
tables and waits until the fabric has converged again. Prints each trial's time and the
median against the declared gray objective (`Objectives.gray_ms`).
"""
from __future__ import annotations

import argparse
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


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("topology", nargs="?", default="xlarge")
    p.add_argument("--trials", type=int, default=5)
    p.add_argument("--rest", type=float, default=30.0)
    args = p.parse_args()
    cluster = load_cluster(args.topology)
    with Lab.up(cluster, name=f"gray-{cluster.name}"[:24], timeout=600) as lab:
        time.sleep(args.rest)  # the converged lab at rest before the first failure
        leaves = [sw for sw in lab.plan.switches if sw.fabric_ports and sw.host_ports]
        times, alls = [], []
        for i in range(args.trials):
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
        print(f"{args.topology} (BFD {bfd}, {cluster.bfd.interval_ms} ms x {cluster.bfd.multiplier}): "
              f"{len(times)} gray failures, {min(times):.0f}-{max(times):.0f} ms, median {med:.0f} ms "
              f"(every route: {min(alls):.0f}-{max(alls):.0f} ms); "
              f"objective {objective:.0f} ms: {'ok' if max(times) <= objective else 'MISSED'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
