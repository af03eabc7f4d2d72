"""containerlab's command line, and what it and a switch's init script print: the commands
the clab runtime runs, `containerlab inspect`'s JSON, the init script's status line. Pure."""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from harness.core.errors import LabError


def deploy_argv(topology: Path, replace: bool = False) -> list[str]:
    return ["containerlab", "deploy", "-t", str(topology)] + (["--reconfigure"] if replace else [])


def destroy_argv(topology: Path) -> list[str]:
    return ["containerlab", "destroy", "-t", str(topology), "--cleanup"]


def inspect_argv(lab: str) -> list[str]:
    # By lab name (the `containerlab=<lab>` label), not -t: with -t, inspect exits 1 as soon
    # as one node's container is missing, and that is just what the caller wants to learn.
    return ["containerlab", "inspect", "--name", lab, "--format", "json"]


@dataclass(frozen=True)
class Container:
    """One row of `containerlab inspect`."""

    name: str
    state: str
    kind: str = ""
    image: str = ""
    ipv4: str = ""
    lab: str = ""


def parse_inspect(text: str) -> list[Container]:
    """Both shapes containerlab has printed: `{"containers": [...]}` (before 0.68) and
    `{"<lab>": [...]}` keyed by lab name (0.68 and later); an empty answer is no container."""
    if not text.strip():
        return []
    try:
        doc = json.loads(text)
    except ValueError as e:
        raise LabError(f"containerlab inspect printed no JSON ({e}): {text[:200]!r}") from e
    if isinstance(doc, dict) and isinstance(doc.get("containers"), list):
        entries = doc["containers"]
    elif isinstance(doc, dict):
        entries = [e for rows in doc.values() if isinstance(rows, list) for e in rows]
    elif isinstance(doc, list):
        entries = doc
    else:
        raise LabError(f"containerlab inspect: unexpected JSON {type(doc).__name__}")
    out = []
    for e in entries:
        if not isinstance(e, dict) or "name" not in e:
            raise LabError(f"containerlab inspect: an entry without a name: {e!r}")
        out.append(Container(name=e["name"], state=str(e.get("state", "")), kind=str(e.get("kind", "")),
                             image=str(e.get("image", "")), ipv4=str(e.get("ipv4_address", "")),
                             lab=str(e.get("lab_name", e.get("labName", "")))))
    return out


@dataclass(frozen=True)
class InitStatus:
    """What a switch's init script says in /tmp/fablab-init.status."""

    state: str  # pending (no file yet) | running | ok | failed
    step: str = ""
    detail: str = ""


def parse_init_status(text: str | None) -> InitStatus:
    """`running <step>`, `ok` or `failed <step>: <detail>`; no file yet is `pending`."""
    line = (text or "").strip().splitlines()[-1:] or [""]
    line = line[0].strip()
    if not line:
        return InitStatus("pending")
    word, _, rest = line.partition(" ")
    if word == "ok":
        return InitStatus("ok")
    if word == "running":
        return InitStatus("running", rest.strip())
    if word == "failed":
        step, _, detail = rest.partition(":")
        return InitStatus("failed", step.strip(), detail.strip())
    return InitStatus("failed", "status", f"unreadable status line {line!r}")


def init_steps(waiting: list[str], seen: dict[str, InitStatus]) -> str:
    """Where the switches still booting are: `at config_db: be-s1, be-s2; at bgpd: fe-l1`."""
    at: dict[str, list[str]] = {}
    for sw in waiting:
        status = seen.get(sw, InitStatus("pending"))
        at.setdefault(status.step or status.state, []).append(sw)
    return "; ".join(f"at {step}: {', '.join(names[:6])}{' ...' if len(names) > 6 else ''}"
                     for step, names in at.items())
