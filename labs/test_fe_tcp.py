"""Lesson 10 — the frontend spreads TCP over its uplinks and survives a failed one.

Claim: between two routed FE hosts behind different FE leaves, TCP connections (the FE is
where TCP lives: storage, north-south, control traffic) are spread over every uplink of the
source leaf as a fair 5-tuple hash spreads them (each connection on one path; the count per
uplink in the exact binomial band, N large enough to catch an uplink at twice the weight),
and when the uplink carrying the most streams loses its carrier, every stream finishes with
every byte, and no stream stalls longer than TCP's first retransmission after the slower of
the two failures one cable makes (200 ms RTO + max(`hard_ms` for the data's leaf, which sees
its carrier drop, `remote_ms` for the ACKs' leaf, which hears of it from BGP)). Measured
here: every stream whose data or ACKs crossed the cable stalls for one RTO (about 200 ms,
starting 30-40 ms after the failure, when its unacknowledged window ran out); the others
do not stall. The cable comes back while the streams run: once the uplink is back in the
leaf's route, no stream stalls longer than one RTO + `restore_ms` (measured: none stalls).

Why it matters: a frontend that hashes on addresses only puts every connection between two
hosts (a checkpoint upload, an NFS mount) on one uplink; a failover slower than TCP's first
retransmission doubles the stall with every backoff, and a job's control connections time
out.

Make it fail (the tests after the first do): hash on addresses only on the source leaf (all
connections on one uplink); fail the busiest uplink while the leaf's other uplinks are already
down (no path left: every stream stalls for the whole failure); bring the uplink back with its
forwarding black-holed while BGP advertises it (streams hashed back onto it stall).
"""
from __future__ import annotations

import threading
import time

import pytest

from harness.checks.fe_tcp import fe_pair
from harness.checks.registry import case, run_case
from harness.faults.sabotage import forwarding_blackhole, l3_hashing
from harness.core.errors import HarnessError
from harness.lab import set_carriers
from harness.plumbing.wait import until
from harness.pytest_plugin import measured


@pytest.fixture
def fe(lab):
    try:
        fe_pair(lab.plan)
    except HarnessError as e:
        pytest.skip(str(e))
    return lab


def _source_leaf(lab) -> str:
    src, _ = fe_pair(lab.plan)
    return lab.plan.host(src[0]).nic(src[1]).peer


def test_tcp_spreads_over_every_fe_uplink(fe, results):
    result = run_case(case("fe-ecmp"), fe, results)
    assert result.passed, result.reason
    assert all(k > 0 for k in result.per_uplink.values())


def test_l3_hashing_on_the_fe_leaf_is_caught(fe, results, control):
    leaf = _source_leaf(fe)
    before = control(case("fe-ecmp"), fe)  # positive control in the same run
    with l3_hashing(fe, [leaf]) as s:
        result = run_case(case("fe-ecmp"), fe, results, name="fe-ecmp-l3", sabotage=s.description)
    assert before.passed, before.reason
    assert not result.passed
    assert sorted(result.per_uplink.values())[0] == 0, result.reason


def test_tcp_survives_a_failed_fe_uplink(fe, results):
    result = measured(run_case(case("fe-failover"), fe, results))
    assert result.passed, result.reason
    assert result.on_failed and result.bytes_received == result.bytes_sent > 0


def test_a_failover_with_no_path_left_is_caught(fe, results, control):
    leaf = _source_leaf(fe)
    sw = fe.plan.switch(leaf)
    others = [fe.link(leaf, p.peer) for p in sw.fabric_ports[1:]]
    before = control(case("fe-failover"), fe)  # positive control in the same run
    set_carriers(others, up=False)
    try:
        result = run_case(case("fe-failover"), fe, results, name="fe-failover-no-path",
                          sabotage=f"{leaf}'s other uplinks down before the failure: no path left")
    finally:
        set_carriers(others, up=True)
        until(lambda: not fe.shortfalls(), 90, "the FE to converge again after the uplinks came back")
    assert before.passed, before.reason
    assert not result.passed
    assert any("stalled" in p for p in result.problems), result.reason


def test_a_restore_that_black_holes_is_caught(fe, results, control):
    """The failed uplink comes back with its forwarding black-holed (a port whose entries were
    not reprogrammed), its BGP up and advertising: streams hashed back onto it stall past the
    restore budget. The hole closes 1 s after the uplink is back in the route, so the streams
    can finish."""
    _, dst = fe_pair(fe.plan)
    prefix = fe.plan.route_prefix(fe.plan.host(dst[0]).nic(dst[1]))
    closers: list[threading.Thread] = []

    def black_hole(leaf: str, uplink: str) -> None:
        hole = forwarding_blackhole(fe, leaf, uplink)

        def in_route() -> bool:
            route = fe.route(leaf, prefix)
            return route is not None and uplink in route.interfaces

        def close_after_the_restore() -> None:
            try:
                until(lambda: not in_route(), 10, f"{uplink} to leave {leaf}'s route")
                until(in_route, 30, f"{uplink} back in {leaf}'s route")
                time.sleep(1.0)  # how long the hole outlives the restore: the fault itself
            finally:
                hole.undo()

        closers.append(threading.Thread(target=close_after_the_restore, daemon=True))
        closers[-1].start()

    before = control(case("fe-failover"), fe)  # positive control in the same run
    try:
        result = run_case(case("fe-failover"), fe, results, name="fe-failover-restore-blackhole",
                          sabotage="the restored uplink's forwarding black-holed for 1 s", while_failed=black_hole)
    finally:
        for closer in closers:
            closer.join(60)
    assert before.passed, before.reason
    assert not result.passed
    assert any("after the restore" in p for p in result.problems), result.reason
    assert result.back_ms is not None  # the control plane came back: only the data plane lied
