"""Real-time scheduling for the parts of fablab that time an experiment.

On a machine the lab keeps busy (xlarge: 86 bfdd and zebra on 2 cores) an ordinary process
waits its turn behind every daemon: a failover's 20 ms route poll took seconds. SCHED_FIFO
puts it first; the processes it is used for sleep or block between short steps, and the
kernel keeps 5 % of each second for everything else (sched_rt_runtime_us).
"""
from __future__ import annotations

import fcntl
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from harness.core.errors import LabError
from harness.plumbing import wait

OBSERVER = 5  # the check's own polls: below the traffic it watches
TRAFFIC = 10  # receivers and TCP (`chrt --fifo 10`)
# A paced sender's timestamps are every loss window's clock, and a sender behind its schedule
# leaves a window not measurable; a receiver behind by 100 ms loses nothing (32 MB socket
# buffer). At one priority, SCHED_FIFO never preempts: a receiver's interpreter starting or a
# burst of receipts held the sender, with the other core busy, up to 117 ms (a 1 ms sleeper at
# FIFO 10 beside a failover check; at FIFO 15, 17 ms at most).
SENDER = TRAFFIC + 1
BFD_DATAPLANE = 20  # the lab's BFD data plane ("the ASIC"): never waits for traffic or daemons; a few % of a core
# A switch's control plane has a CPU of its own; here its FRR daemons share two cores with
# fablab, pytest and other labs' microVMs. At nice -5 (3x an ordinary process's share) bfdd,
# bgpd and zebra still withdraw a BFD-failed path on time with other labs busy beside them
# (a gray failure took 1171 ms against 1000 with two other labs' tests running, at nice 0).
CONTROL_PLANE_NICE = -5


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


# --------------------------------------------------------------------------- one timed experiment at a time

_turn = threading.RLock()  # this process's hold on the machine's turn, and how deep
_held: list[int] = []  # the locked directory's fd while held (nested turns share it)
_holding: list[tuple[Path, bool]] = []  # (the locked directory, exclusive) of this process's outermost turn


def holds_turn(labs_root: Path, exclusive: bool = False) -> bool:
    """Whether this process holds the machine's turn on `labs_root` (exclusively, if asked):
    another flock of that directory from this process would wait on itself."""
    return any(root == labs_root and (held_ex or not exclusive) for root, held_ex in _holding)


@contextmanager
def timed_turn(run_dir: Path, shared: bool = False, wait_s: float = 600.0) -> Iterator[float]:
    """The machine's timed experiment while the body runs (run_dir: the lab's run directory);
    yields the seconds it waited for its turn.

    Labs side by side on one machine measure each other: a failover's sender fell 160 ms
    behind other labs' realtime senders at the same priority (SCHED_FIFO does not preempt an
    equal). So the parts whose verdict rests on time take turns across labs, on a flock of the
    directory every lab's run directory sits in (run_dir's parent), which no lab owns and which
    a dead holder releases by exiting. `shared`: light realtime traffic (a RoCE failover's
    paced QPs, a fifth of a core) may overlap others of its kind, never a heavy one (an
    incast's fan-in, a TCP failover's streams), which has the machine to itself. Nested turns
    in one process share the first. LabError naming the wait after `wait_s` (a holder that hangs)."""
    with _turn:
        if _held:
            _held.append(_held[-1])
            try:
                yield 0.0
            finally:
                _held.pop()
            return
        labs_root = run_dir.parent
        fd = os.open(labs_root, os.O_RDONLY | os.O_DIRECTORY)

        def take() -> bool:
            try:
                fcntl.flock(fd, (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | fcntl.LOCK_NB)
            except BlockingIOError:
                return False
            return True

        def stuck() -> LabError:
            return LabError(f"another lab's timed experiment held the machine for {wait_s:g} s (a flock on "
                            f"{labs_root}): `fablab status` lists the labs; end the stuck check and run this "
                            "one again")

        try:
            t0 = time.monotonic()
            wait.until(take, wait_s, "the machine's timed turn", interval=0.05, error=stuck)
            _held.append(fd)
            _holding.append((labs_root, not shared))
            try:
                yield round(time.monotonic() - t0, 3)
            finally:
                _holding.pop()
                _held.pop()
                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)
