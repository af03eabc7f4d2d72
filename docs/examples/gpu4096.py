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

Three declarations make it converge on a machine of 2 cores (docs/performance.md, "4,096 GPUs"):
- the leaves advertise summaries of their host links (about 600 prefixes, not 4,500);
- BGP keepalive 10 s and hold 30 s: at FRR's 3 s and 9 s, 1,100 daemons on two cores left a
  bgpd without the CPU for 9 s while its sessions came up, and they were lost as fast as made;
- BFD at 1,000 ms × 3: 8,192 sessions at 200 ms would take about three quarters of both cores
  in BFD's data plane alone; at 1,000 ms they take 15-17 %, BFD's whole budget. A gray failure
  is then rerouted after 2.5-3.1 s (scripts/bench_gray.py), beyond the default gray objective
  (1,000 ms, what a RoCE job bears), which the example keeps: the failover check says so.

    fablab up docs/examples/gpu4096.py
"""
from __future__ import annotations

from harness import Backend, Bfd, Cluster, Frontend, GpuNodes, Lossless, Management, Routing


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
        routing=Routing(summarize_hosts=True, keepalive_s=10, hold_s=30),
        bfd=Bfd(interval_ms=1000, multiplier=3),
    )


cluster = gpu4096()
