"""A rail-only backend: one leaf per rail and no spine (after Wang et al., "Rail-only", 2023).

GPUs of the same rank talk over their rail leaf; traffic between ranks moves inside the
node (NVLink), so the BE has no path from rail r to rail s at all.
"""
from __future__ import annotations

from harness.core.model import Backend, Cluster, Frontend, GpuNodes
from topologies.roce import roce_tuned


def rail_only(name: str = "rail-only", nodes: int = 4, gpus_per_node: int = 4) -> Cluster:
    return Cluster(
        name=name,
        lossless=roce_tuned(),
        gpu=GpuNodes(count=nodes, gpus_per_node=gpus_per_node),
        backend=Backend(kind="rail-only", rails=gpus_per_node, groups=1, spines=0, leaf_ports=64),
        frontend=Frontend(spines=2, leaves=2, storage_servers=1, gateways=1),
    )
