#!/usr/bin/env python3
"""Sender rates of one sender process, RoCEv2 and UDP, between two namespaces joined by a veth pair.

Creates fl_tb<pid>_a and fl_tb<pid>_b (a testbed: harness/runtime/testbed.py), and removes them whatever happens.
Each case runs as fast as possible (N flows x K packets, round-robin), once with a
receiver accounting every packet and once with nobody listening (so the receive side
costs the sender's CPU almost nothing: on a veth pair the peer's receive path runs in
the sender's softirq). Needs root.

    .venv/bin/python scripts/bench_traffic.py [--flows 16] [--packets 20000] [--payload 64]
"""
from __future__ import annotations

import argparse
import os
import sys

from harness.traffic.flows import ReceiveSpec, RoceFlow, SendSpec, UdpFlow
from harness.traffic.results import losses
from harness.runtime.testbed import veth_testbed
from harness.traffic.runner import run_sender, start_receiver

LAB = f"tb{os.getpid()}"  # a lab-shaped name: `fablab clean` removes what a killed bench left
NS_A, NS_B = f"fl_{LAB}_a", f"fl_{LAB}_b"


def bench(kind: str, dst: str, args: argparse.Namespace, with_receiver: bool) -> str:
    if kind == "roce":
        flows = tuple(RoceFlow(flow_id=i, dst=dst, dst_qp=0x100 + i, src_qp=0x200 + i,
                               payload_len=args.payload) for i in range(args.flows))
        rspec = ReceiveSpec(protocol="roce", duration_s=120, expect_packets=args.flows * args.packets)
    else:
        flows = tuple(UdpFlow(flow_id=i, dst=dst, sport=20000 + i, payload_len=args.payload)
                      for i in range(args.flows))
        rspec = ReceiveSpec(protocol="udp", port=flows[0].dport, duration_s=120,
                            expect_packets=args.flows * args.packets)
    spec = SendSpec(flows=flows, packets=args.packets)
    label = f"{'RoCEv2' if kind == 'roce' else 'UDP':6} {args.flows}x{args.packets} payload {args.payload} B"
    if not with_receiver:
        sent = run_sender(NS_A, spec)
        return f"{label}  no receiver     sender {sent.pps:9,.0f} pps"
    with start_receiver(NS_B, rspec) as receiver:
        sent = run_sender(NS_A, spec)
        receiver.stop()  # it stops by itself once all arrived; this covers losses
        got = receiver.result(60)
    lost = sum(losses(sent, got).values())
    return (f"{label}  with receiver   sender {sent.pps:9,.0f} pps   received {got.packets:,} "
            f"lost {lost:,} reordered {sum(f.reordered for f in got.flows)}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--flows", type=int, default=16)
    parser.add_argument("--packets", type=int, default=20000, help="per flow")
    parser.add_argument("--payload", type=int, default=64, help="bytes after BTH/RETH (RoCEv2) or UDP header")
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    if os.geteuid() != 0:
        print("bench_traffic: needs root (namespaces, raw sockets)", file=sys.stderr)
        return 2
    with veth_testbed(LAB) as (_, dst):
        for _ in range(args.repeat):
            for kind in ("roce", "udp"):
                for with_receiver in (False, True):
                    print(bench(kind, dst, args, with_receiver), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
