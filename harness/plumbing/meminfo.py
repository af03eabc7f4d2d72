"""The machine's memory as the kernel accounts it."""
from __future__ import annotations

from pathlib import Path


def available_mb() -> float:
    """MemAvailable: what can be used without swapping (page cache that can be dropped counts)."""
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) / 1024
    return 0.0
