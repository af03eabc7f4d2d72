"""ECMP spreads RoCEv2 flows over every uplink of a leaf.

N queue pairs between two GPUs in different groups (same rail), each QP with its own UDP
source port as an RDMA NIC derives it from the QP number. Packets per uplink are counted
in the kernel (nftables counters on the source leaf's egress ports, RoCEv2 only). The
sonic-mgmt rule: every path within ±25 % of the mean, with at least 625 packets expected
per path so the rule means something. Each flow must stay on one path: the receiver sees
no reordering and no loss.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

from harness.checks.result import Outcome
from harness.errors import HarnessError
from harness.observe.flowcount import FlowCounters
from harness.traffic.flows import ReceiveSpec, RoceFlow, SendSpec, losses
from harness.traffic.runner import start_receiver, start_sender

TOLERANCE = 0.25
MIN_EXPECTED_PER_PATH = 625


@dataclass(frozen=True)
class EcmpResult(Outcome):
    source: str
    destination: str
    leaf: str
    flows: int
    packets_per_flow: int
    per_path: dict  # uplink -> packets
    flows_per_path: dict  # uplink -> flows whose packets it carried
    mean: float
    max_over_mean: float
    min_over_mean: float
    jain_index: float
    chi2_pvalue: float  # on flows per path (packets of one flow never split)
    reordered: int
    lost: int
    hash_policy: int
    seconds: float
    problems: tuple[str, ...] = field(default=())

    @property
    def reason(self) -> str:
        figures = (f"{self.flows} QPs over {len(self.per_path)} paths of {self.leaf}: "
                   + ", ".join(f"{p} {n}" for p, n in self.per_path.items())
                   + f"; max/mean {self.max_over_mean:.2f}, Jain {self.jain_index:.3f}, chi2 p {self.chi2_pvalue:.3g}")
        return ("spread: " if self.passed else "NOT spread: " + "; ".join(self.problems) + " | ") + figures


def jain(values: list[float]) -> float:
    total = sum(values)
    squares = sum(v * v for v in values)
    return total * total / (len(values) * squares) if squares else 0.0


def chi2_uniform_pvalue(counts: list[int]) -> float:
    from scipy.stats import chisquare

    if sum(counts) == 0 or len(counts) < 2:
        return 0.0
    return float(chisquare(counts).pvalue)


def check_ecmp(lab, src: tuple[str, str] | None = None, dst: tuple[str, str] | None = None,
               flows: int = 256, packets_per_flow: int = 20, first_qp: int = 0x100) -> EcmpResult:
    t0 = time.monotonic()
    plan = lab.plan
    src = src or first_gpu_nic(plan)
    src_nic = plan.host(src[0]).nic(src[1])
    leaf = plan.switch(src_nic.peer)
    uplinks = [p.name for p in leaf.fabric_ports]
    if len(uplinks) < 2:
        raise HarnessError(f"{leaf.name} has {len(uplinks)} uplink(s): nothing to spread over")
    dst = dst or _far_peer(plan, src[0], src_nic)
    dst_addr = str(plan.host(dst[0]).nic(dst[1]).address.ip)
    qps = [RoceFlow(flow_id=i + 1, dst=dst_addr, dst_qp=first_qp + i, src_qp=first_qp + i,
                    src=str(src_nic.address.ip)) for i in range(flows)]
    total = flows * packets_per_flow
    with FlowCounters(lab, leaf.name, uplinks) as counters:
        before = counters.read()
        receiver = start_receiver(lab.namespace(dst[0]),
                                  ReceiveSpec(expect_packets=total, quiet_s=1.0, duration_s=60.0))
        with receiver:
            sent = start_sender(lab.namespace(src[0]),
                                SendSpec(flows=tuple(qps), packets=packets_per_flow, device=src[1])).result(120)
            received = receiver.result(60)
        after = counters.read()
    per_path = {p: after.get(p, 0) - before.get(p, 0) for p in uplinks}
    counts = list(per_path.values())
    mean = sum(counts) / len(counts)
    expected = total / len(uplinks)
    lost = sum(max(0, n) for n in losses(sent, received).values())
    reordered = sum(f.reordered for f in received.flows)
    per_flow = packets_per_flow + 1  # the sender primes each 5-tuple with one probe first
    flows_per_path = {p: round(n / per_flow, 1) for p, n in per_path.items()}
    problems = []
    if expected < MIN_EXPECTED_PER_PATH:
        problems.append(f"only {expected:.0f} packets expected per path; the ±25 % rule needs >= "
                        f"{MIN_EXPECTED_PER_PATH}: send more")
    for p, n in per_path.items():
        if mean and abs(n - mean) > TOLERANCE * mean:
            problems.append(f"{leaf.name}:{p} carried {n} packets ({(n - mean) / mean:+.0%} of the mean)")
    if reordered:
        problems.append(f"{reordered} packets reordered: a flow was split over paths")
    if lost:
        problems.append(f"{lost} packets lost")
    hash_policy = int(_sysctl(lab, leaf.name, "net.ipv4.fib_multipath_hash_policy"))
    if problems and hash_policy == 0:
        problems.append(f"{leaf.name} hashes on addresses only (fib_multipath_hash_policy=0): every QP between "
                        "two GPUs has the same addresses, so all take one path; hash on L4 (policy 1)")
    return EcmpResult(
        source=f"{src[0]}:{src[1]}", destination=f"{dst[0]}:{dst[1]} ({dst_addr})", leaf=leaf.name, flows=flows,
        packets_per_flow=packets_per_flow, per_path=per_path, flows_per_path=flows_per_path, mean=mean,
        max_over_mean=max(counts) / mean if mean else math.inf, min_over_mean=min(counts) / mean if mean else 0.0,
        jain_index=jain(counts), chi2_pvalue=chi2_uniform_pvalue([round(n / per_flow) for n in counts]),
        reordered=reordered, lost=lost, hash_policy=hash_policy, seconds=round(time.monotonic() - t0, 2),
        problems=tuple(problems))


def first_gpu_nic(plan) -> tuple[str, str]:
    for h in plan.hosts:
        for n in h.nics:
            if n.rail is not None:
                return h.name, n.name
    raise HarnessError("the cluster has no GPU node with a BE NIC")


def _far_peer(plan, host: str, nic) -> tuple[str, str]:
    """The same rail on a GPU node of another group (so traffic crosses the spine tier)."""
    group = plan.host(host).group
    for h in plan.hosts:
        if h.name != host and h.group is not None and h.group != group:
            for n in h.nics:
                if n.rail == nic.rail:
                    return h.name, n.name
    raise HarnessError(f"no GPU node outside group {group} on rail {nic.rail}: ECMP needs traffic across spines")


def _sysctl(lab, node: str, key: str) -> str:
    return lab.sysctl(node, key)
