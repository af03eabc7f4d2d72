"""bgpd's preloaded ringbuf_wipe: the same result as FRR 8.4's (a ring of zeros, reset), with
the ring's whole pages handed back instead of written; preloaded only into a bgpd that takes
ringbuf_wipe from a shared libfrr."""
from __future__ import annotations

import ctypes
import mmap
import shutil
import subprocess
from pathlib import Path

import pytest

from harness.runtime import bgpd_rings, zebra_ribq

pytestmark = pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler")
PAGE = mmap.PAGESIZE
RING = 65535 * 10  # FRR 8.4: BGP_MAX_PACKET_SIZE * BGP_READ_PACKET_MAX


class Ringbuf(ctypes.Structure):  # FRR's lib/ringbuf.h
    _fields_ = [("size", ctypes.c_size_t), ("start", ctypes.c_ssize_t), ("end", ctypes.c_ssize_t),
                ("empty", ctypes.c_bool), ("data", ctypes.c_void_p)]


@pytest.fixture(scope="module")
def wipe():
    lib = ctypes.CDLL(str(bgpd_rings.build()))
    lib.ringbuf_wipe.argtypes = [ctypes.POINTER(Ringbuf)]
    return lib.ringbuf_wipe


def resident_pages(area: mmap.mmap, offset: int, length: int) -> int:
    libc = ctypes.CDLL(None, use_errno=True)
    base = ctypes.addressof(ctypes.c_char.from_buffer(area))
    first = (base + offset) // PAGE * PAGE
    pages = (base + offset + length - first + PAGE - 1) // PAGE
    vec = (ctypes.c_ubyte * pages)()
    assert libc.mincore(ctypes.c_void_p(first), ctypes.c_size_t(pages * PAGE), vec) == 0, ctypes.get_errno()
    return sum(v & 1 for v in vec)


@pytest.mark.parametrize("offset,size", [
    (16, RING),          # glibc's mmapped chunk: the data 16 bytes into its first page
    (0, RING),           # page-aligned
    (100, 3000),         # within one page: no whole page, cleared by memset alone
    (PAGE - 8, PAGE + 16),  # crosses two page boundaries, no whole page inside
])
@pytest.mark.parametrize("flags", [mmap.MAP_PRIVATE, mmap.MAP_SHARED])  # malloc's; shared: memset's fallback
def test_the_ring_reads_zeros_and_is_reset_and_its_neighbours_are_untouched(wipe, offset, size, flags):
    area = mmap.mmap(-1, offset + size + 2 * PAGE, flags=flags)
    area[:] = b"\xab" * len(area)
    base = ctypes.addressof(ctypes.c_char.from_buffer(area))
    ring = Ringbuf(size=size, start=17, end=4242, empty=False, data=base + offset)
    wipe(ctypes.byref(ring))
    assert area[offset:offset + size] == bytes(size)
    assert (ring.start, ring.end, ring.empty, ring.size) == (0, 0, True, size)
    assert area[:offset] == b"\xab" * offset  # the allocator's header before the ring
    assert area[offset + size:] == b"\xab" * (len(area) - offset - size)  # and what follows it


def test_the_rings_whole_pages_are_no_longer_resident(wipe):
    area = mmap.mmap(-1, RING + 2 * PAGE, flags=mmap.MAP_PRIVATE)
    area[:] = b"\x01" * len(area)
    before = resident_pages(area, 16, RING)
    assert before >= RING // PAGE  # the positive control: a written ring is resident
    base = ctypes.addressof(ctypes.c_char.from_buffer(area))
    wipe(ctypes.byref(Ringbuf(size=RING, start=0, end=0, empty=True, data=base + 16)))
    # the two partial pages at its ends, and the kernel's zero page that the check byte's read maps
    assert resident_pages(area, 16, RING) <= 3


def _elf(tmp_path: Path, name: str, body: str) -> Path:
    src = tmp_path / f"{name}.c"
    src.write_text(body)
    out = tmp_path / name
    subprocess.run(["cc", "-o", str(out), str(src), f"-L{tmp_path}", f"-Wl,-rpath,{tmp_path}", "-lfakefrr"],
                   check=True, capture_output=True)
    return out


def test_preloaded_only_into_a_bgpd_that_takes_ringbuf_wipe_from_a_shared_library(tmp_path):
    lib = tmp_path / "fakefrr.c"
    lib.write_text("void ringbuf_wipe(void *b) {}\nvoid ringbuf_reset(void *b) {}\nvoid work_queue_new(void) {}\n")
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(tmp_path / "libfakefrr.so"), str(lib)], check=True)
    uses = _elf(tmp_path, "uses", "void ringbuf_wipe(void *);\nint main(void) { ringbuf_wipe(0); return 0; }\n")
    other = _elf(tmp_path, "other", "void ringbuf_reset(void *);\nint main(void) { ringbuf_reset(0); return 0; }\n")
    assert bgpd_rings.applies(uses) is True
    assert bgpd_rings.applies(other) is False
    assert bgpd_rings.applies(tmp_path / "missing") is False
    # zebra's preload asks the same of its own symbol
    assert zebra_ribq.applies(other) is False
    assert zebra_ribq.applies(_elf(tmp_path, "queues", "void work_queue_new(void);\n"
                                                        "int main(void) { work_queue_new(); return 0; }\n")) is True
