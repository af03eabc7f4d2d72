"""How many packets, how fast, an unloaded collective sends per QP as the rail grows."""
from __future__ import annotations

from harness.checks.collectives import MAX_PACKETS, MAX_PPS, MIN_PACKETS, budget


def test_small_patterns_keep_the_asked_packets_and_rate():
    assert budget(8, 300, 1000.0) == (300, 1000.0)


def test_large_all_to_all_stays_within_the_machine():
    packets, rate = budget(4032, 300, 1000.0)  # large: 64 GPUs on a rail
    assert packets == MIN_PACKETS and rate == MAX_PPS / 4032
    assert packets * 4032 <= MAX_PACKETS * 1.5


def test_rate_scales_before_packets_do():
    packets, rate = budget(64, 300, 1000.0)  # large: ring
    assert packets == 300 and rate == MAX_PPS / 64


def test_never_more_packets_than_asked():
    assert budget(10_000, 5, None) == (5, None)
