"""Declaration classes called wrongly (an unknown field, a missing one, too many values by
position) raise DeclarationArgumentError naming their section and the fix, not Python's bare
TypeError: the CLI then reports a bad declaration (exit 2), with "did you mean".

While a declaration file is read (`collecting(path)`, harness.catalog), a wrong call does not
stop the file: it is recorded (what is wrong, the file's line) and the object is made of the
rest (an unknown field dropped, a missing one None), so that the file's other problems are
found too; `placed()` then names each by where its object sits in the Cluster, and
model.build reports them with the others (a field not what was meant counts as failed: what
reads it waits).
"""
from __future__ import annotations

import contextvars
import difflib
import functools
import os
import sys
import typing
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import MISSING, dataclass, fields, is_dataclass

from harness.core.errors import DeclarationArgumentError, Problem


@dataclass(frozen=True)
class CallProblems:
    """Wrong calls of declaration classes in a file: their problems, and the fields (paths in
    the Cluster) that do not hold what was meant (misspelt, missing, given twice)."""

    problems: tuple[Problem, ...]
    failed: frozenset[str]


@dataclass(frozen=True)
class _BadCall:
    instance: object
    section: str
    found: tuple[tuple[str | None, Problem, tuple[str, ...]], ...]  # (field written, problem, fields failed)
    where: str  # `path, line N`


@dataclass(frozen=True)
class _Reading:
    path: str
    calls: list[_BadCall]


_READING: contextvars.ContextVar[_Reading | None] = contextvars.ContextVar("fablab_declguard", default=None)


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
    bare TypeError: the CLI then reports it as a bad declaration (exit 2). While a file is
    read (`collecting`), it is recorded instead and the object made of the rest."""
    init = cls.__init__

    @functools.wraps(init)
    def __init__(self, *args, **kwargs) -> None:
        try:
            init(self, *args, **kwargs)
        except TypeError:
            found = diagnose(cls, section, args, kwargs)
            if not found:
                raise
            reading = _READING.get()
            if reading is None:
                raise DeclarationArgumentError([p for _, p, _ in found], source=f"{cls.__name__}(...)") from None
            _make_anyway(self, cls, args, kwargs)
            reading.calls.append(_BadCall(self, section, tuple(found), _line_in(reading.path)))

    cls.__init__ = __init__


def call_problems(cls: type, section: str, args: tuple, kwargs: dict) -> list[Problem]:
    """What is wrong with calling declaration class `cls` with these arguments."""
    return [p for _, p, _ in diagnose(cls, section, args, kwargs)]


def diagnose(cls: type, section: str, args: tuple, kwargs: dict) -> list[tuple[str | None, Problem, tuple[str, ...]]]:
    """Each thing wrong with this call: the field as written (None: the call as a whole), the
    problem, and the fields that then do not hold what was meant."""
    names = [f.name for f in fields(cls) if f.init]
    shown = f"{cls.__name__}'s fields: {', '.join(names)} (docs/declaration.md)"
    p: list[tuple[str | None, Problem, tuple[str, ...]]] = []
    if len(args) > len(names):
        p.append((None, Problem(section, f"{cls.__name__}() takes {len(names)} values by position, {len(args)} "
                                         "were given", f"name them; {shown}"), ()))
    by_position = set(names[:len(args)])
    meant = set()
    for key in kwargs:
        if key not in names:
            near = difflib.get_close_matches(key, names, n=1, cutoff=0.6)
            meant.update(near)
            p.append((key, Problem(section, f"{cls.__name__} has no field {key!r}",
                                   (f"did you mean {near[0]!r}? " if near else "") + shown), tuple(near)))
        elif key in by_position:
            p.append((key, Problem(section, f"{cls.__name__}() got {key!r} twice, by position and by name",
                                   f"give it once; {shown}"), (key,)))
    missing = [f.name for f in fields(cls) if f.init and f.default is MISSING and f.default_factory is MISSING
               and f.name not in by_position and f.name not in kwargs and f.name not in meant]
    if missing:
        p.append((missing[0] if len(missing) == 1 else None,
                  Problem(section, f"{cls.__name__}() needs {' and '.join(map(repr, missing))}", shown),
                  tuple(missing)))
    return p


def _make_anyway(obj: object, cls: type, args: tuple, kwargs: dict) -> None:
    """Fill `obj` from what the call gave that fits: values by position (the extra ones
    dropped), known fields by name, the rest their defaults, a required one not given None."""
    names = [f.name for f in fields(cls) if f.init]
    given = dict(zip(names, args))
    given.update({k: v for k, v in kwargs.items() if k in names and k not in given})
    for f in fields(cls):
        if f.name in given:
            value = given[f.name]
        elif f.default is not MISSING:
            value = f.default
        elif f.default_factory is not MISSING:
            value = f.default_factory()
        else:
            value = None
        object.__setattr__(obj, f.name, value)
    post = getattr(obj, "__post_init__", None)
    if post is not None:
        post()


def _line_in(path: str) -> str:
    """`path, line N`: the line of the file being read that the call came from (the innermost)."""
    target = os.path.abspath(path)
    frame = sys._getframe(2)
    while frame is not None:
        if os.path.abspath(frame.f_code.co_filename) == target:
            return f"{path}, line {frame.f_lineno}"
        frame = frame.f_back
    return path


@contextmanager
def collecting(path: str) -> Iterator[list[_BadCall]]:
    """While file `path` is read: wrong calls recorded (in the list yielded), not raised."""
    reading = _Reading(str(path), [])
    token = _READING.set(reading)
    try:
        yield reading.calls
    finally:
        _READING.reset(token)


def placed(root: object, calls: list[_BadCall]) -> CallProblems:
    """The recorded calls' problems, each named by where its object sits under `root` (a
    Cluster): `backend.spine`, `cables[2].sped`; an object not in it keeps its section's name."""
    where = _paths(root)
    problems, failed = [], set()
    for call in calls:
        path = where.get(id(call.instance), call.section)
        for written, p, names in call.found:
            field = _join(path, written) if written else (path or "cluster")
            problems.append(Problem(field, f"{p.message} ({call.where})", p.hint))
            failed.update(_join(path, n) for n in names)
    return CallProblems(tuple(problems), frozenset(failed))


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _paths(root: object) -> dict[int, str]:
    """Every declaration object under `root` (root itself: ''), by id, and its path."""
    out: dict[int, str] = {}
    todo: list[tuple[object, str]] = [(root, "")]
    while todo:
        obj, path = todo.pop()
        if is_dataclass(obj) and not isinstance(obj, type):
            if id(obj) in out:
                continue
            out[id(obj)] = path
            todo += [(getattr(obj, f.name, None), _join(path, f.name)) for f in fields(obj)]
        elif isinstance(obj, (tuple, list)):
            todo += [(item, f"{path}[{i}]") for i, item in enumerate(obj)]
    return out
