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


def test_the_fabric_group_is_shut_right_after_it_is_made():
    part = frr_conf(PLAN, PLAN.switch("be-s1"))
    shut = netns_daemons.held(part)
    lines = shut.splitlines()
    at = lines.index(" neighbor fabric peer-group")
    assert lines[at + 1] == " neighbor fabric shutdown"
    assert lines[:at + 1] + lines[at + 2:] == part.splitlines()  # nothing else changed


@pytest.mark.parametrize("text", [
    # a dual-homed host's, an engineer's own group name, a group only named in a comment
    "router bgp 65001\n neighbor leaves peer-group\n neighbor leaves remote-as external\n",
    "router bgp 65001\n neighbor FABRIC-UNDERLAY peer-group\n",
    "! neighbor fabric peer-group is what fablab renders\nrouter bgp 65001\n",
])
def test_a_config_without_the_fabric_group_is_not_held(text):
    assert netns_daemons.held(text) is None
