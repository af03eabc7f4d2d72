"""The CLI's two consoles: results to stdout, progress and errors to stderr."""
from __future__ import annotations

from rich.console import Console

out = Console(highlight=False)
err = Console(stderr=True, highlight=False)
