"""The DCQCN sender against real CNPs (needs root): a sender process in one namespace, and in
the other a stand-in for the receiving NIC that answers its data with CNPs built as the lab's
data plane builds them (harness/dataplane/lossless_dp.c, send_cnp), at most one per QP per
CNP interval.

The fixture makes fl_dq34_a and fl_dq34_b joined by the veth pair dq34a/dq34b (nothing in the
root namespace; 10.234.0.0/24), claimed as a traffic testbed so that `fablab clean` leaves them
alone while this runs, and deletes both whatever happens.
"""
from __future__ import annotations

import os
import select
import shutil
import socket
import struct
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import pytest

from harness.core.declarations import Dcqcn
from harness.plumbing.namespaces import entered
from harness.plumbing.priority import timed_turn
from harness.runtime.state import claim_testbed, run_dir
from harness.runtime.testbed import delete_netns
from harness.traffic.dcqcn import ECT_0, cnp_packet
from harness.traffic.flows import ROCE_PORT, DcqcnParams, RoceFlow, SendSpec
from harness.traffic.roce import FABLAB_MAGIC, RoceShape, frame, payload_offset
from harness.traffic.runner import netns_exists, run_sender

LAB = "dq34"
NS_A, NS_B = f"fl_{LAB}_a", f"fl_{LAB}_b"
DEV_A, DEV_B = "dq34a", "dq34b"
ADDR_A, ADDR_B = "10.234.0.1", "10.234.0.2"
QP = 0x111
TIME_SCALE = 2000
LINE = 20e6  # a 40G NIC at time scale 2000
PAYLOAD = 1024
# what the port counts of each packet: Ethernet 14 + IPv4 20 + UDP 8 + BTH 12 + RETH 16 + payload + ICRC 4
FRAME_BITS = (14 + 20 + 8 + 12 + 16 + PAYLOAD + 4) * 8
CNP_INTERVAL_S = Dcqcn().cnp_interval_us * 1e-6 * TIME_SCALE
_IP_RECVTOS = getattr(socket, "IP_RECVTOS", 13)

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root: creates network namespaces and raw sockets"),
    pytest.mark.skipif(shutil.which("ip") is None or shutil.which("nsenter") is None,
                       reason="needs iproute2 (ip) and util-linux (nsenter)"),
]


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, text=True)


@pytest.fixture(scope="module")
def pair():
    claim_testbed(LAB)
    try:
        for ns in (NS_A, NS_B):
            delete_netns(ns)  # a killed run's leftovers
            _ip("netns", "add", ns)
        # born in A with its peer moved to B in the same call: nothing in the root namespace
        _ip("-n", NS_A, "link", "add", DEV_A, "type", "veth", "peer", "name", DEV_B, "netns", NS_B)
        for ns, dev, addr in ((NS_A, DEV_A, ADDR_A), (NS_B, DEV_B, ADDR_B)):
            _ip("-n", ns, "addr", "add", f"{addr}/24", "dev", dev)
            _ip("-n", ns, "link", "set", "lo", "up")
            _ip("-n", ns, "link", "set", dev, "up")
        yield
    finally:
        for ns in (NS_A, NS_B):
            delete_netns(ns)
        shutil.rmtree(run_dir(LAB), ignore_errors=True)
        assert not netns_exists(NS_A) and not netns_exists(NS_B)


@dataclass
class Responder:
    """What the stand-in NIC in B saw and sent."""

    answer: bool
    data: int = 0
    ecn: set[int] = field(default_factory=set)
    cnps: int = 0  # CNPs for the flow's QP
    error: BaseException | None = None


def _noise(raw: socket.socket) -> None:
    """What the sender must not take for its flow's CNP: one CNP for another QP (counted as
    unmatched), and two packets its socket's filter drops (RoCE data, and a CNP to another port)."""
    raw.sendto(cnp_packet(ADDR_B, ADDR_A, QP + 1), (ADDR_A, 0))
    raw.sendto(frame(RoceShape(src=ADDR_B, dst=ADDR_A, dst_qp=QP), psn=0), (ADDR_A, 0))
    wrong_port = bytearray(cnp_packet(ADDR_B, ADDR_A, QP))
    wrong_port[22:24] = struct.pack("!H", ROCE_PORT + 1)
    raw.sendto(bytes(wrong_port), (ADDR_A, 0))


def _respond(r: Responder, ready: threading.Event, stop: threading.Event) -> None:
    try:
        with entered(NS_B), socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp, \
                socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW) as raw:
            udp.setsockopt(socket.IPPROTO_IP, _IP_RECVTOS, 1)
            udp.bind((ADDR_B, ROCE_PORT))
            ready.set()
            last = float("-inf")
            noisy = False
            while not stop.is_set():
                if not select.select([udp], [], [], 0.05)[0]:
                    continue
                data, ancillary, _, (src, _) = udp.recvmsg(65535, socket.CMSG_SPACE(1))
                offset = payload_offset(data[0])
                if data[offset:offset + 4] != FABLAB_MAGIC:
                    continue  # the sender's priming probes
                r.data += 1
                r.ecn.update(d[0] & 0x03 for level, kind, d in ancillary if kind == socket.IP_TOS)  # cmsg type IP_TOS
                if not r.answer:
                    continue
                if not noisy:
                    _noise(raw)
                    noisy = True
                qp = int.from_bytes(data[5:8], "big")
                now = time.monotonic()
                if qp == QP and now - last >= CNP_INTERVAL_S:  # at most one per QP per interval
                    raw.sendto(cnp_packet(ADDR_B, src, qp), (src, 0))
                    r.cnps += 1
                    last = now
    except BaseException as exc:  # handed to the test
        r.error = exc
        ready.set()


@contextmanager
def responder(answer: bool) -> Iterator[Responder]:
    r = Responder(answer)
    ready, stop = threading.Event(), threading.Event()
    thread = threading.Thread(target=_respond, args=(r, ready, stop), name="cnp-responder", daemon=True)
    thread.start()
    ready.wait(10)
    try:
        if r.error is not None:
            raise r.error
        yield r
    finally:
        stop.set()
        thread.join(5)
    if r.error is not None:
        raise r.error


def spec(duration_s: float) -> SendSpec:
    flow = RoceFlow(flow_id=1, dst=ADDR_B, dst_qp=QP, src_qp=QP, payload_len=PAYLOAD)
    return SendSpec(flows=(flow,), duration_s=duration_s, dcqcn=DcqcnParams.of(Dcqcn(), TIME_SCALE, LINE))


def test_cnps_cut_the_flows_rate(pair):
    with responder(answer=True) as r:
        with timed_turn(run_dir(LAB)):  # paced in time: alone among the labs' timed experiments
            result = run_sender(NS_A, spec(1.0), timeout_s=30)
    sent = result.flows[0]
    cc = sent.dcqcn
    assert cc is not None and cc.line_rate_bps == LINE and cc.time_scale == TIME_SCALE
    assert r.ecn == {ECT_0}, "data goes out ECT(0), for the switches to mark"
    # every CNP for its QP that came while it sent was counted; the one for another QP was not
    # its, and what the socket's filter keeps out never reached it
    assert 3 <= cc.cnps <= r.cnps, (cc.cnps, r.cnps)
    assert result.cnps_unmatched == 1
    assert cc.rate_min_bps <= LINE / 4 and cc.rate_end_bps < LINE / 2, cc
    assert cc.trace[0][1] == LINE and min(rate for _, rate in cc.trace) < LINE / 2
    # and it sent less: at line rate a second holds LINE / FRAME_BITS packets
    assert sent.packets < 0.5 * LINE / FRAME_BITS, sent.packets


def test_without_cnps_the_flow_keeps_line_rate(pair):
    """The positive control: the same sender, nobody answering."""
    with responder(answer=False) as r:
        with timed_turn(run_dir(LAB)):  # paced in time: alone among the labs' timed experiments
            result = run_sender(NS_A, spec(1.0), timeout_s=30)
    sent = result.flows[0]
    cc = sent.dcqcn
    assert cc is not None and cc.cnps == 0 and result.cnps_unmatched == 0
    assert cc.rate_end_bps == cc.rate_min_bps == LINE
    assert all(rate == LINE for _, rate in cc.trace) and len(cc.trace) <= 200
    assert r.data == sent.packets and r.ecn == {ECT_0}  # the listener saw every packet
    # paced at the line rate, never above it; how close it gets is the machine's (Python beside
    # four labs on 2 cores ran 14-26 % below in two clean-clone runs, 62 % below in a third), not
    # DCQCN's, whose rate is the line's above: the floor only says the flow ran
    assert 0.25 * LINE <= sent.rate_pps * FRAME_BITS <= 1.05 * LINE
