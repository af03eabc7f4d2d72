"""Where FRR cannot read a file, fablab's model refuses the lines whose values FRR's grammar would
not take (harness/core/meaning/frr_values.py). Each line here is held against FRR 8.4 itself:
the lines FRR refuses are the lines the model refuses, the good ones (the positive controls)
taken by both."""
from __future__ import annotations

import pytest

from harness.core.meaning.frr_values import UNKNOWN, fits, refused
from harness.plumbing.frr_reader import read, unavailable

# (line, FRR takes it), in the node it belongs to
TOP = [
    ("ip route 10.99.0.0/24 Null0", True), ("ip route 10.99.0.0/33 Null0", False),
    ("ip route 10.98.0.0 255.255.255.0 Null0", True), ("ip route 10.98.0.0/8x Null0", False),
    ("ipv6 route 2001:db8::/64 Null0", True), ("ipv6 route 2001:db8::/129 Null0", False),
    ("ip prefix-list A seq 5 permit 10.0.0.0/8 le 24", True), ("ip prefix-list A seq 6 permit 10.0.0.0/8 le 33", False),
    ("ip prefix-list A seq 0 permit 10.1.0.0/16", False), ("ip prefix-list A seq 7 permit 10.300.0.0/16", False),
    ("ip prefix-list A seq 8 deny any", True),
]
INTERFACE = [("ip address 10.1.1.1/31", True), ("ip address 10.1.1.1/40", False), ("ip address 10.1.1.256/31", False)]
BFD = [("detect-multiplier 3", True), ("detect-multiplier abc", False), ("detect-multiplier 1", False),
       ("detect-multiplier 256", False), ("receive-interval 300", True), ("receive-interval 9", False),
       ("transmit-interval 60001", False)]
BGP = [("bgp router-id 10.0.0.1", True), ("bgp router-id 10.0.0.256", False),
       ("timers bgp 3 9", True), ("timers bgp 3 70000", False),
       ("neighbor 10.1.1.0 remote-as 65001", True), ("neighbor 10.1.1.2 remote-as 99999999999", False),
       ("neighbor 10.1.1.4 remote-as external", True), ("neighbor 10.1.1.6 remote-as 0", False),
       ("neighbor 10.1.1.0 timers 1 3", True), ("neighbor 10.1.1.0 timers 1 65536", False),
       ("neighbor 10.1.1.0 ebgp-multihop 2", True), ("neighbor 10.1.1.0 ebgp-multihop 256", False),
       ("neighbor 10.1.1.0 bfd 3 300 300", True), ("neighbor 10.1.1.0 bfd 3 30 300", False),
       ("neighbor 10.1.1.0 bfd 1 300 300", False)]
AF = [("network 10.2.0.0/24", True), ("network 10.2.0.0/33", False)]


def _file() -> tuple[str, dict[int, bool]]:
    lines: list[str] = ["frr defaults datacenter"]
    expect: dict[int, bool] = {}

    def put(entries, indent: str) -> None:
        for text, ok in entries:
            lines.append(indent + text)
            expect[len(lines)] = ok

    put(TOP, "")
    lines.append("interface Ethernet0")
    put(INTERFACE, " ")
    lines += ["exit", "bfd", " profile fabric"]
    put(BFD, "  ")
    lines += [" exit", "exit", "router bgp 65000"]
    put(BGP, " ")
    lines.append(" address-family ipv4 unicast")
    put(AF, "  ")
    lines += [" exit-address-family", "exit"]
    return "\n".join(lines) + "\n", expect


def test_the_model_refuses_the_lines_whose_values_frr_would_not_take():
    text, expect = _file()
    form = refused(text)
    assert {r.line for r in form.refusals} == {no for no, ok in expect.items() if not ok}
    assert all(r.message == UNKNOWN for r in form.refusals)
    kept = form.text.splitlines()
    assert len(kept) == len(form.origin) and all(text.splitlines()[o - 1] == k for o, k in zip(form.origin, kept))
    assert fits("router bgp") and fits("no neighbor 10.1.1.2 remote-as 99999999999")  # re-entry, a negation
    assert refused("router bgp 65000\n").refusals == ()  # the positive control: a good file, whole


@pytest.mark.skipif(unavailable() is not None, reason=f"FRR cannot read configs here: {unavailable()}")
def test_frr_itself_refuses_the_same_lines():
    text, expect = _file()
    by_frr = {r.line for r in read({"t": text})["t"].refusals if r.line is not None}
    assert by_frr == {no for no, ok in expect.items() if not ok}, sorted(by_frr)
