"""A scale point: 64 GPU nodes × 8 GPUs (512 GPUs), rail-optimized.

4 groups of 16 nodes, one leaf per rail per group (32 leaves), 8 spines: each leaf has
16 × 400G down and 8 × 800G up (1:1). FE: 4 leaves, 2 spines, 4 storage servers,
8 CPU servers, 2 gateways.
"""
from __future__ import annotations

from harness.core.model import Backend, Cluster, Frontend, GpuNodes
from topologies.roce import roce_tuned


def large(name: str = "large") -> Cluster:
    return Cluster(
        name=name,
        lossless=roce_tuned(),
        gpu=GpuNodes(count=64, gpus_per_node=8),
        backend=Backend(kind="rail-optimized", rails=8, groups=4, spines=8, leaf_ports=64,
                        spine_ports=64, uplink_speed=800),
        frontend=Frontend(spines=2, leaves=4, leaf_ports=48, cpu_servers=8, storage_servers=4, gateways=2),
    )
