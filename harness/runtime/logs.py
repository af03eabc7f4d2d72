"""The logs a failed case keeps: each named node's FRR logs and the lab data planes' lines about
those nodes, so that an intermittent failure can be diagnosed from its results alone."""
from __future__ import annotations

from collections.abc import Collection
from pathlib import Path

from harness.plumbing.naming import pattern
from harness.runtime.state import run_dir

LIMIT = 256 * 1024  # the last bytes kept of each log: hours of a switch's FRR, minutes of a busy data plane


def tail(path: Path, limit: int = LIMIT) -> str:
    with path.open("rb") as f:
        f.seek(0, 2)
        size = f.tell()
        f.seek(max(0, size - limit))
        return _whole_lines(f.read().decode(errors="replace"), size > limit)


def _whole_lines(text: str, cut: bool) -> str:
    return text.split("\n", 1)[-1] if cut else text  # from a whole line on


def naming(text: str, nodes: Collection[str]) -> str:
    """The lines of a shared log that name one of `nodes` as a whole word (be-s1, not be-s10)."""
    word = pattern(nodes)
    return "".join(line for line in text.splitlines(keepends=True) if word.search(line))


def netns_logs(lab: str, nodes: Collection[str], limit: int = LIMIT) -> dict[str, str]:
    """node/daemon.log -> its tail for each of `nodes` (zebra, bgpd, bfdd, mgmt services), and
    each lab data plane's log (BFD, lossless) -> its lines about them."""
    root = run_dir(lab)
    out: dict[str, str] = {}
    for node in sorted(nodes):
        for path in sorted((root / node).glob("*.log")) if (root / node).is_dir() else ():
            out[f"{node}/{path.name}"] = tail(path, limit)
    for path in sorted(root.glob("*.log")):
        lines = naming(tail(path, 8 * limit), nodes)
        if lines:
            out[path.name] = _whole_lines(lines[-limit:], len(lines) > limit)
    return out
