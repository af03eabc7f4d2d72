"""A traffic module run as its own process: the child's side of `runner.TrafficProcess`.

    python -m harness.traffic.X [--group] [--spec FILE|-]

reads its spec as JSON (stdin by default), runs it, prints the result as JSON on stdout and
exits 0; on a fablab, OS or value error it prints `X: why` on stderr and exits 1. Markers
(`READY`, `SENDING`) go to stderr, one line each, flushed (`say`). A stop signal asks it to
end early: it still prints its result.
"""
from __future__ import annotations

import argparse
import signal
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from harness.core.errors import HarnessError
from harness.traffic.flows import to_json


def say(marker: str) -> None:
    """One line on stderr, where the parent's `wait_ready` looks for it."""
    print(marker, file=sys.stderr, flush=True)


def serve(module: str, doc: str, read: Callable[[str, bool], Any], run: Callable[[Any, threading.Event], Any],
          argv: Sequence[str] | None = None, group: bool = False,
          stop_signals: Sequence[signal.Signals] = (signal.SIGTERM,)) -> int:
    """The `main()` of traffic module `module` (documented by `doc`); returns the exit status.

    `read(text, group)` makes the spec from its JSON text (`group`: --group was given, an
    option only where `group` offers it); `run(spec, stop)` returns the result, ending early
    once `stop` is set, which any of `stop_signals` does.
    """
    parser = argparse.ArgumentParser(prog=f"python -m {module}", description=doc.splitlines()[0])
    parser.add_argument("--spec", default="-", help="the spec: a JSON file, or - for stdin (default)")
    if group:
        parser.add_argument("--group", action="store_true", help="the spec is a group spec (many namespaces)")
    args = parser.parse_args(argv)
    stop = threading.Event()
    for signum in stop_signals:
        signal.signal(signum, lambda *_: stop.set())
    try:
        text = sys.stdin.read() if args.spec == "-" else Path(args.spec).read_text(encoding="utf-8")
        result = run(read(text, group and args.group), stop)
        # A stop request racing with our own end must not kill us once the interpreter,
        # shutting down, has put the default handlers back.
        for signum in stop_signals:
            signal.signal(signum, signal.SIG_IGN)
    except (HarnessError, OSError, ValueError) as exc:
        print(f"{module.rsplit('.', 1)[-1]}: {exc}", file=sys.stderr)
        return 1
    print(to_json(result), flush=True)
    return 0
