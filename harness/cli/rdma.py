"""`fablab rdma LAB SRC:NIC DST:NIC`: one RDMA test with real rdma_rxe across a running lab."""
from __future__ import annotations

import argparse
import json
from dataclasses import asdict

from rich.table import Table

from harness.cli.labs import progress_printer
from harness.cli.console import err, out
from harness.lab import Lab
from harness.rdma.perftest import TESTS


def _endpoint(text: str) -> tuple[str, str]:
    node, sep, nic = text.partition(":")
    if not sep or not node or not nic:
        raise argparse.ArgumentTypeError(f"{text!r}: expected NODE:NIC, e.g. gpu01:rail0")
    return node, nic


def cmd_rdma(args: argparse.Namespace) -> int:
    from harness import rdma  # here: every fablab command builds the parser that names this module
    from harness.rdma.session import RdmaSpecError

    lab = Lab.attach(args.lab)
    (src_node, src_nic), (dst_node, dst_nic) = args.src, args.dst
    try:
        result = rdma.run(lab, src_node, src_nic, dst_node, dst_nic, test=args.test, qps=args.qps,
                          size=args.size, duration=args.duration, iterations=args.iterations,
                          progress=progress_printer(not args.json))
    except RdmaSpecError as e:
        for problem in e.problems:
            err.print(f"[red]error:[/red] {problem}", soft_wrap=True)
        return 2
    if args.json:
        data = asdict(result)
        data.update(completions=result.completions, retransmissions=result.retransmissions,
                    retry_exceeded=result.retry_exceeded)
        print(json.dumps(data, indent=2))
    else:
        out.print(result.summary(), soft_wrap=True)
        if result.qps:
            table = Table("QPN", "remote QPN", "UDP source port",
                          title="requester QPs (rxe: rdma_get_udp_sport of the two QPNs)")
            for qp in result.qps:
                table.add_row(f"{qp.qpn:#x}", f"{qp.remote_qpn:#x}", str(qp.sport))
            out.print(table)
        out.print(f"files: {result.workdir}")
    return 0 if result.ok else 3


def register(sub: argparse._SubParsersAction) -> None:
    s = sub.add_parser("rdma", help="an RDMA test (rdma_rxe, perftest/rping) between two GPU NICs of a lab "
                                    "(exit 0 ran, 3 the test failed, 2 bad input)")
    s.add_argument("lab", help="a lab booted by `fablab up`")
    s.add_argument("src", type=_endpoint, help="NODE:NIC of the requester, e.g. gpu01:rail0")
    s.add_argument("dst", type=_endpoint, help="NODE:NIC of the responder, e.g. gpu05:rail0")
    s.add_argument("--test", choices=TESTS, default="write_bw")
    s.add_argument("--qps", type=int, default=1, help="queue pairs (write_bw)")
    s.add_argument("--size", type=int, default=0, help="message bytes (default: 64 KiB write_bw, 2 send_lat, "
                                                       "64 rping)")
    s.add_argument("--duration", type=float, default=5.0,
                   help="seconds (write_bw); 0: --iterations messages on every QP instead")
    s.add_argument("--iterations", type=int, default=1000,
                   help="messages (send_lat; write_bw with --duration 0) or ping-pongs (rping)")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_rdma)
