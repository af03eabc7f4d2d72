"""A few reads at once, that an interrupt stops at once.

`with ThreadPoolExecutor() as pool: pool.map(...)` waits on the way out for every call already
queued, even when the way out is Ctrl-C: at gpu4096 under a load of 1,000 a SIGINT during the
boot's convergence poll took effect 30 s later, behind 366 queued vtysh reads."""
from __future__ import annotations

from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")


def map_all(fn: Callable[[T], R], items: Iterable[T], workers: int = 8) -> list[R]:
    """[fn(x) for x in items], `workers` at a time. On any exception (Ctrl-C included) the calls
    not yet started are dropped and those running are not waited for: use it for calls that
    only read, or whose writes the caller's failure makes moot (a boot's configuration of its
    daemons, which its teardown ends)."""
    pool = ThreadPoolExecutor(max_workers=workers)
    try:
        results = list(pool.map(fn, items))
    except BaseException:
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown(wait=True)
    return results
