"""Find a cluster declaration by built-in name, by the path of a Python file, or of a cabling plan."""
from __future__ import annotations

import dataclasses
import importlib.util
import sys
from pathlib import Path

from harness.core import declguard
from harness.core.cabling.declare import cluster_of, name_of
from harness.core.cabling.load import is_plan, read_plan
from harness.core.errors import HarnessError, InputError, Problem, TopologyError
from harness.core.hwsku import HwSku, anchored, find as find_hwsku, known as known_hwsku
from harness.core.model import Cabling, Cluster, Fabric, Hardware, build


TOPOLOGY_HELP = ("built-in name, a .py file, or a cabling plan (sonic-mgmt's *_links.csv, a cable list .csv, "
                 "a .clab.yml)")


def builtins() -> dict:
    from topologies import BUILTINS  # the registry lives with the topologies

    return BUILTINS


def load_cluster(ref: str) -> Cluster:
    """A built-in name, a .py file defining `cluster` (a Cluster) or `build()` returning one,
    or a cabling plan (sonic-mgmt's links CSV, a cable list CSV, a containerlab file): the
    declaration it is, with its own names and ports (harness/core/cabling/)."""
    registry = builtins()
    if ref in registry:
        return registry[ref]()
    path = Path(ref)
    if is_plan(path):
        return cluster_of(read_plan(path), name_of(path), source=str(path))
    if path.suffix == ".py" or path.exists():
        return _from_file(path)
    raise InputError(f"unknown topology {ref!r}; built-ins: {', '.join(sorted(registry))} "
                     "(or give the path of a .py file that defines `cluster` or `build()`, or of a cabling plan: "
                     "a sonic-mgmt links CSV, a cable list CSV, a containerlab file)")


def _from_file(path: Path) -> Cluster:
    if not path.is_file():
        raise InputError(f"no topology file at {path}")
    name = f"fablab_topology_{abs(hash(path.resolve()))}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise InputError(f"{path} is not a loadable Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    # No __pycache__ beside the engineer's file: reading a declaration writes nothing.
    writes, sys.dont_write_bytecode = sys.dont_write_bytecode, True
    try:
        # A declaration class called wrongly (a misspelt field) is recorded and the file read on,
        # so that its other problems are found too (harness.core.declguard).
        with declguard.collecting(str(path)) as calls:
            spec.loader.exec_module(module)
            obj = getattr(module, "cluster", None)
            if obj is None and callable(getattr(module, "build", None)):
                obj = module.build()
    except TopologyError as e:  # a declaration class called with a field it has not (or without one it needs)
        raise TopologyError(e.problems, source=_where(path, e)) from None
    except HarnessError:
        raise
    except Exception as e:  # the user's file: report what broke in it, with where
        raise InputError(f"{_where(path, e)}: {type(e).__name__}: {e}{_near_name(e)}{_and(calls)}") from e
    finally:
        sys.dont_write_bytecode = writes
        sys.modules.pop(name, None)
    if calls:
        _refuse(path, obj, calls)
    if isinstance(obj, Fabric):
        obj = obj.cluster
    if obj is None:
        raise InputError(f"{path} defines no cluster: set `cluster = Cluster(...)` "
                         "or define `build()` returning a Cluster")
    if not isinstance(obj, Cluster):
        raise TopologyError([Problem("cluster", f"{path} gives a {type(obj).__name__}, not a Cluster",
                                     "set `cluster = Cluster(name=..., ...)` or return one from `build()`")],
                            source=str(path))
    return _hwskus_from(obj, path.parent)


def _hwskus_from(cluster: Cluster, folder: Path) -> Cluster:
    """A HwSKU the declaration names by a relative path is the folder's from the declaration's
    own folder, as a plan's is from the plan's. One of `Hardware` fablab does not ship is read
    now (a folder it cannot read is left to build to name), so that the declaration loaded is
    the one built, kept in a lab's state and hashed (`fablab check --against`)."""
    changes: dict = {}
    hw, cab = cluster.hardware, cluster.cabling
    if isinstance(hw, Hardware):
        read = {}
        for f in dataclasses.fields(hw):
            value = getattr(hw, f.name)
            if isinstance(value, str) and not known_hwsku(value):
                ref = anchored(value, folder)
                try:
                    found = find_hwsku(ref)
                except TopologyError:
                    found = None
                read[f.name] = found if isinstance(found, HwSku) else ref
        if read:
            changes["hardware"] = dataclasses.replace(hw, **read)
    pairs = cab.hwskus if isinstance(cab, Cabling) else None
    if isinstance(pairs, tuple) and all(isinstance(p, tuple) and len(p) == 2 and all(isinstance(x, str) for x in p)
                                        for p in pairs):
        moved = tuple((switch, anchored(ref, folder)) for switch, ref in pairs)
        if moved != pairs:
            changes["cabling"] = dataclasses.replace(cab, hwskus=moved)
    return dataclasses.replace(cluster, **changes) if changes else cluster


def _refuse(path: Path, obj: object, calls: list) -> None:
    """A file that called a declaration class wrongly: those problems and every other one."""
    if isinstance(obj, Fabric):
        obj = obj.cluster
    if not isinstance(obj, Cluster):
        problems = declguard.placed(None, calls).problems
        raise TopologyError(problems, source=str(path))
    placed = declguard.placed(obj, calls)
    try:
        build(obj, placed)
    except TopologyError as e:
        raise TopologyError(e.problems, source=str(path)) from None
    raise TopologyError(placed.problems, source=str(path))  # not reached: build refuses what it is given


def _and(calls: list) -> str:
    """The wrong calls recorded before another error stopped the file, said with it."""
    problems = declguard.placed(None, calls).problems
    return "".join(f"\n  - {p}" for p in problems)


def _near_name(e: Exception) -> str:
    """For a misspelt name of a declaration class (`Backnd(...)`), the one meant."""
    import difflib

    from harness.core import model

    name = getattr(e, "name", None) if isinstance(e, NameError) else None
    if not isinstance(name, str):
        return ""
    near = difflib.get_close_matches(name, [n for n in dir(model) if not n.startswith("_")], n=1, cutoff=0.7)
    return f" (did you mean {near[0]!r}, from harness.core.model?)" if near else ""


def _where(path: Path, e: BaseException) -> str:
    """`path, line N`: the last line of the user's file the error went through."""
    line = None
    tb = e.__traceback__
    target = path.resolve()
    while tb is not None:
        try:
            if Path(tb.tb_frame.f_code.co_filename).resolve() == target:
                line = tb.tb_lineno
        except (OSError, ValueError):
            pass
        tb = tb.tb_next
    return f"{path}, line {line}" if line is not None else str(path)


def load_fabric(ref: str) -> Fabric:
    cluster = load_cluster(ref)
    try:
        return build(cluster)
    except TopologyError as e:
        if ref != cluster.name:
            name = cluster.name if isinstance(cluster.name, str) else "its name unusable"
            raise TopologyError(e.problems, source=f"{ref} ({name})") from None
        raise
