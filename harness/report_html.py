"""One self-contained HTML report of a `fablab check` or `fablab validate` run.

Everything is inside the file (inline CSS, images as data: URIs) so it can be attached to a
ticket or a CI run and opened anywhere, offline: the verdict table with each check's cost,
the failing paths (cabling rows, leak paths, problems), each check's figures and plots, the
topology diagram of the lab's plan, and in a header table the run's provenance (fablab's
version and commit, the declaration's hash, runtime, FRR, command line). Each image notes in
a data attribute that the browser decoded it, so a headless browser can prove the report renders.
"""
from __future__ import annotations

import base64
import html
import time
from pathlib import Path

from harness.plan import Plan
from harness.render.diagram import topology_svg

_CSS = """
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; max-width: 1200px; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 2em; border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; margin: 0.5em 0; width: 100%; }
th, td { border: 1px solid #ccc; padding: 4px 8px; text-align: left; vertical-align: top; font-size: 0.9em; }
th { background: #f3f3f3; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
.pass { color: #1a7f37; font-weight: bold; } .fail { color: #cf222e; font-weight: bold; }
.na { color: #6e7781; font-weight: bold; }
.banner { padding: 0.6em 1em; border-radius: 4px; display: inline-block; }
.banner.pass { background: #dafbe1; } .banner.fail { background: #ffebe9; }
code, .path { font-family: ui-monospace, monospace; font-size: 0.85em; }
img { max-width: 100%; border: 1px solid #eee; }
dl { display: grid; grid-template-columns: max-content auto; gap: 2px 12px; font-size: 0.85em; }
dt { color: #555; }
"""

# Set by the browser once an image is decoded (or failed): a headless test reads it from the DOM.
_ONLOAD = "this.dataset.decoded=this.naturalWidth+'x'+this.naturalHeight"
_ONERROR = "this.dataset.decoded='error'"


def _e(value: object) -> str:
    return html.escape(str(value))


def _img(data: bytes, mime: str, alt: str) -> str:
    uri = f"data:{mime};base64,{base64.b64encode(data).decode()}"
    return f'<img src="{uri}" alt="{_e(alt)}" onload="{_ONLOAD}" onerror="{_ONERROR}">'


def _mark(passed: bool | None) -> str:
    if passed is None:
        return '<span class="na">n/a</span>'
    return '<span class="pass">PASS</span>' if passed else '<span class="fail">FAIL</span>'


def _figures(result: object) -> str:
    """The scalar fields of a result (counts, windows, ratios): the figures behind the verdict."""
    import dataclasses

    if result is None or not dataclasses.is_dataclass(result):
        return ""
    rows = []
    for f in dataclasses.fields(result):
        value = getattr(result, f.name)
        if isinstance(value, (bool, int, float, str)) and f.name not in ("problems",):
            rows.append(f"<dt>{_e(f.name)}</dt><dd>{_e(value)}</dd>")
        elif isinstance(value, dict) and value and all(isinstance(v, (int, float, str)) for v in value.values()) \
                and len(value) <= 32:
            rows.append(f"<dt>{_e(f.name)}</dt><dd>" + ", ".join(f"{_e(k)}: {_e(v)}" for k, v in value.items())
                        + "</dd>")
    return "<dl>" + "".join(rows) + "</dl>" if rows else ""


def _failing_paths(v) -> str:
    """What failed, where: cabling rows, leak paths, else the problems as the check words them."""
    parts = []
    findings = getattr(v.result, "findings", None)
    if findings:
        rows = "".join(f"<tr><td>{_e(f.kind)}</td><td>{_e(f.node)}</td><td>{_e(f.port)}</td>"
                       f"<td>{_e(f.expected_peer or '—')}</td><td>{_e(f.actual_peer or '—')}</td>"
                       f"<td>{_e('; '.join(f.notes))}</td></tr>" for f in findings)
        parts.append('<table class="cabling"><tr><th>finding</th><th>node</th><th>port</th><th>expected peer</th>'
                     f"<th>actual peer</th><th>notes</th></tr>{rows}</table>")
    leaks = getattr(v.result, "leaks", None)
    if leaks:
        rows = "".join(f"<tr><td>{_e(getattr(k, 'kind', ''))}</td><td>{_e(getattr(k, 'source', ''))}</td>"
                       f"<td>{_e(getattr(k, 'destination', ''))}</td>"
                       f"<td class=\"path\">{_e(' → '.join(getattr(k, 'path', ())))}</td></tr>" for k in leaks[:200])
        parts.append('<table class="leaks"><tr><th>kind</th><th>from</th><th>to</th><th>path</th></tr>'
                     f"{rows}</table>")
    if not parts and v.problems:
        parts.append("<ul>" + "".join(f"<li>{_e(p)}</li>" for p in v.problems[:200]) + "</ul>")
    if len(v.problems) > 200:
        parts.append(f"<p>… {len(v.problems) - 200} more in the JSON results</p>")
    return "".join(parts)


def _provenance_table(provenance) -> str:
    """Where the results came from: fablab's version and commit, the declaration, the runtime."""
    if provenance is None:
        return ""
    rows = []
    for key, value in provenance.properties():
        if key == "commit" and value and provenance.dirty:
            value += " (modified)"
        rows.append(f'<tr data-field="{_e(key)}"><th>{_e(key)}</th><td><code>{_e(value or "—")}</code></td></tr>')
    return '<table id="provenance">' + "".join(rows) + "</table>"


def html_report(verdicts, plan: Plan, title: str, about: dict[str, object] | None = None,
                provenance=None) -> str:
    failed = [v for v in verdicts if v.passed is False]
    total = sum(v.seconds for v in verdicts)
    banner = (f'<p class="banner fail">{len(failed)} of {len(verdicts)} checks FAILED: '
              f'{_e(", ".join(v.check for v in failed))}</p>' if failed else
              f'<p class="banner pass">every applicable check passed ({len(verdicts)} checks)</p>')
    meta = {"written": time.strftime("%Y-%m-%d %H:%M:%S"), **(about or {}), "checks' cost": f"{total:.1f} s"}
    out = [f"<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{_e(title)}</title>",
           f"<style>{_CSS}</style></head><body><h1>{_e(title)}</h1>", banner,
           "<dl>" + "".join(f"<dt>{_e(k)}</dt><dd>{_e(val)}</dd>" for k, val in meta.items()) + "</dl>",
           _provenance_table(provenance),
           '<h2>Verdicts</h2><table id="verdicts"><tr><th>check</th><th>result</th><th>seconds</th><th>figures</th></tr>']
    for v in verdicts:
        out.append(f'<tr class="verdict" data-check="{_e(v.check)}"><td>{_e(v.check)}</td><td>{_mark(v.passed)}</td>'
                   f'<td class="num">{v.seconds:.2f}</td><td>{_e(v.reason)}</td></tr>')
    out.append("</table>")
    if failed:
        out.append("<h2>What failed, and where</h2>")
        for v in failed:
            out.append(f'<h3 id="fail-{_e(v.check)}">{_e(v.check)}</h3>{_failing_paths(v)}')
    out.append("<h2>Checks: figures and plots</h2>")
    for v in verdicts:
        out.append(f"<h3>{_e(v.check)} {_mark(v.passed)}</h3><p>{_e(v.reason)}</p>{_figures(v.result)}")
        for plot in v.plots:
            path = Path(plot)
            if path.exists():
                out.append(f'<figure>{_img(path.read_bytes(), "image/png", path.name)}'
                           f"<figcaption>{_e(path.name)}</figcaption></figure>")
    out.append(f"<h2>Topology: {_e(plan.name)}</h2>")
    out.append(_img(topology_svg(plan).encode(), "image/svg+xml", "topology.svg"))
    out.append("</body></html>\n")
    return "\n".join(out)


def write_html(path: Path, verdicts, plan: Plan, title: str, about: dict[str, object] | None = None,
               provenance=None) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(html_report(verdicts, plan, title, about, provenance))
    return path
