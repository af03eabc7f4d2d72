"""rdma-rails: in a rail-only BE, RDMA within a rail works (the control) and across rails it
finds no path, neither as the plan routes the host nor with the host routing the other rail
into its own rail leaf (the fabric must drop it)."""
from __future__ import annotations

from dataclasses import dataclass

from harness import rdma
from harness.checks.base import Observation, Outcome
from harness.checks.rdma.lane import require_lane
from harness.core.plan import Plan
from harness.plumbing.labview import LabView
from harness.rdma.session import RdmaResult


@dataclass(frozen=True)
class RdmaRailsSeen(Observation):
    control: RdmaResult  # same rail, another node
    as_planned: RdmaResult  # another rail, the host's planned routes
    forced: RdmaResult  # another rail, routed into the source's rail leaf
    forced_prefix: str


@dataclass(frozen=True)
class RdmaRailsResult(Outcome):
    control: RdmaResult
    as_planned: RdmaResult
    forced: RdmaResult
    forced_prefix: str

    held = "rails separate"

    def sentence(self) -> str:
        def line(r: RdmaResult) -> str:
            c = r.counters
            return (f"{r.spec.src_node}:{r.spec.src_nic} -> {r.spec.dst_node}:{r.spec.dst_nic} "
                    f"{'completed' if r.ok else 'failed'} (sent {c.get('src', {}).get('sent_pkts', 0)}, "
                    f"received {c.get('dst', {}).get('rcvd_pkts', 0)})")
        return (f"control {line(self.control)}; cross-rail {line(self.as_planned)}; "
                f"cross-rail routed via the rail leaf ({self.forced_prefix}) {line(self.forced)}")


def rail_only(plan: Plan) -> str | None:
    """The case applies to a rail-only BE with two GPU nodes on two rails each."""
    if plan.fabric.cluster.backend.kind != "rail-only":
        return "the BE is not rail-only: its rails meet at the spines (rdma-path crosses them)"
    gpus = [h for h in plan.hosts if sum(1 for n in h.nics if n.rail is not None) >= 2]
    if len(gpus) < 2:
        return "fewer than two GPU nodes with two rails: no pair of rails to hold apart"
    return None


def measure_rails(lab: LabView, duration: float = 2.0) -> RdmaRailsSeen:
    """From the first GPU node's first rail: to the second node on the same rail (the
    control), then on the next rail, as planned and forced into the rail leaf (again, once,
    if its requester sent nothing)."""
    require_lane()
    gpus = [h for h in lab.plan.hosts if any(n.rail is not None for n in h.nics)]
    a, b = gpus[0], gpus[1]
    rails = sorted({n.rail for n in a.nics if n.rail is not None})
    nic0 = next(n for n in a.nics if n.rail == rails[0])
    same = next(n for n in b.nics if n.rail == rails[0])
    other = next(n for n in b.nics if n.rail == rails[1])
    control = rdma.run(lab, a.name, nic0.name, b.name, same.name, duration=duration)
    as_planned = rdma.run(lab, a.name, nic0.name, b.name, other.name, duration=duration)
    forced = rdma.run(lab, a.name, nic0.name, b.name, other.name, duration=duration, force_route=True)
    if _sent(forced) == 0:
        # The requester did not get a packet out (its guest, on a machine three labs keep busy,
        # failed before the fabric was tried): that says nothing of the fabric, so once more.
        forced = rdma.run(lab, a.name, nic0.name, b.name, other.name, duration=duration, force_route=True)
    return RdmaRailsSeen(control, as_planned, forced, str(lab.plan.route_prefix(other)))


def _sent(r: RdmaResult) -> int:
    return r.counters.get("src", {}).get("sent_pkts", 0)


def judge_rails(plan: Plan, seen: RdmaRailsSeen) -> RdmaRailsResult:
    """The control completed with packets received; neither cross-rail transfer received a
    packet or completed, and the forced one did send (so the fabric was tried)."""
    control = seen.control
    problems = []
    if not control.ok or control.counters.get("dst", {}).get("rcvd_pkts", 0) == 0:
        problems.append(f"control: RDMA within a rail ({control.spec.src_node}:{control.spec.src_nic} -> "
                        f"{control.spec.dst_node}:{control.spec.dst_nic}) did not complete: "
                        f"{control.error or 'nothing received'}")
    for label, r in (("as planned", seen.as_planned), ("routed via the rail leaf", seen.forced)):
        got = r.counters.get("dst", {}).get("rcvd_pkts", 0)
        if r.ok or got:
            problems.append(f"cross-rail {label}: {r.spec.dst_node}:{r.spec.dst_nic} received {got} packets"
                            f"{' and the transfer completed' if r.ok else ''}")
    if _sent(seen.forced) == 0:
        problems.append("cross-rail routed via the rail leaf: the requester sent nothing, so the fabric was not tried"
                        + (f" ({seen.forced.error})" if seen.forced.error else ""))
    return RdmaRailsResult(control, seen.as_planned, seen.forced, seen.forced_prefix, seconds=seen.seconds,
                           problems=tuple(problems))
