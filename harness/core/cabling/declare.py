"""A cabling plan as the declaration it is: a `Cluster` whose `Cabling` carries the plan's
names and ports, so that it builds, renders, boots and is checked like any declaration, and
`fablab import` can write it out as one.

The plan is placed (infer.py) and shaped into counts and speeds (shape.py); fablab lays that
shape out as it would any, and each node it lays is matched to the plan's: GPU nodes group by
group (the plan's groups by pod, then by their first node's name) and by name within one,
BE leaves by group and rail, super-spines by name, each pod's spines by the first super-spine
they reach and then by name, FE leaves, FE spines and servers by name. The plan's every cable
goes into `Cabling.cables`; building the declaration then puts the plan's ports on fablab's
cables and names what does not fit (cabling/apply.py).
"""
from __future__ import annotations

import ipaddress
import re
from collections import defaultdict
from dataclasses import replace
from pathlib import Path

from harness.core.cabling.infer import Inferred, Placed, natural, place
from harness.core.cabling.numbering_csv import NumberingRows
from harness.core.cabling.plan import CablingPlan, End
from harness.core.cabling.shape import shape
from harness.core.declarations import LAB_NAME_MAX, Cable, Cabling, Cluster, Role
from harness.core.fabric import Fabric, Node
from harness.core.errors import Problem, TopologyError
from harness.core.hwsku import HwSku, find
from harness.core.model import build


def cluster_of(plan: CablingPlan, name: str, source: str = "") -> Cluster:
    """The declaration `plan` is, named `name`; TopologyError with every problem found, each
    naming the plan's device:port or file:line."""
    placed = place(port_names(plan))
    try:
        shaped = shape(placed, name, {d.name: str(d.where) for d in plan.devices})
    except (KeyError, StopIteration, ValueError):  # a device placement failed: what depends on it waits
        if not placed.problems:
            raise
        shaped = None
    if placed.problems or shaped is None or shaped.problems:
        later = shaped.problems if shaped is not None else ()
        raise TopologyError([*placed.problems, *later], source=source or "the cabling plan")
    try:
        laid = build(shaped.cluster)
    except TopologyError as e:  # counts fablab does not build (a leaf's ports over its HwSKU's ...)
        raise TopologyError([replace(p, field=f"{p.field} (of the declaration the plan makes: fablab import)")
                             for p in e.problems], source=source or "the cabling plan") from None
    names, problems = _names(placed, laid)
    if problems:
        raise TopologyError(problems, source=source or "the cabling plan")
    mgmt, problems = mgmt_ips(plan, set(names.values()))
    if problems:
        raise TopologyError(problems, source=source or "the cabling plan")
    cables = tuple(Cable(w.a.device, w.b.device, w.a.port, w.b.port,
                         w.speed_mbps // 1000 if w.speed_mbps else None) for w in placed.wires)
    cluster = replace(shaped.cluster, addressing=_numbered(shaped.cluster.addressing, mgmt, plan.numbering))
    return replace(cluster, cabling=Cabling(tuple(sorted(names.items(), key=lambda x: natural(x[1]))),
                                            cables, source, shaped.hwskus))


def _numbered(addressing, mgmt: tuple[tuple[str, str], ...], rows: NumberingRows | None):
    """The devices file's mgmt addresses, then numbering.csv's rows over them (by device)."""
    addressing = NumberingRows(mgmt_ips=mgmt).laid_over(addressing)
    return rows.laid_over(addressing) if rows is not None else addressing


def mgmt_ips(plan: CablingPlan, nodes: set[str]) -> tuple[tuple[tuple[str, str], ...], list[Problem]]:
    """(device, mgmt address) of every cabled device whose devices file gives one: the plan's mgmt
    numbering (harness/core/numbering.py puts the rest in the same subnet). A value that is no
    address, or no length where none of the others gives the subnet, names its file:line."""
    given: list[tuple[str, str, str]] = []
    problems: list[Problem] = []
    for d in plan.devices:
        if not d.mgmt_ip or d.name not in nodes:
            continue
        text = str(d.mgmt_ip).strip()
        try:
            iface = ipaddress.IPv4Interface(text)
        except ValueError as e:
            problems.append(Problem(str(d.where), f"{d.name}'s mgmt_ip {text!r} is not an IPv4 address ({e})",
                                    "write it as 10.250.0.10/24, or leave it empty for fablab's"))
            continue
        given.append((d.name, text, str(d.where)) if "/" in text else (d.name, str(iface.ip), str(d.where)))
    lengths = {t.partition("/")[2] for _, t, _ in given if "/" in t}
    out = []
    for name, text, where in given:
        if "/" not in text:
            if len(lengths) != 1:
                problems.append(Problem(where, f"{name}'s mgmt_ip {text} has no prefix length",
                                        "write it with its subnet, e.g. 10.250.0.10/24"))
                continue
            text = f"{text}/{next(iter(lengths))}"
        out.append((name, str(ipaddress.IPv4Interface(text))))
    return tuple(out), problems


def port_names(plan: CablingPlan) -> CablingPlan:
    """The plan with each switch port written as its front-panel alias (`etp1a`, `fortyGigE0/4`,
    as a DCIM labels the cage) written as SONiC's port name instead (`Ethernet0`, `Ethernet4`),
    where the device's HwSKU has a row of that alias and none of that name."""
    alias: dict[str, dict[str, str]] = {}
    read: dict[str, HwSku | str | None] = {}  # many devices name one HwSKU: looked for once
    aliases: dict[str, dict[str, str]] = {}
    for d in plan.devices:
        if d.hwsku and d.hwsku not in read:
            read[d.hwsku] = h = _quietly(d.hwsku)
            aliases[d.hwsku] = {r.alias: r.name for r in h.rows if h.row(r.alias) is None} \
                if isinstance(h, HwSku) else {}
        if d.hwsku and aliases[d.hwsku]:
            alias[d.name] = aliases[d.hwsku]

    def end(e: End) -> End:
        name = alias.get(e.device, {}).get(e.port)
        return End(e.device, name) if name else e

    return replace(plan, cables=tuple(replace(c, a=end(c.a), b=end(c.b)) for c in plan.cables))


def _quietly(ref: str) -> HwSku | str | None:
    """The HwSKU `ref` names; what is wrong with it is said where the device is a switch (shape.py)."""
    try:
        return find(ref)
    except TopologyError:
        return None


def name_of(path: Path) -> str:
    """A lab name from a plan's file name: `sonic_lab_links.csv` -> `sonic-lab`, `DC 7 Cabling.csv`
    -> `dc-7`: lower case, letters, digits and '-', starting with a letter, at most 24."""
    stem = re.sub(r"[^a-z0-9]+", "-", path.name.split(".")[0].lower()).strip("-")
    for tail in ("-links", "-cables", "-cabling"):
        stem = stem.removesuffix(tail)
    stem = stem.lstrip("0123456789-")
    return stem[:LAB_NAME_MAX].rstrip("-") or "plan"


def _names(placed: Inferred, laid: Fabric) -> tuple[dict[str, str], list[Problem]]:
    """fablab's node name -> the plan's, for every node the plan has."""
    to: dict[str, str] = {}
    problems: list[Problem] = []

    def pair(mine: list[Node], theirs: list[Placed], what: str) -> None:
        if len(mine) != len(theirs):
            problems.append(Problem("the cabling plan", f"{len(theirs)} {what} where its shape lays {len(mine)}",
                                    "make the groups alike (`fablab import` shows the declaration)"))
        to.update({a.name: b.name for a, b in zip(mine, theirs)})

    def mine(*roles: Role) -> list[Node]:
        return list(laid.nodes_with(*roles))

    def theirs(*roles: Role) -> list[Placed]:
        return sorted(placed.with_role(*roles), key=lambda d: natural(d.name))

    groups: dict[int | None, list[Placed]] = defaultdict(list)
    for d in theirs(Role.GPU):
        groups[d.group].append(d)
    order = sorted(groups, key=lambda g: (groups[g][0].pod or 0, natural(groups[g][0].name)))
    group_to = {g: (i + 1 if g is not None else None) for i, g in enumerate(order)}
    for g in order:
        pair([n for n in mine(Role.GPU) if n.group == group_to[g]], groups[g],
             f"GPU nodes in the group of {groups[g][0].name}")
    for leaf in mine(Role.BE_LEAF):
        match = [d for d in theirs(Role.BE_LEAF) if group_to.get(d.group) == leaf.group and d.rails == leaf.rails]
        if len(match) == 1:
            to[leaf.name] = match[0].name
        else:
            problems.append(Problem("the cabling plan", f"no leaf of rail {'/'.join(map(str, leaf.rails))} in "
                                    f"group {leaf.group}", "cable each group's rails to leaves of their own"))
    supers = theirs(Role.BE_SUPERSPINE)
    pair(mine(Role.BE_SUPERSPINE), supers, "super-spines")
    rank = {d.name: i for i, d in enumerate(supers)}
    first_above: dict[str, int] = {}
    for w in placed.wires:
        if w.b.device in rank:
            first_above[w.a.device] = min(first_above.get(w.a.device, len(rank)), rank[w.b.device])
    spines = theirs(Role.BE_SPINE)
    pods = sorted({d.pod for d in spines}, key=lambda p: (p is None, p or 0))
    for i, pod in enumerate(pods):
        plan = sorted((d for d in spines if d.pod == pod), key=lambda d: (first_above.get(d.name, 0), natural(d.name)))
        pair([s for s in mine(Role.BE_SPINE) if s.pod == (i + 1 if pod is not None else None)], plan,
             f"spines in pod {i + 1}" if pod is not None else "spines")
    for role, what in ((Role.FE_LEAF, "FE leaves"), (Role.FE_SPINE, "FE spines"), (Role.CPU, "CPU servers"),
                       (Role.STORAGE, "storage servers"), (Role.GATEWAY, "gateways")):
        pair(mine(role), theirs(role), what)
    oob = theirs(Role.OOB)
    if len(oob) > 1:
        problems.append(Problem("the cabling plan", "OOB switches " + ", ".join(d.name for d in oob),
                                "fablab's management network is one switch: keep one"))
    if oob:
        pair(mine(Role.OOB), oob[:1], "OOB switches")
    return to, problems
