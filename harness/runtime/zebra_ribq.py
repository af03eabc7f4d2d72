"""zebra's route processing, when its queue to the kernel is full, retried every 10 ms instead of
FRR 8.4's 1 ms (harness/dataplane/zebra_ribq.c, preloaded into zebra).

With a full queue zebra's route work queue is rescheduled after 1 ms; on a busy machine that
timer has always expired, so zebra never sleeps: while xlarge converged about 60 leaves' zebras
spun so at once (1.4 cores for 15 s) and starved the kernel route inserts they waited for. With
10 ms xlarge converged in 15.6-16 s instead of 20-26 s, its boot's CPU 58-60 s instead of 73-77 s,
and its peak memory 2.5-2.7 GB (bench_boot.py xlarge; docs/performance.md). FRR is otherwise
unchanged: zebra's own work_queue_new runs, and the retry is set only where the queue's spec is
FRR 8.4's as expected; the library says on zebra's stderr (daemons.out) what it did."""
from __future__ import annotations

from pathlib import Path

from harness.runtime.dataplane_process import built_with_cc, takes_from_shared_library

SOURCE = Path(__file__).resolve().parents[1] / "dataplane" / "zebra_ribq.c"
LIBRARY = SOURCE.parent / "build" / "libfablab-zebra-ribq.so"
ZEBRA = Path("/usr/lib/frr/zebra")
SAID = "fablab: zebra's route queue, when blocked, retried every"  # its line in daemons.out


def build() -> Path:
    """The preload library, compiled from the project's source when missing or older."""
    return built_with_cc(LIBRARY, SOURCE, ["-shared", "-fPIC", "-pthread"],
                         "zebra's route queue needs a C compiler to build libfablab-zebra-ribq.so: "
                         "apt-get install gcc (or `make deps`)")


def applies(zebra: Path = ZEBRA) -> bool:
    """zebra takes work_queue_new from a shared libfrr (so a preloaded one sees its queues):
    true of Debian's FRR 8.4."""
    return takes_from_shared_library(zebra, "work_queue_new")


def environment() -> dict[str, str]:
    """What zebra's environment gains: LD_PRELOAD of the library, where zebra would use it."""
    return {"LD_PRELOAD": str(build())} if applies() else {}
