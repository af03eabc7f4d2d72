"""fablab: declare, render, boot and prove AI data-center fabrics (FE and BE).

The public surface: every name a topology file or a Python user needs is importable from here
(`from harness import Cluster, Backend, Lab, run_case`), whatever module it lives in; docs/python.md
lists them and tests/architecture/test_public_surface.py imports each. Only the errors load with the
package; the declarations, the lab, the checks and the catalog load when first named, so
`import harness`, which every traffic process started in a lab namespace pays, stays light.
Module paths that moved keep working for a release (harness.moved).
"""
from __future__ import annotations

import importlib

from harness import moved
from harness.core.errors import (HarnessError, InputError, LabError, PrerequisiteError, Problem, RenderError,
                                 TopologyError)

__version__ = "0.1.0"

moved.install()

# Names of upper floors, loaded on first use (PEP 562): name -> module that defines it.
LAZY: dict[str, str] = {
    **dict.fromkeys(("Acl", "AclRule", "Addressing", "Backend", "Bfd", "Cable", "Cabling", "Cluster", "Fabric",
                     "Dcqcn", "Ecn", "Frontend", "GpuNodes", "Hardware", "Link", "Lossless", "Management", "Node", "Objectives",
                     "Plane", "Role", "Routing", "Tenant", "build"), "harness.core.model"),
    "HwSku": "harness.core.hwsku",
    "Plan": "harness.core.plan",
    "make_plan": "harness.core.plan",
    "Lab": "harness.lab",
    "LabView": "harness.plumbing.labview",
    "load_cluster": "harness.catalog",
    "Check": "harness.checks.base",
    "Case": "harness.checks.base",
    "Observation": "harness.checks.base",
    "Outcome": "harness.checks.base",
    "Verdict": "harness.checks.base",
    "NotMeasurable": "harness.checks.base",
    "run_case": "harness.checks.registry",
    "run_checks": "harness.checks.registry",
}

__all__ = [
    "HarnessError", "InputError", "LabError", "PrerequisiteError", "Problem", "RenderError", "TopologyError",
    *LAZY,
]


def __getattr__(name: str):
    if name in LAZY:
        value = getattr(importlib.import_module(LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'harness' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(LAZY))
