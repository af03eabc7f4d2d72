"""harness/observe/route_watch.route_change_ms: the timing of "port P left / rejoined node N's
route to X". The lab is faked only for this pure timing logic: its route() follows a script
in time; labs/test_failover.py and labs/test_frontend.py time real routes."""
from __future__ import annotations

import time
from ipaddress import IPv4Network

import pytest

from harness.observe.route_watch import route_change_ms
from harness.observe.routing import Route

from fakelab import FakeLab

PREFIX = IPv4Network("10.0.2.0/31")


class ScriptedLab(FakeLab):
    """route(node, prefix) answers from a script of (seconds after start, interfaces or None)."""

    def __init__(self, script: list[tuple[float, tuple[str, ...] | None]]) -> None:
        super().__init__(None)
        self.start = time.monotonic()
        self.script = script
        self.asked: list[tuple[str, IPv4Network]] = []

    def route(self, node: str, prefix: IPv4Network) -> Route | None:
        self.asked.append((node, prefix))
        elapsed = time.monotonic() - self.start
        interfaces = [ifs for at, ifs in self.script if at <= elapsed][-1]
        return None if interfaces is None else Route(prefix, interfaces, "bgp")


def test_the_time_a_port_leaves_is_counted_from_since():
    lab = ScriptedLab([(0.0, ("Ethernet0", "Ethernet4")), (0.1, ("Ethernet4",))])
    since = lab.start - 0.05  # the failure came before the call
    ms = route_change_ms(lab, "leaf", PREFIX, "Ethernet0", present=False, since=since, deadline=since + 5,
                         interval=0.005)
    assert ms is not None and 150 <= ms < 600
    assert ms == round(ms, 1)
    assert set(lab.asked) == {("leaf", PREFIX)}


def test_the_time_a_port_rejoins():
    lab = ScriptedLab([(0.0, ("Ethernet4",)), (0.05, None), (0.1, ("Ethernet0", "Ethernet4"))])
    ms = route_change_ms(lab, "leaf", PREFIX, "Ethernet0", present=True, since=lab.start,
                         deadline=lab.start + 5, interval=0.005)
    assert ms is not None and 100 <= ms < 500  # no route at all is not "back"


@pytest.mark.parametrize("needs_route, left", [(False, True), (True, False)])
def test_no_route_at_all_counts_as_left_unless_a_route_is_needed(needs_route, left):
    lab = ScriptedLab([(0.0, None)])
    ms = route_change_ms(lab, "leaf", PREFIX, "Ethernet0", present=False, since=lab.start,
                         deadline=lab.start + 0.1, interval=0.01, needs_route=needs_route)
    assert (ms is not None) is left


def test_several_ports_leave_when_none_is_left():
    lab = ScriptedLab([(0.0, ("Ethernet0", "Ethernet4", "Ethernet8")), (0.05, ("Ethernet4", "Ethernet8")),
                       (0.1, ("Ethernet8",))])
    ms = route_change_ms(lab, "leaf", PREFIX, ("Ethernet0", "Ethernet4"), present=False, since=lab.start,
                         deadline=lab.start + 5, interval=0.005)
    assert ms is not None and 100 <= ms < 500
    back = ScriptedLab([(0.0, ("Ethernet8",)), (0.05, ("Ethernet4", "Ethernet8"))])
    ms = route_change_ms(back, "leaf", PREFIX, ("Ethernet0", "Ethernet4"), present=True, since=back.start,
                         deadline=back.start + 5, interval=0.005)
    assert ms is not None and 50 <= ms < 450  # one of them is enough


def test_none_when_the_port_stays_past_the_deadline():
    lab = ScriptedLab([(0.0, ("Ethernet0",))])
    t = time.monotonic()
    assert route_change_ms(lab, "leaf", PREFIX, "Ethernet0", present=False, since=t, deadline=t + 0.1,
                           interval=0.02) is None
    assert 0.1 <= time.monotonic() - t < 1.0
    assert 3 <= len(lab.asked) <= 8  # every ~20 ms, until the deadline


def test_a_window_over_before_the_call_is_none_without_reading_the_route():
    lab = ScriptedLab([(0.0, ())])
    t = time.monotonic()
    assert route_change_ms(lab, "leaf", PREFIX, "Ethernet0", present=False, since=t - 2, deadline=t - 1) is None
    assert lab.asked == []
