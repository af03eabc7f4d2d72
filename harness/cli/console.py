"""The CLI's two consoles: results to stdout, progress and errors to stderr.

Plain text (no escape codes at all) when the stream is no terminal, when NO_COLOR is set
(https://no-color.org) or TERM is dumb. A closed stdout (`fablab ... | head`) raises
BrokenPipeError for the CLI to end quietly; a closed stderr only silences progress, so a lab
being booted or torn down is never interrupted by its reader going away.
"""
from __future__ import annotations

import os
import re
import sys
import time

from rich.console import Console
from rich.segment import Segment

# What no input may write to a terminal: C0 and C1 controls but newline and tab (an escape
# sequence in a hostname would recolour, move the cursor or retitle the window), and lone
# surrogates (a JSON "\udfff" escape), which no terminal encoding can carry.
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")


def visible(text: str) -> str:
    """`text` with every control character and lone surrogate written as its escape (\\x1b)."""
    return _UNSAFE.sub(lambda m: m.group().encode("unicode_escape", "backslashreplace").decode("ascii")
                       if not "\ud800" <= m.group() <= "\udfff" else f"\\u{ord(m.group()):04x}", text)


def _width(stream) -> int | None:
    # In a pipe or a CI log rich would assume 80 columns and fold every figure; give tables room.
    return None if stream.isatty() else 160


def plain() -> bool:
    """Styling is off by the user's wish (NO_COLOR, TERM=dumb); rich itself drops it off a TTY."""
    return bool(os.environ.get("NO_COLOR")) or os.environ.get("TERM") == "dumb"


class _Safe(Console):
    """A console that prints what fablab read from a file as it is, never as terminal control:
    every segment of text (not rich's own styling, which is added after) made visible."""

    def _render_buffer(self, buffer) -> str:
        return super()._render_buffer(Segment(visible(s.text), s.style, s.control) if not s.control else s
                                      for s in buffer)


class _Results(_Safe):
    def on_broken_pipe(self) -> None:
        self.quiet = True
        raise BrokenPipeError


class _Progress(_Safe):
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
