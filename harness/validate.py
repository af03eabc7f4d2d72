"""The main job: boot a topology, prove the three claims, report, tear down."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from harness.checks.ecmp import check_ecmp
from harness.checks.failover import check_failover
from harness.checks.isolation import check_isolation
from harness.lab import Lab
from harness.plan import Plan
from harness.report import Results, plot_ecmp, plot_failover
from harness.runtime.base import Progress, quiet


@dataclass(frozen=True)
class Verdict:
    check: str
    passed: bool | None  # None: not applicable to this topology
    reason: str
    plots: tuple[str, ...] = ()


def has_spine_tier(plan: Plan) -> bool:
    return any(len(s.fabric_ports) >= 2 for s in plan.switches if s.rail is not None)


def validate(plan: Plan, results_dir: Path, name: str | None = None, runtime: str = "netns",
             progress: Progress = quiet, topology: str | None = None) -> list[Verdict]:
    results = Results(results_dir)
    verdicts: list[Verdict] = []
    with Lab.up(plan, name=name, runtime=runtime, progress=progress, topology=topology) as lab:
        progress("isolation", "probing FE, BE and mgmt against each other, with same-plane controls")
        r = check_isolation(lab)
        results.record("isolation", r)
        verdicts.append(Verdict("isolation", r.passed, r.reason))
        if not has_spine_tier(plan):
            for check in ("ecmp", "failover-hard", "failover-gray"):
                verdicts.append(Verdict(check, None, "not applicable: the BE leaves have no spine tier"))
            return verdicts
        progress("ecmp", "256 RoCEv2 QPs across the spine tier")
        r = check_ecmp(lab)
        plot = plot_ecmp(r, results.path("ecmp.png"))
        results.record("ecmp", r, plots=(plot,))
        verdicts.append(Verdict("ecmp", r.passed, r.reason, (str(plot),)))
        for mode in ("hard", "gray"):
            progress(f"failover-{mode}", f"16 QPs × 1000 pps, {mode} failure of a leaf-spine link, then restore")
            r = check_failover(lab, mode=mode)
            plot = plot_failover(r, results.path(f"failover-{mode}.png"))
            results.record(f"failover-{mode}", r, plots=(plot,))
            verdicts.append(Verdict(f"failover-{mode}", r.passed, r.reason, (str(plot),)))
        progress("teardown", f"removing lab {lab.name}")
    return verdicts
