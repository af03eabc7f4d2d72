"""The RDMA lane's parts that need no VM: boot files, guest script, perftest's output, arguments."""
from __future__ import annotations

import gzip
import lzma
import os
import subprocess
import sys
from ipaddress import IPv4Address, IPv4Interface, IPv4Network
from pathlib import Path

import pytest

from harness.core.errors import LabError
from harness.rdma import perftest, vmimage
from harness.rdma.microvm import MEMORY_MB, Endpoint, qemu_argv, vm_tag
from harness.rdma.session import DEFAULT_SIZE, RdmaSpec, _result, guest_script
from harness.runtime.processes import is_ours, terminate, vm_pids_by_tag
from harness.runtime.state import lab_of_namespace

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "rdma"

SRC = Endpoint("gpu01", "rail0", "62:16:b6:21:14:fd", IPv4Interface("10.0.1.1/31"), IPv4Address("10.0.1.0"),
               (IPv4Network("10.0.1.0/24"),), 9100, 0)
DST = Endpoint("gpu05", "rail0", "e6:65:17:16:14:73", IPv4Interface("10.0.1.9/31"), IPv4Address("10.0.1.8"),
               (IPv4Network("10.0.1.0/24"),), 9100, 1)

# Captured from the guest (perftest 4.5+0.17 on Debian 6.1's rxe), trimmed.
WRITE_BW = """\
 local address: LID 0000 QPN 0x0011 PSN 0xcec214 RKey 0x000253 VAddr 0x0055c48c2dc000
 GID: 00:00:00:00:00:00:00:00:00:00:255:255:10:00:01:01
 local address: LID 0000 QPN 0x0012 PSN 0x1ec214 RKey 0x000254 VAddr 0x0055c48c2ec000
 GID: 00:00:00:00:00:00:00:00:00:00:255:255:10:00:01:01
 remote address: LID 0000 QPN 0x0011 PSN 0x4938f RKey 0x000227 VAddr 0x0055eb70067000
 GID: 00:00:00:00:00:00:00:00:00:00:255:255:10:00:01:09
 remote address: LID 0000 QPN 0x0013 PSN 0x5938f RKey 0x000228 VAddr 0x0055eb70077000
 GID: 00:00:00:00:00:00:00:00:00:00:255:255:10:00:01:09
---------------------------------------------------------------------------------------
 #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]
Correlation coefficient r^2: 0.734439 < 0.9
 65536      752           0.000000            0.000000            0.000000
---------------------------------------------------------------------------------------
"""
SEND_LAT = """\
 #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   \
99% percentile[usec]   99.9% percentile[usec] 
 65536   1000          3740.12        14132.24      6704.79  	       6951.68     	1624.10		12247.70 		14132.24
"""


# ---------------------------------------------------------------------------- boot files


def _read_newc(data: bytes) -> dict[str, tuple[int, bytes]]:
    """An independent reader of the newc format: name -> (mode, data)."""
    out, at = {}, 0
    while True:
        assert data[at:at + 6] == b"070701"
        fields = [int(data[at + 6 + 8 * i: at + 14 + 8 * i], 16) for i in range(13)]
        mode, size, namesize = fields[1], fields[6], fields[11]
        name = data[at + 110: at + 110 + namesize - 1].decode()
        at += 110 + namesize
        at += -at % 4
        body = data[at:at + size]
        at += size
        at += -at % 4
        if name == "TRAILER!!!":
            return out
        out[name] = (mode, body)


def test_cpio_newc_reads_back():
    archive = vmimage.cpio_newc([("bin", 0o040755, b""), ("init", 0o100755, b"#!/bin/sh\n"),
                                 ("mods/a.ko", 0o100644, b"x" * 5)])
    files = _read_newc(archive)
    assert files == {"bin": (0o040755, b""), "init": (0o100755, b"#!/bin/sh\n"), "mods/a.ko": (0o100644, b"xxxxx")}


def test_initramfs_has_init_busybox_and_modules_in_order(tmp_path, monkeypatch):
    busybox = tmp_path / "busybox"
    busybox.write_bytes(b"\x7fELF busybox")
    monkeypatch.setattr(vmimage, "BUSYBOX", busybox)
    mods = [tmp_path / "b.ko", tmp_path / "a.ko"]
    for m in mods:
        m.write_bytes(b"module")
    files = _read_newc(gzip.decompress(vmimage.initramfs(mods)))
    assert files["init"][1] == vmimage.INIT.encode() and files["init"][0] == 0o100755
    assert files["bin/busybox"][1] == b"\x7fELF busybox"
    assert files["mods/order"][1] == b"b.ko\na.ko\n"


def _fake_ko(path: Path, name: str, depends: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"\x7fELF...." + f"license=GPL\x00depends={depends}\x00name={name}\x00".encode())


def test_modules_come_after_what_they_depend_on(tmp_path):
    _fake_ko(tmp_path / "kernel/rxe/rdma_rxe.ko", "rdma_rxe", "ib_core,ip6_udp_tunnel,udp_tunnel,ib_uverbs")
    _fake_ko(tmp_path / "kernel/core/ib_core.ko", "ib_core", "")
    _fake_ko(tmp_path / "kernel/core/ib_uverbs.ko", "ib_uverbs", "ib_core")
    _fake_ko(tmp_path / "kernel/net/udp_tunnel.ko", "udp_tunnel", "")
    _fake_ko(tmp_path / "kernel/net/ip6_udp_tunnel.ko", "ip6_udp_tunnel", "")
    order = [p.stem for p in vmimage.ordered_modules(tmp_path, ("rdma_rxe",))]
    assert order[-1] == "rdma_rxe" and len(order) == 5
    assert order.index("ib_core") < order.index("ib_uverbs")


def test_a_missing_module_is_named(tmp_path):
    _fake_ko(tmp_path / "rdma_rxe.ko", "rdma_rxe", "ib_core")
    with pytest.raises(LabError, match="ib_core"):
        vmimage.ordered_modules(tmp_path, ("rdma_rxe",))


def test_vmlinux_is_the_xz_stream_of_the_bzimage():
    kernel = os.urandom(3000)
    bzimage = b"MZ setup code" * 50 + lzma.compress(kernel, format=lzma.FORMAT_XZ) + b"\0" * 64
    assert vmimage.vmlinux_of(bzimage) == kernel


def test_a_bzimage_without_xz_is_refused():
    with pytest.raises(LabError, match="xz"):
        vmimage.vmlinux_of(b"MZ" + b"\0" * 100)


# ---------------------------------------------------------------------------- the VM and its guest


def test_the_vm_carries_the_lab_name_and_each_nic_its_mac(tmp_path):
    boot = vmimage.BootFiles(tmp_path / "vmlinux", tmp_path / "initrd.gz", "6.1.0-56-amd64")
    argv = qemu_argv(boot, tmp_path, vm_tag("lab7", 3), [SRC, DST], [11, 12])
    assert argv[argv.index("-name") + 1] == "fl_lab7_rdma3" and lab_of_namespace("fl_lab7_rdma3") == "lab7"
    assert int(argv[argv.index("-m") + 1]) == MEMORY_MB <= 1024
    assert "tap,id=n0,fd=11,vhost=off" in argv and "tap,id=n1,fd=12,vhost=off" in argv
    assert any(a.startswith(f"virtio-net-pci,netdev=n1,mac={DST.mac}") for a in argv)


def test_teardown_finds_and_ends_the_labs_vm_only(tmp_path):
    # A stand-in for QEMU: a process named like it, with its -name.
    fake = tmp_path / "qemu-system-x86_64"
    fake.symlink_to(sys.executable)
    argv = [str(fake), "-c", "import time; time.sleep(60)", "-name"]
    mine = subprocess.Popen(argv + ["fl_lab7_rdma3"])
    other = subprocess.Popen(argv + ["fl_lab8_rdma1"])  # another lab's: the control
    try:
        found = vm_pids_by_tag("fl_lab7_")
        assert found.get(mine.pid) == "fl_lab7_rdma3" and other.pid not in found
        assert is_ours(mine.pid, "fl_lab7_rdma3") and not is_ours(other.pid, "fl_lab7_rdma3")
        assert terminate(found) == [mine.pid]
        assert mine.wait(5) is not None and other.poll() is None
    finally:
        for p in (mine, other):
            p.kill()
            p.wait()


def test_the_guest_gid_is_the_ipv4_mapped_address():
    assert SRC.gid == "0000:0000:0000:0000:0000:ffff:0a00:0101"
    assert DST.gid == "0000:0000:0000:0000:0000:ffff:0a00:0109"


@pytest.mark.parametrize("test", perftest.TESTS)
def test_guest_script_matches_golden(test):
    spec = RdmaSpec("gpu01", "rail0", "gpu05", "rail0", test=test, qps=2 if test == "write_bw" else 1)
    text = guest_script(spec, SRC, DST)
    path = GOLDEN / f"guest-{test}.sh"
    if os.environ.get("FABLAB_UPDATE_GOLDEN"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    assert text == path.read_text(), f"guest script for {test} differs from {path}"


def test_each_source_address_has_its_own_table_ending_unreachable():
    text = guest_script(RdmaSpec("gpu01", "rail0", "gpu05", "rail0"), SRC, DST)
    assert "ip rule add pref 100 from 10.0.1.1 iif lo lookup 100" in text
    assert "ip route add 10.0.1.0/24 via 10.0.1.0 dev e0 src 10.0.1.1 table 100" in text
    assert "ip route add unreachable default table 101" in text
    assert "ip rule add pref 1000 lookup local && ip rule del pref 0" in text


# ---------------------------------------------------------------------------- perftest


def test_qps_pair_local_and_remote_in_order():
    qps = perftest.local_qps(WRITE_BW)
    assert [(q.qpn, q.remote_qpn) for q in qps] == [(0x11, 0x11), (0x12, 0x13)]
    assert qps[0].sport == 49441  # seen on the wire for this pair


def test_bandwidth_from_iterations_when_perftest_has_no_clock():
    bw = perftest.bandwidth(WRITE_BW, duration=3.0)
    assert (bw.size, bw.iterations, bw.peak_gbps) == (65536, 752, 0.0)
    assert bw.average_gbps == pytest.approx(65536 * 752 * 8 / 3.0 / 1e9)


def test_latency_columns():
    lat = perftest.latency(SEND_LAT)
    assert (lat.iterations, lat.typical_us, lat.p99_us, lat.p999_us) == (1000, 6704.79, 12247.70, 14132.24)


def test_rping_counts_verified_ping_pongs():
    text = "".join(f"ping data: rdma-ping-{i}: ABCDEF\n" for i in range(5))
    assert perftest.rping(text, 5, 0) == perftest.Rping(5, True)
    assert not perftest.rping(text, 6, 0).verified  # one short
    assert not perftest.rping(text + "data mismatch\n", 5, 0).verified


@pytest.mark.parametrize("qps,size,depth", [(1, 65536, 128), (64, 4096, 64), (380, 4096, 10), (4096, 4096, 1),
                                            (4, 65536, 64)])
def test_send_depth_keeps_in_flight_packets_bounded(qps, size, depth):
    assert perftest.send_depth(qps, size) == depth
    assert qps * depth <= perftest.RXE_MAX_CQE


def test_write_bw_runs_for_a_time_or_a_count():
    _, timed = perftest.commands("write_bw", "rxe0", "rxe1", "10.0.1.9", "10.0.1.1", 4, 65536, 5, 100)
    _, counted = perftest.commands("write_bw", "rxe0", "rxe1", "10.0.1.9", "10.0.1.1", 4, 4096, 0, 20)
    assert "-D 5" in timed and "-n" not in timed
    assert "-n 20" in counted and "-D" not in counted


def test_a_run_that_completed_nothing_is_not_ok(tmp_path):
    (tmp_path / "client.txt").write_text(WRITE_BW.replace(" 65536      752 ", " 65536      0 "))
    (tmp_path / "client.rc").write_text("0\n")
    result = _result(RdmaSpec("gpu01", "rail0", "gpu05", "rail0"), SRC, DST, tmp_path, 1.0)
    assert not result.ok and "no message" in result.error


def test_a_guest_that_hangs_says_where(tmp_path):
    """A VM that runs out of time says how far its guest got and what its client printed: the
    workdir goes with the lab, so the error is the evidence."""
    from harness.rdma.session import RdmaRun

    run = object.__new__(RdmaRun)
    run.spec, run.workdir, run.started = RdmaSpec("gpu01", "rail0", "gpu05", "rail0", test="rping"), tmp_path, 0.0
    assert "steps (its uptime): none" in run.where() and "printed: (nothing)" in run.where()
    (tmp_path / "guest.log").write_text("step boot 12.86\nstep ready 34.63\nstep client 38.9\n")
    (tmp_path / "client.txt").write_text("rping: connected\n")
    where = run.where()
    assert where.startswith("rping gpu01:rail0 -> gpu05:rail0")
    assert "boot 12.9 s, ready 34.6 s, client 38.9 s;" in where and "printed: rping: connected" in where



def test_a_slow_guest_goes_on_and_one_without_progress_is_named(tmp_path):
    """A guest is held to its progress, not to a time: one whose steps, client output or console
    still grow goes on however slowly; one with none for STALL_S is a hang, said with where it got."""
    from harness.rdma import session
    from harness.rdma.session import RdmaRun, _Pace

    run = object.__new__(RdmaRun)
    run.spec, run.workdir, run.started = RdmaSpec("gpu01", "rail0", "gpu05", "rail0", test="rping"), tmp_path, 0.0
    run.budget, run.pace = None, _Pace(tmp_path)
    (tmp_path / "guest.log").write_text("step boot 21.3\n")
    run._still_going("before its client started")  # the control: it has just shown progress
    run.pace.at -= session.STALL_S - 5  # 55 s later, a step more: still going
    (tmp_path / "guest.log").write_text("step boot 21.3\nstep nics 44.4\n")
    run._still_going("before its client started")
    run.pace.at -= session.STALL_S  # then nothing for a minute
    with pytest.raises(LabError, match=r"no progress for 6\d s before its client started; rping .* nics 44.4 s"):
        run._still_going("before its client started")
    assert run._limit() == session.CAP_S + 3 * 5.0 + 1000 * 0.02  # past the test's own length
    run.budget = 30.0  # a budget given by the caller is a time, not a pace
    run._still_going("before it powered off")
    assert run._limit() == 30.0


# ---------------------------------------------------------------------------- arguments

@pytest.fixture(scope="module")
def plan(ai_plan):
    return ai_plan


BAD = [
    (dict(src_node="gpu99"), "src_node 'gpu99'"),
    (dict(dst_nic="fe0"), "dst_nic 'fe0'"),
    (dict(dst_node="gpu01"), "same NIC"),
    (dict(test="read_bw"), "test 'read_bw'"),
    (dict(qps=0), "qps=0"),
    (dict(test="rping", qps=2), "only write_bw"),
    (dict(size=-1), "size=-1"),
    (dict(duration=-1), "duration=-1"),
    (dict(iterations=0), "iterations=0"),
]


@pytest.mark.parametrize("change,named", BAD, ids=[b[1] for b in BAD])
def test_bad_arguments_are_named(plan, change, named):
    spec = RdmaSpec(**{**dict(src_node="gpu01", src_nic="rail0", dst_node="gpu05", dst_nic="rail0"), **change})
    problems = spec.problems(plan)
    assert len(problems) == 1 and named in problems[0], problems


def test_good_arguments_have_no_problem(plan):
    assert RdmaSpec("gpu01", "rail0", "gpu05", "rail0").problems(plan) == []
    assert RdmaSpec("gpu01", "rail0", "gpu05", "rail0").message_size == DEFAULT_SIZE["write_bw"]


def test_retransmissions_count_both_ends():
    # rping's server is a requester too (it reads from and writes to the client)
    result = _result(RdmaSpec("gpu01", "rail0", "gpu05", "rail0", test="rping"), SRC, DST, Path("/nonexistent"), 0.0)
    both = type(result)(**{**result.__dict__, "counters": {"src": {"completer_retry_err": 1},
                                                          "dst": {"completer_retry_err": 2}}})
    assert both.retransmissions == 3
