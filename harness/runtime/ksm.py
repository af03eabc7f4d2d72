"""Kernel same-page merging of bgpd's zeroed receive rings, for the labs large enough to need it
whose bgpd cannot be given harness/runtime/bgpd_rings.py's ringbuf_wipe (a bgpd that does not
take it from a shared libfrr). Where that preload applies, as on Debian 12, the rings never
become resident and KSM is not used: measured on xlarge with the preload, KSM on or off made no
difference (2.5 GB either way) and ksmd cost CPU during the boot.

FRR 8.4 (Debian 12's) gives every BGP peer a 640 KiB receive ring and wipes it (`memset`), so
every ring becomes resident, all zeros. Measured on xlarge (86 switches) once converged: 1,317
MB of bgpd's 2,245 MB of anonymous memory were pages of nothing but zeros; a 64-peer spine held
42 of its 52 MB so, 656 KiB a peer. On ai-cluster the zeros come to 27 MB, not worth a scan.
FRR fixed the ring only in 9.0 (and again in 10.6); Debian 12 has no backport.

Starting bgpd tier by tier with each session's upper end passive, so no bgpd dials a peer that
is not up yet, was measured too: the zeros stayed (1,319 MB). The ring of every peer that
reaches Established is wiped as well, not only after a refused attempt. It also made
`fablab diff` report `passive` on every upper-tier switch, so it was not kept.

KSM with `use_zero_pages` maps such pages to the kernel's zero page. The FRR daemons of a lab
of `FROM_SESSIONS` BGP sessions or more are started mergeable (`prctl(PR_SET_MEMORY_MERGE)`,
inherited across fork and exec: set on this process only while it spawns them), and ksmd runs
while such a lab does. ksmd's settings are the machine's, so, as the neighbour tables'
limits (harness/runtime/neighbours.py), each lab records what it found, the settings are
announced when raised, and the last lab to go puts them back.
"""
from __future__ import annotations

import ctypes
import json
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from harness.core.plan import Plan
from harness.observe.convergence import cached_expectations
from harness.runtime import bgpd_rings
from harness.runtime import state as lab_state
from harness.runtime.neighbours import Change, locked, read_value, records, released, write_value

KSM_ROOT = Path("/sys/kernel/mm/ksm")
RECORD = "ksm.json"
FROM_SESSIONS = int(os.environ.get("FABLAB_KSM_FROM_SESSIONS", "500"))
# While a lab boots ksmd looks at 1,000 pages every 20 ms (measured: 38,000 pages/s, 28 % of a
# core), so the rings a boot zeroes are merged within two full scans; once no lab boots, at 100
# (about 3 % of a core), which finishes the merge within minutes and keeps up with a flap's.
SETTINGS = {"use_zero_pages": 1, "pages_to_scan": 1000, "sleep_millisecs": 20, "run": 1}
RESTING = 100
PR_SET_MEMORY_MERGE = 67  # linux/prctl.h, Linux 6.4

Progress = Callable[[str, str], None]


def wanted(plan: Plan, rings_preloaded: bool | None = None) -> bool:
    """A lab of FROM_SESSIONS sessions or more whose bgpd cannot have its rings kept off memory
    (`rings_preloaded`, by default bgpd_rings.applies())."""
    if rings_preloaded is None:
        rings_preloaded = bgpd_rings.applies()
    return not rings_preloaded and sum(e.sessions for e in cached_expectations(plan).values()) >= FROM_SESSIONS


def hold(lab: str, plan: Plan, progress: Progress, root: Path = KSM_ROOT, run_root: Path | None = None
         ) -> list[Change]:
    """For a lab that needs it: record what ksmd's settings were and set SETTINGS."""
    if not wanted(plan) or not (root / "run").exists():
        return []
    run_root = run_root or lab_state.RUN_ROOT
    with locked(run_root):
        others = records(run_root, exclude=lab, record=RECORD)
        original = others[0]["original"] if others else {k: read_value(root, k) for k in SETTINGS}
        path = run_root / lab / RECORD
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"original": original, "booting": True}))
        changes = [c for k, v in SETTINGS.items() if (c := write_value(root, k, v))]
    if changes:
        progress("kernel", "merging bgpd's zeroed receive rings (KSM, the machine's): "
                 + ", ".join(f"{c.key} {c.before} -> {c.after}" for c in changes) + " (put back when the last lab goes)")
    return changes


def release(lab: str, root: Path = KSM_ROOT, run_root: Path | None = None) -> list[Change]:
    """Forget this lab; with no lab left that holds KSM, put back what the first one found
    (its daemons are gone by then: nothing merged is left to unmerge)."""
    with released(lab, RECORD, run_root) as (mine, others):
        if others or mine is None:
            return []
        changes = [write_value(root, key, int(mine["original"][key])) for key in sorted(SETTINGS, key="run".__ne__)]
        return [c for c in changes if c]  # ksmd stopped first


def rest(lab: str, root: Path = KSM_ROOT, run_root: Path | None = None) -> None:
    """This lab's boot is over: ksmd at its resting rate, unless another lab is booting."""
    run_root = run_root or lab_state.RUN_ROOT
    path = run_root / lab / RECORD
    if not path.exists():
        return
    with locked(run_root):
        mine = json.loads(path.read_text())
        path.write_text(json.dumps({**mine, "booting": False}))
        booting = any(r.get("booting") for r in records(run_root, exclude=lab, record=RECORD))
        write_value(root, "pages_to_scan", SETTINGS["pages_to_scan"] if booting else RESTING)


@contextmanager
def mergeable(on: bool) -> Iterator[None]:
    """Processes started in the block are KSM-mergeable, and so is this one meanwhile (the
    setting is inherited at fork, kept across exec, and cleared here after)."""
    libc = ctypes.CDLL(None, use_errno=True) if on else None
    if libc is None or libc.prctl(PR_SET_MEMORY_MERGE, 1, 0, 0, 0) != 0:
        yield  # off, or a kernel before 6.4: the daemons run unmerged, as before
        return
    try:
        yield
    finally:
        libc.prctl(PR_SET_MEMORY_MERGE, 0, 0, 0, 0)
