"""An example fault: a GPU NIC taken administratively down (docs/architecture.md, "Adding a fault").

A fault follows one protocol (harness/faults/protocol.py): `apply(lab, target)` changes the
running lab and returns what it did and the state its undo needs; `undo(lab, target, state)`
puts the lab back from that state alone, so `fablab fix` can undo it from another process. It
names the check case that must fail while it is in place: here the cabling audit, which reads
every cable end's state in the kernel.
"""
from __future__ import annotations

from harness.core.model import Plane
from harness.core.plan import Plan
from harness.faults.protocol import Applied, Fault, NoState
from harness.faults.targets import Nic
from harness.plumbing.labview import LabView


def _first_gpu_nic(plan: Plan) -> Nic | None:
    return next((Nic(h.name, n.name) for h in plan.hosts for n in h.nics if n.plane is Plane.BE), None)


def _down(lab: LabView, target: Nic) -> Applied:
    lab.ns_exec(target.host, ["ip", "link", "set", target.nic, "down"], check=True)
    return Applied(f"{target.host}:{target.nic} administratively down", NoState())


def _up(lab: LabView, target: Nic, state: NoState) -> None:
    lab.ns_exec(target.host, ["ip", "link", "set", target.nic, "up"], check=True)


NIC_DOWN = Fault(name="nic-down", teaches="cabling", what="a GPU NIC set administratively down",
                 caught_by="cabling", takes=Nic, state=NoState, default=_first_gpu_nic, do=_down, undo_=_up)
