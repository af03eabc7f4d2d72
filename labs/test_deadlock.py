"""Lesson — a lossless backend cannot deadlock: no priority's buffers wait on each other in a cycle.

Claim: on every lossless priority of the BE, the buffer dependencies the running FIBs make
(a packet held in one link's ingress buffer waits for room in the link its route leaves by)
have no cycle, so PFC can never hold a set of links paused on each other for good.

Why it matters: PFC makes a priority lossless by pausing the sender when a buffer fills. If
buffers A, B, C each wait on the next and C waits on A, none ever drains: the priority stops
on those links, and only the PFC watchdog breaks it, by dropping what was promised lossless.
Up-down routing (up to a spine, down to the destination's leaf) makes no such cycle; a route
that goes down to the wrong leaf and back up does. It takes one static route to make one, and
nothing in BGP, BFD or a ping shows it: the check reads the FIBs, cables and PFC priorities.

Make it fail: `fablab break LAB route-bounce` (a spine's static /32 for one GPU sent down to
another leaf, which sends it back up); the negative control below does it, beside the passing
run, and the verdict names the cycle link by link with the routes that make it.
"""
from __future__ import annotations

from harness.checks.registry import case, run_case
from harness.faults import BY_NAME, applied


def test_no_lossless_buffer_waits_on_itself(lab, results):
    outcome = run_case(case("deadlock"), lab, results)
    assert outcome.passed, outcome.reason
    assert outcome.links and outcome.dependencies and not outcome.valleys  # it judged a graph, up-down only


def test_a_route_that_bounces_makes_a_cycle_that_is_named(lab, results, control):
    fault = BY_NAME["route-bounce"]
    target = fault.default(lab.plan)
    spine = target.node
    down = next(p for p in lab.plan.switch(spine).fabric_ports if p.name == target.port)  # the port it is sent down
    assert control(case("deadlock"), lab).passed  # the control: the same FIBs pass before the route
    with applied(lab, fault, target) as bounced:
        outcome = run_case(case("deadlock"), lab, results, name="deadlock-route-bounce",
                           sabotage=bounced.description)
    assert not outcome.passed
    # The cycle is the spine's port down to the wrong leaf and that leaf's port back up to it,
    # and the spine's step is the bounced route itself.
    (cycle,) = outcome.cycles
    assert set(cycle.links) == {f"{spine}:{down.name} → {down.peer}:{down.peer_port}",
                                f"{down.peer}:{down.peer_port} → {spine}:{down.name}"}, outcome.reason
    assert any(target.prefix in via for via in cycle.via) and target.prefix in outcome.reason
    assert control(case("deadlock"), lab).passed, "undone, the route is gone and the FIBs pass again"
