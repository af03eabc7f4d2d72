"""A declaration written out as the Python an engineer would write: each class with only the
fields that differ from their defaults, short ones on one line, long tuples one item a line.
Loading the text back (a TOPOLOGY .py file) gives an equal Cluster (`fablab import`). A HwSku is
written as the call that gives it again: `HwSku.named(...)` for one of fablab's catalogue,
`HwSku.from_sonic(...)` for one read from SONiC's files."""
from __future__ import annotations

import dataclasses
from enum import Enum

from harness.core.declarations import Cluster
from harness.core.defaults import FOLLOWING, Derived, derive
from harness.core.errors import InputError
from harness.core.hwsku import HwSku, hwsku, known

WIDTH = 110


def declaration_source(cluster: Cluster, doc: str) -> str:
    used: set[str] = set()
    body = _expr(_as_derived(cluster), 0, used)
    names = ", ".join(sorted(used))
    return (f'"""{doc}"""\nfrom __future__ import annotations\n\nfrom harness import {names}\n\n'
            f"cluster = {body}\n")


def _as_derived(cluster: Cluster) -> Cluster:
    """The backend fields that hold what they default to from the rest (harness.core.defaults)
    marked so, and left out: loaded back, they are derived again the same."""
    be = cluster.backend
    same = {n: derive(cluster.gpu, be, (n,))[n] for n in FOLLOWING}
    return dataclasses.replace(cluster, backend=dataclasses.replace(
        be, **{n: v for n, v in same.items() if getattr(be, n) == v}))


def _expr(obj: object, indent: int, used: set[str]) -> str:
    if isinstance(obj, HwSku):
        used.add("HwSku")
        return _hwsku(obj)
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        used.add(type(obj).__name__)
        parts = [f"{f.name}={_expr(getattr(obj, f.name), indent + 4, used)}" for f in dataclasses.fields(obj)
                 if f.init and getattr(obj, f.name) != _default(f) and not isinstance(getattr(obj, f.name), Derived)]
        return _wrap(f"{type(obj).__name__}(", parts, ")", indent)
    if isinstance(obj, tuple):
        items = [_expr(x, indent + 4, used) for x in obj]
        if len(items) == 1:
            return f"({items[0]},)"
        return _wrap("(", items, ")", indent)
    if isinstance(obj, Enum):
        return repr(obj.value)
    return repr(obj)


def _hwsku(sku: HwSku) -> str:
    if known(sku.name) and hwsku(sku.name) == sku:
        return f"HwSku.named({sku.name!r})"
    if sku.source:
        return f"HwSku.from_sonic({sku.source!r})"
    raise InputError(f"HwSKU {sku.name} was made in Python, neither fablab's nor read from SONiC's files, so it "
                     "cannot be written as a declaration: name one of `fablab hwskus`, or read it with "
                     "HwSku.from_sonic(DIR)")


def _default(f: dataclasses.Field) -> object:
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return dataclasses.MISSING


def _wrap(head: str, parts: list[str], tail: str, indent: int) -> str:
    one = f"{head}{', '.join(parts)}{tail}"
    if len(one) + indent <= WIDTH and "\n" not in one:
        return one
    pad = " " * (indent + 4)
    return head + "\n" + "".join(f"{pad}{p},\n" for p in parts) + " " * indent + tail
