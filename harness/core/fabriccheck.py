"""The checks over an expanded fabric (model.build's last pass): unique names, every switch's
port budget, and the backend's balance (non-blocking unless declared otherwise).

One problem on many switches is said once: the count, the first names and the figures they
share ("4 spines (be-p1-s1, be-p1-s2, ...) are oversubscribed 4.00:1 ..."). Each hint gives the
value that fixes it where one value does (`set backend.uplinks_per_superspine=4`). Pure.
"""
from __future__ import annotations

import dataclasses
from collections import Counter, defaultdict

from harness.core import defaults
from harness.core.declarations import Plane, Role, switch_mgmt_port
from harness.core.errors import Problem
from harness.core.fabric import Fabric

_NOUNS = {Role.BE_LEAF: ("leaf", "leaves"), Role.BE_SPINE: ("spine", "spines"),
          Role.BE_SUPERSPINE: ("super-spine", "super-spines"), Role.FE_LEAF: ("FE leaf", "FE leaves"),
          Role.FE_SPINE: ("FE spine", "FE spines"), Role.OOB: ("OOB switch", "OOB switches")}
SHOWN = 2  # names shown of a group of switches with the same problem


def some(role: Role, names: list[str]) -> str:
    """`be-s1`, or `8 spines (be-s1, be-s2, ...)`: which switches, said once."""
    if len(names) == 1:
        return names[0]
    more = ", ..." if len(names) > SHOWN else ""
    return f"{len(names)} {_NOUNS[role][1]} ({', '.join(names[:SHOWN])}{more})"


def check_fabric(f: Fabric, balance: bool = True) -> list[Problem]:
    p: list[Problem] = []
    for name, k in sorted(Counter(n.name for n in f.nodes).items()):
        if k > 1:
            p.append(Problem("nodes", f"duplicate node name {name!r} ({k} nodes)",
                             "change a prefix (e.g. gpu.prefix) so that names stay unique"))
    p += _port_budgets(f)
    if balance and not f.cluster.backend.allow_oversubscription:
        p += _balance(f)
    return p


def _port_budgets(f: Fabric) -> list[Problem]:
    c = f.cluster
    budget = {
        Role.BE_LEAF: ("backend.leaf_ports", c.backend.leaf_ports),
        Role.BE_SPINE: ("backend.spine_ports", c.backend.spine_ports),
        Role.BE_SUPERSPINE: ("backend.superspine_ports", c.backend.superspine_ports),
        Role.FE_LEAF: ("frontend.leaf_ports", c.frontend.leaf_ports),
        Role.FE_SPINE: ("frontend.spine_ports", c.frontend.spine_ports),
        Role.OOB: ("mgmt.ports", c.mgmt.ports),
    }
    used: Counter[str] = Counter()
    for link in f.links:
        for end, port in ((link.a, link.a_port), (link.b, link.b_port)):
            if port != switch_mgmt_port():
                used[end] += 1
    over: dict[tuple[Role, int], list[str]] = defaultdict(list)
    for n in f.switches:
        if used[n.name] > budget[n.role][1]:
            over[(n.role, used[n.name])].append(n.name)
    p = []
    for (role, need), names in over.items():
        fname, ports = budget[role]
        said = f"needs {need} ports but has" if len(names) == 1 else f"need {need} ports each but have"
        p.append(Problem(fname, f"{some(role, names)} {said} {ports}", port_hint(role, fname, need)))
    return p


def port_hint(role: Role, fname: str, need: int) -> str:
    raise_it = f"set {fname}={need} (or more)"
    if role is Role.BE_LEAF:
        return (f"{raise_it}, lower backend.rails_per_leaf, or use more groups (rail-optimized) so each leaf "
                "serves fewer nodes")
    if role is Role.BE_SPINE:
        return f"{raise_it}, or add spines"
    if role is Role.BE_SUPERSPINE:
        return f"{raise_it}, or make superspines a multiple of spines (planes: spine j of every pod to plane j)"
    if role is Role.FE_LEAF:
        return f"{raise_it}, or add FE leaves"
    return raise_it


def _balance(f: Fabric) -> list[Problem]:
    """Every BE leaf, and every spine of a 5-stage fabric towards the super-spines: as much
    bandwidth up as down. Switches alike are said once."""
    down: Counter[str] = Counter()
    up: Counter[str] = Counter()
    for lk in f.links:
        if lk.plane is Plane.BE:
            down[lk.b] += lk.speed
            up[lk.a] += lk.speed
    p = []
    for role, towards in ((Role.BE_LEAF, ""), (Role.BE_SPINE, " towards the super-spines")):
        alike: dict[tuple[int, int], list[str]] = defaultdict(list)
        for sw in f.nodes_with(role):
            if up[sw.name] and down[sw.name] > up[sw.name]:
                alike[(down[sw.name], up[sw.name])].append(sw.name)
        for (d, u), names in alike.items():
            verb, each = ("is", "") if len(names) == 1 else ("are", " each")
            p.append(Problem("backend", f"{some(role, names)} {verb} oversubscribed {d / u:.2f}:1{towards} "
                                        f"({d}G down, {u}G up{each}); the BE must be non-blocking",
                             f"{_fix(f, role)}, or set allow_oversubscription=True on purpose"))
    return p


def _fix(f: Fabric, role: Role) -> str:
    """The value that makes these switches non-blocking (harness.core.defaults), or what to add."""
    gpu, be = f.cluster.gpu, dataclasses.replace(f.cluster.backend, allow_oversubscription=False)
    leaf_need = defaults.per_spine(gpu, be, be.spines, cap=False)
    if role is Role.BE_LEAF:
        if leaf_need <= defaults.MAX_UPLINKS:
            return f"set backend.uplinks_per_spine={leaf_need}{_LEAVE_OUT}"
        spines = -(-be.spines * leaf_need // defaults.MAX_UPLINKS)
        each = -(-be.spines * leaf_need // spines)
        return (f"each leaf needs {leaf_need} links to each of {be.spines} spines, over the {defaults.MAX_UPLINKS} "
                f"fablab plans: set backend.spines={spines} and uplinks_per_spine={each}, or raise uplink_speed")
    need = defaults.per_superspine(be, be.spines, be.uplinks_per_spine, cap=False)
    if need > defaults.MAX_UPLINKS:
        return (f"each spine needs {need} links to each super-spine it reaches, over the {defaults.MAX_UPLINKS} "
                "fablab plans: add superspines")
    then = defaults.per_superspine(be, be.spines, min(leaf_need, defaults.MAX_UPLINKS), cap=False)
    also = f" ({then} with uplinks_per_spine={leaf_need})" if then != need and leaf_need > be.uplinks_per_spine else ""
    return f"set backend.uplinks_per_superspine={need}{also}{_LEAVE_OUT}"


_LEAVE_OUT = ", or leave it out (its default is what makes the fabric non-blocking)"
