"""Exact per-port (and per-flow) packet counts on a switch, from nftables counters.

Interface counters also count BGP, BFD and RA packets; these count only the traffic under
test, matched in the forward hook by egress port (and UDP source port, i.e. the QP).
"""
from __future__ import annotations

import itertools
import json

from harness.errors import RuntimeError_

_ids = itertools.count(1)


class FlowCounters:
    def __init__(self, lab, node: str, ports: list[str], sports: list[int] | None = None,
                 dport: int = 4791) -> None:
        self.lab, self.node, self.ports, self.sports, self.dport = lab, node, ports, sports, dport
        self.table = f"fablab_count_{next(_ids)}"

    def _nft(self, argv: list[str], stdin: str | None = None) -> str:
        # The host's nft in the switch's namespace: SONiC-VS images have no nft.
        run = self.lab.ns_exec(self.node, ["nft", *argv], input=stdin)
        if run.returncode != 0:
            raise RuntimeError_(f"nft on {self.node}: {run.stderr.strip()}")
        return run.stdout

    def install(self) -> FlowCounters:
        rules = []
        for port in self.ports:
            if self.sports is None:
                rules.append(f'    oifname "{port}" udp dport {self.dport} counter comment "{port}"')
            else:
                rules += [f'    oifname "{port}" udp sport {s} udp dport {self.dport} counter comment "{port}/{s}"'
                          for s in self.sports]
        self._nft(["-f", "-"], f"table inet {self.table} {{\n  chain forward {{\n"
                                f"    type filter hook forward priority -10; policy accept;\n"
                                + "\n".join(rules) + "\n  }\n}\n")
        return self

    def read(self) -> dict[str, int]:
        """comment ("port" or "port/sport") -> packets so far."""
        doc = json.loads(self._nft(["-j", "list", "table", "inet", self.table]))
        out = {}
        for item in doc.get("nftables", []):
            rule = item.get("rule")
            if not rule:
                continue
            packets = next((e["counter"]["packets"] for e in rule.get("expr", []) if "counter" in e), 0)
            out[rule.get("comment", "")] = packets
        return out

    def remove(self) -> None:
        self._nft(["delete", "table", "inet", self.table])

    def __enter__(self) -> FlowCounters:
        return self.install()

    def __exit__(self, *exc: object) -> None:
        self.remove()
