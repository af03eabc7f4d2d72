"""The microVM's boot files: Debian's 6.1 kernel (it has rdma_rxe) and a small initramfs.

This host's kernel has no rdma_rxe and loads no modules, so rxe runs in a QEMU guest. The
guest boots Debian's `linux-image-6.1.*-amd64` straight from its uncompressed vmlinux (PVH
entry: 10 s to a shell under TCG against 17 s for the bzImage), loads the modules the
initramfs carries, mounts the host's root read-only over 9p and runs the host's own tools
(rdma-core, perftest, iproute2) in a chroot. The files are made once from the kernel
package and kept in CACHE; nothing of a lab is kept there.
"""
from __future__ import annotations

import gzip
import hashlib
import io
import lzma
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from harness.core.errors import PrerequisiteError, LabError

CACHE = Path(os.environ.get("FABLAB_RDMA_CACHE", "/var/cache/fablab/rdma"))
SWITCH = "FABLAB_RDMA"  # "off": the lane is switched off, and no microVM boots
BUSYBOX = Path("/bin/busybox")
QEMU = "qemu-system-x86_64"

# What the guest loads, dependencies first (resolved from the modules' own `depends=`).
# crc32_generic before rdma_rxe: rxe asks the crypto API for crc32 when a device is added
# and fails ("failed to init crc32 err -2") when no module provides it yet.
WANTED_MODULES = ("virtio_pci", "virtio_net", "9pnet_virtio", "9p", "crc32_generic", "rdma_rxe",
                  "ib_uverbs", "rdma_ucm")

# Debian packages for the RDMA lane, by the file that shows each is present.
PACKAGES = {QEMU: "qemu-system-x86", str(BUSYBOX): "busybox-static", "ib_write_bw": "perftest",
            "rping": "rdmacm-utils", "ibv_devices": "ibverbs-utils",
            "/usr/lib/x86_64-linux-gnu/libibverbs/librxe-rdmav34.so": "ibverbs-providers"}
INSTALL_HINT = "run `make rdma-deps` (scripts/install-rdma.sh) as root"


@dataclass(frozen=True)
class BootFiles:
    kernel: Path   # uncompressed vmlinux
    initrd: Path
    release: str   # e.g. 6.1.0-56-amd64


def missing_packages() -> list[str]:
    """The Debian packages of the RDMA lane not installed here, by name."""
    def present(what: str) -> bool:
        return Path(what).exists() if what.startswith("/") else shutil.which(what) is not None
    return sorted({pkg for what, pkg in PACKAGES.items() if not present(what)})


def kernel_package() -> Path:
    """The kernel .deb the set-up downloaded into CACHE (the newest if several)."""
    debs = sorted(CACHE.glob("linux-image-6.1.*-amd64_*.deb"))
    if not debs:
        raise PrerequisiteError(f"no Debian 6.1 kernel package in {CACHE} (linux-image-6.1.*-amd64_*.deb): "
                                f"{INSTALL_HINT}")
    return debs[-1]


def switched_off() -> str:
    """Why the lane is switched off (FABLAB_RDMA=off: each rdma case boots microVMs, minutes
    under TCG, which a run may not want), or "" when it is not."""
    if os.environ.get(SWITCH, "").strip().lower() == "off":
        return f"the RDMA lane is switched off ({SWITCH}=off): unset {SWITCH} to run the rdma cases"
    return ""


def boot_files() -> BootFiles:
    """The kernel and initramfs, made from the kernel package on first use."""
    missing = missing_packages()
    if missing:
        raise PrerequisiteError(f"the RDMA lane needs Debian packages not installed: {', '.join(missing)}; "
                                f"{INSTALL_HINT}")
    deb = kernel_package()
    release = re.match(r"linux-image-(6\.1\.[^_]+)_", deb.name).group(1)
    out = CACHE / release
    files = BootFiles(out / "vmlinux", out / "initrd.gz", release)
    stamp = out / "made-from"
    if stamp.exists() and stamp.read_text() == f"{deb.name} {_init_version()}\n":
        return files
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="fablab-kernel-", dir=CACHE) as tmp:
        subprocess.run(["dpkg-deb", "-x", str(deb), tmp], check=True, capture_output=True)
        root = Path(tmp)
        # Each file written beside and renamed into place: two first uses at once (two shells,
        # two test workers) each see a whole file or none, never one being written.
        _replace(files.kernel, vmlinux_of((root / "boot" / f"vmlinuz-{release}").read_bytes()), tmp)
        _replace(files.initrd, initramfs(ordered_modules(root / "lib" / "modules" / release, WANTED_MODULES)), tmp)
        _replace(stamp, f"{deb.name} {_init_version()}\n".encode(), tmp)
    return files


def _replace(path: Path, data: bytes, scratch: str) -> None:
    part = Path(scratch) / f"{path.name}.part"
    part.write_bytes(data)
    os.replace(part, path)


def vmlinux_of(bzimage: bytes) -> bytes:
    """The kernel inside a bzImage (Debian compresses it with xz), for QEMU's PVH entry."""
    at = bzimage.find(b"\xfd7zXZ\x00")
    if at < 0:
        raise LabError("the kernel image holds no xz stream: not a Debian 6.1 bzImage?")
    return lzma.LZMADecompressor(format=lzma.FORMAT_XZ).decompress(bzimage[at:])


def _modinfo(ko: Path) -> dict[str, str]:
    info = {}
    for m in re.finditer(rb"(?:^|\x00)(name|depends)=([^\x00]*)", ko.read_bytes()):
        info.setdefault(m.group(1).decode(), m.group(2).decode())
    return info


def ordered_modules(moddir: Path, wanted: tuple[str, ...]) -> list[Path]:
    """`wanted` and everything they depend on, each after its dependencies."""
    by_name = {ko.stem.replace("-", "_"): ko for ko in moddir.rglob("*.ko")}
    order: list[Path] = []
    seen: set[str] = set()

    def visit(name: str) -> None:
        name = name.replace("-", "_")
        if name in seen:
            return
        seen.add(name)
        if name not in by_name:
            raise LabError(f"kernel module {name} is not in {moddir}")
        for dep in filter(None, _modinfo(by_name[name]).get("depends", "").split(",")):
            visit(dep)
        order.append(by_name[name])

    for name in wanted:
        visit(name)
    return order


INIT = """#!/bin/busybox sh
# fablab microVM init: modules, the host's root over 9p (read-only), the run directory
# (read-write), then the guest script in a chroot; power off when it ends.
/bin/busybox mount -t proc proc /proc
/bin/busybox mount -t sysfs sys /sys
/bin/busybox mount -t devtmpfs dev /dev
for m in $(/bin/busybox cat /mods/order); do /bin/busybox insmod /mods/$m || echo "fablab-init: insmod $m failed"; done
/bin/busybox mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=512000,cache=loose hostroot /host \\
  || { echo "fablab-init: 9p root failed"; /bin/busybox poweroff -f; }
/bin/busybox mount -t proc proc /host/proc
/bin/busybox mount -t sysfs sys /host/sys
/bin/busybox mount -t devtmpfs dev /host/dev
/bin/busybox mount -t tmpfs tmp /host/run
/bin/busybox mount -t tmpfs tmp /host/tmp
/bin/busybox mkdir -p /host/tmp/fablab
/bin/busybox mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000 rundir /host/tmp/fablab \\
  || { echo "fablab-init: 9p run directory failed"; /bin/busybox poweroff -f; }
echo "fablab-init: ready $(/bin/busybox cut -d' ' -f1 /proc/uptime)"
/bin/busybox chroot /host /bin/bash /tmp/fablab/guest.sh
echo "fablab-init: guest script exited $?"
/bin/busybox sync
/bin/busybox poweroff -f
"""


def _init_version() -> str:
    return hashlib.sha256(INIT.encode()).hexdigest()[:12]


def initramfs(modules: list[Path]) -> bytes:
    """A gzipped newc cpio: /init, busybox and the modules in load order."""
    entries: list[tuple[str, int, bytes]] = [(d, 0o040755, b"") for d in
                                             ("bin", "dev", "proc", "sys", "host", "mods")]
    entries.append(("init", 0o100755, INIT.encode()))
    entries.append(("bin/busybox", 0o100755, BUSYBOX.read_bytes()))
    entries += [(f"mods/{ko.name}", 0o100644, ko.read_bytes()) for ko in modules]
    entries.append(("mods/order", 0o100644, "".join(f"{ko.name}\n" for ko in modules).encode()))
    return gzip.compress(cpio_newc(entries), compresslevel=1)


def cpio_newc(entries: list[tuple[str, int, bytes]]) -> bytes:
    """The kernel's initramfs format (SVR4 "newc" cpio, no checksums)."""
    out = io.BytesIO()

    def pad() -> None:
        out.write(b"\0" * (-out.tell() % 4))

    for ino, (name, mode, data) in enumerate(entries + [("TRAILER!!!", 0, b"")], start=1):
        raw = name.encode() + b"\0"
        fields = (ino, mode, 0, 0, 1, 0, len(data), 0, 0, 0, 0, len(raw), 0)
        out.write(b"070701" + b"".join(b"%08X" % f for f in fields))
        out.write(raw)
        pad()
        out.write(data)
        pad()
    return out.getvalue()
