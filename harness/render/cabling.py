"""The cabling, as the formats fablab reads a plan from (harness/core/cabling): what a
data-center technician works from, and what `fablab show` / `fablab import` take back.

- `cabling.csv` + `devices.csv`: a cable list, one row per cable (`a_device,a_port,b_device,
  b_port,speed`, then fablab's own plane, rail and media columns, which a reader ignores), and
  every device with its role, HwSKU and management address.
- `sonic_<lab>_links.csv` + `sonic_<lab>_devices.csv`: sonic-mgmt's connection graph
  (BandWidth in Mb/s; Type DevSonic or Server, and a Role column sonic-mgmt leaves alone).
- `numbering.csv`, where the plan is numbered the engineer's way (beside every format above).

A HwSKU fablab does not ship is written as the path of its folder in the render, `hwskus/...`
(harness/render/hwskus.py), relative to these files. Reading any of them back gives the same
plan, cable for cable (tests/unit/test_plan_round_trip.py).
"""
from __future__ import annotations

import csv
import io
from collections.abc import Iterable

from harness.core.declarations import Plane, Role
from harness.core.plan import Plan
from harness.render.hwskus import references

COLUMNS = ("a_device", "a_port", "b_device", "b_port", "speed", "plane", "rail", "media")
DEVICE_COLUMNS = ("name", "role", "hwsku", "mgmt_ip")
SONIC_LINK_COLUMNS = ("StartDevice", "StartPort", "EndDevice", "EndPort", "BandWidth", "VlanID", "VlanMode")
SONIC_DEVICE_COLUMNS = ("Hostname", "ManagementIp", "HwSku", "Type", "Role")


def _csv(header: Iterable[str], rows: Iterable[Iterable[object]]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    return out.getvalue()


def cabling_csv(plan: Plan) -> str:
    return _csv(COLUMNS, ((r.a_node, r.a_port, r.b_node, r.b_port, f"{r.speed}G", r.plane.value,
                           "" if r.rail is None else r.rail, r.media) for r in plan.cables))


def _devices(plan: Plan) -> list[tuple[str, Role, str, str]]:
    """(name, role, HwSKU, management address) of every node, in the fabric's order."""
    sku = references(plan)
    mgmt = {s.name: str(s.mgmt) for s in plan.switches}
    for h in plan.hosts:
        mgmt.update({h.name: str(n.address) for n in h.nics if n.plane is Plane.MGMT})
    return [(n.name, n.role, sku.get(n.name, ""), mgmt.get(n.name, "")) for n in plan.fabric.nodes]


def devices_csv(plan: Plan) -> str:
    return _csv(DEVICE_COLUMNS, ((name, role.value, sku, ip) for name, role, sku, ip in _devices(plan)))


def sonic_links_csv(plan: Plan) -> str:
    return _csv(SONIC_LINK_COLUMNS, ((r.a_node, r.a_port, r.b_node, r.b_port, r.speed * 1000, "", "")
                                     for r in plan.cables))


def sonic_devices_csv(plan: Plan) -> str:
    return _csv(SONIC_DEVICE_COLUMNS, ((name, ip, sku, "DevSonic" if role.is_switch else "Server", role.value)
                                       for name, role, sku, ip in _devices(plan)))


def numbering_csv(plan: Plan) -> str | None:
    """`numbering.csv` (harness/core/cabling/numbering_csv.py) where the plan's ASNs, loopbacks or
    host-link addresses are the engineer's, not fablab's allocation (None otherwise): with it, the
    cabling files read back as the same plan, numbers included. Mgmt addresses are in the devices files."""
    a = plan.fabric.cluster.addressing
    if not (a.asns or a.loopbacks or a.ports):
        return None
    rows: list[tuple[str, str, str]] = []
    for sw in plan.switches:
        if a.asns:
            rows.append((sw.name, "asn", str(sw.asn)))
        if a.loopbacks:
            rows.append((sw.name, "loopback", str(sw.loopback)))
        if a.ports:
            rows += [(sw.name, p.name, str(p.address)) for p in sw.host_ports]
    return _csv(("device", "item", "value"), rows)
