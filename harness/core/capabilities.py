"""What each runtime's data plane does, written as data (as netlab's devices/*.yml write a
device's features): a check reads this table, never a runtime's prose, to know whether what it
would measure can happen on the lab at all.

`DATA_PLANE[runtime][feature]` is None where the runtime's data plane does it, or why it does
not. A case that needs a feature the lab's runtime lacks is reported not applicable with that
reason (harness.checks.registry), never passed; a case that can prove part of its claim without
it (the tenants check proves the ACL as configuration on containerlab) asks `LabView.lacks`.
Facts about docker-sonic-vs: ../shared/SONIC-VS-FACTS.md; about the netns runtime:
../shared/MACHINE-FACTS.md and docs/runtimes.md.
"""
from __future__ import annotations

from enum import StrEnum

from harness.core.kinds import RuntimeName


class Feature(StrEnum):
    ACL_DATA_PATH = "acl-data-path"  # the FE edge ACL filters frames, not only loads
    LOSSLESS_DATA_PATH = "lossless-data-path"  # PFC pauses, ECN marks, schedulers shape RoCE traffic
    BFD_OFFLOAD = "bfd-offload"  # fablab's BFD data plane (harness/dataplane) stands in for a NIC's
    GRAY_FAILURE = "gray-failure"  # a cable end can drop every frame with its carrier up
    ECMP_L4_HASH = "ecmp-l4-hash"  # next hops chosen by the 5-tuple (the kernel's policy 1)
    OWN_TRAFFIC = "own-traffic"  # fablab sends its own frames from the nodes (probes, flows): not over SSH


DATA_PLANE: dict[RuntimeName, dict[Feature, str | None]] = {
    RuntimeName.NETNS: {
        Feature.ACL_DATA_PATH: None,  # nftables in the leaf's bridge
        Feature.LOSSLESS_DATA_PATH: None,  # fablab-lossless-dp: htb, tc programs, PFC frames (harness/dataplane)
        Feature.BFD_OFFLOAD: None,
        Feature.GRAY_FAILURE: None,  # nftables drops in the node's namespace
        Feature.ECMP_L4_HASH: None,
        Feature.OWN_TRAFFIC: None,
    },
    RuntimeName.CLAB: {
        Feature.ACL_DATA_PATH: ("docker-sonic-vs has no ACL data path (vslib accepts ACL_RULE and filters nothing; "
                                "only the VPP flavour does): the ACL is proven as configuration, every rule loaded "
                                "(show acl rule)"),
        Feature.LOSSLESS_DATA_PATH: ("docker-sonic-vs copies frames raw and the Linux kernel forwards: PFC, ECN, "
                                     "WRED, schedulers and buffers have no effect on traffic"),
        Feature.BFD_OFFLOAD: "docker-sonic-vs runs FRR's bfdd (started by fablab); there is no BFD offload",
        Feature.GRAY_FAILURE: None,  # host tools act in the container's namespace
        Feature.ECMP_L4_HASH: None,  # the container's kernel, fib_multipath_hash_policy=1
        Feature.OWN_TRAFFIC: None,  # AF_PACKET sockets in the container's namespace
    },
}


def lacks(runtime: RuntimeName | str, feature: Feature) -> str | None:
    """None where `runtime`'s data plane does `feature`; else why not."""
    return DATA_PLANE[RuntimeName(runtime)][feature]
