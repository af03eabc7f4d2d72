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
do not stall.

Why it matters: a frontend that hashes on addresses only puts every connection between two
hosts (a checkpoint upload, an NFS mount) on one uplink; a failover slower than TCP's first
retransmission doubles the stall with every backoff, and a job's control connections time
out.

Make it fail (the tests after the first do): hash on addresses only on the source leaf (all
connections on one uplink); fail the busiest uplink while the leaf's other uplinks are already
down (no path left: every stream stalls for the whole failure).
"""
from __future__ import annotations

import pytest

from harness.checks.fe_tcp import check_fe_ecmp, check_fe_failover, fe_pair
from harness.checks.sabotage import l3_hashing
from harness.errors import HarnessError
from harness.lab import set_carriers
from harness.wait import until


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
    result = check_fe_ecmp(fe)
    results.record("fe-ecmp", result)
    assert result.passed, result.reason
    assert all(k > 0 for k in result.per_uplink.values())


def test_l3_hashing_on_the_fe_leaf_is_caught(fe, results):
    leaf = _source_leaf(fe)
    with l3_hashing(fe, [leaf]):
        result = check_fe_ecmp(fe)
        results.record("fe-ecmp-l3", result)
    assert not result.passed
    assert sorted(result.per_uplink.values())[0] == 0, result.reason


def test_tcp_survives_a_failed_fe_uplink(fe, results):
    result = check_fe_failover(fe)
    results.record("fe-failover", result)
    assert result.passed, result.reason
    assert result.on_failed and result.bytes_received == result.bytes_sent > 0


def test_a_failover_with_no_path_left_is_caught(fe, results):
    leaf = _source_leaf(fe)
    sw = fe.plan.switch(leaf)
    others = [fe.link(leaf, p.peer) for p in sw.fabric_ports[1:]]
    set_carriers(others, up=False)
    try:
        result = check_fe_failover(fe)
        results.record("fe-failover-no-path", result)
    finally:
        set_carriers(others, up=True)
        until(lambda: not fe.shortfalls(), 90, "the FE to converge again after the uplinks came back")
    assert not result.passed
    assert any("stalled" in p for p in result.problems), result.reason
