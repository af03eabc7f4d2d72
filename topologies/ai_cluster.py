"""The reference cluster the labs run on.

8 GPU nodes × 4 GPUs. BE rail-optimized: 2 groups of 4 nodes, one leaf per rail per group
(8 leaves), 2 spines, so same-rail traffic between groups crosses an ECMP spine tier. Each
leaf has 4 × 400G down and 2 × 800G up: non-blocking 1:1. FE: a 2 × 2 Clos carrying the 8
FE NICs, 2 storage servers and 2 gateways. FE tenants, each an EVPN/VXLAN segment over both
FE leaves: "train" and "infer" each hold every fourth GPU node and a gateway of its own (one
gateway in both would be a VLAN trunk, which the netns runtime's kernel cannot build); the
other GPU nodes' FE NICs stay on routed /31s. The storage plane is a tenant too: every GPU
node's storage NIC (st0, on its FE leaf) and the storage servers. The edge ACL lets GPU
nodes reach storage on NFS and S3 only, and nobody SSH into a gateway.
Every node on the OOB management switch.
"""
from __future__ import annotations

from dataclasses import replace

from harness.core.model import Acl, AclRule, Backend, Cluster, Frontend, GpuNodes, Tenant, gpu_node_names
from topologies.roce import roce_tuned

ACL = Acl(rules=(
    AclRule("permit", src="role:gpu", dst="role:storage", protocol="tcp", dst_ports="2049"),
    AclRule("permit", src="role:gpu", dst="role:storage", protocol="tcp", dst_ports="9000-9100"),
    AclRule("deny", src="role:gpu", dst="role:storage"),
    AclRule("deny", src="any", dst="role:gateway", protocol="tcp", dst_ports="22"),
))


def ai_cluster(name: str = "ai-cluster", nodes: int = 8, gpus_per_node: int = 4, groups: int = 2,
               spines: int = 2) -> Cluster:
    base = Cluster(
        name=name,
        lossless=roce_tuned(),
        gpu=GpuNodes(count=nodes, gpus_per_node=gpus_per_node, nic_speed=400, fe_speed=100),
        backend=Backend(kind="rail-optimized", rails=gpus_per_node, groups=groups, spines=spines,
                        leaf_ports=64, spine_ports=64, uplink_speed=800, uplinks_per_spine=1),
        frontend=Frontend(spines=2, leaves=2, storage_servers=2, gateways=2, storage_nics=True),
    )
    gpus = gpu_node_names(base)
    tenants = (Tenant("train", vni=10100, members=(*gpus[0::4], "gw1")),
               Tenant("infer", vni=10200, members=(*gpus[1::4], "gw2")),
               # the storage plane: every GPU node's storage NIC and the storage servers
               Tenant("storage", vni=10900, members=("role:gpu", "role:storage"), nic="st0"))
    return replace(base, tenants=tenants, acl=ACL)
