"""A containerlab topology file as a cabling plan: its nodes are the devices, its links the cables.

- A node's kind, env and labels come from `topology.defaults`, then `topology.kinds.<kind>`, then
  the node itself, as containerlab merges them.
- A link is given by its endpoints, in either of containerlab's forms: `["a:eth1", "b:eth2"]` or
  `{node: a, interface: eth1}`. A link with one end on `host`, `mgmt-net` or `macvlan` is not a
  cable between two devices and is skipped.
- A `sonic-vs` node's `eth<N>` is the port of the N-th row of its HwSKU's port_config.ini
  (env `HWSKU`, the image's Force10-S6000 by default): docker-sonic-vs wires it so
  (harness/core/hwsku.py). A port already written as the HwSKU's own name is kept. A label
  `fablab.hwsku` (what `fablab render` writes for a HwSKU fablab does not ship) says where its
  folder is: a path relative to the file, or a name under FABLAB_SONIC_DEVICES; env `HWSKU`, what
  the image runs, must then be that HwSKU.
- A link's `vars: {speed: 400G}` (what `fablab render` writes) is its speed; without it, the
  ports' own speed.
- A label `fablab.node` (what `fablab render` writes where a name had to change for
  containerlab) names the device; `fablab.role` or `role` gives its role.
"""
from __future__ import annotations

import difflib
from pathlib import Path

import yaml

from harness.core.cabling.csv_plans import speed_mbps
from harness.core.cabling.plan import CablingPlan, CableRow, Device, End, PlanFormat, Where
from harness.core.errors import Problem, TopologyError
from harness.core.hwsku import DEFAULT_HWSKU, HwSku, anchored, find, unknown_hint

SONIC_KIND = "sonic-vs"
NOT_A_DEVICE = ("host", "mgmt-net", "macvlan")  # containerlab's pseudo-nodes of a link end


def _with_length(address: object, length: str) -> str | None:
    if address is None:
        return None
    text = str(address)
    return f"{text}/{length}" if length and "/" not in text else text


def read_clab(text: str, name: str) -> CablingPlan:
    problems: list[Problem] = []
    try:
        root = yaml.compose(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        raise TopologyError([Problem(f"{name}:{mark.line + 1 if mark else 1}", f"not YAML: {getattr(e, 'problem', e)}",
                                     "containerlab's file format: name, topology.nodes, topology.links")],
                            source=name) from None
    topology = _get(root, "topology")
    if topology is None or _get(topology, "nodes") is None:
        raise TopologyError([Problem(f"{name}:1", "no topology.nodes",
                                     "a containerlab file lists its nodes under topology.nodes")], source=name)
    defaults = _plain(_get(topology, "defaults")) or {}
    kinds = _plain(_get(topology, "kinds")) or {}
    # a node's mgmt-ipv4 is a bare address on containerlab's mgmt network: its subnet gives the length
    mgmt = _plain(_get(root, "mgmt")) or {}
    subnet = str(mgmt.get("ipv4-subnet", "")) if isinstance(mgmt, dict) else ""
    length = subnet.partition("/")[2] if "/" in subnet else ""
    devices: dict[str, Device] = {}
    key_to_name: dict[str, str] = {}
    sku_of: dict[str, HwSku | None] = {}
    for key_node, body in _get(topology, "nodes").value:
        key = key_node.value
        node = _plain(body) or {}
        kind = node.get("kind") or defaults.get("kind")
        env = {**(defaults.get("env") or {}), **((kinds.get(kind) or {}).get("env") or {}), **(node.get("env") or {})}
        labels = {**(defaults.get("labels") or {}), **((kinds.get(kind) or {}).get("labels") or {}),
                  **(node.get("labels") or {})}
        # docker-sonic-vs reads HWSKU; on another kind (a defaults' env reaches every node) it means nothing
        runs = (str(env["HWSKU"]) if "HWSKU" in env else DEFAULT_HWSKU) if kind == SONIC_KIND else None
        folder = labels.get("fablab.hwsku") if kind == SONIC_KIND else None
        sku = anchored(str(folder), Path(name).parent) if folder else runs
        device = str(labels.get("fablab.node") or key)
        where = Where(name, key_node.start_mark.line + 1)
        key_to_name[key] = device
        sku_of[key] = _sku(key, sku, runs, bool(folder), str(where), problems) if kind == SONIC_KIND else None
        devices[device] = Device(device, where, hwsku=sku, kind=kind,
                                 role=labels.get("fablab.role") or labels.get("role"),
                                 mgmt_ip=_with_length(node.get("mgmt-ipv4"), length))
    cables: list[CableRow] = []
    used: dict[End, Where] = {}
    links = _get(topology, "links")
    for link in (links.value if links is not None else ()):
        where = Where(name, link.start_mark.line + 1)
        ends = _endpoints(link)
        if ends is None:
            problems.append(Problem(str(where), "a link without two endpoints",
                                    'write endpoints: ["node:eth1", "other:eth2"]'))
            continue
        if any(node in NOT_A_DEVICE for node, _ in ends):
            continue
        row = []
        for key, iface in ends:
            if key not in key_to_name:
                near = difflib.get_close_matches(key, list(key_to_name), n=1)
                problems.append(Problem(str(where), f"{key} is not a node of topology.nodes",
                                        f"did you mean {near[0]}?" if near else "add it under topology.nodes"))
                continue
            h = sku_of[key]
            port = _port(h, iface) if devices[key_to_name[key]].kind == SONIC_KIND else iface
            if port is None:
                problems.append(Problem(str(where), f"{key}:{iface} is no port of HwSKU {h.name}",
                                        f"{h.name} has eth1..eth{len(h.rows)}"))
                continue
            row.append(End(key_to_name[key], port))
        if len(row) != 2:
            continue
        for end in row:
            if end in used:
                problems.append(Problem(str(where), f"{end} is cabled twice (also at line {used[end].line})",
                                        "a port takes one cable: fix the port of one of the two links"))
            used.setdefault(end, where)
        speed = _speed(link)
        if speed == 0:
            problems.append(Problem(str(where), f"vars.speed {_plain(_get(_get(link, 'vars'), 'speed'))!r} is not a "
                                    "speed", "write 400G (or leave it out: the ports' own speed)"))
            continue
        cables.append(CableRow(row[0], row[1], where, speed))
    if problems:
        raise TopologyError(problems, source=name)
    return CablingPlan(PlanFormat.CLAB, tuple(cables), tuple(devices.values()))


def _sku(key: str, ref: str, runs: str, by_label: bool, where: str, problems: list[Problem]) -> HwSku | None:
    """A sonic-vs node's HwSKU: the one `fablab.hwsku` names (which must be the one env HWSKU
    runs), else HWSKU's; None where fablab finds or reads none (the problem said)."""
    what = "fablab.hwsku" if by_label else "HwSKU"
    try:
        found = find(ref)
    except TopologyError as e:
        problems += [Problem(where, f"{key}: {p.message}", p.hint) for p in e.problems]
        return None
    if isinstance(found, str):
        problems.append(Problem(where, f"{key}: {what} {ref!r} is not one fablab knows: {found}", unknown_hint(ref)))
        return None
    if found.name != runs:
        problems.append(Problem(where, f"{key}: fablab.hwsku is the folder of HwSKU {found.name}, and env HWSKU runs "
                                       f"{runs}", "make them one HwSKU: docker-sonic-vs wires the ports of HWSKU's"))
        return None
    return found


def _get(node, key: str):
    if not isinstance(node, yaml.MappingNode):
        return None
    return next((v for k, v in node.value if k.value == key), None)


def _plain(node):
    return yaml.safe_load(yaml.serialize(node)) if node is not None else None


def _speed(link) -> int | None:
    """A link's `vars: {speed: 400G}` in Mb/s (fablab's render writes it); None when not given,
    0 when not a speed."""
    given = _plain(_get(_get(link, "vars"), "speed"))
    if given is None:
        return None
    try:
        return speed_mbps(str(given), "auto")
    except ValueError:
        return 0


def _endpoints(link) -> list[tuple[str, str]] | None:
    ends = _plain(_get(link, "endpoints"))
    if not isinstance(ends, list) or len(ends) != 2:
        return None
    out = []
    for e in ends:
        if isinstance(e, str) and ":" in e:
            node, iface = e.split(":", 1)
        elif isinstance(e, dict) and e.get("node") and e.get("interface"):
            node, iface = str(e["node"]), str(e["interface"])
        else:
            return None
        out.append((node, iface))
    return out


def _port(h: HwSku | None, iface: str) -> str | None:
    """The SONiC port of a sonic-vs interface: eth<N> is the N-th row of the HwSKU."""
    if h is None:
        return iface
    if h.row(iface) is not None:
        return iface
    if iface.startswith("eth") and iface[3:].isdigit() and 1 <= int(iface[3:]) <= len(h.rows):
        return h.rows[int(iface[3:]) - 1].name
    return None
