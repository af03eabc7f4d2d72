"""What a check is, and what every check's result shares (DESIGN: "a check is a plug-in").

A check is one module under harness/checks/ exporting `CHECK`: its name, the claim it proves,
when it applies to a plan, and its cases. A case is two halves, as netlab's show_X/valid_X and
ANTA's tests are: `measure(lab) -> Observation`, what was seen on a running lab (a frozen,
typed record that harness.core.codec writes and reads back), and a pure `judge(plan,
observation) -> Outcome`, the verdict and its figures. So a verdict is tested on recorded
observations with no lab (tests/observations/), and a lab only measures. The registry
(harness.checks.registry) names the modules and runs a case (measure, judge, plot, record);
reports (harness.report.results, harness.report.html) read only `Outcome` and `Verdict`.

This module stays light: it imports neither the checks nor what they need (scipy and
matplotlib load when a check runs or plots, never with the CLI).
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, NamedTuple

from harness.core.capabilities import Feature
from harness.core.errors import HarnessError

if TYPE_CHECKING:
    from harness.core.plan import Plan


class NotMeasurable(HarnessError):
    """A case cannot measure on this lab as it stands (its fabric never converged): the run
    reports it not measurable (passed None), neither a pass nor a failure of its claim."""


class Table(NamedTuple):
    """Rows a report shows under "what failed, and where" (e.g. a cabling finding's ends)."""

    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]


@dataclass(frozen=True, kw_only=True)
class Observation:
    """What a case saw on a running lab, and nothing it concluded: frozen, typed, plain data
    (str, numbers, tuples, dicts, enums, nested dataclasses), so harness.core.codec writes it
    and reads it back, and a judge reads it again with no lab. `seconds` is
    keyword-only, so a subclass's own fields keep their places. A case that cannot measure
    on a lab as it stands raises NotMeasurable instead."""

    seconds: float = 0.0  # wall clock of the measurement


@dataclass(frozen=True, kw_only=True)
class Outcome:
    """The one base of every check's result: frozen, with its figures as fields.

    It passes when it found no problem (a subclass may say None: not measurable, never a
    pass). Its `reason` is built one way for all: `held: sentence` when it passed,
    `broken: problems | sentence` when it failed, `undecided: why | sentence` when it could
    not tell; a subclass gives the words and `sentence()`, the figures behind the verdict.
    `seconds` and `problems` are keyword-only, so a subclass's own fields keep their places.
    """

    seconds: float = 0.0  # wall clock of the measurement
    problems: tuple[str, ...] = ()  # each one thing found wrong, as an engineer would say it

    held: ClassVar[str] = "passed"  # the verdict's first words when it passed ...
    broken: ClassVar[str] = "FAILED"  # ... when it failed ...
    undecided: ClassVar[str] = "NOT MEASURABLE"  # ... and when it could not tell (passed None)
    shown: ClassVar[int | None] = None  # problems named in the reason (None: all; the rest in `problems`)

    @property
    def passed(self) -> bool | None:
        return not self.problems

    def sentence(self) -> str:
        """The figures behind the verdict, in one sentence."""
        return ""

    def why_undecided(self) -> str:
        """Why the verdict is None, when it is."""
        return ""

    def named(self) -> tuple[str, ...]:
        """What a failed verdict's reason names: every problem (at most `shown`), or a summary
        of them where there can be hundreds (n leaks, e.g. the first)."""
        return self.problems

    def findings_table(self) -> Table | None:
        """What failed, where, as rows for a report; None: the problems say it."""
        return None

    @property
    def reason(self) -> str:
        passed, sentence = self.passed, self.sentence()
        if passed:
            return f"{self.held}: {sentence}" if sentence else self.held
        if passed is None:
            word, lead = self.undecided, self.why_undecided()
        else:
            word, named = self.broken, list(self.named())
            if self.shown is not None and len(named) > self.shown:
                more = len(named) - self.shown
                named = named[:self.shown]
                named[-1] += f" (+{more} more)"
            lead = "; ".join(named)
        return f"{word}: " + " | ".join(part for part in (lead, sentence) if part)

    def figures(self) -> dict[str, object]:
        """The headline numbers for reports: every scalar field (counts, times, ratios, names)
        and every small flat table of them (uplink -> QPs)."""
        out: dict[str, object] = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if f.name == "problems" or value is None:
                continue
            if isinstance(value, (bool, int, float, str)):
                out[f.name] = value
            elif isinstance(value, dict) and 0 < len(value) <= 32 and all(
                    isinstance(v, (int, float, str)) for v in value.values()):
                out[f.name] = dict(value)
        return out


@dataclass(frozen=True, kw_only=True)
class MeasuredOutcome(Outcome):
    """An outcome that can find nothing wrong and still not tell: its control failed, or a
    figure it rests on could not be trusted. `not_measurable` says why; the verdict is then
    None, never a pass (a problem found still fails it)."""

    not_measurable: str = ""

    @property
    def passed(self) -> bool | None:
        return False if self.problems else None if self.not_measurable else True

    def why_undecided(self) -> str:
        return self.not_measurable


@dataclass(frozen=True)
class Verdict:
    """One case of a check on one lab, as `fablab check`, validate and the reports show it."""

    check: str
    passed: bool | None  # None: not applicable to this topology, or not measurable
    reason: str
    seconds: float  # wall clock of the check on this lab: its cost
    problems: tuple[str, ...] = ()
    plots: tuple[str, ...] = ()
    result: Outcome | None = dataclasses.field(default=None, compare=False)  # for JSON and HTML


Measure = Callable[..., Observation]  # (lab, **options) -> what was seen
Judge = Callable[["Plan", Observation], Outcome]  # (plan, observation) -> verdict: pure, no I/O
Plot = Callable[..., "Path | None"]  # (outcome, png path[, sabotage=]) -> the png written, or None


@dataclass(frozen=True)
class Case:
    """One run of a check, with a name of its own in reports (failover-local, failover-gray):
    what to measure on a lab, and the pure judge of what was measured. applies(plan): None
    when the case applies, else why not (on top of its check's); `needs`: the data-plane
    features it cannot measure without, read from the lab's runtime's row of the capability
    table, never from prose."""

    name: str
    measure: Measure
    judge: Judge
    plot: Plot | None = None
    applies: Callable[[Plan], str | None] | None = None
    needs: tuple[Feature, ...] = ()  # what the lab's data plane must do (harness.core.capabilities), else n/a

    def verdict(self, plan: Plan, observation: Observation) -> Outcome:
        """The judge's outcome, held to the contract: an Outcome, timed as its measurement."""
        outcome = self.judge(plan, observation)
        if not isinstance(outcome, Outcome):
            raise TypeError(f"check case {self.name}: its judge returned a {type(outcome).__name__}, not an Outcome")
        if not outcome.seconds and observation.seconds:
            outcome = dataclasses.replace(outcome, seconds=observation.seconds)
        return outcome


def tally(found: tuple | list, what: str, of: int | None = None, *, then: str = "") -> tuple[str, ...]:
    """A failed verdict's summary of what can be hundreds: "n[/of] what[ then], e.g. the first";
    nothing when none was found."""
    if not found:
        return ()
    share = f"{len(found)}/{of}" if of is not None else f"{len(found)}"
    return (f"{share} {what}{then}, e.g. {found[0]}",)


def always(plan: Plan) -> str | None:
    return None


@dataclass(frozen=True)
class Check:
    """A claim proved on a running lab. applies(plan): None when the check applies to the
    plan, else why not (its cases are then reported not applicable, never passed)."""

    name: str
    claim: str
    cases: tuple[Case, ...]
    applies: Callable[[Plan], str | None] = always


def has_spine_tier(plan: Plan) -> bool:
    return any(len(s.fabric_ports) >= 2 for s in plan.switches if s.rails)


def has_superspine_tier(plan: Plan) -> bool:
    return any(s.role.value == "be-superspine" for s in plan.switches)


def needs_superspine_tier(plan: Plan) -> str | None:
    if has_superspine_tier(plan):
        return None
    return "the BE has no super-spine tier (one pod, 3-stage): no second stage to spread or fail over"


def needs_two_groups_in_a_pod(plan: Plan) -> str | None:
    """A remote failure is a spine's link to another leaf of the source leaf's pod."""
    groups: dict[int | None, set[int]] = {}
    for h in plan.hosts:
        if h.group is not None:
            groups.setdefault(h.pod, set()).add(h.group)
    if any(len(g) > 1 for g in groups.values()):
        return None
    return ("every pod has one group of leaves: no other leaf under the same spines to lose a link to (a leaf "
            "of another pod is behind the super-spines: failover-superspine-link)")


def needs_spine_tier(plan: Plan) -> str | None:
    """The spine tier, and same-rail traffic that crosses it: a GPU NIC whose rail has a leaf in
    another group (cross-rail traffic stays in the node, over NVLink: DESIGN, "Rails")."""
    if not has_spine_tier(plan):
        return "the BE leaves have no spine tier (rail-only): nothing to spread or fail over"
    groups: dict[int, set] = {}
    for h in plan.hosts:
        for n in h.nics:
            if n.rail is not None:
                groups.setdefault(n.rail, set()).add((h.pod, h.group))
    if any(len(g) > 1 for g in groups.values()):
        return None
    return ("every rail's GPU NICs are in one group: no same-rail traffic crosses the spines (cross-rail traffic "
            "stays in the node); declare a second group (Backend(groups=2)) to exercise spine ECMP and failover")


# --------------------------------------------------------------------------- plots


def caption(ax, text: str, sabotage: str | None = None, width: int = 100) -> None:
    """A plot's title, wrapped so that it is never cut; a negative control's names its sabotage
    first (what was broken on purpose, so the failure shown is the expected one)."""
    import textwrap

    lines = textwrap.wrap(text, width)
    if sabotage:
        lines = textwrap.wrap(f"NEGATIVE CONTROL, broken on purpose: {sabotage}", width) + lines
    ax.set_title("\n".join(lines), fontsize=8.5, loc="left", color="#8b0000" if sabotage else "black")


def pyplot():
    """matplotlib's pyplot, files only: imported here, when a check first plots."""
    import matplotlib

    matplotlib.use("Agg")  # no display
    import matplotlib.pyplot as plt

    return plt


def save(fig, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    pyplot().close(fig)
    return Path(path)
