"""The defaults that follow the rest of the declaration. A Backend field left None takes, when
its Cluster is made, the value the other fields call for:

- `spines`: 0 on a rail-only backend (it has no spine tier), else 2.
- `uplinks_per_spine`: the fewest links from each leaf to each spine that carry all the
  bandwidth of the leaf's GPU NICs (non-blocking).
- `uplinks_per_superspine`: the fewest links from each spine to each super-spine it reaches
  (every one, or those of its plane: layout.superspine_planes) that carry all of its leaves'
  links (non-blocking), in a 5-stage fabric.

Where oversubscription is declared (`allow_oversubscription=True`), on a rail-only backend, or
without a super-spine tier, the uplinks take 1. A value the engineer writes is kept as written.
A derived value is a `Derived` int: equal to the int, hashed, printed and stored as it (so a
declaration whose values were the old fixed defaults keeps its hash), and derived again each
time a Cluster is made with it (`dataclasses.replace` of a Cluster or of its Backend), so it
keeps following what it derives from. Pure and total: where the counts it reads are no usable
numbers (the first pass, declcheck, reports those), it takes the fixed values 2, 1 and 1.
"""
from __future__ import annotations

import dataclasses

MAX_UPLINKS = 16  # uplinks per spine, per super-spine: the most fablab plans (declcheck.LIMITS)
FOLLOWING = ("spines", "uplinks_per_spine", "uplinks_per_superspine")
FIXED = {"spines": 2, "uplinks_per_spine": 1, "uplinks_per_superspine": 1}  # when nothing can be derived
_LARGE = 1 << 20  # beyond it a count is no usable number here (declcheck says why)


class Derived(int):
    """A default that followed the rest of the declaration; an int in every other respect."""

    __slots__ = ()


def follow(cluster: object) -> object:
    """The cluster's backend with each field left None (or derived before) derived again."""
    be, gpu = getattr(cluster, "backend", None), getattr(cluster, "gpu", None)
    if not dataclasses.is_dataclass(be) or isinstance(be, type) or not all(hasattr(be, n) for n in FOLLOWING):
        return be
    todo = [n for n in FOLLOWING if getattr(be, n) is None or isinstance(getattr(be, n), Derived)]
    if not todo:
        return be
    values = derive(gpu, be, todo)
    return dataclasses.replace(be, **{n: values[n] for n in todo})


def derive(gpu: object, be: object, todo: list[str] | tuple[str, ...] = FOLLOWING) -> dict[str, Derived]:
    """The values of the following fields, those not in `todo` read as declared."""
    rail_only = getattr(be, "kind", None) == "rail-only"
    spines = Derived(0 if rail_only else FIXED["spines"]) if "spines" in todo else be.spines
    ups = Derived(per_spine(gpu, be, spines)) if "uplinks_per_spine" in todo else be.uplinks_per_spine
    upss = Derived(per_superspine(be, spines, ups)) if "uplinks_per_superspine" in todo \
        else be.uplinks_per_superspine
    return {"spines": spines, "uplinks_per_spine": ups, "uplinks_per_superspine": upss}


def _count(value: object) -> int | None:
    ok = isinstance(value, int) and not isinstance(value, bool) and 0 < value <= _LARGE
    return value if ok else None


def _blocking_allowed(be: object) -> bool:
    return getattr(be, "kind", None) != "rail-optimized" or getattr(be, "allow_oversubscription", False) is not False


def per_spine(gpu: object, be: object, spines: object, cap: bool = True) -> int:
    """Links from each leaf to each spine that carry its GPU NICs' bandwidth (at most
    MAX_UPLINKS unless `cap` is False)."""
    if _blocking_allowed(be):
        return FIXED["uplinks_per_spine"]
    names = ("count", "nic_speed")
    counts = [_count(getattr(gpu, n, None)) for n in names]
    counts += [_count(getattr(be, n, None)) for n in ("pods", "groups", "rails", "rails_per_leaf", "uplink_speed")]
    counts.append(_count(spines))
    if None in counts:
        return FIXED["uplinks_per_spine"]
    count, nic, pods, groups, rails, per_leaf, speed, spines = counts
    down = -(-count // (pods * groups)) * min(per_leaf, rails) * nic  # a leaf's GPU NICs, in G
    return _capped(-(-down // (spines * speed)), cap)


def per_superspine(be: object, spines: object, ups: object, cap: bool = True) -> int:
    """Links from each spine to each super-spine it reaches that carry its leaves' links (at
    most MAX_UPLINKS unless `cap` is False)."""
    if _blocking_allowed(be) or getattr(be, "pods", None) == 1:
        return FIXED["uplinks_per_superspine"]
    counts = [_count(getattr(be, n, None)) for n in ("pods", "groups", "rails", "rails_per_leaf", "superspines",
                                                      "superspine_ports")]
    counts += [_count(spines), _count(ups)]
    if None in counts:
        return FIXED["uplinks_per_superspine"]
    pods, groups, rails, per_leaf, supers, ports, spines, ups = counts
    need = groups * -(-rails // per_leaf) * ups  # a spine's links from its pod's leaves
    mesh = _capped(-(-need // supers), cap)
    if pods * spines * mesh <= ports or supers % spines:  # to every super-spine
        return mesh
    return _capped(-(-need // (supers // spines)), cap)  # in planes: to its plane's super-spines


def _capped(n: int, cap: bool = True) -> int:
    return min(max(n, 1), MAX_UPLINKS) if cap else max(n, 1)
