"""The CLI's two consoles: results to stdout, progress and errors to stderr.

Plain text (no escape codes at all) when the stream is no terminal, when NO_COLOR is set
(https://no-color.org) or TERM is dumb. A closed stdout (`fablab ... | head`) raises
BrokenPipeError for the CLI to end quietly; a closed stderr only silences progress, so a lab
being booted or torn down is never interrupted by its reader going away.
"""
from __future__ import annotations

import os
import sys
import time

from rich.console import Console


def _width(stream) -> int | None:
    # In a pipe or a CI log rich would assume 80 columns and fold every figure; give tables room.
    return None if stream.isatty() else 160


def plain() -> bool:
    """Styling is off by the user's wish (NO_COLOR, TERM=dumb); rich itself drops it off a TTY."""
    return bool(os.environ.get("NO_COLOR")) or os.environ.get("TERM") == "dumb"


class _Results(Console):
    def on_broken_pipe(self) -> None:
        self.quiet = True
        raise BrokenPipeError


class _Progress(Console):
    def on_broken_pipe(self) -> None:
        self.quiet = True  # nobody reads it any more: carry on without it


def _console(cls: type[Console], stream) -> Console:
    # No file= here: rich then writes to whatever sys.stdout/sys.stderr is at print time.
    extra = {"color_system": None} if plain() else {}
    # emoji off: rich would print `links.csv:100:` as `links.csv💯`, eating the line number the
    # engineer needs; nothing fablab says is an emoji code
    return cls(stderr=stream is sys.stderr, highlight=False, emoji=False, width=_width(stream), **extra)


out = _console(_Results, sys.stdout)
err = _console(_Progress, sys.stderr)


def progress_printer(enabled: bool = True):
    """A Progress that prints each phase with the seconds since it was made (on stderr)."""
    from rich.markup import escape

    start = time.monotonic()

    def progress(phase: str, detail: str) -> None:
        if enabled:
            err.print(f"[{time.monotonic() - start:6.2f}s] {phase}: {escape(detail)}", highlight=False, soft_wrap=True)

    return progress
