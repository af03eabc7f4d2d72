"""ECMP faults and knobs for negative controls and benchmarks, each undone by its `Sabotage`.

- `weighted_uplink`: one next hop of a leaf's route at a higher weight than the others, as a
  mistyped `weight` (or a UCMP policy nobody meant) would leave it: its uplink gets
  weight / (weight + k - 1) of the flows instead of 1 / k.
- `hash_seed`: the leaf's `net.ipv4.fib_multipath_hash_seed`: each seed is another fair
  hash, so runs under different seeds are independent samples of the verdict.
"""
from __future__ import annotations

import json

from harness.checks.sabotage import Sabotage
from harness.core.errors import HarnessError
from harness.plumbing.labview import LabView


def _route(lab: LabView, node: str, prefix: str) -> dict:
    run = lab.ns_exec(node, ["ip", "-j", "-d", "route", "show", "exact", prefix], check=True)
    routes = json.loads(run.stdout or "[]")
    if not routes:
        raise HarnessError(f"{node} has no route to {prefix}; give a prefix its FIB holds (ip route on {node})")
    return routes[0]


def _replace_argv(prefix: str, route: dict, weights: dict[str, int]) -> list[str]:
    argv = ["ip", "route", "replace", prefix]
    for key, word in (("protocol", "proto"), ("metric", "metric"), ("scope", "scope")):
        if key in route:
            argv += [word, str(route[key])]
    for hop in route["nexthops"]:
        argv += ["nexthop", "via", hop["gateway"], "dev", hop["dev"], "weight", str(weights[hop["dev"]])]
        argv += [flag for flag in hop.get("flags", []) if flag == "onlink"]
    return argv


def weighted_uplink(lab: LabView, leaf: str, prefix: str, uplink: str, weight: int = 2) -> Sabotage:
    """Give `uplink` weight `weight` (the others keep theirs) in the leaf's kernel route to
    prefix. The route keeps zebra's protocol, which zebra takes for its own and leaves alone."""
    if weight < 1 or weight > 256:
        raise HarnessError(f"weight={weight}: the kernel takes next-hop weights 1..256")
    route = _route(lab, leaf, prefix)
    hops = route.get("nexthops") or []
    devs = [h.get("dev") for h in hops]
    if len(hops) < 2:
        raise HarnessError(f"{leaf}'s route to {prefix} has {len(hops)} next hop(s): no ECMP to skew")
    if uplink not in devs:
        raise HarnessError(f"uplink={uplink!r} is not a next hop of {leaf}'s route to {prefix}; next hops: "
                           + ", ".join(map(str, devs)))
    before = {h["dev"]: int(h.get("weight", 1)) for h in hops}
    lab.ns_exec(leaf, _replace_argv(prefix, route, {**before, uplink: weight}), check=True)

    def undo() -> None:
        lab.ns_exec(leaf, _replace_argv(prefix, route, before), check=True)

    return Sabotage(f"{leaf}: route to {prefix} weights {uplink} at {weight}", undo)


def hash_seed(lab: LabView, node: str, seed: int) -> Sabotage:
    if not 0 <= seed < 1 << 32:
        raise HarnessError(f"seed={seed}: fib_multipath_hash_seed is a 32-bit value (0 = the kernel's random key)")
    key = "net.ipv4.fib_multipath_hash_seed"
    before = lab.sysctl(node, key)
    lab.set_sysctls(node, {key: seed})
    return Sabotage(f"{node}: {key}={seed}", lambda: lab.set_sysctls(node, {key: before}))
