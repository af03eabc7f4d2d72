"""Lesson 7 — real RDMA (rdma_rxe) crosses the fabric as the scapy-built RoCEv2 does.

Claim: RC queue pairs of the kernel's soft-RoCE between GPU NICs of different groups cross
leaf -> spine -> leaf (the spines count their UDP 4791 packets); their UDP source ports are
the ones fablab's own RoCEv2 generator gives a QP (`roce_sport`: the kernel's
rdma_get_udp_sport of the two QP numbers), and they spread over the spines as a fair hash
would; in a rail-only BE a QP between rails finds no path. (This lesson found fablab's rule
out of date: it followed rxe before Linux 5.18, 0xC000 + hash_32(QPN, 14).)

Why it matters: every other lesson sends RoCEv2 packets built by hand. These come from a
real RDMA stack (connection setup, RC's acknowledgements and retransmissions, the source
ports rxe derives from the QP number) through the same routed fabric. This host's kernel has
no rdma_rxe, so both endpoints run in a QEMU microVM (Debian 6.1) whose NICs take the GPU
nodes' places on their cables (harness/rdma). Speeds are the emulator's: functional, not
performance figures.

Make it fail: hash on L3 only on the source leaf (`fib_multipath_hash_policy=0`): every QP
takes one uplink, outside the fair band. Cable two rail leaves together in the rail-only
BE, and the cross-rail transfer routed into the rail leaf completes.
"""
from __future__ import annotations

import pytest

from harness.checks.registry import case, run_case
from harness.pytest_plugin import boot
from topologies.rail_only import rail_only


pytestmark = pytest.mark.usefixtures("rdma_lane")


@pytest.fixture(scope="module")
def rail_lab(pytestconfig):
    yield from boot(rail_only(), pytestconfig.getoption("runtime"), "x")


def test_rxe_qps_cross_leaf_spine_leaf_on_their_rule_s_ports_and_spread(lab, results):
    result = run_case(case("rdma-path"), lab, results, qps=64)
    assert result.passed, result.reason
    assert result.transfer.bandwidth is not None and result.transfer.bandwidth.iterations > 0
    assert sum(1 for s in result.spines if s.packets) >= 1 and result.crossed > 0
    assert len({r.formula_sport for r in result.rows}) == len(result.rows) == 64


def test_rc_survives_a_gray_uplink_with_data_verified(lab, results):
    result = run_case(case("rdma-gray"), lab, results)
    assert result.passed, result.reason
    assert result.transfer.rping.verified and result.transfer.retransmissions > 0
    assert result.stall_ms >= result.detected_ms * 0.5  # the QP really waited for the reroute


def test_rail_only_has_no_rdma_path_between_rails(rail_lab, results):
    result = run_case(case("rdma-rails"), rail_lab, results)
    assert result.passed, result.reason
