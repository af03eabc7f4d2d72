"""The heap zebra and bgpd have freed given back to the kernel while they run.

glibc returns freed memory to the kernel only from the top of a heap. zebra allocates per route
and per dataplane update while a burst of routes comes in and frees most of it once they are in
the kernel, below chunks still in use: on xlarge a converged leaf's zebra held 24 MB resident,
18 MB of it free heap, and one malloc_trim(0) (called with gdb) gave 14 MB back. Each of these
daemons is started with harness/dataplane/frr_trim.c preloaded: a thread of its own that, each
second, calls malloc_trim(0) if the heap holds 2 MB free and its free heap or the process's
resident memory grew by 2 MB since the last call. FRR itself is unchanged; the thread blocks
every signal and touches nothing of FRR's."""
from __future__ import annotations

from pathlib import Path

from harness.runtime.dataplane_process import built_with_cc

SOURCE = Path(__file__).resolve().parents[1] / "dataplane" / "frr_trim.c"
LIBRARY = SOURCE.parent / "build" / "libfablab-frr-trim.so"
TRIMMED = ("zebra", "bgpd")  # bfdd's heap stays small (2.5 MB a switch on xlarge)
THREAD = "fablab-trim"  # the thread's name, as /proc shows it


def build() -> Path:
    """The preload library, compiled from the project's source when missing or older."""
    return built_with_cc(LIBRARY, SOURCE, ["-shared", "-fPIC", "-pthread"],
                         "FRR's heap trimming needs a C compiler to build libfablab-frr-trim.so: "
                         "apt-get install gcc (or `make deps`)")


def environment(program: str) -> dict[str, str]:
    """What a daemon's environment gains: the library preloaded, and the program it acts in
    (the `nice` and `nsenter` that exec the daemon see the same environment and start nothing)."""
    if program not in TRIMMED:
        return {}
    return {"LD_PRELOAD": str(build()), "FABLAB_TRIM": program}
