"""One codec between fablab's frozen dataclasses and plain JSON data, driven by the classes'
own annotations: traffic specs and results between processes, a lab's declaration in its
state file, check results in the results directory. Pure: no I/O.

`to_plain` gives dicts, lists and scalars (json.dumps-ready); `from_plain` builds the typed
object back and says where the data does not fit (`CodecError`, with a path like
`SendSpec.flows[3].dst`). Where a field may hold one of several dataclasses (a RoCE or a UDP
flow), `tags` names each class and the data carries it as "kind".
"""
from __future__ import annotations

import dataclasses
import difflib
import functools
import types
import typing
from collections.abc import Mapping
from enum import Enum
from typing import Any, Literal, Union


class CodecError(ValueError):
    """Data that does not fit the class it is read as."""

    def __init__(self, where: str, message: str, hint: str = "") -> None:
        self.where, self.message, self.hint = where, message, hint
        super().__init__(f"{where}: {message}" + (f" ({hint})" if hint else ""))


def to_plain(obj: Any, tags: Mapping[type, str] | None = None, extras: tuple[str, ...] = ()) -> Any:
    """JSON-ready data. A dataclass becomes a dict of its fields (plus its `tags` kind, and
    the properties named in `extras` that it has, e.g. a result's `passed`); tuples, lists and
    sets become lists; dict keys become strings; an Enum its value; anything else that JSON
    cannot hold its str()."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        out: dict[str, Any] = {}
        if tags and type(obj) in tags:
            out["kind"] = tags[type(obj)]
        for f in dataclasses.fields(obj):
            out[f.name] = to_plain(getattr(obj, f.name), tags, extras)
        for name in extras:
            if name not in out and hasattr(obj, name):
                out[name] = to_plain(getattr(obj, name), tags, extras)
        return out
    if isinstance(obj, Enum):
        return obj.value
    if isinstance(obj, Mapping):
        return {str(k): to_plain(v, tags, extras) for k, v in obj.items()}
    if isinstance(obj, (tuple, list, set, frozenset)):
        return [to_plain(v, tags, extras) for v in obj]
    if obj is None or isinstance(obj, (str, float, bool)):
        return obj
    if isinstance(obj, int):
        return int(obj)  # a subclass (a derived default, harness.core.defaults) as the plain number
    return str(obj)


def from_plain(tp: Any, value: Any, tags: Mapping[str, type] | None = None, where: str = "") -> Any:
    """The object of type `tp` that `value` (from to_plain) describes; CodecError naming the
    path where it does not fit. A dataclass field missing from the data takes its default; a
    key the class does not have is an error."""
    return _decode(tp, value, tags or {}, where or getattr(tp, "__name__", str(tp)))


@functools.cache
def hints(cls: type) -> dict[str, Any]:
    """A dataclass's field types, resolved (modules here use `from __future__ import annotations`)."""
    return typing.get_type_hints(cls)


def _decode(tp: Any, value: Any, tags: Mapping[str, type], where: str) -> Any:
    origin = typing.get_origin(tp)
    if tp is Any:
        return value
    if origin in (Union, types.UnionType):
        args = typing.get_args(tp)
        if value is None and type(None) in args:
            return None
        classes = [a for a in args if dataclasses.is_dataclass(a)]
        if len(classes) > 1:
            kind = value.get("kind") if isinstance(value, dict) else None
            if tags.get(kind) not in classes:
                names = sorted(k for k, c in tags.items() if c in classes)
                raise CodecError(where, f"'kind' must be one of {names}")
            return _decode(tags[kind], value, tags, where)
        rest = [a for a in args if a is not type(None)]
        errors = []
        for a in rest:  # int | str, float | None ...: the first that fits
            try:
                return _decode(a, value, tags, where)
            except CodecError as e:
                errors.append(e)
        raise errors[0]
    if origin is tuple:
        args = typing.get_args(tp)
        if not isinstance(value, (list, tuple)):
            raise CodecError(where, f"expected a list, got {value!r}")
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_decode(args[0], v, tags, f"{where}[{i}]") for i, v in enumerate(value))
        if len(args) != len(value):
            raise CodecError(where, f"expected {len(args)} items, got {len(value)}")
        return tuple(_decode(a, v, tags, f"{where}[{i}]") for i, (a, v) in enumerate(zip(args, value)))
    if origin in (dict, Mapping):
        key_t, value_t = typing.get_args(tp) or (Any, Any)
        if not isinstance(value, dict):
            raise CodecError(where, f"expected an object, got {value!r}")
        return {_key(key_t, k, where): _decode(value_t, v, tags, f"{where}[{k!r}]") for k, v in value.items()}
    if origin is Literal:
        if value not in typing.get_args(tp):
            raise CodecError(where, f"{value!r} is not one of {typing.get_args(tp)}")
        return value
    if tp is dict:
        if not isinstance(value, dict):
            raise CodecError(where, f"expected an object, got {value!r}")
        return value
    if dataclasses.is_dataclass(tp):
        return _dataclass(tp, value, tags, where)
    if isinstance(tp, type) and issubclass(tp, Enum):
        try:
            return tp(value)
        except ValueError:
            raise CodecError(where, f"{value!r} is not one of {[m.value for m in tp]}") from None
    if tp is float and isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if tp in (int, str, bool) and type(value) is tp:
        return value
    raise CodecError(where, f"expected {getattr(tp, '__name__', tp)}, got {value!r}")


def _dataclass(tp: type, value: Any, tags: Mapping[str, type], where: str) -> Any:
    if not isinstance(value, dict):
        raise CodecError(where, f"expected an object ({tp.__name__}), got {type(value).__name__}")
    names = {f.name for f in dataclasses.fields(tp) if f.init}
    unknown = sorted(str(k) for k in value if k not in names and k != "kind")
    if unknown:
        near = difflib.get_close_matches(unknown[0], sorted(names), n=1, cutoff=0.6)
        raise CodecError(where, f"unknown fields {unknown} of {tp.__name__}",
                         (f"did you mean {near[0]!r}? " if near else "") + f"{tp.__name__}'s fields: "
                         + ", ".join(f.name for f in dataclasses.fields(tp) if f.init))
    types_ = hints(tp)
    kwargs = {k: _decode(types_[k], v, tags, f"{where}.{k}") for k, v in value.items() if k in names}
    try:
        return tp(**kwargs)
    except (TypeError, ValueError) as e:  # a required field missing, a class's own refusal
        raise CodecError(where, str(e)) from e


def _key(key_t: Any, key: str, where: str) -> Any:
    if key_t in (str, Any):
        return key
    if key_t is int:
        try:
            return int(key)
        except ValueError:
            raise CodecError(where, f"key {key!r} is not an integer") from None
    raise CodecError(where, f"keys of type {key_t} cannot be read back")
