"""Every check `fablab check` and `fablab validate` run, by name, in the order an engineer runs them.

A check is a plug-in (harness.checks.base): one module exporting `CHECK`. This registry only
names the modules, in order, and loads each when it is first asked for (importlib): listing
the names (`fablab check --help`) imports no check. A check that does not apply to a plan
(ECMP and failover without a spine tier) is reported as not applicable (passed None) with
the reason, never as passed.
"""
from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

from harness.checks.base import Case, Check, NotMeasurable, Observation, Outcome, Verdict, has_spine_tier
from harness.core.errors import HarnessError, InputError
from harness.core.codec import to_plain
from harness.core.model import cluster_to_dict
from harness.plumbing.labview import LabView
from harness.plumbing.naming import named_in

__all__ = ["MODULES", "NAMES", "Case", "Check", "UnknownCheck", "Verdict", "case", "has_spine_tier", "load", "not_applicable",
           "run_case", "run_checks", "select"]

MODULES: tuple[tuple[str, str], ...] = (  # (check name, module exporting its CHECK), in the order they run
    ("cabling", "harness.checks.cabling"),
    ("routing", "harness.checks.routing"),
    ("isolation", "harness.checks.isolation"),
    ("tenants", "harness.checks.tenants"),
    ("fe-tcp", "harness.checks.fe_tcp"),
    ("lossless", "harness.checks.lossless"),
    ("deadlock", "harness.checks.deadlock"),
    ("pfc", "harness.checks.pfc"),
    ("dcqcn", "harness.checks.dcqcn"),
    ("ecmp", "harness.checks.ecmp"),
    ("ecmp-superspine", "harness.checks.ecmp_superspine"),
    ("failover", "harness.checks.failover"),
    ("collectives", "harness.checks.collectives"),
    ("rdma", "harness.checks.rdma"),
)
NAMES = tuple(name for name, _ in MODULES)


class UnknownCheck(InputError):
    """A check name that is not in the registry."""


def load(ref: str) -> Check:
    """The `CHECK` of a module: a dotted module name (harness.checks.ecmp) or a .py file
    (docs/examples/check_example.py), imported now."""
    if ref.endswith(".py"):
        path = Path(ref).resolve()
        name = f"fablab_check_{path.stem}"
        module = sys.modules.get(name)
        if module is None or getattr(module, "__file__", None) != str(path):
            spec = importlib.util.spec_from_file_location(name, path)
            if spec is None or spec.loader is None or not path.is_file():
                raise InputError(f"{ref}: no such check module")
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = module
            spec.loader.exec_module(module)
    else:
        module = importlib.import_module(ref)
    check = getattr(module, "CHECK", None)
    if not isinstance(check, Check):
        raise InputError(f"{ref}: a check module exports CHECK, a harness.checks.base.Check")
    return check


def _loaded(name: str, module: str) -> Check:
    check = load(module)
    if check.name != name:
        raise HarnessError(f"{module}: its CHECK is named {check.name!r}, the registry calls it {name!r}")
    return check


def select(only: str | None) -> tuple[Check, ...]:
    """The checks named in a comma-separated list (all of them for None), in registry order. A
    name may be a check's (every case of it) or one case's (`failover-gray`, as `fablab faults`
    and the reports name them): that check then runs only the cases named."""
    asked = list(NAMES) if only is None else [n.strip() for n in only.split(",") if n.strip()]
    if not asked:
        raise UnknownCheck(f"--only {only!r}: no check named; valid checks: {', '.join(NAMES)}")
    loaded = [_loaded(name, module) for name, module in MODULES
              if name in asked or any(n not in NAMES for n in asked)]
    cases = {c.name: check.name for check in loaded for c in check.cases}
    unknown = [n for n in asked if n not in NAMES and n not in cases]
    if unknown:
        raise UnknownCheck(f"--only {only!r}: no check or case {', '.join(unknown)}; the checks: {', '.join(NAMES)}; "
                           f"the cases: {', '.join(c for c in cases if c not in NAMES)}")
    out = []
    for check in loaded:
        if check.name in asked:
            out.append(check)
        elif any(cases.get(n) == check.name for n in asked):
            out.append(dataclasses.replace(check, cases=tuple(c for c in check.cases if c.name in asked)))
    return tuple(out)


def not_applicable(plan, checks: tuple[Check, ...] | None = None) -> dict[str, str]:
    """case -> why it cannot apply to this design, from the plan alone (`fablab show` says it
    before anything boots; what a runtime's data plane lacks is the lab's to say, at check time)."""
    out: dict[str, str] = {}
    for check in select(None) if checks is None else checks:
        why_check_not = check.applies(plan)
        for c in check.cases:
            why = why_check_not or (c.applies(plan) if c.applies is not None else None)
            if why:
                out[c.name] = why
    return out


def case(name: str) -> Case:
    """A registered check's case by its name in reports (ecmp, failover-gray, fe-ecmp). The
    modules load in order and the search stops at the one that has it."""
    known: list[str] = []
    for check_name, module in MODULES:
        for c in _loaded(check_name, module).cases:
            if c.name == name:
                return c
            known.append(c.name)
    raise UnknownCheck(f"no check case {name!r}; the cases are {', '.join(known)}")


def run_case(case: Case, lab: LabView, results=None, *, name: str | None = None, sabotage: str | None = None,
             progress: Callable[[str, str], None] = lambda phase, detail: None, **options: object) -> Outcome:
    """The one way a case runs, for `fablab check`, validate and `pytest labs/`: measure on the
    lab (with the measurement's `options`, e.g. flows=), judge on the lab's plan, then, where
    `results` (harness.report.results.Results) is given, plot and record the outcome and the
    observation under `name` (the case's by default; a negative control's own, e.g.
    ecmp-l3-hashing, with the `sabotage` that broke the lab on purpose named on its plot).
    NotMeasurable and HarnessError from the measurement pass through."""
    t0 = time.monotonic()
    try:
        observation = case.measure(lab, **options)
    except NotMeasurable:
        raise
    except HarnessError as e:  # could not run: a failure too, so its evidence is kept as a FAIL's is
        if results is not None:
            _keep_logs(lab, str(e), results, name or case.name, f"the case could not run: {e}")
        raise
    if not isinstance(observation, Observation):
        raise TypeError(f"check case {case.name}: its measure returned a {type(observation).__name__}, "
                        "not an Observation")
    if not observation.seconds:  # a measure need not time itself
        observation = dataclasses.replace(observation, seconds=round(time.monotonic() - t0, 2))
    outcome = case.verdict(lab.plan, observation)
    if results is not None:
        label = name or case.name
        plots = _plot(case, outcome, results.path(f"{label}.png"), sabotage, progress)
        results.record(label, outcome, plots=plots, observation=observation, case=case.name,
                       cluster=cluster_to_dict(lab.plan.fabric.cluster))
        if outcome.passed is not True and sabotage is None:  # a negative control fails on purpose
            _keep_logs(lab, json.dumps(to_plain(outcome), default=str), results, label)
    return outcome


KEPT_NODES = 24  # a failure that names the whole fabric keeps this many nodes' logs, not xlarge's 229


def _keep_logs(lab: LabView, said: str, results, label: str, why: str = "") -> None:
    """The logs of the nodes a case that did not pass names in what it `said` (its element,
    paths, sessions; or the error it could not run for, `why`), so that an intermittent failure
    can be diagnosed from its results alone."""
    nodes = [sw.name for sw in lab.plan.switches] + [h.name for h in lab.plan.hosts]
    named = named_in(said, nodes)
    kept = named[:KEPT_NODES]
    note = "" if named else "the result names no node"
    if len(named) > len(kept):
        note = f"the result names {len(named)} nodes: the logs of the first {len(kept)} are kept"
    note = "\n".join(n for n in (why, note) if n)
    try:
        results.keep_logs(label, lab.logs(kept), note=note)
    except (HarnessError, OSError) as e:  # the evidence is not the verdict
        results.keep_logs(label, {}, note="\n".join(n for n in (why, f"logs of {', '.join(kept)} not kept: {e}") if n))


def _plot(case: Case, outcome: Outcome, path: Path, sabotage: str | None,
          progress: Callable[[str, str], None]) -> tuple[Path, ...]:
    if case.plot is None:
        return ()
    try:
        plot = case.plot(outcome, path, sabotage=sabotage) if sabotage else case.plot(outcome, path)
    except Exception as e:  # a figure is not the verdict: keep the verdict, say why no plot
        progress(case.name, f"no plot: {type(e).__name__}: {e}")
        return ()
    return (Path(plot),) if plot is not None else ()


def run_checks(lab: LabView, checks: tuple[Check, ...] | None = None, results=None,
               progress: Callable[[str, str], None] = lambda phase, detail: None) -> list[Verdict]:
    """Run the checks (all of them for None) on a running lab; `results` (harness.report.results.Results)
    gets each outcome's JSON and plot."""
    from harness.checks.converged import one_wait_per_run  # loaded when checks run, not with the CLI

    verdicts: list[Verdict] = []
    with one_wait_per_run():  # a fabric that never converged is waited for once, not once a case
        for check in select(None) if checks is None else checks:
            verdicts += _run_check(check, lab, results, progress)
    return verdicts


def _run_check(check: Check, lab: LabView, results, progress: Callable[[str, str], None]) -> list[Verdict]:
    verdicts: list[Verdict] = []
    why_check_not = check.applies(lab.plan)
    for case in check.cases:
        why_not = why_check_not or (case.applies(lab.plan) if case.applies is not None else None) \
            or next((f"the data plane lacks {f}: {why}" for f in case.needs if (why := lab.lacks(f))), None)
        if why_not:
            verdicts.append(Verdict(case.name, None, f"not applicable: {why_not}", 0.0))
            progress(case.name, f"not applicable: {why_not}")
            continue
        progress(case.name, check.claim)
        verdict = _run(case, lab, results, progress)
        progress(case.name, f"{_mark(verdict)} in {verdict.seconds:.2f} s")
        verdicts.append(verdict)
    return verdicts


def _run(case: Case, lab: LabView, results, progress: Callable[[str, str], None]) -> Verdict:
    t0 = time.monotonic()
    try:
        outcome = run_case(case, lab, results, progress=progress)
    except NotMeasurable as e:  # e.g. the fabric never converged: said, neither passed nor failed
        return Verdict(case.name, None, f"not measurable: {e}", round(time.monotonic() - t0, 2))
    except HarnessError as e:  # a check that cannot run has not passed
        return Verdict(case.name, False, f"could not run: {e}", round(time.monotonic() - t0, 2), (str(e),))
    seconds = round(time.monotonic() - t0, 2)
    plots = results.entries.get(case.name, {}).get("plots", ()) if results is not None else ()
    return Verdict(case.name, outcome.passed, outcome.reason, seconds, tuple(str(p) for p in outcome.problems),
                   tuple(str(p) for p in plots), outcome)


def _mark(verdict: Verdict) -> str:
    if verdict.passed is None:
        return "not measurable" if verdict.reason.lower().startswith("not measurable") else "not applicable"
    return "passed" if verdict.passed else "FAILED"
