"""A declaration's `Cabling` put on the fabric fablab lays: your names on its nodes, your ports
on its cables (declarations.Cabling says the rules). Every cable the layout needs and your plan
lacks, and every cable of your plan the layout has no place for, is a problem naming both ends.
"""
from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import replace

from harness.core.declarations import Cable, Cluster, NicRole, Plane, Role, switch_mgmt_port
from harness.core.fabric import Link, Node
from harness.core.errors import Problem, TopologyError
from harness.core.hwsku import HwSku, find as find_hwsku, unknown_hint


def natural(text: str) -> tuple:
    """`gpu-a2` before `gpu-a10`, `Ethernet8` before `Ethernet16`."""
    return tuple(int(t) if t.isdigit() else t.lower() for t in re.split(r"(\d+)", text))


def fe_roles(nics: list[tuple[str, str]]) -> dict[str, NicRole | None]:
    """What each of a host's FE NICs is, from (NIC, leaf) pairs: the first by name its FE NIC,
    a second on the same leaf its storage NIC, one on another leaf its second FE NIC; any
    beyond those None (too many)."""
    ordered = sorted(nics, key=lambda x: natural(x[0]))
    out: dict[str, NicRole | None] = {}
    for nic, leaf in ordered:
        role = NicRole.FE if not out else NicRole.STORAGE if leaf == ordered[0][1] else NicRole.FE2
        out[nic] = None if role in out.values() else role
    return out


# A node name of yours: what namespaces, containers, FRR's pathspace and the unix sockets under it
# (108 bytes with /var/run/frr/fl_<lab>_<node>/) all take.
NODE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,39}$")
# A port becomes an interface of the lab's namespace under its own name: IFNAMSIZ - 1.
IFNAME_MAX = 15
IFNAME = re.compile(r"^[^\s/:]+$")


def names_problems(cab) -> list[Problem]:
    """What is wrong with `cabling.names` and the ends of `cabling.cables` as written."""
    problems: list[Problem] = []
    seen: dict[str, int] = {}
    for i, item in enumerate(cab.names):
        ok = isinstance(item, tuple) and len(item) == 2 and all(isinstance(x, str) for x in item)
        if not ok:
            problems.append(Problem(f"cabling.names[{i}]", f"{item!r} is not a pair of names",
                                    "write ('gpu01', 'your-name'): fablab's name, then yours"))
            continue
        if not NODE_NAME.match(item[1]):
            problems.append(Problem(f"cabling.names[{i}]", f"{item[1]!r} is not a usable node name",
                                    "letters, digits, '.', '_' and '-', starting with a letter or digit, at most 40"))
        if item[1] in seen:
            problems.append(Problem(f"cabling.names[{i}]", f"{item[1]!r} names two nodes (also names[{seen[item[1]]}])",
                                    "give each node a name of its own"))
        seen.setdefault(item[1], i)
    for i, item in enumerate(cab.hwskus):
        if not (isinstance(item, tuple) and len(item) == 2 and all(isinstance(x, str) for x in item)):
            problems.append(Problem(f"cabling.hwskus[{i}]", f"{item!r} is not a pair of names",
                                    "write ('rtsw-g1-r0', 'ACS-SN5600'): your switch, then its HwSKU"))
        else:
            problems += _hwsku_problems(f"cabling.hwskus[{i}]", *item)
    for i, c in enumerate(cab.cables):
        if not isinstance(c, Cable) or not all(isinstance(x, str) and x for x in (c.a, c.b, c.a_port, c.b_port)):
            problems.append(Problem(f"cabling.cables[{i}]", f"{c!r} does not name both devices and both ports",
                                    "write Cable('gpu-a01', 'rtsw-g1-r0', 'enp12s0np0', 'Ethernet0')"))
            continue
        for device, port in ((c.a, c.a_port), (c.b, c.b_port)):
            if len(port) > IFNAME_MAX or not IFNAME.match(port):
                problems.append(Problem(f"cabling.cables[{i}]", f"{device}:{port} cannot name a Linux interface "
                                        f"(at most {IFNAME_MAX} characters, no '/', ':' or blank)",
                                        "shorten it in the plan: fablab names each lab interface for its port"))
    return problems


def _hwsku_problems(field: str, switch: str, ref: str) -> list[Problem]:
    """A HwSKU of `cabling.hwskus` fablab cannot find (a name of its catalogue, a SONiC folder's
    path, a name under FABLAB_SONIC_DEVICES), or whose folder it cannot read."""
    try:
        found = find_hwsku(ref, field=field)
    except TopologyError as e:
        return list(e.problems)
    if isinstance(found, HwSku):
        return []
    return [Problem(field, f"{switch}'s HwSKU {ref!r} is not one fablab knows: {found}", unknown_hint(ref))]


def apply(cluster: Cluster, nodes: list[Node], links: list[Link]) -> tuple[list[Node], list[Link], list[Problem]]:
    cab = cluster.cabling
    problems = names_problems(cab)
    if problems:
        return nodes, links, problems
    names = dict(cab.names)
    known = {n.name for n in nodes}
    for i, (mine, _) in enumerate(cab.names):
        if mine not in known:
            problems.append(Problem(f"cabling.names[{i}]", f"fablab lays no node {mine!r}",
                                    "name a node of `fablab show` of the declaration without its cabling"))
    kept = {n.name for n in nodes if n.name not in names}
    for i, (mine, yours) in enumerate(cab.names):
        if yours in kept and yours != mine:
            problems.append(Problem(f"cabling.names[{i}]", f"{yours!r} is already the name of another node",
                                    f"name that node too, or give {mine} another name"))
    if problems:
        return nodes, links, problems
    nodes = [replace(n, name=names.get(n.name, n.name)) for n in nodes]
    role = {n.name: n.role for n in nodes}
    at = set(role)
    for i, (switch, _) in enumerate(cab.hwskus):
        if switch not in role or not role[switch].is_routed:
            problems.append(Problem(f"cabling.hwskus[{i}]", f"{switch!r} is no routed switch of the fabric",
                                    "name a leaf, spine or super-spine as `fablab show` lists it"))
    unknown = sorted({d for c in cab.cables for d in (c.a, c.b) if d not in at}, key=natural)
    for d in unknown:
        i = next(i for i, c in enumerate(cab.cables) if d in (c.a, c.b))
        problems.append(Problem(f"cabling.cables[{i}]", f"{d} is no node of the fabric",
                                "name it in cabling.names, or take its cables out"))
    plan: dict[frozenset, list[tuple[int, Cable]]] = defaultdict(list)
    for i, c in enumerate(cab.cables):
        if c.a in at and c.b in at:
            plan[frozenset((c.a, c.b))].append((i, c))
    for pair in plan.values():
        pair.sort(key=lambda x: (natural(x[1].a_port or ""), natural(x[1].b_port or "")))
    used: set[int] = set()
    out: list[Link] = []
    rails = _rail_nics(links, names, plan)
    fe_hosts = {names.get(lk.a, lk.a) for lk in links if lk.plane is Plane.FE and lk.nic is not None}
    to_oob = {names.get(lk.b, lk.b) for lk in links if lk.plane is Plane.MGMT}
    for lk in links:
        a, b = names.get(lk.a, lk.a), names.get(lk.b, lk.b)
        if lk.plane is Plane.FE and lk.nic is not None:
            continue  # hosts cable to the FE leaves your plan says: below
        free = [(i, c) for i, c in plan.get(frozenset((a, b)), []) if i not in used]
        if lk.nic is NicRole.RAIL:
            free = [x for x in free if _host_port(x[1], a) == rails.get((a, lk.rail))]
        if not free:
            if lk.plane is Plane.MGMT and not any(frozenset((a, o)) in plan for o in to_oob):
                out.append(replace(lk, a=a, b=b))  # no management cable in your plan: fablab's own
                continue
            what = f"its rail {lk.rail} NIC" if lk.nic is NicRole.RAIL else lk.plane.value.upper()
            problems.append(Problem(f"{a} - {b}", f"no cable in the cabling for {what}, where the fabric has one",
                                    f"cable {a} to {b}"))
            continue
        i, c = free[0]
        used.add(i)
        a_port, b_port = (c.a_port, c.b_port) if c.a == a else (c.b_port, c.a_port)
        if lk.plane is Plane.MGMT and lk.nic is None:
            a_port = switch_mgmt_port()  # SONiC's management port, whatever the plan calls it
        out.append(replace(lk, a=a, b=b, a_port=a_port, b_port=b_port, speed=c.speed or lk.speed))
    out += _fe_host_links(cluster, role, plan, used, fe_hosts, problems)
    for i, c in enumerate(cab.cables):
        if i not in used and c.a in at and c.b in at:
            problems.append(Problem(f"cabling.cables[{i}]", f"{c.a}:{c.a_port} - {c.b}:{c.b_port}: a cable the "
                                    "fabric has no place for", "take it out, or declare it in `cables`"))
    return nodes, out, problems


def _host_port(c: Cable, host: str) -> str | None:
    return c.a_port if c.a == host else c.b_port


def _rail_nics(links: list[Link], names: dict[str, str], plan: dict) -> dict[tuple[str, int], str]:
    """(host, rail) -> the NIC your plan gives that rail: its NICs toward its rail leaves in
    their names' natural order."""
    leaves: dict[str, set[str]] = defaultdict(set)
    for lk in links:
        if lk.nic is NicRole.RAIL:
            leaves[names.get(lk.a, lk.a)].add(names.get(lk.b, lk.b))
    out: dict[tuple[str, int], str] = {}
    for host, ls in leaves.items():
        nics = sorted((p for leaf in ls for _, c in plan.get(frozenset((host, leaf)), [])
                       if (p := _host_port(c, host))), key=natural)
        out.update({(host, r): nic for r, nic in enumerate(nics)})
    return out


def _fe_host_links(cluster: Cluster, role: dict[str, Role], plan: dict, used: set[int], hosts: set[str],
                   problems: list[Problem]) -> list[Link]:
    """Each host's cables to FE leaves, as your plan has them, each NIC told by fe_roles."""
    c = cluster
    by_host: dict[str, list[tuple[int, Cable, str]]] = defaultdict(list)
    for pair, cables in plan.items():
        ends = sorted(pair)
        host = next((d for d in ends if d in hosts), None)
        leaf = next((d for d in ends if role.get(d) is Role.FE_LEAF), None)
        if host is None or leaf is None:
            continue
        for i, cab in cables:
            if i not in used:
                by_host[host].append((i, cab, leaf))
    out = []
    for host in sorted(hosts, key=natural):
        mine = by_host.get(host, [])
        if not mine:
            problems.append(Problem(host, f"{host} has no FE NIC in the cabling", f"cable {host} to an FE leaf"))
            continue
        parts = fe_roles([(_host_port(cab, host) or "", leaf) for _, cab, leaf in mine])
        gpu = role[host] is Role.GPU
        for i, cab, leaf in mine:
            nic = _host_port(cab, host) or ""
            part = parts[nic]
            if part is None or (part is NicRole.STORAGE and not gpu):
                continue  # left unused: named as a cable with no place
            used.add(i)
            speed = c.frontend.storage_nic_speed if part is NicRole.STORAGE else \
                c.gpu.fe_speed if gpu else c.frontend.host_speed
            out.append(Link(host, leaf, Plane.FE, cab.speed or speed, a_port=nic,
                            b_port=cab.b_port if cab.a == host else cab.a_port, nic=part))
    return out
