"""The tenants judge on what a real ai-cluster lab showed (tests/observations/tenants/): the
frames' landings, ACL counters, type-2 routes and rules as recorded, then with a frame out of
its tenant, a control lost, an ACL entry that decided or counted otherwise, a type-2 route or
a rule missing; and what two negative controls recorded (a member port in another tenant's
bridge, an ACL entry turned into its opposite)."""
from __future__ import annotations

import dataclasses
from collections.abc import Callable

import pytest

from harness.checks.tenants import Expectation, TenantResult, TenantsSeen, plan_shots
from harness.report.recorded import judge

import judge_tables as tables


@pytest.fixture(scope="module")
def isolated():
    return tables.recorded("tenants/ai-cluster")


@pytest.fixture(scope="module")
def plan():
    return tables.plan("tenants/ai-cluster")


@pytest.fixture(scope="module")
def shots(plan) -> list[Expectation]:
    return plan_shots(plan, lambda: b"")[0]


def _first(shots: list[Expectation], kind: str) -> Expectation:
    return next(x for x in shots if x.kind == kind)


def _landed(seen: TenantsSeen, shot: int, *at: str, tunnelled: bool = False) -> TenantsSeen:
    field = "tunnelled" if tunnelled else "landed"
    where = getattr(seen, field)
    return dataclasses.replace(seen, **{field: {**where, shot: tuple(sorted(set(where.get(shot, ())) | set(at)))}})


def _to_its_destination(shots, kind: str, seen: TenantsSeen, tunnelled: bool = False) -> TenantsSeen:
    x = _first(shots, kind)
    return _landed(seen, x.shot.id, f"{x.shot.to_node}:{x.shot.to_port}", tunnelled=tunnelled)


def _in_its_own_tenant(plan, shots, seen: TenantsSeen) -> TenantsSeen:
    """A cross-tenant frame flooded to another member of the sender's tenant: its segment, no leak."""
    x = _first(shots, "cross-tenant")
    home = next(t for t in plan.tenants for m in t.members if (m.host, m.nic) == (x.shot.src_node, x.shot.src_port))
    other = next(m for m in home.members if m.host != x.shot.src_node)
    return _landed(seen, x.shot.id, f"{other.host}:{other.nic}")


def _underlay(plan, shots, seen: TenantsSeen) -> TenantsSeen:
    x = _first(shots, "tenant->underlay")
    host = next(h for h in plan.hosts for n in h.nics if str(n.address.ip) == x.shot.dst_addr)
    nic = next(n for n in host.nics if str(n.address.ip) == x.shot.dst_addr)
    return _landed(seen, x.shot.id, f"{host.name}:{nic.name}")


def _lost(shots, kind: str, seen: TenantsSeen) -> TenantsSeen:
    x = _first(shots, kind)
    must = f"{x.must_land[0]}:{x.must_land[1]}"
    return dataclasses.replace(seen, landed={**seen.landed, x.shot.id: tuple(
        at for at in seen.landed.get(x.shot.id, ()) if at != must)})


def _uncounted(shots, seen: TenantsSeen) -> TenantsSeen:
    x = _first(shots, "acl deny")
    return dataclasses.replace(seen, counters={**seen.counters, x.leaf: {**seen.counters[x.leaf], x.entry: 0}})


def _no_type2(seen: TenantsSeen) -> TenantsSeen:
    """fe-l2 without the route of gpu01's train NIC, which is behind fe-l1."""
    routes = tuple(r for r in seen.type2["fe-l2"] if r.ip != "10.32.0.1")
    assert len(routes) == len(seen.type2["fe-l2"]) - 1
    return dataclasses.replace(seen, type2={**seen.type2, "fe-l2": routes})


def _no_mac(seen: TenantsSeen) -> TenantsSeen:
    return dataclasses.replace(seen, macs={k: v for k, v in seen.macs.items() if k != "gw1:fe0"})


def _rule(plan, seen: TenantsSeen, status: str | None) -> TenantsSeen:
    leaf, name = "fe-l2", plan.acl[0].name
    rules = {k: v for k, v in seen.rules[leaf].items() if k != name} | ({name: status} if status else {})
    return dataclasses.replace(seen, rules={**seen.rules, leaf: rules})


def _not_probed(shots, seen: TenantsSeen) -> TenantsSeen:
    """SONiC-VS: no ACL data path, so no ACL frame was sent and no counter read."""
    return dataclasses.replace(seen, acl_not_probed="docker-sonic-vs has no ACL data path",
                               shots=sum(1 for x in shots if not x.entry), counters={})


Change = Callable[[object, list, TenantsSeen], TenantsSeen]
CASES: list[tuple[str, Change, str | None]] = [  # what is done to the recorded observation; the finding
    ("as recorded", lambda plan, shots, seen: seen, None),
    ("a cross-tenant frame on the other tenant's NIC",
     lambda plan, shots, seen: _to_its_destination(shots, "cross-tenant", seen),
     "1 frames left their tenant, e.g. cross-tenant "),
    ("a cross-tenant frame seen only inside VXLAN between VTEPs",
     lambda plan, shots, seen: _to_its_destination(shots, "cross-tenant", seen, tunnelled=True), None),
    ("a cross-tenant frame flooded in its own segment", _in_its_own_tenant, None),
    ("a tenant frame routed into the underlay", _underlay, "1 frames left their tenant, e.g. tenant->underlay"),
    ("a control lost", lambda plan, shots, seen: _lost(shots, "tenant control", seen),
     "1/16 controls did not land (nothing is proven until they do), e.g. tenant control"),
    ("a deny that landed", lambda plan, shots, seen: _to_its_destination(shots, "acl deny", seen),
     "1 ACL outcomes differ from the declaration, e.g. acl deny"),
    ("a permit that did not land", lambda plan, shots, seen: _lost(shots, "acl permit", seen),
     "1 ACL outcomes differ from the declaration, e.g. acl permit"),
    ("an entry's counter that did not count", lambda plan, shots, seen: _uncounted(shots, seen),
     "did not count it"),
    ("a type-2 route missing", lambda plan, shots, seen: _no_type2(seen),
     "1/16 type-2 routes missing, e.g. fe-l2: no type-2 for gpu01"),
    ("a member's MAC not read", lambda plan, shots, seen: _no_mac(seen), "(MAC not read 10.32.0.3)"),
    ("a rule not in force", lambda plan, shots, seen: _rule(plan, seen, "Inactive"),
     "1/102 ACL rules not loaded, e.g. fe-l2: rule R0_0 is Inactive"),
    ("a rule not loaded", lambda plan, shots, seen: _rule(plan, seen, None), "fe-l2: rule R0_0 is not loaded"),
    ("no ACL data path on the runtime", lambda plan, shots, seen: _not_probed(shots, seen), None),
    ("frames of another version of the check",
     lambda plan, shots, seen: dataclasses.replace(seen, shots=seen.shots - 1),
     "244 frames were sent, this plan makes 245"),
]


@pytest.mark.parametrize("what, change, finding", CASES, ids=[c[0] for c in CASES])
def test_the_judge_on_the_recorded_observation(isolated, plan, shots, what, change, finding):
    result = judge(isolated, change(plan, shots, isolated.observation))
    assert isinstance(result, TenantResult)
    if finding is None:
        assert result.passed, result.reason
        assert result.controls_landed == result.controls == 16 and result.evpn_expected == 16
    else:
        assert not result.passed, what
        assert finding in result.reason, result.reason


def test_the_figures_as_recorded(isolated, shots):
    result = judge(isolated)
    assert (result.negatives, result.acl_entries, result.acl_rules) == (178, 51, 102)
    assert result.negatives + result.controls + result.acl_entries == len(shots)
    assert result.counters == isolated.observation.counters


def test_without_an_acl_data_path_the_rules_loaded_stand_in(isolated, plan, shots):
    result = judge(isolated, _not_probed(shots, isolated.observation))
    assert result.acl_entries == 0 and result.acl_not_probed
    assert "ACL data path not applicable: docker-sonic-vs has no ACL data path" in result.reason
    broken = judge(isolated, _rule(plan, _not_probed(shots, isolated.observation), "Inactive"))
    assert not broken.passed and broken.acl_rules_missing == ("fe-l2: rule R0_0 is Inactive",)


def test_a_port_in_another_tenant_s_bridge_recorded_on_the_lab_leaks():
    recorded = tables.recorded("tenants/wrong-bridge")
    result = judge(recorded)
    assert not result.passed and result.reason == recorded.reason
    assert result.leaks and all(" — landed on " in leak for leak in result.leaks)


def test_an_acl_entry_flipped_on_the_lab_is_named():
    recorded = tables.recorded("tenants/acl-flipped")
    result = judge(recorded)
    assert not result.passed and result.reason == recorded.reason
    assert not result.leaks and len(result.acl_wrong) == 1 and result.acl_wrong[0].startswith("acl deny [R")
