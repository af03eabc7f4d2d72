"""fablab: declare, render, boot and prove AI data-center fabrics (FE and BE)."""
from __future__ import annotations

from harness.core.errors import HarnessError, LabError, PrerequisiteError, Problem, RenderError, TopologyError
from harness.core.model import (Addressing, Backend, Bfd, Cable, Cluster, Fabric, Frontend, GpuNodes, Link,
                           Management, Node, Plane, Role, build)
from harness.core.plan import Plan, make_plan

__version__ = "0.1.0"

__all__ = [
    "Addressing", "Backend", "Bfd", "Cable", "Cluster", "Fabric", "Frontend", "GpuNodes", "Link",
    "Management", "Node", "Plane", "Role", "Plan", "build", "make_plan",
    "HarnessError", "LabError", "PrerequisiteError", "Problem", "RenderError", "TopologyError",
]
