"""The declaration a placed cabling plan is: counts, speeds and hardware as a `Cluster`, and
every way the plan strays from a shape fablab builds, named by device:port.

fablab's backend is regular (every group the same nodes and rails, every leaf the same
uplinks to every spine of its pod); a plan that is not is told where, rather than emulated
as something else. A speed not given in the plan is the declaration's default for that kind
of link; one given differently on one cable than on its like is named. Storage NICs in a plan
join the storage plane, an L2 tenant (VNI 10900) of the GPU nodes and storage servers.
"""
from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace

from harness.core.cabling.infer import Inferred, Placed, Wire, natural
from harness.core.declarations import (SPEEDS_GBPS, STORAGE_NIC, Backend, Cluster, Frontend, GpuNodes, Hardware,
                                       NicRole, Plane, Role, Tenant)
from harness.core.errors import Problem, TopologyError
from harness.core.hwsku import HwSku, find, known, unknown_hint


STORAGE_VNI = 10900  # the storage plane's VNI where a plan has storage NICs (ai-cluster's)


@dataclass(frozen=True)
class Shaped:
    cluster: Cluster
    problems: tuple[Problem, ...]
    hwskus: tuple[tuple[str, str], ...] = ()  # a switch whose HwSKU is not its role's: Cabling.hwskus


def shape(placed: Inferred, name: str, where: Mapping[str, str] | None = None) -> Shaped:
    """`where`: each device's row of the plan (`file:line`), to name a HwSKU fablab cannot read."""
    return _Shape(placed, name, where or {}).run()


class _Shape:
    def __init__(self, placed: Inferred, name: str, where: Mapping[str, str]) -> None:
        self.p = placed
        self.name = name
        self.where = where
        self.problems: list[Problem] = []
        self.skus: dict[str, HwSku | str] = {}  # a HwSKU as the plan writes it -> the HwSku, or where fablab looked

    def run(self) -> Shaped:
        be, fe = self._port_budgets(self._backend(), self._frontend())
        gpu = self._gpu()
        self._oversubscribed(Role.BE_LEAF, gpu.nic_speed, be.uplink_speed)
        self._oversubscribed(Role.BE_SPINE, be.uplink_speed, be.uplink_speed)
        # fablab keeps a storage NIC in an L2 tenant, the storage plane; a plan says nothing of tenants
        members = ("role:gpu", "role:storage") if fe.storage_servers else ("role:gpu",)
        tenants = (Tenant("storage", vni=STORAGE_VNI, members=members, nic=STORAGE_NIC),) if fe.storage_nics else ()
        hardware, own = self._hardware()
        c = Cluster(self.name, gpu=gpu, backend=be, frontend=fe, hardware=hardware, tenants=tenants)
        return Shaped(c, tuple(self.problems), own)

    def _port_budgets(self, be: Backend, fe: Frontend) -> tuple[Backend, Frontend]:
        """Each role's ports at least what its busiest switch cables (a leaf of 48 hosts and an
        uplink needs 49, whatever the default says); its management port is apart."""
        used: Counter[str] = Counter()
        for w in self.p.wires:
            if w.plane is not Plane.MGMT:
                used.update((w.a.device, w.b.device))

        def most(role: Role, budget: int) -> int:
            return max([budget, *(used[d.name] for d in self.p.with_role(role))])

        return (replace(be, leaf_ports=most(Role.BE_LEAF, be.leaf_ports), spine_ports=most(Role.BE_SPINE, be.spine_ports),
                        superspine_ports=most(Role.BE_SUPERSPINE, be.superspine_ports)),
                replace(fe, leaf_ports=most(Role.FE_LEAF, fe.leaf_ports), spine_ports=most(Role.FE_SPINE, fe.spine_ports)))

    def wires(self, test: Callable[[Wire], bool]) -> list[Wire]:
        return [w for w in self.p.wires if test(w)]

    def role(self, name: str) -> Role:
        return self.p.device(name).role

    def gbps(self, w: Wire) -> int | None:
        """A cable's Gb/s: the plan's, else its switch ports' own as their HwSKU has them (the
        slower end), else None."""
        if w.speed_mbps:
            return w.speed_mbps // 1000
        rows = [r for end in (w.a, w.b) if (d := self.p.device(end.device)).hwsku
                and isinstance(sku := self.sku(d.hwsku), HwSku) and (r := sku.row(end.port)) is not None]
        return min(r.speed for r in rows) // 1000 if rows else None

    def speed(self, wires: Iterable[Wire], what: str, default: int) -> int:
        """The Gb/s most of `wires` run (those without a speed: the default); each other one named."""
        ws = list(wires)
        given = Counter(g for w in ws if (g := self.gbps(w)))
        if not given:
            return default
        speed, _ = given.most_common(1)[0]
        for w in ws:
            if (g := self.gbps(w)) and g != speed:
                self.problems.append(Problem(str(w.where), f"{w.a} - {w.b} runs {g}G"
                                             f"{'' if w.speed_mbps else ' (its ports)'} where the other {what} run "
                                             f"{speed}G", f"give it {speed}G, or re-cable"))
        if speed not in SPEEDS_GBPS:
            self.problems.append(Problem(str(ws[0].where), f"{what} at {speed}G: not a speed fablab lays",
                                         "use one of " + ", ".join(f"{s}G" for s in SPEEDS_GBPS)))
            return default
        return speed

    # ------------------------------------------------------------------ GPU nodes

    def _gpu(self) -> GpuNodes:
        nodes = self.p.with_role(Role.GPU)
        rails = self.wires(lambda w: w.nic is NicRole.RAIL)
        per = Counter(w.a.device for w in rails)
        width = Counter(per.values()).most_common(1)[0][0] if per else 0
        for n in nodes:
            if per[n.name] != width:
                self.problems.append(Problem(n.name, f"{n.name} has {per[n.name]} BE NICs where the other GPU "
                                             f"nodes have {width}", "give every GPU node a NIC on every rail"))
        d = GpuNodes()
        return GpuNodes(count=len(nodes), gpus_per_node=width,
                        nic_speed=self.speed(rails, "rail NICs", d.nic_speed),
                        fe_speed=self.speed(self.wires(lambda w: w.nic in (NicRole.FE, NicRole.FE2)
                                                       and self.role(w.a.device) is Role.GPU),
                                            "GPU nodes' FE NICs", d.fe_speed))

    # ------------------------------------------------------------------ backend

    def _backend(self) -> Backend:
        leaves, spines = self.p.with_role(Role.BE_LEAF), self.p.with_role(Role.BE_SPINE)
        supers = self.p.with_role(Role.BE_SUPERSPINE)
        d = Backend()
        if not leaves:
            self.problems.append(Problem("the cabling plan", "no backend: no switch carries GPU NICs",
                                         "cable each GPU node's rail NICs to its rail leaves"))
            return d
        rails = max((r for leaf in leaves for r in leaf.rails), default=-1) + 1
        per_leaf = Counter(len(leaf.rails) for leaf in leaves).most_common(1)[0][0]
        for leaf in leaves:
            if len(leaf.rails) != per_leaf:
                self.problems.append(Problem(leaf.name, f"{leaf.name} carries {len(leaf.rails)} rails where the "
                                             f"other leaves carry {per_leaf}", "give every leaf as many rails"))
        if not spines:
            return replace(d, kind="rail-only", rails=rails, rails_per_leaf=per_leaf, groups=1, spines=0)
        pods = sorted({s.pod for s in spines if s.pod is not None}) or [None]
        groups = {leaf.group for leaf in leaves}
        up = self.wires(lambda w: w.plane is Plane.BE and self.role(w.a.device) is Role.BE_LEAF)
        uplinks = self._uplinks(leaves, spines, up)
        spines_per_pod = Counter(s.pod for s in spines)
        per_pod = Counter(spines_per_pod.values()).most_common(1)[0][0]
        ss_links = self.wires(lambda w: self.role(w.a.device) is Role.BE_SPINE and w.plane is Plane.BE)
        per_ss = Counter(Counter((w.a.device, w.b.device) for w in ss_links).values())
        return replace(d, kind="rail-optimized", rails=rails, rails_per_leaf=per_leaf,
                       groups=max(len(groups) // len(pods), 1), spines=per_pod, uplinks_per_spine=uplinks,
                       uplink_speed=self.speed([*up, *ss_links], "BE uplinks", d.uplink_speed),
                       pods=len(pods) if supers else 1, superspines=len(supers),
                       uplinks_per_superspine=per_ss.most_common(1)[0][0] if per_ss else 1)

    def _uplinks(self, leaves: tuple[Placed, ...], spines: tuple[Placed, ...], up: list[Wire]) -> int:
        """Cables from each leaf to each spine of its pod: as many to every one."""
        count = Counter((w.a.device, w.b.device) for w in up)
        usual = Counter(count.values()).most_common(1)[0][0] if count else 1
        for leaf in sorted(leaves, key=lambda x: natural(x.name)):
            for s in sorted((s for s in spines if s.pod == leaf.pod), key=lambda x: natural(x.name)):
                k = count[(leaf.name, s.name)]
                if k != usual:
                    self.problems.append(Problem(f"{leaf.name} - {s.name}", f"{k} cables where every other leaf has "
                                                 f"{usual} to each spine", "cable every leaf alike to every spine of "
                                                 "its pod (an uplink missing, or one too many)"))
        return usual

    def _oversubscribed(self, role: Role, down_speed: int, up_speed: int) -> None:
        """A BE switch with less bandwidth up than down, said once for all such with an example:
        the BE must be non-blocking (a plan cannot say otherwise; `fablab import` it to)."""
        below = {Role.BE_LEAF: NicRole.RAIL}.get(role)
        down: dict[str, list[Wire]] = defaultdict(list)
        up: dict[str, list[Wire]] = defaultdict(list)
        for w in self.p.wires:
            if w.plane is not Plane.BE:
                continue
            if self.role(w.b.device) is role and (w.nic is below if below else self.role(w.a.device) is Role.BE_LEAF):
                down[w.b.device].append(w)
            elif self.role(w.a.device) is role:
                up[w.a.device].append(w)

        def gbps(ws: list[Wire], default: int) -> int:
            return sum(self.gbps(w) or default for w in ws)

        over = [(n, gbps(ws, down_speed), gbps(up[n], up_speed)) for n, ws in down.items()
                if up[n] and gbps(ws, down_speed) > gbps(up[n], up_speed)]
        # a leaf over only by a NIC of another rail on it: said as what follows from that NIC
        astray = {h.nic for h in self.p.astray}
        for n, d, u in sorted(over, key=lambda x: natural(x[0])):
            stray = [w for w in down[n] if w.a in astray]
            rest = gbps([w for w in down[n] if w.a not in astray], down_speed)
            if stray and rest <= u:
                over.remove((n, d, u))
                self.problems.append(Problem(
                    f"{n}:{up[n][0].a.port}", f"{n} is oversubscribed {d / u:.2f}:1 ({d}G down, {u}G up): this "
                    f"follows from {', '.join(str(w.a) for w in stray)} above, on "
                    f"{', '.join(w.b.port for w in stray)}",
                    f"cable {'them' if len(stray) > 1 else 'it'} where said above: {rest}G down then"))
        if not over:
            return
        over.sort(key=lambda x: natural(x[0]))
        n, d, u = over[0]
        ports = lambda ws: ", ".join(str(w.b.port if w.b.device == n else w.a.port) for w in ws)  # noqa: E731
        more = -(-(d - u) // up_speed)
        what = f"{len(over)} BE {'leaves' if role is Role.BE_LEAF else 'spines'} are" if len(over) > 1 else f"{n} is"
        self.problems.append(Problem(
            f"{n}:{up[n][0].a.port}" + (f" and {len(over) - 1} more" if len(over) > 1 else ""),
            f"{what} oversubscribed {d / u:.2f}:1, e.g. {n}: {d}G down ({ports(down[n])}), {u}G up "
            f"({ports(up[n])}); the backend must be non-blocking",
            f"cable {more} more {up_speed}G uplink{'s' if more > 1 else ''} on each, or fewer NICs below; "
            "or `fablab import` the plan and set backend.allow_oversubscription=True on purpose"))

    # ------------------------------------------------------------------ frontend

    def _frontend(self) -> Frontend:
        d = Frontend()
        leaves, spines = self.p.with_role(Role.FE_LEAF), self.p.with_role(Role.FE_SPINE)
        if not leaves or not spines:
            self.problems.append(Problem("the cabling plan", "no frontend: " + ("no FE leaf" if not leaves else
                                                                                "no FE spine"),
                                         "cable the FE leaves, their spines and every host's FE NIC"))
            return d
        fe = self.wires(lambda w: w.plane is Plane.FE)
        hosts = self.wires(lambda w: w.nic in (NicRole.FE, NicRole.FE2) and self.role(w.a.device) is not Role.GPU)
        up = self.wires(lambda w: w.plane is Plane.FE and self.role(w.a.device) is Role.FE_LEAF)
        return replace(d, leaves=len(leaves), spines=len(spines),
                       cpu_servers=len(self.p.with_role(Role.CPU)), storage_servers=len(self.p.with_role(Role.STORAGE)),
                       gateways=len(self.p.with_role(Role.GATEWAY)),
                       dual_homed=any(w.nic is NicRole.FE2 for w in fe),
                       storage_nics=any(w.nic is NicRole.STORAGE for w in fe),
                       host_speed=self.speed(hosts, "servers' FE NICs", d.host_speed),
                       uplink_speed=self.speed(up, "FE uplinks", d.uplink_speed),
                       storage_nic_speed=self.speed(self.wires(lambda w: w.nic is NicRole.STORAGE), "storage NICs",
                                                    d.storage_nic_speed))

    # ------------------------------------------------------------------ hardware

    def sku(self, ref: str) -> HwSku | str | TopologyError:
        """The HwSKU a device's HwSku cell names (harness.core.hwsku.find), read once: the HwSku,
        where fablab looked for it, or what is wrong with its folder."""
        if ref not in self.skus:
            try:
                self.skus[ref] = find(ref)
            except TopologyError as e:
                self.skus[ref] = e
        return self.skus[ref]

    def _hardware(self) -> tuple[Hardware, tuple[tuple[str, str], ...]]:
        """The HwSKU of each role (the one most of its switches name), and each switch naming
        another (a plan of mixed hardware); a HwSKU fablab cannot find or read is named. One of
        the catalogue is its name; one read from a SONiC folder is its HwSku in `Hardware` (its
        ports travel with the declaration) and its folder's absolute path in `Cabling.hwskus`."""
        field = {Role.BE_LEAF: "be_leaf", Role.BE_SPINE: "be_spine", Role.BE_SUPERSPINE: "superspine",
                 Role.FE_LEAF: "fe_leaf", Role.FE_SPINE: "fe_spine"}
        chosen: dict[str, str | HwSku | None] = {}
        own: list[tuple[str, str]] = []
        by_role: dict[Role, list[Placed]] = defaultdict(list)
        ref: dict[str, str] = {}  # a switch -> its HwSKU as a name of the catalogue or a folder's path
        read: dict[str, HwSku] = {}
        for dev in self.p.devices:
            if dev.role in field and dev.hwsku:
                sku, at = self.sku(dev.hwsku), self.where.get(dev.name, dev.name)
                if isinstance(sku, HwSku):
                    by_role[dev.role].append(dev)
                    ref[dev.name], read[dev.name] = (dev.hwsku if known(dev.hwsku) else sku.source), sku
                elif isinstance(sku, TopologyError):
                    self.problems += [Problem(at, f"{dev.name}: {p.message}", p.hint) for p in sku.problems]
                else:
                    self.problems.append(Problem(at, f"{dev.name}'s HwSKU {dev.hwsku!r} is not one fablab knows: "
                                                 f"{sku}", unknown_hint(dev.hwsku)))
        for role, devs in by_role.items():
            most, _ = Counter(ref[d.name] for d in devs).most_common(1)[0]
            chosen[field[role]] = most if known(most) else read[next(d.name for d in devs if ref[d.name] == most)]
            own += [(d.name, ref[d.name]) for d in devs if ref[d.name] != most]
        return Hardware(**chosen), tuple(sorted(own, key=lambda x: natural(x[0])))
