"""A failover case costs only its own BGP sessions: one that went down anywhere else during
the case (hold timers expiring on an overloaded machine) is named, the element's own are not."""
from __future__ import annotations

from types import SimpleNamespace

from harness.checks.failover_run import _dropped_elsewhere, _session_drops
from harness.checks.failover_elements import Element
from harness.observe.routing import BgpPeer


class FakeLab:
    def __init__(self, drops: dict[tuple[str, str], int]):
        self.drops = drops
        self.plan = SimpleNamespace(switches=[SimpleNamespace(name=n) for n in sorted({n for n, _ in drops})])

    def bgp_peers(self, node: str) -> tuple[BgpPeer, ...]:
        return tuple(BgpPeer(node, port, "Established", 65000, 1, 0, n)
                     for (sw, port), n in sorted(self.drops.items()) if sw == node)


def nothing() -> None:
    pass


ELEMENT = Element("leaf1:Ethernet0-spine1:Ethernet0", nothing, nothing, (("leaf1", "Ethernet0"),), ("Ethernet0",),
                  "leaf1", ends=(("leaf1", "Ethernet0"), ("spine1", "Ethernet0")))
START = {("leaf1", "Ethernet0"): 0, ("leaf1", "Ethernet4"): 0, ("spine1", "Ethernet0"): 1, ("spine1", "Ethernet4"): 0}


def test_the_elements_own_sessions_may_go_down():
    lab = FakeLab(START)
    before = _session_drops(lab)
    lab.drops = {**START, ("leaf1", "Ethernet0"): 1, ("spine1", "Ethernet0"): 2}
    assert _dropped_elsewhere(lab, before, ELEMENT) == []


def test_a_session_down_elsewhere_is_named():
    lab = FakeLab(START)
    before = _session_drops(lab)
    lab.drops = {**START, ("leaf1", "Ethernet0"): 1, ("spine1", "Ethernet4"): 1}
    assert _dropped_elsewhere(lab, before, ELEMENT) == ["spine1:Ethernet4"]


def test_a_session_that_appeared_meanwhile_and_dropped_counts():
    lab = FakeLab(START)
    before = _session_drops(lab)
    lab.drops = {**START, ("spine1", "Ethernet8"): 1}
    assert _dropped_elsewhere(lab, before, ELEMENT) == ["spine1:Ethernet8"]
