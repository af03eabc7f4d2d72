"""Lesson — routing converged as planned: every session up, every prefix at its ECMP width.

Claim: every planned BGP and BFD session of every switch (and dual-homed host) is up, and
every planned prefix is in each switch's kernel FIB with as many next hops as the plan gives
it. It is what `fablab up` waits for, judged on the running lab, read-only, so it runs the same
on a staged fabric over SSH (`fablab check --inventory`, docs/staged.md).

Why it matters: a fabric can pass a ping with half its uplinks gone. A leaf with one of two
spine sessions down still reaches everything, at half the bandwidth, and every RoCE flow it
carries hashes onto the one link left; a ping, a traceroute or a small transfer shows nothing.

Make it fail: pull one leaf–spine cable (`fablab link LAB LEAF SPINE down`). The leaf's and the
spine's sessions on it go down and the leaf's routes lose a next hop; the check names both
switches, and passes again once the cable is back.
"""
from __future__ import annotations

import pytest

from harness.checks.converged import wait_routed
from harness.checks.registry import case, run_case
from harness.core.model import Role
from harness.plumbing.wait import until


def _both_named(outcome, *switches: str):
    named = " ".join(outcome.short)
    return outcome if all(f"{s}:" in named for s in switches) else None


def test_every_session_and_route_as_planned(lab, results):
    outcome = run_case(case("routing"), lab, results)
    assert outcome.passed, outcome.reason
    assert outcome.sessions > 0 and outcome.prefixes > 0 and outcome.speakers == len(lab.plan.switches) + sum(
        1 for h in lab.plan.hosts if h.routed)


def test_a_pulled_uplink_is_named_at_both_ends(lab, results, control):
    leaf = next((s for s in lab.plan.switches if s.role in (Role.BE_LEAF, Role.FE_LEAF) and s.fabric_ports), None)
    if leaf is None:
        pytest.skip("not applicable: no leaf has an uplink to pull (a rail-only BE and no FE)")
    spine = leaf.fabric_ports[0].peer
    assert control(case("routing"), lab).passed  # the control: the same fabric passes before the pull
    link = lab.link(leaf.name, spine)
    link.down()
    try:  # each end's bgpd sees its session go in its own time (the leaf's carrier at once)
        both = until(lambda: _both_named(run_case(case("routing"), lab), leaf.name, spine), 30,
                     f"{leaf.name} and {spine} both named short")
        outcome = run_case(case("routing"), lab, results, name="routing-uplink-down", sabotage=f"{link} down")
    finally:
        link.up()
    assert not both.passed and not outcome.passed
    named = " ".join(outcome.short)
    assert f"{leaf.name}:" in named and f"{spine}:" in named and "BGP sessions" in named
    wait_routed(lab, 60.0, "the uplink's sessions to come back")
    assert control(case("routing"), lab).passed
