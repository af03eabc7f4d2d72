"""The scale point of a real AI cluster: 128 GPU nodes × 8 GPUs (1,024 GPUs), rail-optimized.

8 groups of 16 nodes, one leaf per rail per group (64 rail leaves), 16 spines: each leaf has
16 × 400G down and 16 × 400G up (1:1), each spine one port to every leaf (64). FE: 4 leaves,
2 spines, 4 storage servers, 8 CPU servers, 2 gateways.
"""
from __future__ import annotations

from harness.core.model import Backend, Cluster, Frontend, GpuNodes
from topologies.roce import roce_tuned


def xlarge(name: str = "xlarge") -> Cluster:
    return Cluster(
        name=name,
        lossless=roce_tuned(),
        gpu=GpuNodes(count=128, gpus_per_node=8),
        backend=Backend(kind="rail-optimized", rails=8, groups=8, spines=16, leaf_ports=64,
                        spine_ports=64, uplink_speed=400),
        frontend=Frontend(spines=2, leaves=4, leaf_ports=48, cpu_servers=8, storage_servers=4, gateways=2),
    )
