"""Find a cluster declaration by built-in name or by the path of a Python file."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from harness.errors import HarnessError, TopologyError
from harness.model import Cluster, Fabric, build


def builtins() -> dict:
    from topologies import BUILTINS  # the registry lives with the topologies

    return BUILTINS


def load_cluster(ref: str) -> Cluster:
    """A built-in name, or a .py file defining `cluster` (a Cluster) or `build()` returning one."""
    registry = builtins()
    if ref in registry:
        return registry[ref]()
    path = Path(ref)
    if path.suffix == ".py" or path.exists():
        return _from_file(path)
    raise HarnessError(f"unknown topology {ref!r}; built-ins: {', '.join(sorted(registry))} "
                       "(or give the path of a .py file that defines `cluster` or `build()`)")


def _from_file(path: Path) -> Cluster:
    if not path.is_file():
        raise HarnessError(f"no topology file at {path}")
    name = f"fablab_topology_{abs(hash(path.resolve()))}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise HarnessError(f"{path} is not a loadable Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except HarnessError:
        raise
    except Exception as e:  # the user's file: report what broke in it, with where
        raise HarnessError(f"{path}: {type(e).__name__}: {e}") from e
    finally:
        sys.modules.pop(name, None)
    obj = getattr(module, "cluster", None)
    if obj is None and callable(getattr(module, "build", None)):
        obj = module.build()
    if isinstance(obj, Fabric):
        obj = obj.cluster
    if not isinstance(obj, Cluster):
        raise HarnessError(f"{path} defines no cluster: set `cluster = Cluster(...)` "
                           "or define `build()` returning a Cluster")
    return obj


def load_fabric(ref: str) -> Fabric:
    cluster = load_cluster(ref)
    try:
        return build(cluster)
    except TopologyError as e:
        if ref != cluster.name:
            raise TopologyError(e.problems, source=f"{ref} ({cluster.name})") from None
        raise
