"""The CLI's two consoles: results to stdout, progress and errors to stderr."""
from __future__ import annotations

import sys

from rich.console import Console


def _width(stream) -> int | None:
    # In a pipe or a CI log rich would assume 80 columns and fold every figure; give tables room.
    return None if stream.isatty() else 160


# No file= here: rich then writes to whatever sys.stdout/sys.stderr is at print time.
out = Console(highlight=False, width=_width(sys.stdout))
err = Console(stderr=True, highlight=False, width=_width(sys.stderr))
