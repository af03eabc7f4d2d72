"""What the ECMP checks see on a lab: at each counting point, the flows counted on each egress
port (nftables, per source port, harness.observe.flowcount); what was sent, and what the
receiver got. Nothing here is a verdict: harness/checks/ecmp/judge.py, ecmp_superspine.py and
fe_tcp/spread.py judge it.
"""
from __future__ import annotations

from dataclasses import dataclass

from harness.checks.base import Observation
from harness.observe.flowcount import paths_of


@dataclass(frozen=True)
class PortsSeen:
    """One node's counted egress ports and the flows each carried. A flow under two ports of
    one node was split over two paths; a flow under none was not seen there."""

    node: str
    flows: dict[str, tuple[int, ...]]  # port -> source ports of the flows counted on it, ascending (every port)
    packets: dict[str, int]  # port -> packets of those flows

    def on(self) -> dict[int, tuple[str, ...]]:
        """Source port -> the ports it was counted on, in the order of `flows`."""
        out: dict[int, tuple[str, ...]] = {}
        for port, sports in self.flows.items():
            for s in sports:
                out[s] = (*out.get(s, ()), port)
        return out

    def count(self, port: str) -> int:
        """Flows counted on `port`."""
        return len(self.flows.get(port, ()))


def ports_seen(node: str, ports: list[str] | tuple[str, ...], counted: dict[tuple[str, int], int]) -> PortsSeen:
    """A FlowCounters reading ((port, source port) -> packets) as what the node carried on `ports`."""
    on = paths_of(counted)
    return PortsSeen(node, {p: tuple(sorted(s for s, where in on.items() if p in where)) for p in ports},
                     {p: sum(int(v) for (port, _), v in counted.items() if port == p) for p in ports})


@dataclass(frozen=True)
class EcmpSeen(Observation):
    """RoCEv2 QPs between two GPUs of different groups: where the source leaf counted each,
    what the receiver got, and the leaf's hashing and route as its kernel had them."""

    source: str  # "host:nic" the QPs left from
    destination: str  # "host:nic" they went to ...
    destination_address: str  # ... at this address
    qpns: tuple[int, ...]  # the QPs sent, each with its own UDP source port ...
    sports: tuple[int, ...]  # ... this one (qpns[i] leaves from sports[i])
    packets_per_qp: int  # sent on every QP
    received: tuple[int, ...]  # distinct packets the receiver got of each QP (as qpns)
    reordered: int  # packets the receiver got after a higher sequence number, all QPs
    leaf: PortsSeen  # the source leaf's uplinks, with the QPs (source ports) counted on each
    hash_policy: int  # the leaf's net.ipv4.fib_multipath_hash_policy
    prefix: str  # the leaf's route to the destination (its /31, or its leaf's summary) ...
    nexthop_weights: dict[str, int]  # ... its next hops' weights by uplink ({}: no such route)
    false_fail: float  # the fair hash's false-fail rate the QP count was chosen for
