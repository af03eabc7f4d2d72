"""Every check `fablab check` and `fablab validate` run, by name, in the order an engineer runs them.

This is the one place that adapts each check function to a `Verdict` (passed, reason,
seconds, problems, plots): when a check's signature or result changes, only its entry here
does. A check that does not apply to a topology (ECMP and failover without a spine tier) is
reported as not applicable (passed None) with the reason, never as passed.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from harness.errors import HarnessError, InputError
from harness.plan import Plan

FAILOVER_CASES = ("local", "remote", "gray", "spine")  # harness.checks.failover.CASES, without importing it


@dataclass(frozen=True)
class Verdict:
    check: str
    passed: bool | None  # None: not applicable to this topology
    reason: str
    seconds: float  # wall clock of the check on this lab: its cost
    problems: tuple[str, ...] = ()
    plots: tuple[str, ...] = ()
    result: object = field(default=None, compare=False)  # the check's own result, for JSON and HTML


@dataclass(frozen=True)
class Case:
    """One run of a check function: a name of its own in reports (failover-local, failover-gray)."""

    name: str
    run: Callable[[object], object]  # lab -> result
    plot: Callable[[object, Path], Path] | None = None  # (result, png path) -> png path


@dataclass(frozen=True)
class Check:
    name: str
    about: str
    cases: tuple[Case, ...]
    not_applicable: Callable[[Plan], str | None] = lambda plan: None


class UnknownCheck(InputError):
    """A check name that is not in the registry."""


def has_spine_tier(plan: Plan) -> bool:
    return any(len(s.fabric_ports) >= 2 for s in plan.switches if s.rail is not None)


def _no_spine_tier(plan: Plan) -> str | None:
    return None if has_spine_tier(plan) else "the BE leaves have no spine tier (rail-only): nothing to spread or fail over"


def _rail0_too_small(plan: Plan) -> str | None:
    members = sum(1 for h in plan.hosts for n in h.nics if n.rail == 0)
    return None if members >= 2 else f"rail 0 has {members} GPU NIC(s): a collective needs 2 or more"


# --------------------------------------------------------------------------- adapters (one per check)


def _cabling(lab):
    from harness.checks.cabling import check_cabling

    return check_cabling(lab)


def _isolation(lab):
    from harness.checks.isolation import check_isolation

    return check_isolation(lab)


def _tenants(lab):
    from harness.checks.tenants import check_tenants

    return check_tenants(lab)


def _fe_ecmp(lab):
    from harness.checks.fe_tcp import check_fe_ecmp

    return check_fe_ecmp(lab)


def _fe_failover(lab):
    from harness.checks.fe_tcp import check_fe_failover

    return check_fe_failover(lab)


def _no_fe_pair(plan: Plan) -> str | None:
    from harness.checks.fe_tcp import fe_pair, source_uplinks

    try:
        source_uplinks(plan, fe_pair(plan)[0])
    except HarnessError as e:
        return str(e)
    return None


def _no_tenants(plan: Plan) -> str | None:
    return None if plan.tenants else "no FE tenants declared (Cluster.tenants): nothing to isolate or filter"


def _lossless_audit(lab):
    from harness.checks.lossless import audit_lab

    return audit_lab(lab)


def _lossless_wire(lab):
    from harness.checks.jumbo import check_jumbo

    return check_jumbo(lab)


def _ecmp(lab):
    from harness.checks.ecmp import check_ecmp

    return check_ecmp(lab)


def _failover(case: str):
    def run(lab):
        from harness.checks.failover import check_failover_case

        return check_failover_case(lab, case)

    return run


def _collective(pattern: str):
    def run(lab):
        from harness.checks.collectives import check_collective

        return check_collective(lab, pattern)

    return run


def _incast_congested(lab):
    from harness.checks.collectives import check_incast

    return check_incast(lab, rail=0)


def _plot_ecmp(result, path: Path) -> Path:
    from harness.report import plot_ecmp

    return plot_ecmp(result, path)


def _plot_failover(result, path: Path) -> Path:
    from harness.report import plot_failover

    return plot_failover(result, path)


CHECKS: tuple[Check, ...] = (
    Check("cabling", "every cable in the kernel against the plan (cabling.csv)", (Case("cabling", _cabling),)),
    Check("isolation", "no packet or route between FE, BE and mgmt, with same-plane controls",
          (Case("isolation", _isolation),)),
    Check("tenants", "FE tenants: frames stay in their EVPN/VXLAN segment (controls inside each), remote members' "
          "MAC/IP as type-2 routes on every VTEP, every edge ACL entry permits or denies and counts as declared",
          (Case("tenants", _tenants),), _no_tenants),
    Check("fe-tcp", "TCP on the frontend: connections spread over every FE uplink (fair-hash band), and a failed "
          "uplink, and its restore, cost a stream no more than TCP's first retransmission after the objective",
          (Case("fe-ecmp", _fe_ecmp), Case("fe-failover", _fe_failover)), _no_fe_pair),
    Check("lossless", "the declared lossless contract on every BE hop (PFC, DSCP/TC/queue/PG, ECN, CNP queue, "
          "watchdog, buffers, MTU), then RoCE frames at the RoCE MTU and DSCP on the wire of every BE path",
          (Case("lossless-audit", _lossless_audit), Case("lossless-wire", _lossless_wire))),
    Check("ecmp", "RoCEv2 QPs spread over every uplink of a leaf", (Case("ecmp", _ecmp, _plot_ecmp),),
          _no_spine_tier),
    Check("failover", "loss windows of a local, remote, gray and whole-spine failure and of each restore, "
          "against the cluster's objectives",
          tuple(Case(f"failover-{c}", _failover(c), _plot_failover) for c in FAILOVER_CASES), _no_spine_tier),
    Check("collectives", "ring, all-to-all and incast on rail 0 as RoCEv2 QPs, then incast into a shaped port",
          tuple(Case(f"collectives-{p}", _collective(p)) for p in ("ring", "all-to-all", "incast"))
          + (Case("collectives-incast-congested", _incast_congested),),
          _rail0_too_small),
)
NAMES = tuple(c.name for c in CHECKS)


def select(only: str | None) -> tuple[Check, ...]:
    """The checks named in a comma-separated list (all of them for None), in registry order."""
    if only is None:
        return CHECKS
    asked = [n.strip() for n in only.split(",") if n.strip()]
    unknown = [n for n in asked if n not in NAMES]
    if unknown or not asked:
        raise UnknownCheck(f"--only {only!r}: unknown check(s) {', '.join(unknown) or '(none given)'}; "
                           f"valid checks: {', '.join(NAMES)}")
    return tuple(c for c in CHECKS if c.name in asked)


def problems_of(result) -> tuple[str, ...]:
    if hasattr(result, "problems"):
        return tuple(str(p) for p in result.problems)
    # isolation before the shared result interface: leaks, routes across planes, failed controls
    return tuple(str(p) for name in ("leaks", "leaked_routes", "failed_controls") for p in getattr(result, name, ()))


def run_checks(lab, checks: tuple[Check, ...] = CHECKS, results=None,
               progress: Callable[[str, str], None] = lambda phase, detail: None) -> list[Verdict]:
    """Run the checks on a running lab; `results` (harness.report.Results) gets JSON and plots."""
    verdicts: list[Verdict] = []
    for check in checks:
        why_not = check.not_applicable(lab.plan)
        for case in check.cases:
            if why_not:
                verdicts.append(Verdict(case.name, None, f"not applicable: {why_not}", 0.0))
                progress(case.name, f"not applicable: {why_not}")
                continue
            progress(case.name, check.about)
            t0 = time.monotonic()
            try:
                result = case.run(lab)
            except HarnessError as e:  # a check that cannot run has not passed
                seconds = round(time.monotonic() - t0, 2)
                verdicts.append(Verdict(case.name, False, f"could not run: {e}", seconds, (str(e),)))
                continue
            seconds = round(time.monotonic() - t0, 2)
            plots: tuple[str, ...] = ()
            if results is not None and case.plot is not None:
                try:
                    plots = (str(case.plot(result, results.path(f"{case.name}.png"))),)
                except Exception as e:  # a figure is not the verdict: keep the verdict, say why no plot
                    progress(case.name, f"no plot: {type(e).__name__}: {e}")
            if results is not None:
                results.record(case.name, result, plots=tuple(Path(p) for p in plots))
            verdict = Verdict(case.name, getattr(result, "passed", None), str(getattr(result, "reason", "")),
                              seconds, problems_of(result), plots, result)
            progress(case.name, f"{_mark(verdict.passed)} in {seconds:.2f} s")
            verdicts.append(verdict)
    return verdicts


def _mark(passed: bool | None) -> str:
    return "passed" if passed else "FAILED" if passed is False else "not applicable"
