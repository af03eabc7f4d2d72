"""A QEMU microVM that carries GPU nodes' rail NICs while rdma_rxe runs on them.

Each chosen NIC keeps its place in the plan: the guest's NIC has the node NIC's MAC,
address, gateway and routes, and its frames enter and leave the fabric through the node's
own cable. In the node's namespace a tap (whose other end is the guest's virtio NIC) and
the node's NIC are spliced at tc ingress, each redirecting to the other, so the leaf sees
the same MAC on the same port and the node's kernel sees none of those frames while the
guest runs. Taps are opened without TUNSETPERSIST: they go with the QEMU process, however
it ends; the splice is undone on the way out and by the next run on that NIC.

One VM carries every endpoint of a test: Debian 6.1's rxe works only in the guest's initial
namespace, so the endpoints share one routing table space and are kept apart by policy
routing (each source address has its own table that ends in `unreachable`, so nothing
falls back to the guest's local delivery); the guest script does that.
"""
from __future__ import annotations

import fcntl
import json
import os
import signal
import struct
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from ipaddress import IPv4Address, IPv4Interface, IPv4Network
from pathlib import Path

from harness.plumbing import wait
from harness.core.errors import HarnessError, LabError
from harness.plumbing.labview import LabView
from harness.rdma.vmimage import QEMU, BootFiles
from harness.runtime.base import Progress, quiet
from harness.runtime.state import NS_PREFIX

MEMORY_MB = 512  # the guest needs ~150 MB; the budget is 1 GB a VM
VCPUS = 2
TAP_QUEUE = 10_000  # packets the tap holds for a guest that reads slowly (TCG) before it drops
RX_QUEUE = 1024  # the guest's virtio receive ring, QEMU's largest
_TUNSETIFF = 0x400454CA
_IFF_TAP, _IFF_NO_PI = 0x0002, 0x1000


@dataclass(frozen=True)
class Endpoint:
    """A node's RDMA NIC as the guest carries it."""

    node: str
    nic: str
    mac: str
    address: IPv4Interface
    gateway: IPv4Address
    routes: tuple[IPv4Network, ...]
    mtu: int
    index: int  # guest NIC e<index>, rxe device rxe<index>, routing table 100 + index

    @property
    def device(self) -> str:
        return f"rxe{self.index}"

    @property
    def ifname(self) -> str:
        return f"e{self.index}"

    @property
    def gid(self) -> str:
        """The IPv4-mapped GID rxe derives from the address, as sysfs prints it."""
        b = self.address.ip.packed
        return "0000:0000:0000:0000:0000:ffff:" + f"{b[0]:02x}{b[1]:02x}:{b[2]:02x}{b[3]:02x}"

    @property
    def tap(self) -> str:
        return f"vm-{self.nic}"[:15]


def open_tap(name: str) -> int:
    """A tap in the calling thread's namespace, gone when the last fd on it closes."""
    fd = os.open("/dev/net/tun", os.O_RDWR)
    try:
        fcntl.ioctl(fd, _TUNSETIFF, struct.pack("16sH22x", name.encode(), _IFF_TAP | _IFF_NO_PI))
    except OSError:
        os.close(fd)
        raise
    return fd


# The splice's filters sit behind the lossless data plane's own on the NIC (priority 1, which
# passes every frame on), in the clsact qdisc both share: the VM's RoCE then leaves through
# the NIC's queues and honours its pauses, as a NIC's own would.
SPLICE_PRIO = "49"


def splice(lab: LabView, ep: Endpoint) -> None:
    """Join the tap and the node's NIC: whatever arrives on one leaves by the other."""
    unsplice(lab, ep)
    run = [["ip", "link", "set", ep.tap, "mtu", str(ep.mtu), "txqueuelen", str(TAP_QUEUE), "up"]]
    for a, b in ((ep.nic, ep.tap), (ep.tap, ep.nic)):
        # u32 matching everything: this kernel has no matchall classifier
        run.append(["tc", "filter", "add", "dev", a, "ingress", "prio", SPLICE_PRIO, "protocol", "all", "u32",
                    "match", "u32", "0", "0", "action", "mirred", "egress", "redirect", "dev", b])
    for dev in (ep.nic, ep.tap):
        _clsact(lab, ep.node, dev)
    for argv in run:
        done = lab.ns_exec(ep.node, argv)
        if done.returncode != 0:
            raise LabError(f"{ep.node}: {' '.join(argv)}: {done.stderr.strip()}")


def _clsact(lab: LabView, node: str, dev: str) -> None:
    """The clsact qdisc on `dev`, made unless there (the lossless data plane's, on a BE NIC)."""
    shown = lab.ns_exec(node, ["tc", "qdisc", "show", "dev", dev])
    if "clsact" not in shown.stdout:
        done = lab.ns_exec(node, ["tc", "qdisc", "add", "dev", dev, "clsact"])
        if done.returncode != 0:
            raise LabError(f"{node}: tc qdisc add dev {dev} clsact: {done.stderr.strip()}")


def unsplice(lab: LabView, ep: Endpoint) -> None:
    """Give the node its NIC back (a splice left by a killed run too): the splice's filter only,
    never the clsact qdisc the NIC's lossless data plane hangs on."""
    lab.ns_exec(ep.node, ["tc", "filter", "del", "dev", ep.nic, "ingress", "prio", SPLICE_PRIO])


def vm_tag(lab_name: str, seq: int) -> str:
    """QEMU's -name: carries the lab's name the way its namespaces do, and is how teardown
    and `fablab clean` find the VM."""
    return f"{NS_PREFIX}{lab_name}_rdma{seq}"


def qemu_argv(boot: BootFiles, workdir: Path, tag: str, endpoints: list[Endpoint], fds: list[int]) -> list[str]:
    argv = [QEMU, "-name", tag, "-accel", "tcg", "-cpu", "max", "-m", str(MEMORY_MB), "-smp", str(VCPUS),
            "-nodefaults", "-no-user-config", "-display", "none", "-no-reboot",
            "-kernel", str(boot.kernel), "-initrd", str(boot.initrd),
            "-append", "console=ttyS0 panic=-1 quiet loglevel=3",
            "-serial", f"file:{workdir / 'console.log'}", "-pidfile", str(workdir / "qemu.pid"),
            "-virtfs", "local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap",
            "-virtfs", f"local,path={workdir},mount_tag=rundir,security_model=none,multidevs=remap"]
    for ep, fd in zip(endpoints, fds):
        argv += ["-netdev", f"tap,id=n{ep.index},fd={fd},vhost=off",
                 "-device", f"virtio-net-pci,netdev=n{ep.index},mac={ep.mac},rx_queue_size={RX_QUEUE}"]
    return argv


def _die_with_parent() -> None:
    # PR_SET_PDEATHSIG: a runner killed outright takes its VM along.
    import ctypes
    ctypes.CDLL(None).prctl(1, signal.SIGTERM)


class VmRun:
    """A booted microVM carrying `endpoints`, running workdir/guest.sh. Use as a context
    manager: leaving it (however) ends QEMU and gives the nodes their NICs back."""

    def __init__(self, lab: LabView, boot: BootFiles, endpoints: list[Endpoint], workdir: Path, tag: str,
                 progress: Progress = quiet) -> None:
        self.lab, self.endpoints, self.workdir = lab, endpoints, workdir
        self.proc: subprocess.Popen | None = None
        self._spliced: list[Endpoint] = []
        fds: list[int] = []
        try:
            for ep in endpoints:
                fds.append(lab.in_namespace(ep.node, lambda ep=ep: open_tap(ep.tap)))
                splice(lab, ep)
                self._spliced.append(ep)
            argv = qemu_argv(boot, workdir, tag, endpoints, fds)
            (workdir / "qemu.argv").write_text(" ".join(argv) + "\n")
            progress("rdma", f"booting the microVM for {', '.join(f'{e.node}:{e.nic}' for e in endpoints)}")
            with open(workdir / "qemu.out", "wb") as out:
                self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                             pass_fds=fds, preexec_fn=_die_with_parent)
        except BaseException:
            self.close()
            raise
        finally:
            for fd in fds:  # QEMU holds them now (or never will); the taps go with it
                os.close(fd)

    def __enter__(self) -> VmRun:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def wait(self, timeout: float, busy: Callable[[], None] = lambda: None) -> int:
        """Until the guest powers off; its exit code. `busy` runs meanwhile and may raise (a
        guest that stopped making progress)."""
        released = False

        def powered_off() -> bool:
            nonlocal released
            if self.proc.poll() is not None:
                return True
            busy()
            if not released and (self.workdir / "done").exists():
                self._read_taps()
                (self.workdir / "release").write_text("")
                released = True
            return False

        wait.until(powered_off, timeout, "the microVM to power off", interval=0.1,
                   error=lambda: LabError(f"the microVM did not finish within {timeout:.0f} s; its console: "
                                          f"{_tail(self.workdir / 'console.log')}"))
        return self.proc.returncode

    def _read_taps(self) -> None:
        """Each tap's counters (taps.json): what the emulator's queues dropped, not the fabric."""
        taps = {}
        for ep in self.endpoints:
            run = self.lab.ns_exec(ep.node, ["ip", "-j", "-s", "link", "show", "dev", ep.tap])
            if run.returncode == 0:
                stats = json.loads(run.stdout)[0].get("stats64", {})
                taps[f"{ep.node}:{ep.nic}"] = {"to_guest": stats.get("tx", {}), "from_guest": stats.get("rx", {})}
        (self.workdir / "taps.json").write_text(json.dumps(taps, indent=1))

    def close(self) -> None:
        proc, self.proc = self.proc, None
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        spliced, self._spliced = self._spliced, []
        for ep in spliced:
            try:
                unsplice(self.lab, ep)
                stats = self.lab.ns_exec(ep.node, ["ip", "-s", "-s", "link", "show", "dev", ep.nic]).stdout
                with open(self.workdir / "links.txt", "a") as f:
                    f.write(f"# {ep.node}\n{stats}")
            except (HarnessError, OSError):
                pass  # the lab was torn down meanwhile: nothing of the node is left to give back


def _tail(path: Path, size: int = 600) -> str:
    try:
        return path.read_text(errors="replace")[-size:].strip() or "(empty)"
    except OSError:
        return "(none)"
