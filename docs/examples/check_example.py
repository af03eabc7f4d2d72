"""An example check: every host NIC's MTU in its node's kernel is the plan's (docs/adding-a-check.md).

A case is two halves: `measure` asks the lab (here, each host's kernel) and returns what it saw,
`judge` compares that with the plan, with no lab: so the verdict is tested on recorded
observations (tests/unit/test_check_plugin.py) and the lab test only has to show the measurement.
"""
from __future__ import annotations

from dataclasses import dataclass

from harness.checks.base import Case, Check, Observation, Outcome
from harness.core.model import Plane
from harness.core.plan import Plan
from harness.plumbing.labview import LabView


@dataclass(frozen=True)
class HostMtus(Observation):
    mtus: dict[str, dict[str, int]]  # host -> interface -> MTU, as the host's kernel had it


@dataclass(frozen=True)
class HostMtuResult(Outcome):
    nics: int  # host NICs compared with the plan
    differ: dict[str, int | None]  # "host:nic" -> the MTU found where it is not the plan's (None: no such link)

    held, broken = "every host NIC at its planned MTU", "NOT at the planned MTU"

    def sentence(self) -> str:
        return f"{self.nics} host NICs compared with the plan, {len(self.differ)} differ"


def measure_host_mtu(lab: LabView) -> HostMtus:
    return HostMtus({host.name: lab.mtus(host.name) for host in lab.plan.hosts})


def judge_host_mtu(plan: Plan, seen: HostMtus) -> HostMtuResult:
    differ: dict[str, int | None] = {}
    problems, nics = [], 0
    for host in plan.hosts:
        kernel = seen.mtus.get(host.name, {})
        for nic in host.nics:
            if nic.plane is Plane.MGMT:
                continue  # the management port: a runtime may name it otherwise (containerlab: eth0)
            nics += 1
            if kernel.get(nic.name) != nic.mtu:
                differ[f"{host.name}:{nic.name}"] = kernel.get(nic.name)
                problems.append(f"{host.name}:{nic.name} has MTU {kernel.get(nic.name)}, the plan's is {nic.mtu}")
    return HostMtuResult(nics=nics, differ=differ, seconds=seen.seconds, problems=tuple(problems))


CHECK = Check("host-mtu", "every host NIC's MTU in the kernel is the plan's",
              (Case("host-mtu", measure_host_mtu, judge_host_mtu),))
