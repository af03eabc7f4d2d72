"""The kinds fablab names by word on the command line and in state files, as enums: which
runtime boots a lab and where a lab is in its life. StrEnums, so a member prints, compares
and serialises as its word ("netns", "up"), and a state file written before stays readable."""
from __future__ import annotations

from enum import StrEnum


class RuntimeName(StrEnum):
    NETNS = "netns"  # network namespaces + FRR on this machine (the default; what CI runs)
    CLAB = "clab"  # containerlab with docker-sonic-vs


class LabPhase(StrEnum):
    BOOTING = "booting"
    UP = "up"
    FAILED = "failed"


class NodeKind(StrEnum):
    """What runs in a node, apart from the runtime that boots it (as containerlab keeps a node
    kind apart from the container runtime): how its config and its ACL are read."""

    SONIC_VS = "sonic-vs"  # docker-sonic-vs: CONFIG_DB in redis, SONiC's CLI, FRR in the bgp container
    FRR_NETNS = "frr-netns"  # FRR in a network namespace: config_db.json on disk, nftables for the ACL
    LINUX_HOST = "linux"  # a server: its kernel and its tools, no switch config
