"""harness/dataplane/frr_trim.c, preloaded: a program named in FABLAB_TRIM gives the heap it
freed below a chunk still in use back to the kernel; one not named (the `nice` and `nsenter`
that exec a daemon) starts nothing. Run on a real process: a Python child that allocates with
libc's malloc as zebra does."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from harness.runtime import heap_trim, zebra_ribq
from harness.runtime.frr import preloads

pytestmark = pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler")

# 40 MB in 1 KiB chunks, each written; one small chunk above them keeps the heap's top in use,
# so glibc's own trimming (from the top only) cannot give the rest back.
CHILD = r"""
import ctypes, sys, time
from pathlib import Path
libc = ctypes.CDLL(None)
libc.malloc.restype = ctypes.c_void_p
libc.free.argtypes = [ctypes.c_void_p]
def anon_kb():
    line = next(l for l in Path("/proc/self/status").read_text().splitlines() if l.startswith("RssAnon"))
    return int(line.split()[1])
chunks = [libc.malloc(1024) for _ in range(40 * 1024)]
for c in chunks:
    ctypes.memset(c, 0xab, 1024)
pin = libc.malloc(64)
held = anon_kb()
for c in chunks:
    libc.free(c)
deadline = time.monotonic() + float(sys.argv[1])
while anon_kb() > held - 20 * 1024 and time.monotonic() < deadline:
    time.sleep(0.05)
threads = [(p / "comm").read_text().strip() for p in Path("/proc/self/task").iterdir()]
blocked = [(p / "status").read_text().split("SigBlk:")[1].split()[0] for p in Path("/proc/self/task").iterdir()
           if (p / "comm").read_text().strip() == "fablab-trim"]
print(held, anon_kb(), ",".join(sorted(threads)), ",".join(blocked))
"""


FRR_SIGNALS = (signal.SIGHUP, signal.SIGINT, signal.SIGTERM, signal.SIGUSR1, signal.SIGUSR2, signal.SIGCHLD)


def run_child(trim_names: str | None, wait_s: float) -> tuple[int, int, list[str], list[str]]:
    env = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "FABLAB_TRIM")}
    env["LD_PRELOAD"] = str(heap_trim.build())
    env["GLIBC_TUNABLES"] = "glibc.malloc.mmap_threshold=131072"  # as FRR's daemons run (frr.py)
    if trim_names is not None:
        env["FABLAB_TRIM"] = trim_names
    out = subprocess.run([sys.executable, "-c", CHILD, str(wait_s)], env=env, capture_output=True, text=True,
                         timeout=60, check=True).stdout.split()
    held, after, threads = int(out[0]), int(out[1]), out[2].split(",")
    return held, after, threads, out[3].split(",") if len(out) > 3 else []


def test_a_named_program_gives_its_freed_heap_back_and_an_unnamed_one_keeps_it():
    me = Path(sys.executable).name  # program_invocation_short_name: argv[0]'s last part
    held, after, threads, blocked = run_child(f"zebra,{me}", wait_s=10)
    assert heap_trim.THREAD in threads
    assert after < held - 20 * 1024, (held, after)  # at least half of the 40 MB freed is given back
    # the signals FRR handles reach its own threads, never this one
    assert blocked and all(int(mask, 16) >> (sig - 1) & 1 for mask in blocked for sig in FRR_SIGNALS)
    # the control: the same library, this program not named: no thread, and the freed heap stays
    held, after, threads, _ = run_child("zebra,bgpd", wait_s=2.5)
    assert heap_trim.THREAD not in threads
    assert after > held - 8 * 1024, (held, after)


def test_zebra_and_bgpd_get_the_library_bfdd_does_not_and_each_keeps_its_own_preload():
    zebra = preloads("zebra")
    assert zebra["FABLAB_TRIM"] == "zebra"
    assert zebra["LD_PRELOAD"].split() == ([str(zebra_ribq.LIBRARY)] if zebra_ribq.applies() else []) + [
        str(heap_trim.LIBRARY)]
    assert preloads("bfdd") == {}
    bgpd = preloads("bgpd")
    assert bgpd["FABLAB_TRIM"] == "bgpd"
    assert bgpd["LD_PRELOAD"].split()[-1] == str(heap_trim.LIBRARY)
