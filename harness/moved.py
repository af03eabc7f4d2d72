"""Module paths that moved, kept importable for one release with a DeprecationWarning.

`from harness.model import Cluster` was shown in the README and in engineers' topology files
before the package was split into floors (core/, plumbing/, report/ ...); such an import keeps
working, gives the module at its new path (the same module object, so classes compare equal)
and warns once per process, naming the new path. These paths go in fablab 0.2.
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import warnings

REMOVED_IN = "0.2"

MOVED: dict[str, str] = {  # old module -> where it lives now
    "harness.acl": "harness.core.acl",
    "harness.checks.ecmp_bound": "harness.checks.common.bounds",
    "harness.checks.lossless_drops": "harness.checks.common.drops",
    "harness.cli_audit": "harness.cli.audit",
    "harness.cli_lab": "harness.cli.labs",
    "harness.cli_rdma": "harness.cli.rdma",
    "harness.codec": "harness.core.codec",
    "harness.console": "harness.cli.console",
    "harness.declarations": "harness.core.declarations",
    "harness.declcheck": "harness.core.declcheck",
    "harness.declguard": "harness.core.declguard",
    "harness.errors": "harness.core.errors",
    "harness.hwsku": "harness.core.hwsku",
    "harness.interrupt": "harness.plumbing.interrupt",
    "harness.labview": "harness.plumbing.labview",
    "harness.layout": "harness.core.layout",
    "harness.mgmtnet": "harness.core.mgmtnet",
    "harness.model": "harness.core.model",
    "harness.namespaces": "harness.plumbing.namespaces",
    "harness.nsenter": "harness.plumbing.namespaces",
    "harness.plan": "harness.core.plan",
    "harness.planned": "harness.core.planned",
    "harness.priority": "harness.plumbing.priority",
    "harness.provenance": "harness.report.provenance",
    "harness.report_html": "harness.report.html",
    "harness.tenancy": "harness.core.tenancy",
    "harness.validate": "harness.cli.validate",
    "harness.wait": "harness.plumbing.wait",
    "harness.checks.jumbo": "harness.checks.lossless",
    "harness.checks.ecmp_stages": "harness.checks.ecmp_superspine",
    "harness.checks.sabotage": "harness.faults.sabotage",
    "harness.checks.ecmp_faults": "harness.faults.sabotage",
    "harness.checks.faults": "harness.faults.store",
    "harness.checks.mystery": "harness.faults.mystery",
    "harness.checks.fault_places": "harness.faults.places",
}


class _Alias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds an old path and loads it as the module at the new one."""

    def __init__(self) -> None:
        self._specs: dict[str, importlib.machinery.ModuleSpec | None] = {}  # old path -> the module's own spec

    def find_spec(self, name, path=None, target=None):
        if name not in MOVED:
            return None
        return importlib.machinery.ModuleSpec(name, self)

    def create_module(self, spec):
        new = MOVED[spec.name]
        warnings.warn(f"{spec.name} moved to {new} (or import the name from `harness`); the old path goes in "
                      f"fablab {REMOVED_IN}", DeprecationWarning, stacklevel=_caller_level())
        module = importlib.import_module(new)
        self._specs[spec.name] = module.__spec__
        return module

    def exec_module(self, module) -> None:
        """Nothing to run: the module at its new path is already loaded. importlib has set its
        __spec__ to the old path's: the module keeps its own."""
        module.__spec__ = self._specs.pop(module.__spec__.name, module.__spec__)


def _caller_level() -> int:
    """The stack level of the `import` statement, past importlib's own frames."""
    frame, level = sys._getframe(1), 1
    while frame is not None and (frame.f_code.co_filename.startswith("<frozen importlib")
                                 or frame.f_code.co_filename == __file__):
        frame, level = frame.f_back, level + 1
    return level


def install() -> None:
    if not any(isinstance(f, _Alias) for f in sys.meta_path):
        sys.meta_path.append(_Alias())
