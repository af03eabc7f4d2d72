"""Which SONiC HwSKU each routed switch runs, and which of its rows each cable end takes.

The HwSKU of a role is the one `Hardware` declares (a name of fablab's catalogue, a SONiC HwSKU
folder by path or by name under FABLAB_SONIC_DEVICES, or a HwSku read from SONiC's files), else
the plan's choice: one whose ports are as fast as the switch's
links (harness.core.hwsku.choose). Every link takes a row of its own speed, else of the slowest
faster speed; a link faster than every port of a declared HwSKU is refused, naming the field.
"""
from __future__ import annotations

from collections import Counter

from harness.core.declarations import Hardware, Role
from harness.core.fabric import Fabric, Link, Node
from harness.core.errors import Problem
from harness.core.hwsku import HwSku, automatic, catalog, PortRow, assign, choose, resolve, speed_matched


# The field of `Hardware` that names each routed role's HwSKU.
HARDWARE_FIELD = {Role.BE_LEAF: "be_leaf", Role.BE_SPINE: "be_spine", Role.BE_SUPERSPINE: "superspine",
                  Role.FE_LEAF: "fe_leaf", Role.FE_SPINE: "fe_spine"}


def running(hardware: Hardware, role: Role, name: str, own: str | HwSku | None = None) -> HwSku:
    """The HwSKU a planned switch of `role` runs as (its plan names it `name`): the one its own
    entry of `Cabling.hwskus` (`own`) or else its role declares, where that is the HwSKU of that
    name (one read from SONiC's files has no name in the catalogue), else the catalogue's."""
    declared = own or (getattr(hardware, HARDWARE_FIELD[role], None) if role in HARDWARE_FIELD else None)
    if declared is not None:
        sku = resolve(declared)
        if sku.name == name:
            return sku
    return resolve(name)


def assign_rows(fabric: Fabric, ports_of: dict[str, list[tuple[Link, bool]]]
                 ) -> tuple[dict[str, str], dict[tuple[int, bool], PortRow], dict[str, tuple[tuple[str, str], ...]],
                            list[Problem]]:
    """Pick each routed switch's HwSKU (declared per role in `Hardware`, else speed-matched) and
    give every cable end on it a row of that HwSKU.

    A port the user named keeps its own row; the others take free rows of their link's speed,
    else (a declared HwSKU) ports of a cage broken out to that speed, else rows of the slowest
    faster speed, in order. Returns (switch -> HwSKU name, (id(link), is_b_end) -> row,
    switch -> every cage's breakout mode, problems).
    """
    cable_field = {id(lk): f"cables[{i}]" for i, lk in enumerate(lk for lk in fabric.links if lk.declared)}
    skus: dict[str, str] = {}
    rows_of: dict[tuple[int, bool], PortRow] = {}
    modes: dict[str, tuple[tuple[str, str], ...]] = {}
    problems: list[Problem] = []
    said: set[str] = set()  # one problem per declared HwSKU field
    for node in fabric.switches:
        if not node.role.is_routed:
            continue
        items = ports_of.get(node.name, [])
        named = frozenset(p for lk, is_b in items if (p := lk.b_port if is_b else lk.a_port) is not None)
        auto = [lk.speed for lk, is_b in items if (lk.b_port if is_b else lk.a_port) is None]
        field = HARDWARE_FIELD[node.role]
        own_sku = fabric.cluster.cabling.hwsku_of(node.name)  # a plan of mixed hardware names it per switch
        declared = own_sku or getattr(fabric.cluster.hardware, field)
        # the HwSKU follows from the links' speeds (or the declaration), never from a port's name
        sku = resolve(declared) if declared else choose([lk.speed for lk, _ in items])
        where = f"cabling.hwskus ({node.name})" if own_sku else f"hardware.{field}" if declared \
            else f"switches.{node.name}"
        found = _sku_problems(node, items) if sku is None else \
            _fit_problems(node, items, named, auto, sku, where, cable_field, breakout=bool(declared))
        if found:
            problems += [p for p in found if p.field not in said]
            said |= {p.field for p in found if p.field.startswith("hardware.")}
            continue
        skus[node.name] = sku.name
        done = assign(sku, auto, named, breakout=bool(declared))
        modes[node.name] = done.modes
        free = iter(done.rows)
        for lk, is_b in items:
            own = lk.b_port if is_b else lk.a_port
            rows_of[(id(lk), is_b)] = sku.row(own) if own is not None else next(free)
    return skus, rows_of, modes, problems


def _fit_problems(node: Node, items: list[tuple[Link, bool]], named: frozenset[str], auto: list[int], sku: HwSku,
                  where: str, cable_field: dict[int, str], breakout: bool) -> list[Problem]:
    """What keeps a switch off its HwSKU (declared for its role, or chosen): a link faster than
    every port, too few ports, a named port it has not, or a named port slower than its link."""
    fastest = max(r.speed for r in sku.data_rows) // 1000
    if auto and max(auto) > fastest:
        better = choose([max(auto)])
        return [Problem(where, f"{node.name} has {max(auto)}G links, and the fastest port of HwSKU {sku.name} is "
                               f"{fastest}G: a link cannot be faster than its port",
                        f"declare a HwSKU with {max(auto)}G ports" + (f" (e.g. {better.name})" if better else "")
                        + f", or leave {where} out to let the plan choose")]
    out = []
    for lk, is_b in items:
        port = lk.b_port if is_b else lk.a_port
        if port is None:
            continue
        row = sku.row(port)
        if row is None:
            out.append(Problem(cable_field.get(id(lk), where), f"{node.name} has no port {port!r}: it runs as "
                                                               f"HwSKU {sku.name}", f"name one of {sku.span}, or "
                                                                                     "leave the port out and let the "
                                                                                     "plan number it"))
        elif row.speed < lk.speed * 1000:
            out.append(Problem(cable_field.get(id(lk), where), f"{node.name}:{port} is a {row.speed // 1000}G port "
                                                               f"of {sku.name}, the link {lk.speed}G",
                               "name a port as fast as the link, or leave the port out"))
    if not out and assign(sku, auto, named, breakout=breakout) is None:
        speeds = ", ".join(f"{k} × {gbps}G" for gbps, k in sorted(Counter(auto).items()))
        out.append(Problem(where, f"{node.name} needs {len(auto) + len(named)} ports ({speeds}"
                                  f"{f' and {len(named)} named' if named else ''}); {sku.name} has "
                                  f"{_ports_by_speed(sku)}", f"declare a larger HwSKU, or leave {where} out to "
                                                             "let the plan choose"))
    return out


def _ports_by_speed(sku: HwSku) -> str:
    return ", ".join(f"{k} × {sp // 1000}G" for sp, k in sorted(Counter(r.speed for r in sku.data_rows).items(),
                                                                reverse=True))


def _sku_problems(node: Node, items: list[tuple[Link, bool]]) -> list[Problem]:
    """No HwSKU the plan picks from has the ports: say how many at which speeds, the nearest,
    and a HwSKU of the catalogue to declare where one has them."""
    need = Counter(lk.speed for lk, _ in items)
    speeds = ", ".join(f"{k} × {gbps}G" for gbps, k in sorted(need.items(), reverse=True))
    slowest = min(need) * 1000
    best = max(automatic(), key=lambda h: sum(1 for r in h.data_rows if r.speed >= slowest))
    fit = sum(1 for r in best.data_rows if r.speed >= slowest)
    links = [lk.speed for lk, _ in items]
    fits = [h for h in catalog() if assign(h, links) is not None]  # the smallest, of the links' speed if one is
    other = min(fits, key=lambda h: (not speed_matched(h, links), h.data_ports), default=None)
    declare = f"declare Hardware({HARDWARE_FIELD[node.role]}={other.name!r}), or " if other else ""
    return [Problem(f"switches.{node.name}",
                    f"{node.name} needs {len(items)} ports ({speeds}); no HwSKU the plan picks from has them (the "
                    f"most at {slowest // 1000}G or faster: {fit}, on {best.name})", declare + _SKU_HINTS[node.role])]


_SKU_HINTS = {
    Role.BE_LEAF: "use more groups (rail-optimized) so each leaf serves fewer nodes",
    Role.BE_SPINE: "lower backend.uplinks_per_spine (add spines to keep the bandwidth), or use fewer groups",
    Role.BE_SUPERSPINE: "make superspines a multiple of spines (planes), or lower backend.uplinks_per_superspine",
    Role.FE_LEAF: "add FE leaves (frontend.leaves) so each serves fewer hosts",
    Role.FE_SPINE: "use fewer FE leaves or split the frontend",
}
