"""A declaration written out as the Python an engineer would write: each class with only the
fields that differ from their defaults, short ones on one line, long tuples one item a line.
Loading the text back (a TOPOLOGY .py file) gives an equal Cluster (`fablab import`)."""
from __future__ import annotations

import dataclasses
from enum import Enum

from harness.core.declarations import Cluster

WIDTH = 110


def declaration_source(cluster: Cluster, doc: str) -> str:
    used: set[str] = set()
    body = _expr(cluster, 0, used)
    names = ", ".join(sorted(used))
    return (f'"""{doc}"""\nfrom __future__ import annotations\n\nfrom harness import {names}\n\n'
            f"cluster = {body}\n")


def _expr(obj: object, indent: int, used: set[str]) -> str:
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        used.add(type(obj).__name__)
        parts = [f"{f.name}={_expr(getattr(obj, f.name), indent + 4, used)}" for f in dataclasses.fields(obj)
                 if f.init and getattr(obj, f.name) != _default(f)]
        return _wrap(f"{type(obj).__name__}(", parts, ")", indent)
    if isinstance(obj, tuple):
        items = [_expr(x, indent + 4, used) for x in obj]
        if len(items) == 1:
            return f"({items[0]},)"
        return _wrap("(", items, ")", indent)
    if isinstance(obj, Enum):
        return repr(obj.value)
    return repr(obj)


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
