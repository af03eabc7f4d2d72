"""Lesson 13 — a dual-homed frontend: every host on two leaves, routed.

Claim: with `Frontend(dual_homed=True)` every FE host has a NIC on each leaf of a pair and
runs BGP to both (its own /32 out, the FE plane's prefixes in, BFD on). Its TCP connections
spread over both NICs (fair-hash band), then over the uplinks of both leaves; when the NIC
carrying the most streams loses its cable, or its whole leaf goes down, every stream
finishes with every byte and none stalls longer than TCP's first retransmission after the
objectives (200 ms RTO + max(hard_ms, remote_ms)). The planes stay isolated: a host hears
the FE plane only, never a default route into the BE or the mgmt plane.

Why it matters in an AI data center: the frontend carries storage, checkpoints and the
job's control connections; a single-homed host loses all of them with one cable, one optic
or one leaf upgrade. Dual homing only helps if the host really uses both paths and moves off
a dead one within a retransmission.

Make it fail (the tests do): hash on addresses only on the host (every connection to one
peer on one NIC); fail the busiest NIC while the other is already down (no path left);
fail a leaf whose partner is already cut off from the spines (the host's other path leads
nowhere).
"""
from __future__ import annotations

import json

import pytest

from harness.checks.fe_tcp import fe_pair
from harness.checks.registry import case, run_case
from harness.faults.sabotage import l3_hashing
from harness.plumbing.wait import until
from harness.pytest_plugin import boot, measured
from topologies.dual_homed import dual_homed


@pytest.fixture(scope="module")
def dh_lab(pytestconfig):
    yield from boot(dual_homed(), pytestconfig.getoption("runtime"), "dh")


def _source(lab):
    return lab.plan.host(fe_pair(lab.plan)[0][0])


def _converged(lab) -> None:
    until(lambda: not lab.shortfalls(), 90, lambda: "; ".join(map(str, lab.shortfalls())))


def test_a_host_hears_the_fe_plane_over_both_leaves_and_the_planes_stay_apart(dh_lab, results):
    host = _source(dh_lab)
    far = dh_lab.plan.host(fe_pair(dh_lab.plan)[1][0])
    route = dh_lab.route(host.name, far.loopback.network)
    assert route is not None and set(route.interfaces) == {"fe0", "fe1"}, route
    result = run_case(case("isolation"), dh_lab, results, name="isolation-dual-homed")
    assert result.passed, result.reason


def test_a_host_holds_its_leaves_as_permanent_neighbours(dh_lab):
    """As FRR holds its RFC 5549 next hops on the switches: a learned entry is flushed when the
    carrier drops, and a packet routed to the NIC in that instant would wait in its ARP queue
    (harness/runtime/netns_setup.gateways_permanent says why that stalls a TCP stream)."""
    host = _source(dh_lab)
    for nic in host.fe_nics:
        mac = json.loads(dh_lab.ns_exec(nic.peer, ["ip", "-j", "link", "show", nic.peer_port], check=True).stdout)[0]
        entries = json.loads(dh_lab.ns_exec(host.name, ["ip", "-j", "neigh", "show", "dev", nic.name], check=True).stdout)
        held = {e["dst"]: (e.get("lladdr"), e.get("state")) for e in entries}
        assert held.get(str(nic.gateway)) == (mac["address"], ["PERMANENT"]), (nic.name, held)
    # the control: the leaf learns the host's address over ARP (its BGP session uses it), unpinned
    nic = host.fe_nics[0]
    learned = json.loads(dh_lab.ns_exec(nic.peer, ["ip", "-j", "neigh", "show", "dev", nic.peer_port], check=True).stdout)
    states = {e["dst"]: e.get("state") for e in learned}
    assert str(nic.address.ip) in states and states[str(nic.address.ip)] != ["PERMANENT"], states


def test_tcp_spreads_over_both_host_nics_and_every_uplink(dh_lab, results):
    result = run_case(case("fe-ecmp"), dh_lab, results, name="fe-ecmp-dual-homed")
    assert result.passed, result.reason
    assert set(result.per_nic) == {"fe0", "fe1"} and all(k > 0 for k in result.per_nic.values())
    assert len({u.split(":")[0] for u in result.per_uplink}) == 2  # both leaves' uplinks


def test_l3_hashing_on_the_host_is_caught(dh_lab, results, control):
    host = _source(dh_lab)
    before = control(case("fe-ecmp"), dh_lab)  # the positive control, in the same test
    assert before.passed, before.reason
    with l3_hashing(dh_lab, [host.name]) as s:
        result = run_case(case("fe-ecmp"), dh_lab, results, name="fe-ecmp-dual-homed-l3", sabotage=s.description)
    assert not result.passed
    assert min(result.per_nic.values()) == 0, result.reason


def test_tcp_survives_a_failed_host_uplink(dh_lab, results):
    result = measured(run_case(case("fe-host-failover"), dh_lab, results))
    assert result.passed, result.reason
    assert result.on_failed and result.bytes_received == result.bytes_sent > 0
    assert result.leaf == _source(dh_lab).name  # the host itself moved off the NIC


def test_a_host_uplink_failure_with_no_path_left_is_caught(dh_lab, results):
    host = _source(dh_lab)
    other = dh_lab.link(host.name, host.nic("fe1").peer)
    other.down()
    try:
        result = run_case(case("fe-host-failover"), dh_lab, results, name="fe-host-failover-no-path",
                          sabotage=f"{host.name}'s other uplink down")
    finally:
        other.up()
        _converged(dh_lab)
    assert not result.passed
    assert any("stalled" in p for p in result.problems), result.reason


def test_tcp_survives_a_whole_leaf_failure(dh_lab, results):
    result = measured(run_case(case("fe-leaf-failover"), dh_lab, results))
    assert result.passed, result.reason
    assert result.failed in {n.peer for n in _source(dh_lab).fe_nics}


def test_a_leaf_failure_whose_partner_is_cut_off_is_caught(dh_lab, results):
    """Both leaves of the source's pair lose their uplinks' worth of paths: one is cut off from
    the spines beforehand, the other fails under the streams; the host keeps a NIC with carrier
    and no route beyond it."""
    host = _source(dh_lab)
    leaves = [n.peer for n in host.fe_nics]
    cut = {leaf: [dh_lab.link(leaf, p.peer) for p in dh_lab.plan.switch(leaf).fabric_ports] for leaf in leaves}
    state = {}

    def cut_the_partner(node: str, port: str) -> None:
        failed = dh_lab.plan.host(node).nic(port).peer
        partner = next(leaf for leaf in leaves if leaf != failed)
        state["partner"] = partner
        dh_lab.set_carriers(cut[partner], up=False)

    try:
        result = run_case(case("fe-leaf-failover"), dh_lab, results, name="fe-leaf-failover-partner-cut",
                          sabotage="the partner leaf cut off from the spines", while_failed=cut_the_partner)
    finally:
        if "partner" in state:
            dh_lab.set_carriers(cut[state["partner"]], up=True)
        _converged(dh_lab)
    assert not result.passed
    assert any("stalled" in p for p in result.problems), result.reason
