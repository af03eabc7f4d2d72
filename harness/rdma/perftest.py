"""The tests the RDMA lane runs (perftest's ib_write_bw and ib_send_lat, rdmacm's rping):
their command lines in the guest, and what their output says, as typed figures."""
from __future__ import annotations

import re
from dataclasses import dataclass

from harness.traffic.roce import roce_sport

TESTS = ("write_bw", "send_lat", "rping")
PERFTEST_PORT = 18515
RXE_MAX_CQE = 32767  # rdma_rxe's largest completion queue
MAX_QPS = 4096
IN_FLIGHT_PACKETS = 4096  # see send_depth
# RC's ACK timeout, 4.096 us x 2^n: perftest's 14 (67 ms) is shorter than a TCG guest takes to
# acknowledge a window of 64 KiB writes, and every QP then retransmitted what had arrived
# (61 timeouts and 7,482 duplicates in 5 s at 4 QPs, no packet lost anywhere). 18: 1.07 s;
# rdma_cm (rping) uses 17 on RoCE.
ACK_TIMEOUT = 18


@dataclass(frozen=True)
class QueuePair:
    """One of the requester's QPs, its peer, and the UDP source port its packets carry by
    rxe's rule (`roce_sport`, which the scapy generator follows too)."""

    qpn: int
    remote_qpn: int
    sport: int


@dataclass(frozen=True)
class Bandwidth:
    size: int
    iterations: int
    peak_gbps: float
    average_gbps: float
    msg_rate_mpps: float


@dataclass(frozen=True)
class Latency:
    size: int
    iterations: int
    min_us: float
    max_us: float
    typical_us: float
    average_us: float
    stdev_us: float
    p99_us: float
    p999_us: float


@dataclass(frozen=True)
class Rping:
    completed: int  # ping-pongs the client finished
    verified: bool  # every one checked by rping -V, none mismatched


def commands(test: str, client_dev: str, server_dev: str, server_ip: str, client_ip: str, qps: int, size: int,
             duration: float, iterations: int) -> tuple[str, str]:
    """(server, client) shell commands; $GIDn is the guest's GID index of device rxen."""
    # stdbuf: perftest's lines are lost when it is stopped while its stdout is a full buffer
    if test == "write_bw":
        depth = send_depth(qps, size)
        # -D: for a time; -n: a number of messages on every QP (each QP surely sends)
        length = f"-D {duration:g}" if duration > 0 else f"-n {iterations}"
        common = f"-F --report_gbits -q {qps} -t {min(depth, iterations) if duration <= 0 else depth} -s {size} " \
                 f"{length} -u {ACK_TIMEOUT} -p {PERFTEST_PORT}"
        return (f"stdbuf -oL ib_write_bw -d {server_dev} -x $GID{server_dev[3:]} {common}",
                f"stdbuf -oL ib_write_bw -d {client_dev} -x $GID{client_dev[3:]} {common} {server_ip}")
    if test == "send_lat":
        common = f"-F -s {size} -n {iterations} -u {ACK_TIMEOUT} -p {PERFTEST_PORT}"
        return (f"stdbuf -oL ib_send_lat -d {server_dev} -x $GID{server_dev[3:]} {common}",
                f"stdbuf -oL ib_send_lat -d {client_dev} -x $GID{client_dev[3:]} {common} {server_ip}")
    if test == "rping":
        size = max(size, 16)  # rping's own minimum
        return (f"stdbuf -oL rping -s -a {server_ip} -C {iterations} -S {size} -V",
                f"stdbuf -oL rping -c -a {server_ip} -I {client_ip} -C {iterations} -S {size} -V -v")
    raise ValueError(test)


def send_depth(qps: int, size: int, path_mtu: int = 4096) -> int:
    """Messages each QP keeps in flight (perftest -t, 128 by default). RoCE relies on PFC to
    never drop; this fabric has none, and a guest under TCG drains its NIC slowly, so what is
    in flight at once must fit the queues in front of it (the tap's TAP_QUEUE packets):
    at 380 QPs x 128 messages, 40 % of the packets were dropped there and every QP timed out.
    Also, perftest makes one CQ for all send queues, and rxe's holds at most 32,767."""
    packets = -(-size // path_mtu)
    return max(1, min(128, RXE_MAX_CQE // qps, IN_FLIGHT_PACKETS // (qps * packets)))


_QPN = re.compile(r"(local|remote) address:.*?QPN (0x[0-9a-fA-F]+)")
_NUMBERS = re.compile(r"^\s*(\d+)\s+(\d+)\s+([\d.]+(?:\s+[\d.]+)*)\s*$", re.M)


def local_qps(text: str) -> tuple[QueuePair, ...]:
    """perftest prints every local QP, then every remote one, in the same order."""
    found = {"local": [], "remote": []}
    for side, qpn in _QPN.findall(text):
        found[side].append(int(qpn, 16))
    return tuple(QueuePair(q, r, roce_sport(q, r)) for q, r in zip(found["local"], found["remote"]))


def bandwidth(text: str, duration: float) -> Bandwidth | None:
    """perftest's line, or, when perftest could not calibrate the CPU clock it times with
    (under TCG it often cannot: "Correlation coefficient r^2 < 0.9", every rate 0), the
    average from the messages completed within `duration` (the -D time, or the client's
    run time measured in the guest)."""
    for m in _NUMBERS.finditer(text):
        rest = [float(x) for x in m.group(3).split()]
        if len(rest) == 3:
            size, iterations = int(m.group(1)), int(m.group(2))
            peak, average, rate = rest
            if average == 0 and iterations:
                average = size * iterations * 8 / duration / 1e9
                rate = iterations / duration / 1e6
                peak = 0.0  # unknown
            return Bandwidth(size, iterations, peak, average, rate)
    return None


def latency(text: str) -> Latency | None:
    for m in _NUMBERS.finditer(text):
        rest = [float(x) for x in m.group(3).split()]
        if len(rest) == 7:
            return Latency(int(m.group(1)), int(m.group(2)), *rest)
    return None


def rping(text: str, iterations: int, rc: int) -> Rping:
    # With -v the client prints one "ping data:" line per completed ping-pong; with -V a
    # mismatch prints "data mismatch" and rping fails.
    completed = len(re.findall(r"^ping data: ", text, re.M))
    return Rping(completed, rc == 0 and "mismatch" not in text and completed == iterations)
