"""bgpd's receive rings kept off resident memory on FRR 8.4 (Debian 12's FRR).

FRR 8.4 gives every BGP peer a 640 KiB receive ring (`peer->ibuf_work`) and wipes it with
memset each time the peer stops (every failed connection attempt to a neighbour whose bgpd is
not up yet) and when an accepted connection takes the peer over: every page of every ring
becomes resident, all zeros. On xlarge that was 1,317 MB of bgpd's 2,245 MB once converged;
gpu4096's 16,384 peers would hold 10 GB of them. FRR fixed the ring in 9.0 and again in 10.6.

bgpd is started with harness/dataplane/bgpd_ringbuf.c preloaded: a `ringbuf_wipe` with the
same result (the ring reads all zeros and is reset) that hands the ring's whole pages back to
the kernel instead of writing them. bgpd calls libfrr's `ringbuf_wipe` through its dynamic
symbol table, so the preloaded definition is the one it runs; FRR itself is unchanged."""
from __future__ import annotations

from pathlib import Path

from harness.runtime.dataplane_process import built_with_cc, takes_from_shared_library

SOURCE = Path(__file__).resolve().parents[1] / "dataplane" / "bgpd_ringbuf.c"
LIBRARY = SOURCE.parent / "build" / "libfablab-bgpd-ringbuf.so"
BGPD = Path("/usr/lib/frr/bgpd")


def build() -> Path:
    """The preload library, compiled from the project's source when missing or older."""
    return built_with_cc(LIBRARY, SOURCE, ["-shared", "-fPIC"], "bgpd's receive rings need a C compiler to build "
                         "libfablab-bgpd-ringbuf.so: apt-get install gcc (or `make deps`)")


def applies(bgpd: Path = BGPD) -> bool:
    """bgpd here would run the preloaded ringbuf_wipe, taking it from a shared libfrr (if not, a
    bgpd built otherwise keeps its own, nothing is preloaded, and harness/runtime/ksm.py merges
    the zeroed rings instead)."""
    return takes_from_shared_library(bgpd, "ringbuf_wipe")


def environment() -> dict[str, str]:
    """What bgpd's environment gains: LD_PRELOAD of the library, where bgpd would use it."""
    if not applies():
        return {}
    return {"LD_PRELOAD": str(build())}
