"""A dual-homed frontend: every FE host on two leaves, routed, with BGP to both.

4 GPU nodes × 2 GPUs on a small rail-optimized BE (2 groups, a leaf per rail per group,
2 spines). FE: 4 leaves in 2 pairs (fe-l1/fe-l2, fe-l3/fe-l4) under 2 spines; each of the
6 FE hosts (4 GPU nodes, a storage server, a gateway) has fe0 on the first leaf of its rack's
pair and fe1 on the second, announces its own /32 to both over BGP (BFD on), and hears a
default route from each: its FE traffic spreads over both NICs and survives the loss of a
NIC, a cable or a whole leaf (`Frontend(dual_homed=True)`).
"""
from __future__ import annotations

from harness.core.model import Backend, Cluster, Frontend, GpuNodes
from topologies.roce import roce_tuned


def dual_homed(name: str = "dual-homed", nodes: int = 4, gpus_per_node: int = 2, fe_leaves: int = 4) -> Cluster:
    return Cluster(
        name=name,
        lossless=roce_tuned(),
        gpu=GpuNodes(count=nodes, gpus_per_node=gpus_per_node, nic_speed=400, fe_speed=100),
        backend=Backend(kind="rail-optimized", rails=gpus_per_node, groups=2, spines=2, leaf_ports=64,
                        spine_ports=64, uplink_speed=800, uplinks_per_spine=1),
        frontend=Frontend(spines=2, leaves=fe_leaves, storage_servers=1, gateways=1, dual_homed=True),
    )
