"""fablab: declare, render, boot and prove AI data-center fabrics (FE and BE).

Every declaration class is importable from here: `from harness import Cluster, Backend, ...`.
"""
from __future__ import annotations

from harness.core.errors import HarnessError, LabError, PrerequisiteError, Problem, RenderError, TopologyError
from harness.core.model import (Acl, AclRule, Addressing, Backend, Bfd, Cable, Cluster, Fabric, Frontend, GpuNodes,
                                Hardware, Link, Lossless, Management, Node, Objectives, Plane, Role, Routing, Tenant,
                                build)
from harness.core.plan import Plan, make_plan

__version__ = "0.1.0"

__all__ = [
    "Acl", "AclRule", "Addressing", "Backend", "Bfd", "Cable", "Cluster", "Frontend", "GpuNodes", "Hardware",
    "Lossless", "Management", "Objectives", "Routing", "Tenant",
    "Fabric", "Link", "Node", "Plane", "Role", "Plan", "build", "make_plan",
    "HarnessError", "LabError", "PrerequisiteError", "Problem", "RenderError", "TopologyError",
]
