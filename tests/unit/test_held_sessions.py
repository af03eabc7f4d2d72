"""Large fabrics boot with every fabric session held shut until each bgpd runs
(harness/runtime/netns_daemons.py); the boot itself, held and released, is
tests/integration/test_netns_runtime.py's."""
from __future__ import annotations

import pytest

from harness.core.model import build
from harness.core.plan import make_plan
from harness.render.frr import frr_conf
from harness.runtime import netns_daemons
from topologies import BUILTINS

PLAN = make_plan(build(BUILTINS["ai-cluster"]()))
SESSIONS = 40  # ai-cluster's, counted at both ends


@pytest.mark.parametrize("hold_from, theirs, held", [
    (SESSIONS, False, True),   # at the threshold
    (SESSIONS + 1, False, False),  # below it
    (1, True, False),  # an engineer's configs keep their own peer groups: never held
])
def test_which_boots_hold_their_sessions(monkeypatch, hold_from, theirs, held):
    monkeypatch.setattr(netns_daemons, "HOLD_FROM", hold_from)
    assert netns_daemons.hold_sessions(PLAN, theirs) is held


def test_the_fabric_group_is_shut_read_only_and_slow_to_retry_while_held():
    part = frr_conf(PLAN, PLAN.switch("be-s1"))
    assert " neighbor fabric timers connect 1" in part.splitlines()
    lines = netns_daemons.held(part).splitlines()
    at = lines.index(" neighbor fabric peer-group")
    assert lines[at + 1:at + 4] == [" neighbor fabric shutdown",
                                    f" neighbor fabric timers connect {netns_daemons.CONNECT_HELD_S}",
                                    f" update-delay {netns_daemons.UPDATE_DELAY_S}"]
    # the rendered connect timer is replaced, not overridden by its own line further down
    assert lines[:at + 1] + lines[at + 4:] == [x for x in part.splitlines() if "timers connect" not in x]


def test_without_update_delay_it_is_not_read_only(monkeypatch):
    monkeypatch.setattr(netns_daemons, "UPDATE_DELAY_S", 0)
    part = frr_conf(PLAN, PLAN.switch("be-s1"))
    assert not any("update-delay" in x for x in netns_daemons.held(part).splitlines())


def test_the_tiers_are_released_from_the_top(monkeypatch):
    cluster = BUILTINS["ai-cluster"]()
    plan = make_plan(build(cluster))
    order: list[list[str]] = []
    monkeypatch.setattr(netns_daemons, "_each", lambda plan, lab, names, commands: order.append(sorted(names)))
    monkeypatch.setattr(netns_daemons, "frr_node", lambda lab, name: _Node())
    netns_daemons.release(plan, "t", {sw.name: "" for sw in plan.switches}, lambda *a: None)
    roles = [{plan.switch(n).role for n in names} for names in order]
    assert [sorted(r.value for r in x) for x in roles] == [["be-spine", "fe-spine"], ["be-leaf", "fe-leaf"]]


class _Node:
    def daemon_config(self, daemon):
        return _Sink()


class _Sink:
    def write_text(self, text):
        pass


@pytest.mark.parametrize("text", [
    # a dual-homed host's, an engineer's own group name, a group only named in a comment
    "router bgp 65001\n neighbor leaves peer-group\n neighbor leaves remote-as external\n",
    "router bgp 65001\n neighbor FABRIC-UNDERLAY peer-group\n",
    "! neighbor fabric peer-group is what fablab renders\nrouter bgp 65001\n",
])
def test_a_config_without_the_fabric_group_is_not_held(text):
    assert netns_daemons.held(text) is None

