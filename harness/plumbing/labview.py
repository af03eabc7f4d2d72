"""What a check may use of a running lab: `LabView`, the typed face of `harness.lab.Lab`.

Checks, observers, traffic helpers, the RDMA lane and the sabotage faults take a `lab:
LabView`, not a `Lab`: they read the plan, act on a node's namespace (netlink, sysctls, a host
tool), ask FRR and the kernel, and fail or heal a cable, on whatever runtime; they never see
the lab's state on disk or the runtime behind it (DESIGN.md: "The Lab is the only door").
`Lab` satisfies it (tests/architecture/test_lab_door.py); a unit test's stand-in needs only what its check
reads. Nothing here is imported at run time but `typing`, and it names only core's types (under
TYPE_CHECKING), so any layer may import it and no import runs up from it.
"""
from __future__ import annotations

import subprocess
from collections.abc import Callable, Collection, Sequence
from ipaddress import IPv4Network
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, TypeVar, runtime_checkable

if TYPE_CHECKING:
    from pyroute2 import IPRoute

    from harness.core.capabilities import Feature
    from harness.core.lossless_counters import LosslessCounters
    from harness.core.observed import (BfdPeer, BgpPeer, CablingScope, Counters, LldpNeighbour, PortState, Route,
                                       Shortfall)
    from harness.core.plan import CableRow, Plan

T = TypeVar("T")


@runtime_checkable
class LinkHandle(Protocol):
    """One cable of a running lab, as `LabView.link` gives it: carrier loss (down/up) and gray
    failure (gray/heal). `harness.lab.LinkHandle` is the one the runtimes act through."""

    @property
    def cable(self) -> CableRow: ...

    @property
    def ends(self) -> tuple[tuple[str, str], tuple[str, str]]: ...

    def down(self) -> None:
        """Carrier loss at the upper end (spine side): the leaf below sees its carrier drop."""
        ...

    def up(self) -> None: ...

    def gray(self) -> None:
        """Both ends drop every frame they receive; carriers stay up, only BFD can tell."""
        ...

    def heal(self) -> None: ...


@runtime_checkable
class LabView(Protocol):
    # -- what it is
    @property
    def name(self) -> str: ...

    @property
    def plan(self) -> Plan:
        """The plan as the lab's runtime runs it."""
        ...

    @property
    def run_dir(self) -> Path:
        """The lab's own directory, for files a run keeps (the RDMA lane's VM workdirs)."""
        ...

    extra_cables: list[CableRow]  # cabled at runtime by fablab itself (the cabling faults, harness.faults.cabling)

    # -- a node's network namespace, from the host
    def check_node(self, node: str) -> None: ...

    def namespace(self, node: str) -> str: ...

    def ns_exec(self, node: str, argv: Sequence[str], check: bool = False, timeout: float | None = 60.0,
                input: str | None = None) -> subprocess.CompletedProcess: ...

    def netlink(self, node: str) -> IPRoute: ...

    def in_namespace(self, node: str, fn: Callable[[], T]) -> T: ...

    def sysctl(self, node: str, key: str) -> str: ...

    def set_sysctls(self, node: str, values: dict[str, str | int]) -> None: ...

    def vtysh(self, node: str, *commands: str) -> str: ...

    # -- cables
    def all_cables(self) -> list[CableRow]: ...

    def cables(self, a: str, b: str) -> list[CableRow]: ...

    def link(self, a: str, b: str, index: int = 0) -> LinkHandle: ...

    def set_carriers(self, handles: Sequence[LinkHandle], up: bool) -> None: ...

    def kernel_port_names(self) -> dict[tuple[str, str], str]:
        """(node, kernel interface) -> the plan's port, where the runtime names them apart."""
        ...

    def cabling_scope(self) -> CablingScope:
        """What the cabling audit can see on this runtime."""
        ...

    def lldp(self, node: str) -> tuple[LldpNeighbour, ...] | None:
        """The LLDP neighbours the node hears now; None where no LLDP agent answers in it."""
        ...

    def port_states(self, node: str) -> tuple[PortState, ...]:
        """Every interface of the node as its kernel lists it (up, carrier, MTU, bridge)."""
        ...

    # -- observation
    def counters(self, node: str, ifname: str | None = None) -> dict[str, Counters]: ...

    def acl_counters(self, switch: str) -> dict[str, int]: ...

    def set_config_db(self, switch: str, table: str, key: str, field: str, value: str | None) -> str | None: ...

    def acl_data_path(self, switch: str) -> str | None:
        """None where the switch's data plane filters by its edge ACL; else why not."""
        ...

    def lacks(self, feature: Feature) -> str | None:
        """None where the lab's data plane does `feature` (harness.core.capabilities); else why not."""
        ...

    def acl_rules(self, switch: str) -> dict[str, str]: ...

    def running_config_db(self, switch: str) -> dict: ...

    def set_pause_storm(self, node: str, port: str, priorities: frozenset[int]) -> None:
        """The BE port sends pause for `priorities` without end (empty: stops): a NIC gone wrong."""
        ...

    def lossless_counters(self) -> LosslessCounters:
        """Every BE port's PFC, queue and CNP counters (the lossless data plane's, now)."""
        ...

    def mtus(self, node: str) -> dict[str, int]: ...

    def routes(self, node: str) -> dict[IPv4Network, Route]: ...

    def route(self, node: str, prefix: IPv4Network) -> Route | None: ...

    def bgp_peers(self, node: str) -> tuple[BgpPeer, ...]: ...

    def bfd_peers(self, node: str) -> tuple[BfdPeer, ...]: ...

    def shortfalls(self) -> list[Shortfall]: ...

    def logs(self, nodes: Collection[str]) -> dict[str, str]:
        """What a failed case keeps of these nodes: log name -> its tail (none where unread)."""
        ...

    def daemon_pids(self, nodes: Collection[str]) -> dict[str, int]:
        """"node/daemon" -> host pid of these nodes' daemons (a data plane: "bfd-dp"); {} if unknown."""
        ...

    def address(self, node: str, nic: str) -> str: ...
