"""Facts that follow from a declaration are computed once, in the plan, and everything else
reads them: the compiled edge ACL (`Plan.acl`), what each switch originates
(`Plan.originates`), the MTU a tenant frame needs on each FE port (`Plan.tenant_mtus`,
`TenantPlan.mtu`). Rendered configs, the runtime's rules, the checks' expectations and the
audit's contract therefore cannot disagree about them."""
from __future__ import annotations

import ast
from ipaddress import IPv4Network
from pathlib import Path

import pytest

from harness.catalog import load_fabric
from harness.core.acl import TABLE
from harness.core.mgmtnet import with_mgmt_network
from harness.core.plan import make_plan
from harness.core.tenancy import VXLAN_OVERHEAD
from harness.render.lossless import contract_of
from harness.render.sonic import config_db
from harness.runtime import tenants as rt

HARNESS = Path(__file__).resolve().parents[2] / "harness"
# The only modules allowed to derive these facts: the plan computes them (its numbering in
# core/numbering.py and core/pools.py), and the ACL module
# holds the compiler the plan calls.
DERIVERS = {"compile_acl": {"core/plan.py"}, "collapse_addresses": {"core/plan.py", "core/numbering.py", "core/pools.py"}}  # make_plan's numbering


@pytest.fixture(scope="module")
def plan():
    return make_plan(load_fabric("ai-cluster"))


def _calls(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call):
            f = node.func
            names.add(f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", ""))
    return names


@pytest.mark.parametrize("function", sorted(DERIVERS))
def test_only_the_plan_derives(function):
    callers = {str(p.relative_to(HARNESS)) for p in HARNESS.rglob("*.py") if function in _calls(p)}
    assert callers <= DERIVERS[function], f"{function} called outside the plan: {sorted(callers - DERIVERS[function])}"


def test_the_tenant_frame_size_has_one_source():
    """VXLAN's overhead is subtracted from the FE's MTU in the plan (and in the declaration's
    own check of that MTU), nowhere else."""
    users = {str(p.relative_to(HARNESS)) for p in HARNESS.rglob("*.py") if "VXLAN_OVERHEAD" in p.read_text()}
    assert users <= {"core/plan.py", "core/tenancy.py"}, users


def test_the_plan_holds_the_compiled_acl(plan):
    assert plan.acl and plan.acl[-1].rule is None  # the rules' entries, the default last
    assert plan.acl[-1].action == plan.fabric.cluster.acl.default


def test_every_leaf_renders_the_plans_acl(plan):
    for sw in plan.switches:
        if sw.vnis:
            rules = config_db(plan, sw)["ACL_RULE"]
            assert list(rules) == [f"{TABLE}|{e.name}" for e in plan.acl], sw.name


def test_the_netns_rules_are_the_plans_acl(plan):
    sw = next(s for s in plan.switches if s.vnis)
    text = rt.acl_ruleset(plan.acl, sw)
    assert all(f'comment "{e.name}"' in text for e in plan.acl)


def test_tenant_frames_are_the_fe_mtu_less_vxlan(plan):
    frame = plan.fabric.cluster.frontend.mtu - VXLAN_OVERHEAD
    assert {t.mtu for t in plan.tenants} == {frame}
    assert {n.mtu for h in plan.hosts for n in h.nics if n.tenant} == {frame}


def test_tenant_mtus_cover_member_and_fabric_ports(plan):
    frame = plan.tenants[0].mtu
    for sw in plan.switches:
        needs = plan.tenant_mtus.get(sw.name)
        if sw.plane.value != "fe":
            assert needs is None
            continue
        assert {p.name: frame for p in sw.tenant_ports}.items() <= needs.items()
        assert {p.name: frame + VXLAN_OVERHEAD for p in sw.fabric_ports}.items() <= needs.items()


def test_the_contract_reads_the_plans_facts(plan):
    contract = contract_of(plan)
    assert contract.fe_mtu == {s: dict(p) for s, p in plan.tenant_mtus.items()}
    for leaf, tables in contract.tenants.items():
        assert list(tables["ACL_RULE"]) == [f"{TABLE}|{e.name}" for e in plan.acl], leaf


def test_originates_is_loopback_then_host_links(plan):
    for sw in plan.switches:
        own = plan.originated(sw)
        assert own[0] == sw.loopback.network
        hosts = own[1:]
        for p in sw.host_ports:
            assert any(p.address.ip in prefix for prefix in hosts), (sw.name, p.name)


def test_facts_survive_moving_the_mgmt_network(plan):
    moved = with_mgmt_network(plan, IPv4Network("172.30.0.0/20"))
    assert moved.mgmt_network != plan.mgmt_network
    assert (moved.acl, moved.originates, moved.tenant_mtus) == (plan.acl, plan.originates, plan.tenant_mtus)
