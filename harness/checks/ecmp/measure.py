"""ECMP's measurement: N RoCEv2 QPs between two GPUs of different groups (same rail), each
with its own UDP source port, counted per (uplink, QP) on the source leaf and received at the
far GPU; the leaf's hash policy and route weights read beside them. The QP count is chosen
from the uplink count (common/bounds.py: qps_for); the judge (judge.py) holds the counts to the band.
"""
from __future__ import annotations

import itertools
import json
import time
from collections.abc import Sequence

from harness.checks.ecmp.observation import EcmpSeen, ports_seen
from harness.checks.common.bounds import FALSE_FAIL, SKEW_WEIGHT, qps_for
from harness.core.errors import HarnessError
from harness.observe.flowcount import FlowCounters
from harness.plumbing.labview import LabView
from harness.traffic.flows import ReceiveSpec, RoceFlow, SendSpec
from harness.traffic.roce import roce_sport
from harness.traffic.results import ReceiveResult
from harness.traffic.runner import start_receivers, start_sender

PACKETS_PER_QP = 3  # >= 2 so the receiver can see reordering; the sender's probe adds one more


def measure_ecmp(lab: LabView, src: tuple[str, str] | None = None, dst: tuple[str, str] | None = None,
                 flows: int | None = None, packets_per_flow: int = PACKETS_PER_QP, first_qp: int = 0x100,
                 false_fail: float = FALSE_FAIL, measure_only: bool = False) -> EcmpSeen:
    """`flows` None: as many QPs as the uplink count needs (common/bounds.py: qps_for); fewer than
    that is refused, since the verdict could then miss a 2:1 weighting, unless `measure_only`
    (`fablab spread`: how a few QPs land is the lesson, not a verdict)."""
    t0 = time.monotonic()
    plan = lab.plan
    src = src or first_gpu_nic(plan)
    src_nic = plan.host(src[0]).nic(src[1])
    leaf = plan.switch(src_nic.peer)
    uplinks = [p.name for p in leaf.fabric_ports]
    if len(uplinks) < 2:
        raise HarnessError(f"{leaf.name} has {len(uplinks)} uplink(s): nothing to spread over")
    needed = qps_for(len(uplinks), false_fail)
    n = needed if flows is None else flows
    if n < needed and not measure_only:
        raise HarnessError(f"flows={flows}: over {len(uplinks)} uplinks the verdict needs >= {needed} QPs to catch "
                           f"an uplink at weight {SKEW_WEIGHT} at {false_fail:.1%} false-fail; "
                           "pass flows=None to have it chosen")
    if n < len(uplinks):
        raise HarnessError(f"flows={n}: fewer QPs than the {len(uplinks)} uplinks; send at least {len(uplinks)}")
    if packets_per_flow < 1:
        raise HarnessError(f"packets_per_flow={packets_per_flow}: must be >= 1 (2 or more to see reordering)")
    dst = dst or _far_peer(plan, src[0], src_nic)
    dst_nic = plan.host(dst[0]).nic(dst[1])
    dst_addr = str(dst_nic.address.ip)
    qps = [RoceFlow(flow_id=i + 1, dst=dst_addr, dst_qp=qpn, src_qp=qpn, src=str(src_nic.address.ip))
           for i, qpn in enumerate(distinct_sport_qpns(n, first_qp))]
    sports = tuple(roce_sport(q.src_qp, q.dst_qp) for q in qps)
    with FlowCounters(lab, leaf.name, uplinks, sorted(sports)) as counters:
        received = send_qps(lab, src, dst[0], qps, packets_per_flow)
        counted = counters.read_flows()
    got = {f.flow_id: f.unique for f in received.flows}
    prefix = str(plan.route_prefix(dst_nic))
    return EcmpSeen(
        source=f"{src[0]}:{src[1]}", destination=f"{dst[0]}:{dst[1]}", destination_address=dst_addr,
        qpns=tuple(q.src_qp for q in qps), sports=sports, packets_per_qp=packets_per_flow,
        received=tuple(got.get(q.flow_id, 0) for q in qps), reordered=sum(f.reordered for f in received.flows),
        leaf=ports_seen(leaf.name, uplinks, counted),
        hash_policy=int(lab.sysctl(leaf.name, "net.ipv4.fib_multipath_hash_policy")), prefix=prefix,
        nexthop_weights=nexthop_weights(lab, leaf.name, prefix), false_fail=false_fail,
        seconds=round(time.monotonic() - t0, 2))


def send_qps(lab: LabView, src: tuple[str, str], dst_node: str, qps: list[RoceFlow], packets: int):
    """Every QP's packets from src, received at dst_node; the receiver's result (send_qps_to)."""
    return send_qps_to(lab, src, [(dst_node, qps)], packets)[0]


def send_qps_to(lab: LabView, src: tuple[str, str], batches: Sequence[tuple[str, Sequence[RoceFlow]]],
                packets: int) -> list[ReceiveResult]:
    """Every QP's packets from src in one sender, each batch received at its node; a result per batch.

    No deadline of its own: on a machine the lab keeps busy the sender may take a minute to
    start and prime 1,300 QPs. A receiver ends when every packet is in or 1 s after the last
    one; one that got none is stopped once the sender is done and the grace has passed."""
    flows = interleaved([batch for _, batch in batches])
    specs = [(lab.namespace(node), ReceiveSpec(expect_packets=len(batch) * packets, quiet_s=1.0, duration_s=600.0,
                                                   buckets=False))
             for node, batch in batches]
    with start_receivers(specs) as receivers:
        # Priming probes every QP's 5-tuple; a sender of 97,280 QPs needs minutes, not seconds.
        start_sender(lab.namespace(src[0]), SendSpec(flows=flows, packets=packets, device=src[1])).result(
            300 + len(flows) / 100)
        # they end on their own once every packet is in (or 1 s after the last): with 291,840
        # packets one receiver process was still taking them in 1 s after the sender was done.
        # One that got nothing (a black hole) is stopped after the grace, a few seconds.
        return list(receivers.result(60, grace_s=5 + len(flows) * packets / 20000).results)


def interleaved(batches: Sequence[Sequence[RoceFlow]]) -> tuple[RoceFlow, ...]:
    """The batches' QPs taken from each in turn, so each receiver gets a packet every few sends.
    Sent batch after batch, a receiver of 16,214 QPs waited 2 s for its next round while the
    sender served the others, and its quiet_s ended it after the first."""
    return tuple(q for turn in itertools.zip_longest(*batches) for q in turn if q is not None)


def distinct_sport_qpns(count: int, first_qp: int = 0x100) -> list[int]:
    """`count` QP numbers from first_qp up whose UDP source ports differ: two QPs with one
    source port are one 5-tuple, so one sample of the hash, not two."""
    qpns, seen, qpn = [], set(), first_qp
    while len(qpns) < count:
        if qpn >= 1 << 24:
            raise HarnessError(f"fewer than {count} distinct UDP source ports from QP {first_qp:#x} up")
        sport = roce_sport(qpn, qpn)  # the flows pair QP n with QP n, as two fresh rxe endpoints do
        if sport not in seen:
            seen.add(sport)
            qpns.append(qpn)
        qpn += 1
    return qpns


def nexthop_weights(lab: LabView, leaf: str, prefix: str) -> dict[str, int]:
    """Uplink -> weight of each next hop of the leaf's kernel route to prefix ({} if none)."""
    run = lab.ns_exec(leaf, ["ip", "-j", "route", "show", "exact", prefix])
    routes = json.loads(run.stdout or "[]") if run.returncode == 0 else []
    if not routes:
        return {}
    route = routes[0]
    hops = route.get("nexthops") or [route]
    return {h["dev"]: int(h.get("weight", 1)) for h in hops if "dev" in h}


def default_pair(plan) -> tuple[tuple[str, str], tuple[str, str]]:
    """The (host, NIC) pair the ECMP case uses when given none: the first GPU NIC and the same
    rail in the other group."""
    src = first_gpu_nic(plan)
    return src, _far_peer(plan, src[0], plan.host(src[0]).nic(src[1]))


def first_gpu_nic(plan) -> tuple[str, str]:
    for h in plan.hosts:
        for n in h.nics:
            if n.rail is not None:
                return h.name, n.name
    raise HarnessError("the cluster has no GPU node with a BE NIC")


def _far_peer(plan, host: str, nic, across: str = "group", same_pod: bool = False) -> tuple[str, str]:
    """The same rail on a GPU node of another group (so traffic crosses the spine tier), or
    with across="pod" of another pod (so it crosses the super-spine tier too); `same_pod`: of
    another group of the host's own pod (its leaf under the same spines)."""
    me = plan.host(host)
    mine = getattr(me, across)
    for h in plan.hosts:
        theirs = getattr(h, across)
        if same_pod and h.pod != me.pod:
            continue
        if h.name != host and theirs is not None and theirs != mine:
            for n in h.nics:
                if n.rail == nic.rail:
                    return h.name, n.name
    tier = "spines" if across == "group" else "super-spines"
    raise HarnessError(f"no GPU node outside {across} {mine} on rail {nic.rail}: ECMP needs traffic across {tier}")
