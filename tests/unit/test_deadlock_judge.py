"""The deadlock check's judge on observations recorded on real labs (tests/observations/
deadlock/), and on the same observations with routes, cables or PFC priorities changed: a
table of what was seen and the verdict it must get, failing rows included. No lab, no root."""
from __future__ import annotations

import dataclasses
import json
from functools import cache
from ipaddress import IPv4Address, IPv4Network
from pathlib import Path

import pytest

from harness.checks.deadlock import (Channel, DeadlockSeen, FibRoute, Lpm, Wire, components, fib_routes,
                                     judge_deadlock, shortest_cycle)
from harness.core.codec import from_plain, to_plain
from harness.report.recorded import plan_of, read

OBSERVATIONS = Path(__file__).resolve().parents[1] / "observations" / "deadlock"


@cache
def recorded(label: str):
    it = read(OBSERVATIONS / f"{label}.json")
    return it, plan_of(it)


def seen(label: str) -> DeadlockSeen:
    return recorded(label)[0].observation


# --------------------------------------------------------------------------- changes a row makes

def route(switch: str, prefix: str, *ports: str):
    """The observation with `switch`'s FIB holding `prefix` out of `ports` (a hand-added route)."""
    def change(s: DeadlockSeen) -> DeadlockSeen:
        fib = (*(r for r in s.fibs[switch] if r.prefix != prefix), FibRoute(prefix, tuple(sorted(ports)), "static"))
        return dataclasses.replace(s, fibs={**s.fibs, switch: fib})
    return change


def pfc(switch: str, port: str, *priorities: int):
    def change(s: DeadlockSeen) -> DeadlockSeen:
        return dataclasses.replace(s, pfc={**s.pfc, switch: {**s.pfc[switch], port: tuple(priorities)}})
    return change


def unplug(a: str):
    def change(s: DeadlockSeen) -> DeadlockSeen:
        return dataclasses.replace(s, wires=tuple(w for w in s.wires if a not in (w.a, w.b)))
    return change


def both(*changes):
    def change(s: DeadlockSeen) -> DeadlockSeen:
        for c in changes:
            s = c(s)
        return s
    return change


# ai-cluster: be-s1 and be-s2 reach every leaf; be-g1-r0 holds gpu01:rail0 (10.0.1.1, in 10.0.1.0/31)
# on Ethernet256, be-g1-r2 holds gpu01:rail2 (10.0.3.1); each leaf's Ethernet0 goes to be-s1, Ethernet8
# to be-s2; be-s1's Ethernet8 goes to be-g1-r1, be-s2's Ethernet24 to be-g1-r3.
BOUNCE_S2 = route("be-s2", "10.0.3.1/32", "Ethernet24")  # gpu01:rail2 sent down to be-g1-r3, which sends it up
# The classic deadlock of two valleys, with no forwarding loop: be-s1 sends 10.0.1.1 down to be-g1-r1, which
# sends it up to be-s2 only (home from there); be-s2 sends 10.0.3.1 down to be-g1-r3, which sends it up to
# be-s1 only (home from there). Every packet arrives; the buffers still wait in a cycle of four links.
VALLEY_1 = both(route("be-s1", "10.0.1.1/32", "Ethernet8"), route("be-g1-r1", "10.0.1.1/32", "Ethernet8"))
VALLEY_2 = both(route("be-s2", "10.0.3.1/32", "Ethernet24"), route("be-g1-r3", "10.0.3.1/32", "Ethernet0"))

ROWS = [
    # (label, recording, change, passes, what the reason or the cycles must say)
    ("ai-cluster, as recorded", "ai-cluster", None, True, "0 down then up, 0 cycle(s)"),
    ("route-bounce, as recorded", "route-bounce", None, False,
     "be-s1:Ethernet8 → be-g1-r1:Ethernet0, where be-g1-r1 routes 10.0.1.0/31 out of Ethernet0"),
    ("rail-only: no switch-to-switch cable", "rail-only", None, True, "no switch-to-switch cable"),
    ("a bounce on the other spine", "ai-cluster", BOUNCE_S2, False,
     "be-g1-r3:Ethernet8 → be-s2:Ethernet24, where be-s2 routes 10.0.3.1/32 out of Ethernet24"),
    ("the bounce undone by hand: the leaf's route removed", "route-bounce", route("be-s1", "10.0.1.1/32", "Ethernet0"),
     True, "0 down then up"),
    ("one valley alone is no cycle", "ai-cluster", VALLEY_1, True, "1 down then up, 0 cycle(s)"),
    ("two valleys make a cycle of four links, every packet delivered", "ai-cluster", both(VALLEY_1, VALLEY_2), False,
     "priority 3, 4 links"),
    ("the bounce over a link lossy at one end: PFC cannot hold it", "route-bounce", pfc("be-g1-r1", "Ethernet0"),
     True, "30 on priority 3"),  # both directions of its cable
    ("the bounce over a link lossless on 4 at both ends: a cycle on 4", "route-bounce",
     both(pfc("be-g1-r1", "Ethernet0", 4), pfc("be-s1", "Ethernet8", 4)), False, "priority 4, 2 links"),
    ("the bounce over a link lossless on 3 and 4: one cycle, both named", "route-bounce",
     both(pfc("be-g1-r1", "Ethernet0", 3, 4), pfc("be-s1", "Ethernet8", 3, 4)), False, "priority 3, 2 links"),
    ("the bounce's cable gone from the kernels", "route-bounce", unplug("be-s1:Ethernet8"), True, "15 cables"),
    ("a blackholed route forwards nowhere", "route-bounce", route("be-g1-r1", "10.0.1.0/31"), True, "0 cycle(s)"),
]


@pytest.mark.parametrize("label,name,change,passes,says", ROWS, ids=[r[0] for r in ROWS])
def test_the_judge_gives_each_observation_its_verdict(label, name, change, passes, says):
    it, plan = recorded(name)
    observation = it.observation if change is None else change(it.observation)
    outcome = judge_deadlock(plan, observation)
    assert outcome.passed is passes, outcome.reason
    assert says in outcome.reason, outcome.reason
    assert len(outcome.problems) == len(outcome.cycles)
    if change is None:
        assert (outcome.passed, outcome.reason) == (it.passed, it.reason)  # what it said on the lab


def test_a_priority_lossless_on_both_ends_of_the_same_links_is_judged_with_its_twin():
    it, plan = recorded("route-bounce")
    change = both(*(pfc(sw, port, 3, 4) for sw, ports in it.observation.pfc.items() for port in ports))
    outcome = judge_deadlock(plan, change(it.observation))
    (cycle,) = outcome.cycles
    assert cycle.priorities == (3, 4) and outcome.lossless == {"3": 32, "4": 32}


def test_the_cycle_is_named_link_by_link_with_the_routes_of_each_step():
    it, plan = recorded("route-bounce")
    (cycle,) = judge_deadlock(plan, it.observation).cycles
    assert cycle.links == ("be-g1-r1:Ethernet0 → be-s1:Ethernet8", "be-s1:Ethernet8 → be-g1-r1:Ethernet0")
    assert cycle.via == (("10.0.1.1/32",), ("10.0.1.0/31",))
    table = judge_deadlock(plan, it.observation).findings_table()
    assert table is not None and [r[1] for r in table.rows] == list(cycle.links)


def test_the_four_link_cycle_runs_through_both_valleys():
    it, plan = recorded("ai-cluster")
    (cycle,) = judge_deadlock(plan, both(VALLEY_1, VALLEY_2)(it.observation)).cycles
    assert set(cycle.links) == {"be-s1:Ethernet8 → be-g1-r1:Ethernet0", "be-g1-r1:Ethernet8 → be-s2:Ethernet8",
                                "be-s2:Ethernet24 → be-g1-r3:Ethernet8", "be-g1-r3:Ethernet0 → be-s1:Ethernet24"}


def test_an_observation_round_trips_the_codec():
    s = seen("route-bounce")
    assert from_plain(DeadlockSeen, json.loads(json.dumps(to_plain(s)))) == s


# --------------------------------------------------------------------------- the parts

def test_fib_routes_keep_the_route_the_kernel_forwards_by():
    ip = json.dumps([
        {"dst": "10.0.1.0/31", "protocol": "bgp", "metric": 20,
         "nexthops": [{"gateway": "169.254.0.1", "dev": "eth2"}, {"gateway": "169.254.0.1", "dev": "eth1"}]},
        {"dst": "10.0.1.0/31", "protocol": "static", "metric": 10, "dev": "eth3", "gateway": "169.254.0.1"},
        {"dst": "10.0.2.0/31", "type": "blackhole", "protocol": "static"},
        {"dst": "10.0.3.1", "dev": "eth1", "protocol": "bgp"},
        {"dst": "default", "dev": "eth1", "protocol": "bgp"},
        {"dst": "172.31.0.0/20", "dev": "eth0", "protocol": "kernel"},  # management: outside the BE
    ])
    names = {("sw", "eth1"): "Ethernet0", ("sw", "eth2"): "Ethernet8", ("sw", "eth3"): "Ethernet16"}
    got = fib_routes(ip, "sw", names, IPv4Network("10.0.0.0/16"))
    assert got == (FibRoute("0.0.0.0/0", ("Ethernet0",), "bgp"), FibRoute("10.0.1.0/31", ("Ethernet16",), "static"),
                   FibRoute("10.0.2.0/31", (), "static"), FibRoute("10.0.3.1/32", ("Ethernet0",), "bgp"))


def test_longest_prefix_match():
    lpm = Lpm((FibRoute("0.0.0.0/0", ("a",), "bgp"), FibRoute("10.0.1.0/24", ("b",), "bgp"),
               FibRoute("10.0.1.1/32", ("c",), "static")))
    assert [lpm(IPv4Address(a)).ports for a in ("10.0.1.1", "10.0.1.2", "10.9.0.1")] == [("c",), ("b",), ("a",)]
    assert Lpm(()).__call__(IPv4Address("10.0.0.1")) is None


def test_components_and_the_shortest_cycle_in_each():
    a, b, c, d, e = (Channel(f"s{i}:p", f"t{i}:p") for i in range(5))
    succ = {a: (b,), b: (c, a), c: (a,), d: (e,)}  # a-b-c knot, d -> e a chain
    (knot,) = components((a, b, c, d, e), succ)
    assert knot == [a, b, c] and shortest_cycle(knot, succ) == (a, b)


def test_components_go_deeper_than_the_recursion_limit():
    chain = [Channel(f"s{i}:p", f"s{i + 1}:p") for i in range(5000)]
    succ = {x: (y,) for x, y in zip(chain, chain[1:])}
    assert components(chain, succ) == []
    succ[chain[-1]] = (chain[0],)
    (ring,) = components(chain, succ)
    assert len(ring) == 5000 and len(shortest_cycle(ring, succ)) == 5000


def test_wires_are_both_directions():
    from harness.checks.deadlock.graph import channels

    assert channels([Wire("a:1", "b:2")]) == {"a:1": Channel("a:1", "b:2"), "b:2": Channel("b:2", "a:1")}
