"""What each device of a cabling plan is, read from how it is cabled: GPU nodes, BE leaves,
spines and super-spines, FE leaves and spines, storage and CPU servers, gateways, the OOB
switch; each BE NIC's rail, each GPU node's group, each group's pod.

The graph decides; the words a plan carries only where the graph cannot:

- **Switch or host.** A `role` column wins. Otherwise a HwSKU, a sonic-mgmt `Type` that is
  not a server's, or a containerlab kind other than `linux` makes a switch; failing all of
  those, a device whose every port is a switch port name (`Ethernet8`, `swp3`, `Eth1/1`).
- **The OOB switch**: the one cabled to another switch's management port (`eth0`,
  `Management0`, `mgmt0`); every cable on it is management.
- **Tiers.** A switch with hosts below it is a leaf; one cabled to leaves is a spine; one
  cabled to spines only, a super-spine.
- **Planes.** Switches joined by switch-to-switch cables are one plane. Every host has an FE
  NIC, so the FE is the one that reaches the most hosts; on a tie, the one with spines (a
  rail-only BE's leaves stand alone), then the one with fewer host cables (a GPU node has more
  rail NICs than FE NICs). The other switches are the BE. A tie still: the plan needs a `role`.
- **Rails.** A GPU node's BE NICs in their names' natural order are its rails 0, 1, ...; a
  leaf carries the rails most of its GPU NICs are (as many as a node has NICs on one leaf in
  most of the plan: a node doubled up on a leaf does not make it a leaf of two rails); a NIC
  elsewhere is on the wrong rail's leaf, named with the leaf:port it belongs on (rails.py).
- **Groups and pods.** GPU nodes reaching the same leaves are a group; groups whose leaves
  reach the same spines are a pod. Groups and pods are numbered in the order of their first
  device's name.
- **FE hosts.** A host with no BE NIC is a CPU server unless its `role` says storage or
  gateway. A GPU node's first FE NIC by name is its FE NIC; a second one on the same leaf is
  its storage NIC, on another leaf its second FE NIC (dual-homed).

Every problem is reported at once, naming device:port and the plan's file:line.
"""
from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, replace

from harness.core.cabling.apply import fe_roles, natural
from harness.core.cabling.astray import Home
from harness.core.cabling.crossing import crossing
from harness.core.cabling.plan import CablingPlan, CableRow, End, Where
from harness.core.cabling.rails import leaf_rails
from harness.core.declarations import NicRole, Plane, Role
from harness.core.errors import Problem, TopologyError
from harness.core.hwsku import hwsku, known

_MGMT_PORT = re.compile(r"^(eth0|mgmt\d*|management\d*|ma\d+|me0|fxp0)$", re.IGNORECASE)
_SWITCH_PORT = re.compile(r"^(Ethernet\d+(/\d+)*|Eth\d+(/\d+)+|swp\d+(s\d+)?|et-\d+/\d+/\d+)$", re.IGNORECASE)

# A `role` column's words: fablab's own (Role values) and what inventories commonly write.
ROLE_WORDS: dict[str, Role] = {
    **{r.value: r for r in Role},
    "gpu-node": Role.GPU, "gpu-server": Role.GPU, "compute": Role.GPU, "dgx": Role.GPU,
    "server": Role.CPU, "cpu-server": Role.CPU, "host": Role.CPU,
    "storage-server": Role.STORAGE, "border": Role.GATEWAY, "border-leaf": Role.GATEWAY,
    "rail-leaf": Role.BE_LEAF, "backend-leaf": Role.BE_LEAF, "be-tor": Role.BE_LEAF,
    "backend-spine": Role.BE_SPINE, "superspine": Role.BE_SUPERSPINE, "super-spine": Role.BE_SUPERSPINE,
    "backend-superspine": Role.BE_SUPERSPINE,
    "frontend-leaf": Role.FE_LEAF, "tor": Role.FE_LEAF, "fe-tor": Role.FE_LEAF, "frontend-spine": Role.FE_SPINE,
    "oob": Role.OOB, "mgmt": Role.OOB, "mgmt-switch": Role.OOB, "management": Role.OOB,
}
# Plane-less tier words: the graph says which plane.
_TIERS = {"leaf": "leaf", "spine": "spine"}
_SERVER_TYPES = re.compile(r"server|host|ptf", re.IGNORECASE)


@dataclass(frozen=True)
class Placed:
    """A device of the plan and what the graph says it is."""

    name: str
    role: Role
    group: int | None = None  # a GPU node's or BE leaf's group, numbered across pods
    pod: int | None = None  # 5-stage fabrics only
    rails: tuple[int, ...] = ()  # a BE leaf's rails
    hwsku: str | None = None


@dataclass(frozen=True)
class Wire:
    """A cable of the plan, the lower end first (host below leaf below spine, any end below
    the OOB switch), with its plane and, for a GPU NIC, its rail."""

    a: End
    b: End
    plane: Plane
    where: Where
    rail: int | None = None
    speed_mbps: int | None = None
    nic: NicRole | None = None  # what the host end is for


@dataclass(frozen=True)
class Inferred:
    devices: tuple[Placed, ...]
    wires: tuple[Wire, ...]
    problems: tuple[Problem, ...] = ()  # what does not fit; infer() raises them, place() keeps them
    astray: tuple[Home, ...] = ()  # each GPU NIC on another rail's leaf, and where it belongs (named in problems)

    def device(self, name: str) -> Placed:
        return next(d for d in self.devices if d.name == name)

    def with_role(self, *roles: Role) -> tuple[Placed, ...]:
        return tuple(d for d in self.devices if d.role in roles)


def infer(plan: CablingPlan) -> Inferred:
    """Every device's role, every cable's plane and rail; TopologyError with every problem."""
    placed = place(plan)
    if placed.problems:
        raise TopologyError(list(placed.problems), source="the cabling plan")
    return placed


def place(plan: CablingPlan) -> Inferred:
    """As infer(), the problems kept in the result (to be told with what follows from it)."""
    return _Inference(plan).run()


class _Inference:
    def __init__(self, plan: CablingPlan) -> None:
        self.plan = plan
        self.problems: list[Problem] = []
        self.astray: tuple[Home, ...] = ()  # filled by _place
        self.names = sorted(plan.device_names, key=natural)  # a device nothing cables (a PDU) is not the fabric's
        self.info = {d.name: d for d in plan.devices}
        self.cables_of: dict[str, list[CableRow]] = defaultdict(list)
        for c in plan.cables:
            self.cables_of[c.a.device].append(c)
            self.cables_of[c.b.device].append(c)

    def problem(self, where: str, message: str, hint: str) -> None:
        self.problems.append(Problem(where, message, hint))

    def at(self, name: str) -> str:
        d = self.info.get(name)
        first = self.cables_of[name][0].where if self.cables_of[name] else (d.where if d else None)
        return f"{name} ({first})" if first else name

    # ------------------------------------------------------------------ switch or host

    def said(self, name: str) -> Role | str | None:
        """What the plan's own words make of a device: a Role, a plane-less tier ("leaf",
        "spine"), "switch" or "host", or None."""
        d = self.info.get(name)
        if d is not None and d.role:
            word = d.role.strip().lower().replace("_", "-").replace(" ", "-")
            if word in ROLE_WORDS:
                return ROLE_WORDS[word]
            if word in _TIERS:
                return _TIERS[word]
            self.problem(str(d.where), f"role {d.role!r} of {name} is not one fablab knows",
                         "write one of " + ", ".join(r.value for r in Role) + " (or leaf, spine)")
            return None
        if d is not None and d.kind:
            if d.kind.lower() == "linux" or _SERVER_TYPES.search(d.kind):
                return "host"
            return "switch"
        if d is not None and d.hwsku:
            return "switch"
        ports = [c.a.port if c.a.device == name else c.b.port for c in self.cables_of[name]]
        return "switch" if ports and all(_SWITCH_PORT.match(p) for p in ports) else "host"

    def run(self) -> Inferred:
        said = {n: self.said(n) for n in self.names}
        switch = {n for n, s in said.items()
                  if s in ("switch", "leaf", "spine") or (isinstance(s, Role) and s.is_switch)}
        oob = self._oob(said, switch)
        roles, planes = self._tiers(said, switch, oob)
        wires = self._wires(roles, planes, oob)
        devices, wires = self._place(roles, wires)
        return Inferred(devices, wires, tuple(sorted(self.problems, key=lambda p: natural(p.field))), self.astray)

    def _far(self, c: CableRow, name: str) -> End:
        return c.b if c.a.device == name else c.a

    def _near(self, c: CableRow, name: str) -> End:
        return c.a if c.a.device == name else c.b

    def _oob(self, said: dict, switch: set[str]) -> set[str]:
        oob = {n for n, s in said.items() if s is Role.OOB}
        for n in switch - oob:
            if said[n] not in ("switch", "leaf", "spine") and said[n] is not None and said[n] is not Role.OOB:
                continue  # the plan named its data role
            if any(self._far(c, n).device in switch and _MGMT_PORT.match(self._far(c, n).port)
                   for c in self.cables_of[n]):
                oob.add(n)
        return oob

    # ------------------------------------------------------------------ tiers and planes

    def _tiers(self, said: dict, switch: set[str], oob: set[str]) -> tuple[dict[str, Role], dict[str, Plane]]:
        data = [c for c in self.plan.cables if not ({c.a.device, c.b.device} & oob)]
        nbrs: dict[str, set[str]] = defaultdict(set)
        for c in data:
            nbrs[c.a.device].add(c.b.device)
            nbrs[c.b.device].add(c.a.device)
        hosts = [n for n in self.names if n not in switch]
        data_switches = [n for n in self.names if n in switch and n not in oob]
        tier: dict[str, str] = {}
        for n in data_switches:
            if any(m not in switch for m in nbrs[n]):
                tier[n] = "leaf"
        for n in data_switches:
            if n not in tier and any(tier.get(m) == "leaf" for m in nbrs[n]):
                tier[n] = "spine"
        for n in data_switches:
            if n not in tier and nbrs[n] and all(tier.get(m) == "spine" for m in nbrs[n]):
                tier[n] = "superspine"
        for n in data_switches:
            if n not in tier and self.cables_of[n]:
                self.problem(self.at(n), f"{n} is a switch with no host, leaf or spine cabled to it",
                             "cable it into the fabric, or drop it from the plan")
        for c in crossing(data, tier):  # left out of the split; named in _wires
            rest = [x for x in self.cables_of[c.a.device] if x is not c and c.b.device in (x.a.device, x.b.device)]
            if not rest:
                nbrs[c.a.device].discard(c.b.device)
                nbrs[c.b.device].discard(c.a.device)
        planes = self._planes(said, tier, nbrs, set(hosts))
        roles: dict[str, Role] = {n: Role.OOB for n in oob}
        for n, t in tier.items():
            plane = planes.get(n)
            if plane is None:
                continue
            # the FE is leaf-spine: a switch cabled only to its spines is a leaf with no host yet
            want = {("leaf", Plane.BE): Role.BE_LEAF, ("spine", Plane.BE): Role.BE_SPINE,
                    ("superspine", Plane.BE): Role.BE_SUPERSPINE, ("leaf", Plane.FE): Role.FE_LEAF,
                    ("spine", Plane.FE): Role.FE_SPINE, ("superspine", Plane.FE): Role.FE_LEAF}[(t, plane)]
            if isinstance(said[n], Role) and said[n] is not want:
                self.problem(self.at(n), f"{n}'s role says {said[n].value}, but it is cabled as a {want.value}",
                             "fix its role, or its cables")
            roles[n] = want
        for n in hosts:
            roles[n] = said[n] if isinstance(said[n], Role) and not said[n].is_switch else Role.CPU
        return roles, planes

    def _planes(self, said: dict, tier: dict[str, str], nbrs: dict[str, set[str]], hosts: set[str]
                ) -> dict[str, Plane]:
        """Each data switch's plane: the switches joined by switch-to-switch cables are one
        plane; of those, the one reaching the most hosts is the FE, unless roles say."""
        parts: list[set[str]] = []
        seen: set[str] = set()
        for n in sorted(tier, key=natural):
            if n in seen:
                continue
            part, todo = set(), [n]
            while todo:
                x = todo.pop()
                if x in part:
                    continue
                part.add(x)
                todo += [m for m in nbrs[x] if m in tier]
            seen |= part
            parts.append(part)
        reach = [{m for x in p for m in nbrs[x] if m in hosts} for p in parts]
        told = [{said[x].plane for x in p if isinstance(said[x], Role) and said[x].plane} for p in parts]
        planes: dict[str, Plane] = {}
        for p, t in zip(parts, told):
            if len(t) > 1:
                self.problem(self.at(sorted(p, key=natural)[0]), "switches of both planes are cabled together: "
                             + ", ".join(sorted(p, key=natural)),
                             "the FE and the BE are apart: take out the FE–BE cable")
        fe = [i for i, t in enumerate(told) if t == {Plane.FE}]
        if not fe:
            untold = [i for i, t in enumerate(told) if not t]
            most = max((len(reach[i]) for i in untold), default=0)
            top = [i for i in untold if len(reach[i]) == most and most]
            if len(top) > 1:  # rail-only BE leaves stand alone; the FE has its spines
                multi = [i for i in top if len(parts[i]) > 1]
                top = multi if len(multi) == 1 else top
            if len(top) > 1:  # a GPU node has more rail NICs than FE NICs
                links = {i: sum(1 for x in parts[i] for c in self.cables_of[x]
                                if self._far(c, x).device in hosts) for i in top}
                few = [i for i in top if links[i] == min(links.values())]
                top = few if len(few) == 1 else top
            if len(top) == 1 and len(parts) > 1:
                fe = top
            elif len(parts) > 1:
                self.problem("the cabling plan", "cannot tell the frontend from the backend: "
                             + "; ".join(", ".join(sorted(parts[i], key=natural)) for i in top)
                             + " reach as many hosts",
                             "give the devices a role column (fe-leaf, fe-spine, be-leaf, be-spine, ...)")
        for i, p in enumerate(parts):
            for x in p:
                planes[x] = Plane.FE if i in fe else Plane.BE
        return planes

    # ------------------------------------------------------------------ cables

    def _wires(self, roles: dict[str, Role], planes: dict[str, Plane], oob: set[str]) -> tuple[Wire, ...]:
        rank = {Role.GPU: 0, Role.CPU: 0, Role.STORAGE: 0, Role.GATEWAY: 0, Role.BE_LEAF: 1, Role.FE_LEAF: 1,
                Role.BE_SPINE: 2, Role.FE_SPINE: 2, Role.BE_SUPERSPINE: 3, Role.OOB: 9}
        wires: list[Wire] = []
        for c in self.plan.cables:
            ra, rb = roles.get(c.a.device), roles.get(c.b.device)
            if ra is None or rb is None:
                continue  # a device already in a problem
            a, b = (c.a, c.b) if rank[ra] <= rank[rb] else (c.b, c.a)
            lo, hi = roles[a.device], roles[b.device]
            if hi is Role.OOB:
                wires.append(Wire(a, b, Plane.MGMT, c.where, speed_mbps=c.speed_mbps, nic=NicRole.MGMT))
                continue
            if lo.is_switch and planes.get(a.device) is not planes.get(b.device):
                self.problem(str(c.where), f"{a} ({planes[a.device].value}) to {b} ({planes[b.device].value}): "
                             "an FE–BE cable", "take it out: the planes are apart")
                continue
            if rank[lo] == rank[hi]:
                self.problem(str(c.where), f"{a} and {b} are both {lo.value}s: a cable joins two tiers",
                             "cable a host to a leaf, a leaf to a spine")
                continue
            plane = planes.get(b.device) or planes.get(a.device)
            wires.append(Wire(a, b, plane, c.where, speed_mbps=c.speed_mbps))
        return tuple(wires)

    # ------------------------------------------------------------------ rails, groups, pods, host NICs

    def _place(self, roles: dict[str, Role], wires: tuple[Wire, ...]) -> tuple[tuple[Placed, ...], tuple[Wire, ...]]:
        be_nics: dict[str, list[Wire]] = defaultdict(list)
        for w in wires:
            if w.plane is Plane.BE and not roles[w.a.device].is_switch:
                be_nics[w.a.device].append(w)
        for h in be_nics:
            if roles[h] is not Role.GPU:
                if self.info.get(h) is not None and self.info[h].role:
                    self.problem(self.at(h), f"{h}'s role says {roles[h].value}, but it is cabled to the backend",
                                 "only GPU nodes have BE NICs: fix its role or its cables")
                roles[h] = Role.GPU
        rail_of = {w.a: r for ws in be_nics.values()
                   for r, w in enumerate(sorted(ws, key=lambda w: natural(w.a.port)))}
        by_leaf: dict[str, list[Wire]] = defaultdict(list)
        for ws in be_nics.values():
            for w in ws:
                by_leaf[w.b.device].append(w)
        taken: dict[End, End] = {}
        for c in self.plan.cables:
            taken[c.a], taken[c.b] = c.b, c.a
        rails = leaf_rails(by_leaf, rail_of, taken, self._has_port)
        self.problems += rails.problems
        self.astray, carried = rails.astray, rails.of_leaf
        astray = {h.nic for h in rails.astray}
        rail_only = not any(r is Role.BE_SPINE for r in roles.values())
        groups = [] if rail_only else self._groups(be_nics, astray)
        pods = self._pods(groups, wires, roles)
        group_of = {n: g for g, members in enumerate(groups, 1) for n in members}
        group_of.update({w.b.device: group_of[h] for h, ws in be_nics.items() if h in group_of for w in ws})
        out: list[Placed] = []
        for n in self.names:
            if n not in roles:
                continue
            d = self.info.get(n)
            out.append(Placed(n, roles[n], group_of.get(n), pods.get(n),
                              carried.get(n, ()) if roles[n] is Role.BE_LEAF else (), d.hwsku if d else None))
        return tuple(out), self._host_nics(roles, wires, rail_of)

    def _host_nics(self, roles_of: dict[str, Role], wires: tuple[Wire, ...], rail_of: dict[End, int]
                   ) -> tuple[Wire, ...]:
        """Each host end named for what it is: rail NIC, FE NIC, second FE NIC, storage NIC."""
        fe: dict[str, list[Wire]] = defaultdict(list)
        for w in wires:
            if w.plane is Plane.FE and not roles_of[w.a.device].is_switch:
                fe[w.a.device].append(w)
        part: dict[End, NicRole] = {}
        for h, ws in fe.items():
            roles = fe_roles([(w.a.port, w.b.device) for w in ws])
            for w in ws:
                role = roles[w.a.port]
                if role is None or (role is NicRole.STORAGE and roles_of[h] is not Role.GPU):
                    self.problem(str(w.where), f"{h} has {len(ws)} FE NICs ({', '.join(x.a.port for x in ws)})",
                                 "a host has one FE NIC (two on a pair of leaves, dual-homed), a GPU node one "
                                 "storage NIC beside it on the same leaf")
                    continue
                part[w.a] = role
        out = []
        for w in wires:
            if w.a in rail_of:
                w = replace(w, rail=rail_of[w.a], nic=NicRole.RAIL)
            elif w.a in part:
                w = replace(w, nic=part[w.a])
            out.append(w)
        return tuple(out)

    def _has_port(self, leaf: str, port: str) -> bool:
        """Whether a switch has the port: a row of its HwSKU (True where fablab does not know it)."""
        d = self.info.get(leaf)
        return not (d and d.hwsku and known(d.hwsku)) or hwsku(d.hwsku).row(port) is not None

    def _groups(self, be_nics: dict[str, list[Wire]], astray: set[End]) -> list[tuple[str, ...]]:
        """GPU nodes reaching the same leaves, their NICs on another rail's leaf aside (named
        already); a node short of a leaf so is of the group whose leaves it reaches."""
        by_leaves: dict[frozenset, list[str]] = defaultdict(list)
        for h in sorted(be_nics, key=natural):
            by_leaves[frozenset(w.b.device for w in be_nics[h] if w.a not in astray)
                      or frozenset(w.b.device for w in be_nics[h])].append(h)
        for key in sorted(by_leaves, key=len):
            wider = [k for k in by_leaves if key < k]
            if any(w.a in astray for h in by_leaves[key] for w in be_nics[h]) and len(wider) == 1:
                by_leaves[wider[0]] = sorted(by_leaves[wider[0]] + by_leaves.pop(key), key=natural)
        groups = sorted((tuple(v) for v in by_leaves.values()), key=lambda g: natural(g[0]))
        # Two groups sharing a leaf: a node cabled to another group's leaf (the rail check names the NIC).
        leaf_group: dict[str, int] = {}
        for i, g in enumerate(groups):
            for h in g:
                for w in be_nics[h]:
                    if w.a in astray:
                        continue
                    other = leaf_group.setdefault(w.b.device, i)
                    if other != i and len(g) < len(groups[other]):
                        self.problem(str(w.where), f"{w.a} lands on {w.b.device}, a leaf of the group of "
                                     f"{groups[other][0]}, while {h}'s other NICs are on other leaves",
                                     f"cable {w.a} to the leaf of {h}'s group for its rail")
        return groups

    def _pods(self, groups: list[tuple[str, ...]], wires: tuple[Wire, ...], roles: dict[str, Role]) -> dict[str, int]:
        """Pods where there is a super-spine tier: groups whose leaves reach the same spines."""
        if not any(r is Role.BE_SUPERSPINE for r in roles.values()):
            return {}
        up: dict[str, set[str]] = defaultdict(set)
        for w in wires:
            if w.plane is Plane.BE and roles[w.a.device] is Role.BE_LEAF:
                up[w.a.device].add(w.b.device)
        leaves_of = [{w.b.device for w in wires if w.a.device in g and w.plane is Plane.BE} for g in groups]
        spines_of = [frozenset(s for leaf in ls for s in up[leaf]) for ls in leaves_of]
        order = list(dict.fromkeys(spines_of))
        pods: dict[str, int] = {}
        for g, ls, sp in zip(groups, leaves_of, spines_of):
            p = order.index(sp) + 1
            pods.update({n: p for n in (*g, *ls, *sp)})
        return pods
