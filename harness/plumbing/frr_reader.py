"""What FRR 8.4 itself makes of frr.conf files: its own `show running-config` of each, and the
lines it refused, in its words. `fablab diff`, `up --configs`, `audit` and `import` judge that,
not the file's wording (docs/commands/diff.md, "FRR reads each file").

Each file goes to throwaway daemons (zebra, bgpd, and bfdd, staticd, ... as the file needs) in
a private network, mount and pid namespace, a user namespace too without root (`unshare -Urn`):
harness/plumbing/frr_read_worker.py. Nothing is made outside those namespaces but a scratch
directory, removed at the end; the namespaces end with their last process. A few workers read in
parallel, each file with fresh daemons.

Without FRR, or where the kernel refuses the namespaces, `read` raises FrrUnavailable with the
reason, and the callers fall back to fablab's own model of FRR, saying so.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from harness.core.errors import HarnessError
from harness.core.meaning.frr_form import FrrForm, PeerFacts, Refusal
from harness.core.meaning.frr_origin import origins
from harness.core.meaning.frr_values import refused as model_form

FRR_BIN = Path("/usr/lib/frr")
WORKERS = 4  # mostly waiting on daemons' start: twice the machine's two cores
_LINE = re.compile(r"^line (\d+): (.*)$")
_KIND = re.compile(r"^(%?\s*[^\[\]:]+?)\[\d+\](\.\.\.)?:\s*(.*)$")  # "% Unknown command[79]: x" -> kind, x
_ROOT = Path(__file__).resolve().parents[2]


class FrrUnavailable(HarnessError):
    """FRR cannot read configs here (not installed, or no private namespace allowed)."""


@dataclass(frozen=True)
class Readings:
    """Every file of a set as FRR read it, or, where FRR cannot read here, as written (`model`
    says why: fablab's own model of FRR 8.4 reads them then); `slow`, the files FRR would take
    minutes over, which the model reads."""
    files: Mapping[str, FrrForm]
    model: str | None = None
    slow: tuple[str, ...] = ()

    @property
    def note(self) -> str:
        """The line a command prints first when FRR did not read (some of) the files."""
        if self.model is not None:
            return (f"FRR could not read the configs here ({self.model}): judged by fablab's own model of FRR 8.4 "
                    "instead")
        if self.slow:
            return (f"{', '.join(self.slow)}: over {SLOW_PREFIX_LISTS} prefix-list entries or {SLOW_LINES:,} lines, "
                    "which FRR takes minutes to load (vtysh -f: 2,000 entries took 72 s here): judged by fablab's "
                    "own model of FRR 8.4")
        return ""

    def refused(self) -> list[tuple[str, Refusal]]:
        return [(name, r) for name, reading in sorted(self.files.items()) for r in reading.refusals]


# FRR reads a config line into VTY_BUFSIZ (lib/vty.h: 4,096 bytes); given a longer one, vtysh -f
# did not return here in 60 s. Such a line is refused before FRR sees it.
LINE_MAX = 4095
# What FRR 8.4 loads slowly through vtysh -f (measured here: 2,000 prefix-list entries 72 s,
# 700 interfaces of 3 lines 7.5 s): a file over either is read by the model, and said.
SLOW_PREFIX_LISTS = 300
SLOW_LINES = 3000  # physical lines, comments too: 10 MB of `!` lines kept vtysh -f past a minute


def _long_lines(text: str) -> tuple[str, tuple[Refusal, ...]]:
    """`text` with each line FRR cannot take for its length made a comment (the numbering of the
    rest kept), and those lines refused."""
    lines = text.splitlines()
    long = [i for i, line in enumerate(lines) if len(line) > LINE_MAX]
    if not long:
        return text, ()
    said = tuple(Refusal(i + 1, " ".join(lines[i].split()[:3])[:60] + " ...",
                         f"% a line of {len(lines[i]):,} characters: FRR reads a config line into 4,096 bytes "
                         "(lib/vty.h VTY_BUFSIZ)") for i in long)
    for i in long:
        lines[i] = "!"
    return "\n".join(lines) + "\n", said


def _slow(text: str) -> bool:
    lines = text.splitlines()
    return len(lines) > SLOW_LINES or sum(" prefix-list " in f" {line.strip()} " for line in lines) > SLOW_PREFIX_LISTS


def readings(texts: Mapping[str, str]) -> Readings:
    """`read`, or the files as written with the reason where FRR cannot read them here; a file
    FRR would take minutes over is read by the model, a line too long for FRR refused first."""
    cut = {name: _long_lines(text) for name, text in texts.items()}
    slow = tuple(sorted(name for name, (text, _) in cut.items() if _slow(text)))
    try:
        files = {**read({name: text for name, (text, _) in cut.items() if name not in slow}),
                 **{name: model_form(cut[name][0]) for name in slow}}
        model = None
    except FrrUnavailable as e:
        files, model, slow = {name: model_form(text) for name, (text, _) in cut.items()}, str(e), ()
    return Readings({name: replace(form, refusals=cut[name][1] + form.refusals) if cut[name][1] else form
                     for name, form in files.items()}, model, slow)


def unavailable() -> str | None:
    """Why FRR cannot read configs on this machine, or None when it can."""
    missing = [str(p) for p in (FRR_BIN / "zebra", FRR_BIN / "bgpd") if not p.exists()]
    for tool in ("vtysh", "unshare", "stdbuf", "mount"):
        if shutil.which(tool) is None:
            missing.append(tool)
    if missing:
        return f"{', '.join(missing)} missing (FRR: apt-get install frr)"
    return None


def _unshare() -> list[str]:
    private = ["--net", "--mount", "--pid", "--fork", "--kill-child"]
    return ["unshare", *private] if os.geteuid() == 0 else ["unshare", "--user", "--map-root-user", *private]


def read(texts: Mapping[str, str], workers: int = WORKERS, timeout: float | None = None) -> dict[str, FrrForm]:
    """Each text (name -> frr.conf) as FRR reads it. Raises FrrUnavailable with the reason."""
    reason = unavailable()
    if reason:
        raise FrrUnavailable(reason)
    known = {name: _READ[text] for name, text in texts.items() if text in _READ}
    names = sorted(set(texts) - set(known))
    if not names:
        return known
    found = _read(texts, names, workers, timeout)
    if len(_READ) > _KEEP:
        _READ.clear()
    _READ.update((texts[name], form) for name, form in found.items())
    return {**known, **found}


# What FRR made of a text, kept for the process: the same text reads the same (fablab's render of
# a plan is read for every diff against it, an engineer's file once per switch and command).
_READ: dict[str, FrrForm] = {}
_KEEP = 4096


def _read(texts: Mapping[str, str], names: list[str], workers: int, timeout: float | None) -> dict[str, FrrForm]:
    scratch = Path(tempfile.mkdtemp(prefix="fablab-frr-read-"))
    procs: list[subprocess.Popen] = []
    try:
        jobs = {}
        for i, name in enumerate(names):
            job = scratch / f"job{i}"
            job.mkdir()
            (job / "in.conf").write_text(texts[name])
            jobs[name] = job
        count = max(1, min(workers, len(names)))
        shares = [[f"job{i}" for i in range(k, len(names), count)] for k in range(count)]
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(_ROOT), os.environ.get("PYTHONPATH", "")])}
        procs += [subprocess.Popen([*_unshare(), sys.executable, "-m", "harness.plumbing.frr_read_worker",
                                   str(scratch), *share], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, text=True, env=env, cwd=scratch)
                 for share in shares]
        limit = timeout if timeout is not None else 30.0 + 3.0 * len(names) / count
        outputs = []
        for p in procs:
            try:
                outputs.append(p.communicate(timeout=limit)[0])
            except subprocess.TimeoutExpired:
                raise FrrUnavailable(f"FRR took over {limit:.0f} s to read {len(names)} configs") from None
        failed = [(p.returncode, out) for p, out in zip(procs, outputs) if p.returncode != 0]
        if failed:
            code, out = failed[0]
            raise FrrUnavailable(f"no private namespace for FRR (unshare exited {code}: "
                                 f"{' '.join(out.split())[:300]})")
        found = {}
        for name, job in jobs.items():
            if (job / "error.txt").exists():
                raise FrrUnavailable((job / "error.txt").read_text().strip()[:400])
            canonical = (job / "out.conf").read_text()
            found[name] = FrrForm(canonical, origins(canonical, texts[name]),
                                  refusals((job / "vtysh.out").read_text(), texts[name]),
                                  peer_facts((job / "neighbors.json").read_text()))
        return found
    finally:
        # Whatever ends the read (a timeout, Ctrl-C, SIGTERM): each worker is PID 1 of its own
        # namespace and unshare --kill-child takes it down with unshare, so nothing is left running.
        for q in procs:
            if q.poll() is None:
                q.kill()
                q.wait()
        shutil.rmtree(scratch, ignore_errors=True)


def refusals(output: str, text: str) -> tuple[Refusal, ...]:
    """What `vtysh -f` printed, as refusals of lines of `text`: a daemon's message comes before
    vtysh's `line N: Failure to communicate ...`; vtysh's own (unknown, incomplete, ambiguous)
    name the line; a northbound validation failure names its commands, found back in the file."""
    lines = [" ".join(raw.split()) for raw in text.splitlines()]
    found: list[Refusal] = []
    pending: list[str] = []
    described = ""
    for raw in output.splitlines():
        s = raw.strip()
        if not s or s.startswith(("Error type:", "The following commands")):
            continue
        m = _LINE.match(s)
        if m:
            no, rest = int(m.group(1)), m.group(2)
            statement = lines[no - 1] if 0 < no <= len(lines) else ""
            if rest.startswith("Failure to communicate"):  # the daemon's own words came first
                message = " ".join(pending) or re.sub(r"\[\d+\]", "", rest.split(", line:")[0])
            else:
                kind = _KIND.match(rest)
                message = kind.group(1).strip() if kind else rest
                if pending:
                    message = " ".join(pending) + " " + message
            found.append(Refusal(no, statement, message))
            pending = []
        elif s.startswith("% Configuration failed"):
            pending = []
        elif s.startswith("Error description:"):
            described = s.split(":", 1)[1].strip()
        elif s.startswith("- ") and described:
            statement = " ".join(s[2:].split())
            no = next((i for i, line in enumerate(lines, 1) if line == statement), None)
            found.append(Refusal(no, statement, f"% {described}"))
        else:
            pending.append(s)
    # Words left without a `line N:` after them came from a command FRR took (bgpd's "The
    # route-map 'X' does not exist." for a map defined further down): a warning, not a refusal.
    seen: set[tuple] = set()
    unique = []
    for r in found:  # a prefix list is every daemon's: each says the same
        if (r.line, r.statement, r.message) not in seen:
            seen.add((r.line, r.statement, r.message))
            unique.append(r)
    return tuple(unique)


def peer_facts(text: str) -> dict[tuple[str, str], PeerFacts]:
    """(vrf, neighbour) -> what bgpd holds for it, from `show bgp vrf all neighbors json`."""
    try:
        vrfs = json.loads(text or "{}")
    except ValueError:
        return {}
    found = {}
    for vrf, peers in vrfs.items() if isinstance(vrfs, dict) else ():
        for name, info in peers.items() if isinstance(peers, dict) else ():
            if not isinstance(info, dict) or "bgpTimerConfiguredHoldTimeMsecs" not in info:
                continue  # vrfId, vrfName
            bfd = info.get("peerBfdInfo")
            found[(vrf, name)] = PeerFacts(
                (bfd["detectMultiplier"], bfd["rxMinInterval"], bfd["txMinInterval"]) if isinstance(bfd, dict) else None,
                (info["bgpTimerConfiguredKeepAliveIntervalMsecs"] // 1000,
                 info["bgpTimerConfiguredHoldTimeMsecs"] // 1000, info.get("connectRetryTimer", 0)))
    return found
