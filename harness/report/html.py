"""One self-contained HTML report of a `fablab check` or `fablab validate` run.

Everything is inside the file (inline CSS, images as data: URIs) so it can be attached to a
ticket or a CI run and opened anywhere, offline: the verdict table with each check's cost,
what failed and where (each outcome's own findings table, else its problems), each check's
figures and plots, the topology diagram of the lab's plan, and in a header table the run's
provenance (fablab's version and commit, the declaration's hash, runtime, FRR, command line).
It knows no check: it reads `Verdict`s and their `Outcome`s (harness.checks.base), and is
rendered from harness/templates/report.html.j2. Each image notes in a data attribute that the
browser decoded it, so a headless browser can prove the report renders.
"""
from __future__ import annotations

import base64
import time
from collections.abc import Sequence
from pathlib import Path

from harness.checks.base import Outcome, Verdict
from harness.core.plan import Plan
from harness.render.diagram import topology_svg
from harness.render.templates import render_template

LIMIT = 200  # rows of one failure shown; the rest are in the JSON results


def _uri(data: bytes, mime: str) -> str:
    return f"data:{mime};base64,{base64.b64encode(data).decode()}"


def _view(v: Verdict) -> dict[str, object]:
    """What the template shows of one verdict."""
    outcome = v.result if isinstance(v.result, Outcome) else None
    plots = [Path(p) for p in v.plots]
    return {"check": v.check, "passed": v.passed, "seconds": v.seconds, "reason": v.reason,
            "problems": list(v.problems), "figures": outcome.figures() if outcome else {},
            "table": outcome.findings_table() if outcome and v.passed is False else None,
            "plots": [{"name": p.name, "uri": _uri(p.read_bytes(), "image/png")} for p in plots if p.exists()]}


def _provenance(provenance) -> list[tuple[str, str]] | None:
    """Where the results came from: fablab's version and commit, the declaration, the runtime."""
    if provenance is None:
        return None
    rows = []
    for key, value in provenance.properties():
        if key == "commit" and value and provenance.dirty:
            value += " (modified)"
        rows.append((key, value or "—"))
    return rows


def html_report(verdicts: Sequence[Verdict], plan: Plan, title: str, about: dict[str, object] | None = None,
                provenance=None) -> str:
    views = [_view(v) for v in verdicts]
    meta = {"written": time.strftime("%Y-%m-%d %H:%M:%S"), **(about or {}),
            "checks' cost": f"{sum(v.seconds for v in verdicts):.1f} s"}
    return render_template("report.html.j2", title=title, verdicts=views,
                           failed=[v for v in views if v["passed"] is False], meta=meta,
                           provenance=_provenance(provenance), limit=LIMIT, plan_name=plan.name,
                           topology=_uri(topology_svg(plan).encode(), "image/svg+xml"))


def write_html(path: Path, verdicts: Sequence[Verdict], plan: Plan, title: str,
               about: dict[str, object] | None = None, provenance=None) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(html_report(verdicts, plan, title, about, provenance))
    return path
