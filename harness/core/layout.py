"""How the builders lay a declared cluster out: node names, every cable of every plane, and
the declared extra cables checked against what is already laid. Robust to bad counts, so that
validation of the expanded graph can still report its own problems (harness.core.model.build)."""
from __future__ import annotations

import re

from harness.core.declarations import (FE_NIC, FE_NIC2, MGMT_NIC, STORAGE_NIC, Cluster, NicRole, Plane, Role,
                                  rail_nic, switch_mgmt_port)
from harness.core.fabric import Link, Node
from harness.core.errors import Problem


def _width(count: int) -> int:
    return max(2, len(str(max(count, 1))))


def gpu_node_names(cluster: Cluster) -> list[str]:
    w = _width(cluster.gpu.count)
    return [f"{cluster.gpu.prefix}{i:0{w}d}" for i in range(1, cluster.gpu.count + 1)]


def rail_sets(rails: int, per_leaf: int) -> list[tuple[int, ...]]:
    """The rails of each leaf of a group: consecutive runs of `per_leaf` (the last one shorter
    when a bad declaration does not divide; validation says so)."""
    k = max(per_leaf, 1)
    return [tuple(range(first, min(first + k, rails))) for first in range(0, max(rails, 0), k)]


def be_leaf_name(group: int | None, rails: tuple[int, ...], pod: int | None = None) -> str:
    """be-g1-r0 (group 1, rail 0), be-g1-r0-1 (rails 0 to 1), be-r2 (rail-only: no groups),
    be-p2-g1-r0 (a 5-stage fabric: group 1 of pod 2)."""
    carried = f"r{rails[0]}" if len(rails) == 1 else f"r{rails[0]}-{rails[-1]}"
    if group is None:
        return f"be-{carried}"
    return f"be-g{group}-{carried}" if pod is None else f"be-p{pod}-g{group}-{carried}"


def pods_of(cluster: Cluster) -> int:
    """BE pods: 1 but in a rail-optimized 5-stage fabric."""
    be = cluster.backend
    return max(be.pods, 1) if be.kind == "rail-optimized" else 1


def _groups_per_pod(cluster: Cluster) -> int:
    be = cluster.backend
    return max(be.groups, 1) if be.kind == "rail-optimized" else 1


def _nodes_per_group(cluster: Cluster) -> int:
    return max(1, -(-cluster.gpu.count // (pods_of(cluster) * _groups_per_pod(cluster))))


def superspine_planes(cluster: Cluster) -> bool:
    """Spine j of every pod to plane j's super-spines (S / spines of them), rather than every
    spine to every super-spine: when the super-spines' radix cannot take every spine."""
    be = cluster.backend
    need = pods_of(cluster) * max(be.spines, 0) * max(be.uplinks_per_superspine, 0)
    return need > be.superspine_ports and be.spines > 0 and be.superspines % be.spines == 0


def _expand(cluster: Cluster) -> tuple[list[Node], list[Link]]:
    """Lay nodes and cables as the builders intend. Robust to bad counts, so that
    validation of the expanded graph can still report its own problems."""
    gpu, be, fe = cluster.gpu, cluster.backend, cluster.frontend
    nodes: list[Node] = []
    links: list[Link] = []
    rail_only = be.kind == "rail-only"
    per_group = _nodes_per_group(cluster)
    pods, per_pod = pods_of(cluster), _groups_per_pod(cluster)
    five_stage = pods > 1
    gpu_names = gpu_node_names(cluster)
    for i, name in enumerate(gpu_names):
        g = i // per_group + 1
        nodes.append(Node(name, Role.GPU, group=None if rail_only else g,
                          pod=(g - 1) // per_pod + 1 if five_stage else None))
    fe_hosts = list(gpu_names)
    storage_links: list[Link] = []
    for prefix, count, role in (
        ("stor", fe.storage_servers, Role.STORAGE),
        ("cpu", fe.cpu_servers, Role.CPU),
        ("gw", fe.gateways, Role.GATEWAY),
    ):
        for i in range(1, max(count, 0) + 1):
            nodes.append(Node(f"{prefix}{i}", role))
            fe_hosts.append(f"{prefix}{i}")

    # Backend: super-spines (5-stage), spines per pod, rail leaves per group
    superspines = [f"be-ss{i}" for i in range(1, max(be.superspines, 0) + 1)] if five_stage else []
    nodes += [Node(s, Role.BE_SUPERSPINE) for s in superspines]
    spines_of: dict[int, list[Node]] = {}
    for p in range(1, pods + 1):
        names = [] if rail_only else [f"be-p{p}-s{i}" if five_stage else f"be-s{i}"
                                      for i in range(1, max(be.spines, 0) + 1)]
        spines_of[p] = [Node(s, Role.BE_SPINE, pod=p if five_stage else None) for s in names]
        nodes += spines_of[p]
    leaf_of: dict[tuple[int, int], str] = {}
    be_leaves: list[Node] = []
    for g in range(1, pods * per_pod + 1):
        p, local = (g - 1) // per_pod + 1, (g - 1) % per_pod + 1
        for rails in rail_sets(be.rails, be.rails_per_leaf):
            name = be_leaf_name(None if rail_only else local, rails, p if five_stage else None)
            leaf_of.update({(g, r): name for r in rails})
            be_leaves.append(Node(name, Role.BE_LEAF, group=None if rail_only else g, rails=rails,
                                  pod=p if five_stage else None))
    nodes += be_leaves
    for i, host in enumerate(gpu_names):
        g = 1 if rail_only else i // per_group + 1
        for r in range(max(gpu.gpus_per_node, 0)):
            leaf = leaf_of.get((g, r))
            if leaf is not None:
                links.append(Link(host, leaf, Plane.BE, gpu.nic_speed, a_port=rail_nic(r), rail=r, nic=NicRole.RAIL))
    for leaf in be_leaves:
        rail = leaf.rails[0] if len(leaf.rails) == 1 else None  # a multi-rail leaf's uplinks carry all its rails
        for spine in spines_of[leaf.pod or 1]:
            for _ in range(max(be.uplinks_per_spine, 0)):
                links.append(Link(leaf.name, spine.name, Plane.BE, be.uplink_speed, rail=rail))
    planes = superspine_planes(cluster)
    per_plane = len(superspines) // max(be.spines, 1)
    for p in range(1, pods + 1):
        for j, spine in enumerate(spines_of[p]):
            above = superspines[j * per_plane:(j + 1) * per_plane] if planes else superspines
            for ss in above:
                for _ in range(max(be.uplinks_per_superspine, 0)):
                    links.append(Link(spine.name, ss, Plane.BE, be.uplink_speed))

    # Frontend: hosts in contiguous blocks per leaf (a rack each), every leaf to every spine.
    fe_spines = [f"fe-s{i}" for i in range(1, max(fe.spines, 0) + 1)]
    fe_leaves = [f"fe-l{i}" for i in range(1, max(fe.leaves, 0) + 1)]
    nodes += [Node(s, Role.FE_SPINE) for s in fe_spines]
    nodes += [Node(leaf, Role.FE_LEAF) for leaf in fe_leaves]
    # Dual-homed: a rack hangs off a pair of leaves (fe-l1/fe-l2, ...), fe0 on the first, fe1 on
    # the second (an odd last leaf stays unused; validation says so).
    racks = [(leaf,) for leaf in fe_leaves] if not fe.dual_homed else \
        [tuple(fe_leaves[k:k + 2]) for k in range(0, len(fe_leaves) - 1, 2)]
    if racks:
        per_rack = -(-len(fe_hosts) // len(racks))
        for i, host in enumerate(fe_hosts):
            speed = gpu.fe_speed if i < len(gpu_names) else fe.host_speed
            rack = racks[i // per_rack]
            for leaf, nic, role in zip(rack, (FE_NIC, FE_NIC2), (NicRole.FE, NicRole.FE2)):
                links.append(Link(host, leaf, Plane.FE, speed, a_port=nic, nic=role))
            if fe.storage_nics and i < len(gpu_names):  # in the same rack, to the same leaf
                storage_links.append(Link(host, rack[0], Plane.FE, fe.storage_nic_speed, a_port=STORAGE_NIC,
                                                  nic=NicRole.STORAGE))
        links += storage_links
    for leaf in fe_leaves:
        for spine in fe_spines:
            links.append(Link(leaf, spine, Plane.FE, fe.uplink_speed))

    # Management: every node's management port on the OOB switch.
    nodes.append(Node("oob1", Role.OOB))
    for n in nodes:
        if n.role is Role.OOB:
            continue
        port = switch_mgmt_port() if n.is_switch else MGMT_NIC
        links.append(Link(n.name, "oob1", Plane.MGMT, cluster.mgmt.speed, a_port=port,
                          nic=None if n.is_switch else NicRole.MGMT))
    return nodes, links


_PORT = re.compile(r"^Ethernet\d{1,5}$")  # a switch data port; the plan checks it against the HwSKU


def host_nics(cluster: Cluster, node: Node) -> dict[str, Plane]:
    """The NICs a host has, and the plane each is cabled into."""
    gpu = node.role is Role.GPU
    nics = {rail_nic(r): Plane.BE for r in range(cluster.gpu.gpus_per_node if gpu else 0)}
    nics[FE_NIC] = Plane.FE
    if cluster.frontend.dual_homed:
        nics[FE_NIC2] = Plane.FE
    if gpu and cluster.frontend.storage_nics:
        nics[STORAGE_NIC] = Plane.FE
    nics[MGMT_NIC] = Plane.MGMT
    return nics


def nic_role(name: str) -> NicRole:
    """What one of fablab's own host NIC names is for."""
    fixed = {FE_NIC: NicRole.FE, FE_NIC2: NicRole.FE2, STORAGE_NIC: NicRole.STORAGE, MGMT_NIC: NicRole.MGMT}
    return fixed.get(name, NicRole.RAIL)


def _nic_speed(cluster: Cluster, node: Node, nic: str) -> int:
    gpu, fe = cluster.gpu, cluster.frontend
    if nic == MGMT_NIC:
        return cluster.mgmt.speed
    if nic == STORAGE_NIC:
        return fe.storage_nic_speed
    if nic in (FE_NIC, FE_NIC2):
        return gpu.fe_speed if node.role is Role.GPU else fe.host_speed
    return gpu.nic_speed


def _cables(cluster: Cluster, nodes: list[Node], laid: list[Link], ok) -> tuple[list[Link], list[Problem]]:
    """The declared cables, checked against the nodes and the cables the builders laid."""
    by_name = {n.name: n for n in nodes}
    taken = {(end, port): f"cabled to {other}" for lk in laid
             for end, port, other in ((lk.a, lk.a_port, lk.b), (lk.b, lk.b_port, lk.a)) if port is not None}
    links: list[Link] = []
    problems: list[Problem] = []
    for i, c in enumerate(cluster.cables if isinstance(cluster.cables, tuple) else ()):
        where = f"cables[{i}]"
        if not ok(where):
            continue
        found = len(problems)
        ends = []
        for end, port, side in ((c.a, c.a_port, "a_port"), (c.b, c.b_port, "b_port")):
            node = by_name.get(end)
            ends.append(node)
            if node is None:
                problems.append(Problem(where, f"no node named {end!r}", "use a name from `fablab show`"))
            elif not node.is_switch and not port:
                problems.append(Problem(where, f"host {end!r} needs its NIC name",
                                        f"set the port of {end!r}, e.g. {side}='fe0'"))
            elif not node.is_switch and port not in host_nics(cluster, node):
                problems.append(Problem(f"{where}.{side}", f"{end} has no NIC {port!r}",
                                        f"its NICs: {', '.join(host_nics(cluster, node))}"))
            elif node.is_switch and port is not None and not _PORT.match(port):
                problems.append(Problem(f"{where}.{side}", f"{end} has no port {port!r}",
                                        "name a data port, Ethernet<N>, or leave it out and let the plan number it"))
            elif port is not None and (end, port) in taken:
                problems.append(Problem(f"{where}.{side}", f"{end}:{port} is already {taken[(end, port)]}",
                                        "a NIC or port takes one cable: remove this one or use a free port"))
        a, b = ends
        if a is None or b is None or len(problems) > found:
            continue
        if a is b:
            problems.append(Problem(where, f"cable from {a.name} to itself", "a cable joins two different nodes"))
            continue
        planes = {n.role.plane for n in (a, b) if n.is_switch}
        if {Plane.FE, Plane.BE} <= planes:
            problems.append(Problem(where, f"cable {a.name}–{b.name} joins the FE and the BE fabric",
                                    "FE and BE must stay physically separate: remove this cable"))
            continue
        if Plane.MGMT in planes and len(planes) > 1:
            problems.append(Problem(where, f"cable {a.name}–{b.name} joins the mgmt plane to a data fabric",
                                    "management ports only plug into the OOB switch"))
            continue
        if not planes:
            problems.append(Problem(where, f"cable {a.name}–{b.name} joins two hosts", "cable a host to a leaf"))
            continue
        plane = planes.pop()
        host, nic = next(((n, port) for n, port in ((a, c.a_port), (b, c.b_port)) if not n.is_switch), (None, None))
        if host is not None and (nic_plane := host_nics(cluster, host)[nic]) is not plane:
            problems.append(Problem(where, f"{host.name}'s {nic} is a {nic_plane.value.upper()} NIC, cabled here "
                                           f"into the {plane.value.upper()} plane",
                                    "cable a NIC to a switch of its plane"))
            continue
        group = (_nic_speed(cluster, host, nic) if host is not None else cluster.mgmt.speed if plane is Plane.MGMT
                 else cluster.backend.uplink_speed if plane is Plane.BE else cluster.frontend.uplink_speed)
        if c.speed is not None and c.speed != group and not c.mixed_speed:
            problems.append(Problem(f"{where}.speed", f"a {c.speed}G cable among the {group}G links it joins",
                                    f"use speed={group} (or leave it out), or set mixed_speed=True on purpose"))
            continue
        for end, port in ((a.name, c.a_port), (b.name, c.b_port)):
            if port is not None:
                taken[(end, port)] = f"cabled by {where}"
        links.append(Link(a.name, b.name, plane, c.speed or group, a_port=c.a_port, b_port=c.b_port, declared=True,
                          nic=None if host is None else nic_role(nic)))
    return links, problems
