"""Faults in how packets are routed: a GPU node made into a router, ECMP hashing on addresses
only, one next hop weighted above the others; and the hash seed, a knob (another fair hash)."""
from __future__ import annotations

import json
from dataclasses import dataclass

from harness.core.errors import HarnessError, InputError
from harness.core.declarations import NicRole, Plane
from harness.faults.protocol import Applied
from harness.faults.targets import Nic, Route, Switch, Switches
from harness.plumbing.labview import LabView

HASH_POLICY = "net.ipv4.fib_multipath_hash_policy"
HASH_SEED = "net.ipv4.fib_multipath_hash_seed"


@dataclass(frozen=True)
class Sysctls:
    """Each node's sysctls as they were before the fault: node -> {key: value}."""

    before: dict[str, dict[str, str]]


def read_sysctls(lab: LabView, keys: dict[str, list[str]]) -> Sysctls:
    return Sysctls({node: {k: str(lab.sysctl(node, k)) for k in ks} for node, ks in keys.items()})


def restore_sysctls(lab: LabView, target: object, state: Sysctls) -> None:
    for node, values in state.before.items():
        lab.set_sysctls(node, dict(values))


# --------------------------------------------------------------------------- route-leak

@dataclass(frozen=True)
class Leak:
    nic: str  # the host's NIC the leaf routes through


def _leak_nic(lab: LabView, target: Nic):
    host = lab.plan.host(target.host)
    nic = host.nic(target.nic) if target.nic else next((n for n in host.nics if n.role is NicRole.FE), None)
    if nic is None:
        raise InputError(f"--on {target}: {target.host} has no FE NIC; name one as HOST:NIC")
    if nic.gateway is None or nic.peer not in {s.name for s in lab.plan.switches}:
        raise InputError(f"--on {target}: {target.host}:{nic.name} is not on a routed link to a leaf (a tenant "
                         "member's NIC is an L2 port: no route to leak)")
    return nic


def leak(lab: LabView, target: Nic) -> Applied[Leak]:
    """A dual-homed GPU node turned into a router: it forwards, and its FE leaf routes the
    whole BE range to it."""
    nic = _leak_nic(lab, target)
    be = [str(net) for net in lab.plan.plane_nets[Plane.BE]]
    lab.set_sysctls(target.host, {"net.ipv4.ip_forward": 1})
    with lab.netlink(nic.peer) as s:
        for net in be:
            s.route("add", dst=net, gateway=str(nic.address.ip))
    return Applied(f"route {', '.join(be)} on {nic.peer} via {target.host} ({nic.address.ip}), which forwards",
                   Leak(nic.name))


def unleak(lab: LabView, target: Nic, state: Leak) -> None:
    nic = lab.plan.host(target.host).nic(state.nic)
    with lab.netlink(nic.peer) as s:
        for net in lab.plan.plane_nets[Plane.BE]:
            s.route("del", dst=str(net), gateway=str(nic.address.ip))
    lab.set_sysctls(target.host, {"net.ipv4.ip_forward": 0})


# --------------------------------------------------------------------------- l3-hashing

def l3_hashing(lab: LabView, target: Switches) -> Applied[Sysctls]:
    """ECMP on addresses only (fib_multipath_hash_policy=0): RoCEv2's low entropy shows."""
    state = read_sysctls(lab, {n: [HASH_POLICY] for n in target.names})
    for n in target.names:
        lab.set_sysctls(n, {HASH_POLICY: 0})
    return Applied(f"L3-only ECMP hashing (hash policy 0) on {', '.join(target.names)}", state)


# --------------------------------------------------------------------------- hash-seed (a knob)

def hash_seed(lab: LabView, target: Switch, seed: int = 0) -> Applied[Sysctls]:
    """The node's fib_multipath_hash_seed: each seed is another fair hash, so runs under
    different seeds are independent samples of a verdict."""
    if not 0 <= seed < 1 << 32:
        raise HarnessError(f"seed={seed}: fib_multipath_hash_seed is a 32-bit value (0 = the kernel's random key)")
    state = read_sysctls(lab, {target.name: [HASH_SEED]})
    lab.set_sysctls(target.name, {HASH_SEED: seed})
    return Applied(f"{target.name}: {HASH_SEED}={seed}", state)


# --------------------------------------------------------------------------- weighted-uplink

@dataclass(frozen=True)
class Hop:
    gateway: str
    dev: str
    weight: int
    onlink: bool


@dataclass(frozen=True)
class Weights:
    """The route as it was: its attributes (`ip route` words) and next hops at their weights."""

    attributes: tuple[str, ...]
    hops: tuple[Hop, ...]


def _route(lab: LabView, node: str, prefix: str) -> dict:
    run = lab.ns_exec(node, ["ip", "-j", "-d", "route", "show", "exact", prefix], check=True)
    routes = json.loads(run.stdout or "[]")
    if not routes:
        raise InputError(f"{node} has no route to {prefix}; give a prefix its FIB holds (ip route on {node})")
    return routes[0]


def _replace(lab: LabView, node: str, prefix: str, state: Weights, weights: dict[str, int]) -> None:
    argv = ["ip", "route", "replace", prefix, *state.attributes]
    for hop in state.hops:
        argv += ["nexthop", "via", hop.gateway, "dev", hop.dev, "weight", str(weights[hop.dev])]
        argv += ["onlink"] if hop.onlink else []
    lab.ns_exec(node, argv, check=True)


def weighted_uplink(lab: LabView, target: Route, weight: int = 2) -> Applied[Weights]:
    """One next hop of a leaf's route at a higher weight than the others, as a mistyped
    `weight` (or a UCMP policy nobody meant) would leave it: its uplink gets
    weight / (weight + k - 1) of the flows instead of 1 / k. The route keeps zebra's
    protocol, which zebra takes for its own and leaves alone."""
    if not 1 <= weight <= 256:
        raise HarnessError(f"weight={weight}: the kernel takes next-hop weights 1..256")
    route = _route(lab, target.node, target.prefix)
    hops = route.get("nexthops") or []
    devs = [h.get("dev") for h in hops]
    if len(hops) < 2:
        raise InputError(f"{target.node}'s route to {target.prefix} has {len(hops)} next hop(s): no ECMP to skew")
    if target.port not in devs:
        raise InputError(f"{target.port!r} is not a next hop of {target.node}'s route to {target.prefix}; "
                         "next hops: " + ", ".join(map(str, devs)))
    attributes = tuple(x for key, word in (("protocol", "proto"), ("metric", "metric"), ("scope", "scope"))
                       if key in route for x in (word, str(route[key])))
    state = Weights(attributes, tuple(Hop(h["gateway"], h["dev"], int(h.get("weight", 1)),
                                          "onlink" in h.get("flags", [])) for h in hops))
    _replace(lab, target.node, target.prefix, state, {**_weights(state), target.port: weight})
    return Applied(f"{target.node}: route to {target.prefix} weights {target.port} at {weight}", state)


def _weights(state: Weights) -> dict[str, int]:
    return {h.dev: h.weight for h in state.hops}


def unweight(lab: LabView, target: Route, state: Weights) -> None:
    _replace(lab, target.node, target.prefix, state, _weights(state))
