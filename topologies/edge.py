"""A declaration close to both planning limits (harness/core/declcheck.py: 1,024 nodes, 16,384
links): 832 GPU nodes × 16 GPUs, 16 rails in 8 groups, 8 spines (oversubscribed), an FE of 8
leaves with 40 storage servers and 2 gateways: 1,021 nodes, 16,246 links (xlarge: 229 and 2,426).

Not a built-in (topologies.BUILTINS): it is there to be planned, never rendered or booted.
tests/unit/test_declaration_faults.py plans it and goes just over the limits from it;
scripts/bench_plan.py times it.
"""
from __future__ import annotations

from harness.core.model import Addressing, Backend, Cluster, Frontend, GpuNodes, Management


def edge(name: str = "edge") -> Cluster:
    return Cluster(name=name, gpu=GpuNodes(count=832, gpus_per_node=16),
                   backend=Backend(rails=16, groups=8, spines=8, leaf_ports=128, spine_ports=256, uplink_speed=400,
                                   allow_oversubscription=True),
                   frontend=Frontend(leaves=8, leaf_ports=128, spine_ports=128, storage_servers=40, gateways=2),
                   mgmt=Management(ports=1024),
                   addressing=Addressing(be="10.0.0.0/12", fe="10.16.0.0/12", mgmt="172.16.0.0/16"))
