"""What the RDMA cases share: the lane they need (rdma_rxe in a QEMU microVM, harness/rdma),
and the switches' nftables counts of UDP 4791 as an observation holds them."""
from __future__ import annotations

from dataclasses import dataclass

from harness.checks.base import NotMeasurable
from harness.core.errors import PrerequisiteError
from harness.plumbing.labview import LabView
from harness.rdma.vmimage import boot_files, switched_off


def require_lane() -> None:
    """NotMeasurable, with the fix, where this machine has no RDMA lane or the lane is switched
    off (harness/rdma/vmimage.switched_off): a case that cannot run its transfer has neither
    passed nor failed."""
    off = switched_off()
    if off:
        raise NotMeasurable(off)
    try:
        boot_files()
    except PrerequisiteError as e:
        raise NotMeasurable(f"no RDMA lane on this machine (rdma_rxe in a QEMU microVM): {e}") from e


@dataclass(frozen=True)
class PortFlow:
    """UDP 4791 packets one switch forwarded out of one port with one UDP source port."""

    port: str
    sport: int
    packets: int


def flows_of(counted: dict[tuple[str, int], int]) -> tuple[PortFlow, ...]:
    """FlowCounters.read_flows() as an observation holds it, in order."""
    return tuple(PortFlow(port, int(sport), int(n)) for (port, sport), n in sorted(counted.items()))


def leaf_of(lab: LabView, node: str, nic: str) -> str:
    return lab.plan.host(node).nic(nic).peer


def uplinks_of(lab: LabView, leaf: str) -> dict[str, str]:
    """Port -> spine, for a leaf's fabric ports."""
    return {p.name: p.peer for p in lab.plan.switch(leaf).fabric_ports}
