"""Runtimes, by name. The registry is explicit; an unknown name lists the valid ones."""
from __future__ import annotations

from collections.abc import Callable

from harness.core.errors import InputError
from harness.core.kinds import RuntimeName
from harness.runtime.base import Runtime


def _netns() -> Runtime:
    from harness.runtime.netns import NetnsRuntime

    return NetnsRuntime()


def _clab() -> Runtime:
    from harness.runtime.clab import ClabRuntime

    return ClabRuntime()


RUNTIMES: dict[RuntimeName, Callable[[], Runtime]] = {RuntimeName.NETNS: _netns, RuntimeName.CLAB: _clab}


def get_runtime(name: str | RuntimeName) -> Runtime:
    try:
        return RUNTIMES[RuntimeName(name)]()
    except ValueError:
        raise InputError(f"unknown runtime {name!r}; valid runtimes: {', '.join(RUNTIMES)}") from None
