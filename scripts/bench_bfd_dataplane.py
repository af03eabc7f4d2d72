#!/usr/bin/env python3
"""CPU of a BFD data plane at a given number of sessions: fablab-bfd-dp (C) against the same
work done in Python, on the same emulated links. Why the lab's data plane is C.

    sudo .venv/bin/python scripts/bench_bfd_dataplane.py [--pairs 4] [--links 64] [--seconds 30]

Makes `pairs` pairs of namespaces (fl_bfdbench_aN / fl_bfdbench_bN), each pair joined by `links`
veth pairs, and one BFD session per veth (IPv6 link-local, 300 ms x 3): 2 x pairs x links
session ends (4 x 64 -> 512). At 16 x 64 (2,048, xlarge's 2,064) the stand-ins did not get
every session up within 60 s on this machine: not understood yet. Then, in turn:
- c: fablab-bfd-dp, handed the sessions by a stand-in for bfdd per namespace that speaks FRR's
  data plane protocol (DP_ADD_SESSION, echo) over the unix socket bfdd would listen on;
- python: one Python process doing the per-packet work of a data plane: a connected socket per
  session sending 24-byte control packets with jitter, one receiving socket per namespace
  (recvmsg with hop limit and interface), a lookup by discriminator, detection bookkeeping.
Each runs until every session is up (C) or receiving (Python), then its CPU is measured over
`seconds`, as a share of all cores. Everything is removed at the end, whatever happens.
"""
from __future__ import annotations

import argparse
import heapq
import os
import random
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness.plumbing import namespaces, wait  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]

LAB = "bfdbench"
PORT = 3784
INTERVAL_US = 300_000


def ns_name(side: str, i: int) -> str:
    return f"fl_{LAB}_{side}{i}"


def build(pairs: int, links: int) -> None:
    for i in range(pairs):
        for side in "ab":
            subprocess.run(["ip", "netns", "add", ns_name(side, i)], check=True)
        batch = []
        for k in range(links):
            batch.append(f"link add e{k} netns {ns_name('a', i)} type veth peer name e{k} netns {ns_name('b', i)}")
        subprocess.run(["ip", "-batch", "-"], input="\n".join(batch), text=True, check=True)
        for side in "ab":
            ns = ns_name(side, i)
            subprocess.run(["ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf.all.accept_dad=0",
                            "net.ipv6.conf.default.accept_dad=0"], check=True)
            up = "\n".join([f"link set e{k} up" for k in range(links)] + ["link set lo up"])
            subprocess.run(["ip", "-n", ns, "-batch", "-"], input=up, text=True, check=True)


def link_locals(ns: str) -> dict[str, tuple[str, int]]:
    """ifname -> (its fe80:: address, ifindex)."""
    out = subprocess.run(["ip", "-n", ns, "-o", "-6", "addr", "show", "scope", "link"], capture_output=True,
                         text=True, check=True).stdout
    found = {}
    for line in out.splitlines():
        if "tentative" in line:  # DAD still running: not usable as a source yet
            continue
        f = line.split()
        found[f[1]] = (f[3].split("/")[0], int(f[0].rstrip(":")))
    return found


def sessions(pairs: int, links: int) -> list[tuple[str, str, str, int, int]]:
    """(namespace, ifname, peer address, ifindex, discriminator) of every session end."""
    wait.until(lambda: all(len(link_locals(ns_name(s, i))) == links for i in range(pairs) for s in "ab"), 30,
               "link-local addresses")
    out, disc = [], 1
    for i in range(pairs):
        a, b = link_locals(ns_name("a", i)), link_locals(ns_name("b", i))
        for ifname in a:
            out.append((ns_name("a", i), ifname, b[ifname][0], a[ifname][1], disc))
            out.append((ns_name("b", i), ifname, a[ifname][0], b[ifname][1], disc + 1))
            disc += 2
    return out


# ---------------------------------------------------------------- the C data plane


def add_message(peer: str, ifindex: int, ifname: str, lid: int) -> bytes:
    payload = struct.pack("!I16s16sIIIIII BBH I64s", 0x10, bytes(16), socket.inet_pton(socket.AF_INET6, peer),
                          lid, INTERVAL_US, INTERVAL_US, 0, 50_000, 0, 255, 3, 0, ifindex, ifname.encode())
    return struct.pack("!BBHHH", 1, 0, 2, 0, 8 + len(payload)) + payload


def stand_in_bfdd(path: str, adds: list[bytes], stop: threading.Event) -> None:
    """bfdd's side: hand every session over on the first connection, answer echoes."""
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen(4)
    server.settimeout(0.2)
    handed = False
    conns = []
    pending: dict[socket.socket, bytes] = {}  # what arrived of a message not yet whole
    while not stop.is_set():
        try:
            conn, _ = server.accept()
            conns.append(conn)
            if not handed:
                conn.sendall(b"".join(adds))
                handed = True
            conn.setblocking(False)
        except socket.timeout:
            pass
        for conn in conns:
            try:
                data = pending.get(conn, b"") + conn.recv(4096)
            except OSError:  # nothing yet, or the data plane has gone (the end of a run)
                continue
            while len(data) >= 8 and len(data) >= struct.unpack("!H", data[6:8])[0]:
                length = struct.unpack("!H", data[6:8])[0]
                if struct.unpack("!H", data[2:4])[0] == 0:  # ECHO_REQUEST -> ECHO_REPLY
                    try:
                        conn.sendall(data[:2] + struct.pack("!H", 1) + data[4:length])
                    except OSError:
                        pass
                data = data[length:]
            pending[conn] = data
    for conn in conns + [server]:
        conn.close()


def run_c(ends, seconds: float, tmp: Path) -> float:
    subprocess.run(["make", "-s", "-C", str(ROOT), "dataplane"], check=True)
    exe = ROOT / "harness" / "dataplane" / "build" / "fablab-bfd-dp"
    by_ns: dict[str, list[bytes]] = {}
    for ns, ifname, peer, ifindex, lid in ends:
        by_ns.setdefault(ns, []).append(add_message(peer, ifindex, ifname, lid))
    stop = threading.Event()
    conf = tmp / "dp.conf"
    conf.write_text("".join(f"{ns} /run/netns/{ns} {tmp / ns}.sock\n" for ns in by_ns))
    threads = [threading.Thread(target=stand_in_bfdd, args=(str(tmp / f"{ns}.sock"), adds, stop), daemon=True)
               for ns, adds in by_ns.items()]
    for t in threads:
        t.start()
    status = tmp / "status"
    proc = subprocess.Popen([str(exe), "-N", f"fl_{LAB}_bfd-dp", "-c", str(conf), "-s", str(status), "-p", "20"],
                            stderr=open(tmp / "dp.log", "wb"))
    try:
        def all_up() -> bool:
            if not status.exists():
                return False
            with socket.socket(socket.AF_UNIX) as s:
                s.connect(str(status))
                doc = b""
                while chunk := s.recv(1 << 16):
                    doc += chunk
            return doc.count(b'"state": "up", "diag"') == len(ends)
        wait.until(all_up, 60, "every session up in fablab-bfd-dp", interval=0.5)
        return _cpu_share(proc.pid, seconds)
    finally:
        proc.terminate()
        proc.wait()
        stop.set()
        for t in threads:
            t.join()


# ---------------------------------------------------------------- the same in Python


def python_data_plane(ends, seconds: float, ready: threading.Event, result: list[float]) -> None:
    rx: dict[str, socket.socket] = {}
    for ns in sorted({e[0] for e in ends}):
        rx[ns] = namespaces.run_in(ns, lambda: _rx_socket())
    txs, by_disc, by_if = [], {}, {}
    for ns, _, peer, ifindex, lid in ends:
        s = namespaces.run_in(ns, lambda: _tx_socket(peer, ifindex))
        state = {"lid": lid, "rid": 0, "last_rx": 0.0, "sock": s, "up": False}
        txs.append(state)
        by_disc[(ns, lid)] = by_if[(ns, ifindex)] = state
    heap = [(time.monotonic() + random.random() * 0.3, i) for i in range(len(txs))]
    heapq.heapify(heap)
    import selectors
    sel = selectors.EpollSelector()
    for ns, s in rx.items():
        sel.register(s, selectors.EVENT_READ, ns)
    pack = struct.Struct("!BBBBIIIII").pack
    unpack = struct.Struct("!BBBBIIIII").unpack
    cpu0, t0, measuring = None, None, False
    while True:
        now = time.monotonic()
        while heap and heap[0][0] <= now + 0.001:
            _, i = heapq.heappop(heap)
            st = txs[i]
            st["sock"].send(pack(0x20, 0xC0 if st["up"] else 0x40, 3, 24, st["lid"], st["rid"], INTERVAL_US,
                                 INTERVAL_US, 0))
            heapq.heappush(heap, (now + 0.3 * (0.75 + random.random() * 0.25), i))
        for key, _ in sel.select(max(0.0, heap[0][0] - time.monotonic())):
            ns = key.data
            while True:
                try:
                    data, anc, _, _ = key.fileobj.recvmsg(64, 128)
                except BlockingIOError:
                    break
                hop = ifindex = None
                for level, kind, value in anc:
                    if kind == socket.IPV6_HOPLIMIT:
                        hop = int.from_bytes(value, sys.byteorder)
                    elif kind == socket.IPV6_PKTINFO:
                        ifindex = int.from_bytes(value[16:20], sys.byteorder)
                if hop != 255 or ifindex is None:
                    continue
                _, _, mult, _, my, your, _, _, _ = unpack(data)
                st = by_disc.get((ns, your)) if your else by_if.get((ns, ifindex))
                if st is None:
                    continue
                st["rid"], st["last_rx"], st["up"] = my, now, True
        if not measuring and all(st["up"] for st in txs):
            measuring, cpu0, t0 = True, time.process_time(), time.monotonic()
            ready.set()
        if measuring and time.monotonic() - t0 >= seconds:
            result.append(100 * (time.process_time() - cpu0) / ((time.monotonic() - t0) * (os.cpu_count() or 1)))
            return


def _rx_socket() -> socket.socket:
    s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
    s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_RECVPKTINFO, 1)
    s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_RECVHOPLIMIT, 1)
    s.bind(("::", PORT))
    s.setblocking(False)
    return s


def _tx_socket(peer: str, ifindex: int) -> socket.socket:
    s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
    s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_UNICAST_HOPS, 255)
    s.bind(("::", 0))
    s.connect((peer, PORT, 0, ifindex))
    s.setblocking(False)
    return s


def run_python(ends, seconds: float) -> float:
    ready, result = threading.Event(), []
    t = threading.Thread(target=python_data_plane, args=(ends, seconds, ready, result), daemon=True)
    t.start()
    t.join(seconds + 120)
    if not result:
        raise RuntimeError("the Python data plane never had every session receiving")
    return result[0]


def _cpu_share(pid: int, seconds: float) -> float:
    def used() -> float:
        f = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")
    u0, t0 = used(), time.monotonic()
    time.sleep(seconds)  # the measurement window
    return 100 * (used() - u0) / ((time.monotonic() - t0) * (os.cpu_count() or 1))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--pairs", type=int, default=4)
    p.add_argument("--links", type=int, default=64)
    p.add_argument("--seconds", type=float, default=30.0)
    p.add_argument("--only", choices=("c", "python"))
    args = p.parse_args()
    try:
        build(args.pairs, args.links)
        ends = sessions(args.pairs, args.links)
        print(f"# {len(ends)} session ends, {args.pairs} namespace pairs x {args.links} links", file=sys.stderr)
        figures = {}
        with tempfile.TemporaryDirectory(prefix=f"fablab-{LAB}-") as tmp:
            if args.only in (None, "c"):
                figures["c"] = run_c(ends, args.seconds, Path(tmp))
                print(f"# fablab-bfd-dp (C): {figures['c']:.1f}% of all cores", file=sys.stderr)
            if args.only in (None, "python"):
                figures["python"] = run_python(ends, args.seconds)
                print(f"# Python: {figures['python']:.1f}% of all cores", file=sys.stderr)
        print(f"{'sessions':>9}  " + "  ".join(f"{k:>8}" for k in figures))
        print(f"{len(ends):>9}  " + "  ".join(f"{v:>7.1f}%" for v in figures.values()))
    finally:
        for i in range(args.pairs):
            for side in "ab":
                subprocess.run(["ip", "netns", "del", ns_name(side, i)], capture_output=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
