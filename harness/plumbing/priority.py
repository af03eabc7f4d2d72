"""Real-time scheduling for the parts of fablab that time an experiment.

On a machine the lab keeps busy (xlarge: 86 bfdd and zebra on 2 cores) an ordinary process
waits its turn behind every daemon: a failover's 20 ms route poll took seconds. SCHED_FIFO
puts it first; the processes it is used for sleep or block between short steps, and the
kernel keeps 5 % of each second for everything else (sched_rt_runtime_us).
"""
from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

OBSERVER = 5  # the check's own polls: below the traffic it watches
TRAFFIC = 10  # senders and receivers (`chrt --fifo 10`)
BFD_DATAPLANE = 20  # the lab's BFD data plane ("the ASIC"): never waits for traffic or daemons; a few % of a core


@contextmanager
def realtime(priority: int = OBSERVER) -> Iterator[bool]:
    """SCHED_FIFO for the calling thread (and the processes it starts) while the body runs;
    yields False, and changes nothing, where that is not permitted."""
    try:
        policy, param = os.sched_getscheduler(0), os.sched_getparam(0)
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(priority))
    except (OSError, AttributeError):
        yield False
        return
    try:
        yield True
    finally:
        os.sched_setscheduler(0, policy, param)
