"""Leaves that carry several rails: each leaf serves two rails through two port groups.

8 GPU nodes × 4 GPUs, BE rail-optimized in 2 groups of 4 nodes; a leaf per group carries
rails 0-1 and another rails 2-3 (`Backend(rails_per_leaf=2)`), so a group needs two leaves
instead of four. On each leaf rail r's NICs take one contiguous port group (Ethernet0-12 for
the first rail, Ethernet16-28 for the second) and the four uplinks (2 × 800G to each of 2
spines) are shared by both rails: 8 × 400G down, 4 × 800G up, non-blocking. FE: a 2 × 2
Clos with a storage server and a gateway.

`multi_rail(kind="rail-only")` is the same GPUs on two rail-only leaves of two rails each:
the rails of one leaf stay apart (a VRF per rail on SONiC), as on leaves of their own.
"""
from __future__ import annotations

from harness.core.model import Backend, Cluster, Frontend, GpuNodes
from topologies.roce import roce_tuned


def multi_rail(name: str = "multi-rail", nodes: int = 8, gpus_per_node: int = 4, rails_per_leaf: int = 2,
               kind: str = "rail-optimized") -> Cluster:
    spread = kind == "rail-optimized"
    return Cluster(
        name=name,
        lossless=roce_tuned(),
        gpu=GpuNodes(count=nodes, gpus_per_node=gpus_per_node, nic_speed=400, fe_speed=100),
        backend=Backend(kind=kind, rails=gpus_per_node, rails_per_leaf=rails_per_leaf, groups=2 if spread else 1,
                        spines=2 if spread else 0, leaf_ports=64, spine_ports=64, uplink_speed=800,
                        uplinks_per_spine=rails_per_leaf),
        frontend=Frontend(spines=2, leaves=2, storage_servers=1, gateways=1),
    )
