"""A pod-based 5-stage backend: two pods of a 3-stage fabric each, joined by super-spines.

16 GPU nodes × 4 GPUs. BE rail-optimized in 2 pods (`Backend(pods=2, superspines=2)`): each
pod holds 2 groups of 4 nodes with a leaf per rail (8 leaves, 4 × 400G down, 2 × 800G up)
and 2 spines; each spine has its pod's 8 leaves below (8 × 800G) and 4 links to each of the
2 super-spines above (8 × 800G): 1:1 at both stages. Traffic between pods crosses leaf ->
spine -> super-spine -> spine -> leaf. ASNs in three tiers (RFC 7938): the super-spines share
one, each pod's spines one of their own, every leaf its own. FE: a 2 × 2 Clos with a storage
server and a gateway. 16 + 4 + 2 = 22 BE switches.
"""
from __future__ import annotations

from harness.core.model import Backend, Cluster, Frontend, GpuNodes
from topologies.roce import roce_tuned


def pods(name: str = "pods", pods: int = 2, groups: int = 2, nodes_per_group: int = 4, gpus_per_node: int = 4,
         spines: int = 2, superspines: int = 2) -> Cluster:
    # A spine takes groups × rails leaf links (800G each) down; to stay 1:1 it needs as much up.
    leaf_links = groups * gpus_per_node
    return Cluster(
        name=name,
        lossless=roce_tuned(),
        gpu=GpuNodes(count=pods * groups * nodes_per_group, gpus_per_node=gpus_per_node, nic_speed=400, fe_speed=100),
        backend=Backend(kind="rail-optimized", rails=gpus_per_node, groups=groups, spines=spines, pods=pods,
                        superspines=superspines, uplinks_per_superspine=-(-leaf_links // superspines),
                        leaf_ports=64, spine_ports=64, superspine_ports=64, uplink_speed=800, uplinks_per_spine=1),
        frontend=Frontend(spines=2, leaves=2, storage_servers=1, gateways=1),
    )
