"""The reference cluster the labs run on.

8 GPU nodes × 4 GPUs. BE rail-optimized: 2 groups of 4 nodes, one leaf per rail per group
(8 leaves), 2 spines, so same-rail traffic between groups crosses an ECMP spine tier. Each
leaf has 4 × 400G down and 2 × 800G up: non-blocking 1:1. FE: a 2 × 2 Clos carrying the 8
FE NICs, 2 storage servers and a gateway. Every node on the OOB management switch.
"""
from __future__ import annotations

from harness.model import Backend, Cluster, Frontend, GpuNodes


def ai_cluster(name: str = "ai-cluster", nodes: int = 8, gpus_per_node: int = 4, groups: int = 2,
               spines: int = 2) -> Cluster:
    return Cluster(
        name=name,
        gpu=GpuNodes(count=nodes, gpus_per_node=gpus_per_node, nic_speed=400, fe_speed=100),
        backend=Backend(kind="rail-optimized", rails=gpus_per_node, groups=groups, spines=spines,
                        leaf_ports=64, spine_ports=64, uplink_speed=800, uplinks_per_spine=1),
        frontend=Frontend(spines=2, leaves=2, storage_servers=2, gateways=1),
    )
