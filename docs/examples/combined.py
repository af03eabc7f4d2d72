"""Every design of docs/designs.md in one declaration: `fablab validate docs/examples/combined.py`.

2 pods joined by 2 super-spines, each pod one group of leaves that carry two rails each; a
dual-homed frontend (4 leaves in 2 pairs); the BE leaves declared on 64 × 800G cages, so their
400G host ports are broken out of them (BREAKOUT_CFG). labs/test_combined.py boots it.
"""
from harness import Backend, Cluster, Frontend, GpuNodes, Hardware

cluster = Cluster(
    name="combined",
    gpu=GpuNodes(count=4, gpus_per_node=4, nic_speed=400, fe_speed=100),
    backend=Backend(kind="rail-optimized", rails=4, rails_per_leaf=2, groups=1, spines=2, pods=2, superspines=2,
                    uplinks_per_spine=2, uplinks_per_superspine=2, leaf_ports=64, spine_ports=64,
                    superspine_ports=64, uplink_speed=800),
    frontend=Frontend(spines=2, leaves=4, storage_servers=1, gateways=1, dual_homed=True),
    hardware=Hardware(be_leaf="Arista-7060X6-64PE"),
)
