"""4,096 GPUs: 512 GPU nodes × 8, rail-optimized in 4 pods under a super-spine tier.

Each pod is xlarge's fabric: 8 groups of 16 nodes, a leaf per rail per group (64 leaves,
16 × 400G down, 16 × 400G up) and 16 spines. Each spine has its pod's 64 leaves below and
64 × 400G up, 2 links to each of 32 super-spines; each super-spine has 128 × 400G down, 2 to
every spine of every pod. Non-blocking at both stages: 256 + 64 + 32 = 352 BE switches,
4,096 leaf-spine and 4,096 spine-super-spine links. FE: 12 leaves under 2 spines, 8 CPU
servers, 4 storage servers, 2 gateways; a 1,024-port management switch.

The BE is declared lossless (PFC, ECN and the watchdog are in every switch's config_db.json)
but not emulated: the lossless data plane's schedulers and programs on 24,576 ports take the
kernel minutes here (each new tc block is looked for in a list of every one on the machine;
docs/performance.md), so the BE links are lossy at veth speed and the lossless checks say not
measurable. Routing, ECMP at both stages, isolation and cabling are what this size shows.

    fablab up docs/examples/gpu4096.py
"""
from __future__ import annotations

from harness import Backend, Cluster, Frontend, GpuNodes, Lossless, Management


def gpu4096(name: str = "gpu4096") -> Cluster:
    return Cluster(
        name=name,
        gpu=GpuNodes(count=512, gpus_per_node=8),
        backend=Backend(kind="rail-optimized", rails=8, groups=8, spines=16, pods=4, superspines=32,
                        uplinks_per_superspine=2, leaf_ports=64, spine_ports=128, superspine_ports=128,
                        uplink_speed=400),
        frontend=Frontend(spines=2, leaves=12, leaf_ports=64, cpu_servers=8, storage_servers=4, gateways=2),
        mgmt=Management(ports=1024),
        lossless=Lossless(emulate=False),
    )


cluster = gpu4096()
