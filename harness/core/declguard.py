"""Declaration classes called wrongly (an unknown field, a missing one, too many values by
position) raise DeclarationArgumentError naming their section and the fix, not Python's bare
TypeError: the CLI then reports a bad declaration (exit 2), with "did you mean"."""
from __future__ import annotations

import difflib
import functools
import typing
from dataclasses import MISSING, fields

from harness.core.errors import DeclarationArgumentError, Problem


def guard(root: type) -> dict[type, str]:
    """Guard `root` and every declaration class under it; return each class and where it sits
    (`backend`, `cables`, `acl.rules`)."""
    sections = _section_names(root)
    for cls, section in sections.items():
        _guard_init(cls, section)
    return sections


def _section_names(root: type) -> dict[type, str]:
    """Each declaration class and where it sits in a Cluster (`backend`, `cables`, `acl.rules`)."""
    out: dict[type, str] = {root: "cluster"}
    todo = [(root, "")]
    while todo:
        cls, path = todo.pop()
        for name, t in typing.get_type_hints(cls).items():
            for arg in (t, *typing.get_args(t)):
                if isinstance(arg, type) and hasattr(arg, "__dataclass_fields__") and arg not in out:
                    out[arg] = f"{path}.{name}" if path else name
                    todo.append((arg, out[arg]))
    return out


def _guard_init(cls: type, section: str) -> None:
    """A wrong call of a declaration class (an unknown field, a missing one, too many values
    by position) raises DeclarationArgumentError naming its section and the fix, not Python's
    bare TypeError: the CLI then reports it as a bad declaration (exit 2)."""
    init = cls.__init__

    @functools.wraps(init)
    def __init__(self, *args, **kwargs) -> None:
        try:
            init(self, *args, **kwargs)
        except TypeError:
            problems = call_problems(cls, section, args, kwargs)
            if not problems:
                raise
            raise DeclarationArgumentError(problems, source=f"{cls.__name__}(...)") from None

    cls.__init__ = __init__


def call_problems(cls: type, section: str, args: tuple, kwargs: dict) -> list[Problem]:
    """What is wrong with calling declaration class `cls` with these arguments."""
    names = [f.name for f in fields(cls) if f.init]
    shown = f"{cls.__name__}'s fields: {', '.join(names)}"
    p: list[Problem] = []
    if len(args) > len(names):
        p.append(Problem(section, f"{cls.__name__}() takes {len(names)} values by position, {len(args)} were given",
                         f"name them; {shown}"))
    by_position = set(names[:len(args)])
    meant = set()
    for key in kwargs:
        if key not in names:
            near = difflib.get_close_matches(key, names, n=1, cutoff=0.6)
            meant.update(near)
            p.append(Problem(section, f"{cls.__name__} has no field {key!r}",
                             (f"did you mean {near[0]!r}? " if near else "") + shown))
        elif key in by_position:
            p.append(Problem(section, f"{cls.__name__}() got {key!r} twice, by position and by name",
                             f"give it once; {shown}"))
    missing = [f.name for f in fields(cls) if f.init and f.default is MISSING and f.default_factory is MISSING
               and f.name not in by_position and f.name not in kwargs and f.name not in meant]
    if missing:
        p.append(Problem(section, f"{cls.__name__}() needs {' and '.join(map(repr, missing))}", shown))
    return p
