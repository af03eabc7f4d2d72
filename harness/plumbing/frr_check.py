"""An engineer's frr.conf files checked by FRR itself before anything boots (`fablab up --configs`).

`vtysh --dryrun -f FILE` reads a file with the grammar of every FRR daemon, as `vtysh -b` does
at boot, and names each line it refuses (exit 2 for an unknown command, 4 for an incomplete
one), e.g. `line 93: % Unknown command[79]:  bogus command here`. fablab does not judge the
wording itself: what FRR 8.4 accepts boots; what it refuses is the engineer's input to fix,
every refused file at once, each line as `DIR/configs/<switch>/frr.conf:LINE: FRR's message`.
The number in brackets is vtysh's internal node number, left out.
"""
from __future__ import annotations

import re
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from harness.core.errors import InputError, PrerequisiteError
from harness.core.switchconfigs import SwitchConfigs

_LINE = re.compile(r"^line (\d+): (.*)$")
_NODE = re.compile(r"^(%?\s*[^\[\]:]+?)\[\d+\](\.\.\.)?:")  # "% Unknown command[79]:" -> "% Unknown command:"
WORKERS = 4
TIMEOUT_S = 60.0


def refusals(where: str, returncode: int, output: str) -> list[str]:
    """What FRR refused of one file, from `vtysh --dryrun`'s exit code and output: one entry a
    refused line (`where:LINE: message`), or the whole output when it names no line; nothing
    when FRR took the file (exit 0)."""
    if returncode == 0:
        return []
    found = []
    for raw in output.splitlines():
        m = _LINE.match(raw.strip())
        if not m:
            continue
        message = _NODE.sub(lambda n: n.group(1).rstrip() + ":", m.group(2), count=1)
        message = message.lstrip("% ").strip()
        found.append(f"{where}:{m.group(1)}: {' '.join(message.split())}")
    if not found:
        text = " ".join(output.split()) or "no output"
        found.append(f"{where}: vtysh --dryrun exited {returncode}: {text[:400]}")
    return found


def dryrun(text: str, timeout: float = TIMEOUT_S) -> tuple[int, str]:
    """vtysh --dryrun on a config's text: (exit code, what it printed)."""
    try:
        run = subprocess.run(["vtysh", "--dryrun", "-f", "/dev/stdin"], input=text, capture_output=True,
                             text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return -1, f"vtysh --dryrun took over {timeout:g} s"
    return run.returncode, run.stdout + run.stderr


def check_configs(configs: SwitchConfigs, directory: str | Path | None = None) -> None:
    """Every frr.conf of `configs` through FRR's parser; an InputError naming every line FRR
    refused, in every file, when it refused any. PrerequisiteError when vtysh is missing."""
    if shutil.which("vtysh") is None:
        raise PrerequisiteError("vtysh is missing, and FRR itself checks --configs' frr.conf files before "
                                "anything boots (vtysh --dryrun): apt-get install frr   (Debian package 'frr')")
    root = Path(directory if directory is not None else configs.source)
    names = sorted(configs.frr)
    with ThreadPoolExecutor(max(1, min(WORKERS, len(names))), thread_name_prefix="frr-dryrun") as pool:
        runs = list(pool.map(lambda name: dryrun(configs.frr[name]), names))
    problems = [p for name, (code, output) in zip(names, runs)
                for p in refusals(str(root / "configs" / name / "frr.conf"), code, output)]
    if problems:
        files = len({p.split(":", 1)[0] for p in problems})
        raise InputError(f"FRR refuses {len(problems)} line{'s' if len(problems) != 1 else ''} in {files} "
                         f"frr.conf file{'s' if files != 1 else ''} (vtysh --dryrun); nothing was booted:\n"
                         + "\n".join(f"  {p}" for p in problems))
