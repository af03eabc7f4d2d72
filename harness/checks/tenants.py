"""FE tenant isolation and the edge ACL, proven with frames and read back from FRR.

Tenant isolation. From every tenant member's NIC, frames go
  - to another member of its tenant (behind another leaf when there is one): controls, that
    must land on that member's NIC (over VXLAN when the leaves differ);
  - to a member of every other tenant, addressed to that member's own MAC and address: they
    must land nowhere;
  - to the underlay through its leaf (the leaf port's MAC): to a routed FE host and to an FE
    spine's loopback; they must land nowhere.
Every frame's 5-tuple is one the edge ACL permits (UDP to PROBE_PORT where it may, else ICMP,
else what a permit rule opens), so that a negative is stopped by the segment and not by the
ACL; a negative with no permitted tuple is sent anyway and counted as such. A member with no
permitted peer is reported, as is a tenant with one member (nothing to control with).
EVPN: every member announces itself (a gratuitous ARP, as a booting host does) and every
VTEP leaf's BGP table must then hold a type-2 route with the MAC and IP of every member behind
another leaf, in the tenant's VNI (by its route target).

Edge ACL. For every compiled entry (each declared rule for each pair of members it names,
and the default) one frame whose 5-tuple that entry decides, from a member behind one leaf to a
member it can reach: a permit must land on the destination's NIC, a deny must not, and the
entry's counter on the source leaf must count it.

What a run sees (frames' landings, counters, MACs, type-2 routes, rules loaded):
harness/checks/tenants_measure.py; which frames, from where to where:
harness/checks/tenants_shots.py; the verdict, from the plan and that observation only:
judge_tenants, here.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from harness.checks.base import Case, Check, Outcome, tally
from harness.checks.tenants_measure import TenantsSeen, Type2, measure_tenants, type2_routes, type2_wanted
from harness.checks.tenants_shots import Expectation, permitted_tuple, plan_shots
from harness.core.plan import Plan
from harness.traffic.probe import NONCE_BYTES

__all__ = ["CHECK", "Expectation", "TenantResult", "TenantsSeen", "Type2", "judge_tenants",
           "measure_tenants", "permitted_tuple", "plan_shots", "type2_routes"]

IN_FORCE = ("Active", "N/A")  # SONiC's status of a rule in force; N/A where STATE_DB has none


@dataclass(frozen=True)
class TenantResult(Outcome):
    controls: int
    controls_landed: int
    negatives: int
    leaks: tuple[str, ...]
    evpn_expected: int
    evpn_missing: tuple[str, ...]
    acl_entries: int
    acl_wrong: tuple[str, ...]
    counters: dict[str, dict[str, int]]  # leaf -> entry -> packets counted during the check
    failed_controls: tuple[str, ...] = ()
    gaps: tuple[str, ...] = ()  # what the declaration leaves no control for
    shadowed: int = 0  # negatives on a 5-tuple the ACL denies too (it permits none)
    acl_not_probed: str = ""  # why the ACL's data path was not probed (the runtime's), "" where it was
    acl_rules: int = 0  # rules each VTEP leaf must have loaded, times the leaves
    acl_rules_missing: tuple[str, ...] = ()  # "leaf: rule (status)" not loaded, or not in force
    mismatch: str | None = None  # why the observation is not of this plan's frames, None where it is

    held, broken = "tenants isolated", "NOT as declared"

    def sentence(self) -> str:
        probed = (f"{self.acl_entries} ACL entries" if not self.acl_not_probed
                  else f"ACL data path not applicable: {self.acl_not_probed}")
        figures = (f"{self.controls} controls, {self.negatives} cross-tenant/underlay frames"
                   + (f" ({self.shadowed} of them on a 5-tuple the ACL denies too: no tuple it permits)"
                      if self.shadowed else "")
                   + f", {self.evpn_expected} type-2 routes, {probed}, {self.acl_rules} rules loaded "
                   f"on the VTEP leaves, in {self.seconds:.1f} s")
        if not self.passed:
            return figures
        acl = ("ACL: the data path not probed (below), " if self.acl_not_probed else
               f"ACL: {self.acl_entries}/{self.acl_entries} entries decided and counted as declared, ")
        return (f"0/{self.negatives} frames left their tenant, {self.controls_landed}/{self.controls} controls landed, "
                f"{self.evpn_expected}/{self.evpn_expected} remote MAC/IP type-2 routes; {acl}"
                f"{self.acl_rules}/{self.acl_rules} rules loaded; {figures}")

    def named(self) -> tuple[str, ...]:
        return (((self.mismatch,) if self.mismatch else ())
                + tally(self.leaks, "frames left their tenant")
                + tally(self.failed_controls, "controls did not land", self.controls,
                        then=" (nothing is proven until they do)")
                + tally(self.evpn_missing, "type-2 routes missing", self.evpn_expected)
                + tally(self.acl_wrong, "ACL outcomes differ from the declaration")
                + tally(self.acl_rules_missing, "ACL rules not loaded", self.acl_rules)
                + self.gaps[:1])


# --------------------------------------------------------------------------- the verdict


def _no_nonce() -> bytes:
    return bytes(NONCE_BYTES)  # the judge rebuilds the frames to know them, never to send them


def judge_tenants(plan: Plan, seen: TenantsSeen) -> TenantResult:
    shots, gaps = plan_shots(plan, _no_nonce)
    if seen.acl_not_probed:
        shots = [x for x in shots if not x.entry]
    mismatch = None if seen.shots == len(shots) else (
        f"{seen.shots} frames were sent, this plan makes {len(shots)}: the observation is of another version "
        "of the check's frames (record it again)")
    evpn_expected, evpn_missing = _evpn_missing(plan, seen)
    rules, rules_missing = _rules_missing(plan, seen.rules)
    result = _verdict(plan, shots, seen.landed, seen.counters, gaps, evpn_expected, evpn_missing)
    return dataclasses.replace(result, seconds=seen.seconds, acl_not_probed=seen.acl_not_probed, acl_rules=rules,
                               acl_rules_missing=rules_missing, mismatch=mismatch,
                               problems=((mismatch,) if mismatch else ()) + result.problems + rules_missing)


def _evpn_missing(plan: Plan, seen: TenantsSeen) -> tuple[int, tuple[str, ...]]:
    """Remote members' MAC/IP type-2 routes that a VTEP leaf of their tenant does not hold."""
    want = type2_wanted(plan, seen.macs)
    have = {(leaf, r.vni, r.mac, r.ip) for leaf, routes in seen.type2.items() for r in routes}
    missing = sorted(w for w in want if w[:4] not in have)
    return len(want), tuple(f"{leaf}: no type-2 for {host} ({mac or 'MAC not read'} {ip}) in VNI {vni}"
                            for leaf, vni, mac, ip, host in missing)


def _rules_missing(plan: Plan, rules: dict[str, dict[str, str]]) -> tuple[int, tuple[str, ...]]:
    """Every compiled entry a rule on every VTEP leaf, in force (`show acl rule` on SONiC)."""
    want = [e.name for e in plan.acl]
    vteps = [s.name for s in plan.switches if s.vnis]
    missing = []
    for leaf in vteps:
        have = rules.get(leaf, {})
        missing += [f"{leaf}: rule {name} " + (f"is {have[name]}" if name in have else "is not loaded")
                    for name in want if have.get(name) not in IN_FORCE]
    return len(want) * len(vteps), tuple(missing)


def _verdict(plan: Plan, shots: list[Expectation], landed: dict[int, tuple[str, ...]],
             counted: dict[str, dict[str, int]], gaps: list[str], evpn_expected: int,
             evpn_missing: tuple[str, ...]) -> TenantResult:
    # only a frame seen as sent lands: a tunnelled copy between VTEPs is transport, not delivery
    where = {shot: {tuple(at.split(":", 1)) for at in ports} for shot, ports in landed.items()}
    tenant_of = {(m.host, m.nic): t.name for t in plan.tenants for m in t.members}
    leaks, wrong, failed = [], [], []
    controls = [x for x in shots if x.kind == "tenant control"]
    for x in shots:
        got = where.get(x.shot.id, set())
        home = tenant_of[(x.shot.src_node, x.shot.src_port)]
        if x.entry and x.must_land is None:
            dst = {(x.shot.to_node, x.shot.to_port)} & got
            if dst:
                wrong.append(f"{x} — landed on {x.shot.to_node}:{x.shot.to_port}")
        elif x.must_land is None:
            # a frame for an unknown MAC floods its own segment: only a landing outside it leaks
            out = sorted(w for w in got if tenant_of.get(w) != home)
            if out:
                leaks.append(f"{x} — landed on {', '.join(f'{n}:{p}' for n, p in out)}")
        elif x.must_land not in got:
            (wrong if x.entry else failed).append(f"{x} — did not")
        if x.entry and counted.get(x.leaf, {}).get(x.entry, 0) < 1:
            wrong.append(f"{x} — {x.leaf}'s counter of {x.entry} did not count it")
    negatives = sum(1 for x in shots if x.must_land is None and not x.entry)
    shadowed = sum(1 for x in shots if x.kind.endswith("(the ACL denies it too)"))
    acl = [x for x in shots if x.entry]
    problems = tuple(gaps) + tuple(leaks) + tuple(f"control failed: {f}" for f in failed) + evpn_missing + tuple(
        wrong)
    return TenantResult(problems=problems,
                        controls=len(controls), controls_landed=len(controls) - len(failed), negatives=negatives,
                        leaks=tuple(leaks), evpn_expected=evpn_expected, evpn_missing=evpn_missing,
                        acl_entries=len(acl), acl_wrong=tuple(wrong), counters=counted, failed_controls=tuple(failed),
                        gaps=tuple(gaps), shadowed=shadowed)


def _no_tenants(plan: Plan) -> str | None:
    return None if plan.tenants else "no FE tenants declared (Cluster.tenants): nothing to isolate or filter"


CHECK = Check("tenants", "FE tenants: frames stay in their EVPN/VXLAN segment (controls inside each), remote members' "
              "MAC/IP as type-2 routes on every VTEP, every edge ACL entry permits or denies and counts as declared",
              (Case("tenants", measure_tenants, judge_tenants),), _no_tenants)
