"""An example check: every host NIC's MTU in its node's kernel is the plan's (docs/adding-a-check.md)."""
from __future__ import annotations

import time
from dataclasses import dataclass

from harness.checks.base import Case, Check, Outcome
from harness.plumbing.labview import LabView
from harness.core.model import Plane


@dataclass(frozen=True)
class HostMtuResult(Outcome):
    nics: int  # host NICs compared with the plan
    differ: dict[str, int | None]  # "host:nic" -> the MTU found where it is not the plan's (None: no such link)

    held, broken = "every host NIC at its planned MTU", "NOT at the planned MTU"

    def sentence(self) -> str:
        return f"{self.nics} host NICs compared with the plan, {len(self.differ)} differ"


def check_host_mtu(lab: LabView) -> HostMtuResult:
    t0, differ, problems, nics = time.monotonic(), {}, [], 0
    for host in lab.plan.hosts:
        kernel = lab.mtus(host.name)  # interface -> MTU, as the node's kernel has it now
        for nic in host.nics:
            if nic.plane is Plane.MGMT:
                continue  # the management port: a runtime may name it otherwise (containerlab: eth0)
            nics += 1
            if kernel.get(nic.name) != nic.mtu:
                differ[f"{host.name}:{nic.name}"] = kernel.get(nic.name)
                problems.append(f"{host.name}:{nic.name} has MTU {kernel.get(nic.name)}, the plan's is {nic.mtu}")
    return HostMtuResult(nics=nics, differ=differ, seconds=round(time.monotonic() - t0, 2), problems=tuple(problems))


CHECK = Check("host-mtu", "every host NIC's MTU in the kernel is the plan's", (Case("host-mtu", check_host_mtu),))
