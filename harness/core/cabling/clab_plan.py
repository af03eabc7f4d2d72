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

from harness.core.cabling.csv_plans import speed_mbps
from harness.core.cabling.plan import CablingPlan, CableRow, Device, End, PlanFormat, Where
from harness.core.errors import Problem, TopologyError, too_many
from harness.core.inputfile import line_of, quoted, yaml_of
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
    root = yaml_of(text, name)
    if not isinstance(root, dict) or not isinstance(root.get("topology"), dict) or "nodes" not in root["topology"]:
        raise TopologyError([Problem(f"{name}:{line_of(root) or 1}", "no topology.nodes",
                                     "a containerlab file is a map: name, topology.nodes, topology.links")],
                            source=name, what="containerlab file")
    topology = root["topology"]
    nodes = _map(topology, "nodes", "topology.", name, problems)
    defaults = _map(topology, "defaults", "topology.", name, problems)
    kinds = _map(topology, "kinds", "topology.", name, problems)
    for kind in list(kinds):
        kinds[kind] = _settings(kinds, kind, f"topology.kinds.{kind}", name, problems)
    defaults = _settings({"defaults": defaults}, "defaults", "topology.defaults", name, problems)
    # a node's mgmt-ipv4 is a bare address on containerlab's mgmt network: its subnet gives the length
    subnet = str(_map(root, "mgmt", "", name, problems).get("ipv4-subnet") or "")
    length = subnet.partition("/")[2] if "/" in subnet else ""
    devices: dict[str, Device] = {}
    key_to_name: dict[str, str] = {}
    sku_of: dict[str, HwSku | None] = {}
    for key in nodes:
        where = Where(name, line_of(nodes, key))
        if too_many(problems, str(where)):
            break
        if isinstance(key, bool) or not isinstance(key, (str, int)) or not str(key):
            problems.append(Problem(str(where), f"topology.nodes: {key!r} is not a node name", "name it, e.g. leaf1"))
            continue
        node = _settings(nodes, key, f"topology.nodes.{key}", name, problems)
        kind = node.get("kind") or defaults.get("kind")
        if kind is not None and not isinstance(kind, str):
            problems.append(Problem(str(where), f"topology.nodes.{key}.kind {quoted(kind)} is not a kind",
                                    f"write a containerlab kind, e.g. kind: {SONIC_KIND}"))
            continue
        key = str(key)
        of_kind = kinds.get(kind) or {}
        env = {**defaults.get("env", {}), **of_kind.get("env", {}), **node.get("env", {})}
        labels = {**defaults.get("labels", {}), **of_kind.get("labels", {}), **node.get("labels", {})}
        # docker-sonic-vs reads HWSKU; on another kind (a defaults' env reaches every node) it means nothing
        runs = (str(env["HWSKU"]) if "HWSKU" in env else DEFAULT_HWSKU) if kind == SONIC_KIND else None
        folder = labels.get("fablab.hwsku") if kind == SONIC_KIND else None
        sku = anchored(str(folder), Path(name).parent) if folder else runs
        device = str(labels.get("fablab.node") or key)
        key_to_name[key] = device
        sku_of[key] = _sku(key, sku, runs, bool(folder), str(where), problems) if kind == SONIC_KIND else None
        role = labels.get("fablab.role") or labels.get("role")
        devices[device] = Device(device, where, hwsku=sku, kind=kind, role=str(role) if role is not None else None,
                                 mgmt_ip=_with_length(node.get("mgmt-ipv4"), length))
    cables: list[CableRow] = []
    used: dict[End, Where] = {}
    links = topology.get("links") or []
    if not isinstance(links, list):
        problems.append(Problem(f"{name}:{line_of(topology, 'links')}", "topology.links is not a list",
                                'write each link as - endpoints: ["node:eth1", "other:eth2"]'))
        links = []
    for i, link in enumerate(links):
        where = Where(name, line_of(links, i))
        if too_many(problems, str(where)):
            break
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
        if link.get("vars") is not None and not isinstance(link["vars"], dict):
            problems.append(Problem(str(where), f"the link's vars is a {_what(link['vars'])}, not a map",
                                    "write vars: {speed: 400G} (or leave vars out)"))
            continue
        speed = _speed(link)
        if speed == 0:
            problems.append(Problem(str(where), f"vars.speed {quoted(link['vars']['speed'])} is not a speed",
                                    "write 400G (or leave it out: the ports' own speed)"))
            continue
        cables.append(CableRow(row[0], row[1], where, speed))
    if problems:
        raise TopologyError(problems, source=name, what="containerlab file")
    return CablingPlan(PlanFormat.CLAB, tuple(cables), tuple(devices.values()))


def _map(parent: dict, key: str, prefix: str, name: str, problems: list[Problem]) -> dict:
    """parent[key] when a map (empty when not given); a problem naming the field when not."""
    value = parent.get(key)
    if value is None:
        return {}
    if isinstance(value, dict):
        return value
    problems.append(Problem(f"{name}:{line_of(parent, key)}", f"{prefix}{key} is a {_what(value)}, not a map",
                            f"containerlab reads {prefix}{key} as a map: write it as key: value lines"))
    return {}


def _settings(parent: dict, key: object, field: str, name: str, problems: list[Problem]) -> dict:
    """A node's (a kind's, the defaults') settings: kind, env, labels and mgmt-ipv4 checked for
    their shape, as containerlab's NodeDefinition types them (env and labels map[string]string)."""
    body = parent.get(key)
    if body is None:
        return {}
    if not isinstance(body, dict):
        problems.append(Problem(f"{name}:{line_of(parent, key)}", f"{field} is a {_what(body)}, not a map",
                                "write its settings as key: value lines (kind, image, env, labels)"))
        return {}
    out = dict(body)
    for sub in ("env", "labels"):
        given = _map(body, sub, f"{field}.", name, problems)
        out[sub] = {str(k): v for k, v in given.items()}
        bad = [k for k, v in given.items() if isinstance(v, (dict, list))]
        if bad:
            problems.append(Problem(f"{name}:{line_of(given, bad[0])}", f"{field}.{sub}.{bad[0]} is a "
                                    f"{_what(given[bad[0]])}, not a value", "containerlab wants a string"))
    for sub in ("kind", "mgmt-ipv4"):
        if isinstance(body.get(sub), (dict, list)):
            problems.append(Problem(f"{name}:{line_of(body, sub)}", f"{field}.{sub} is a {_what(body[sub])}, "
                                    "not a value", "write a string"))
            out.pop(sub)
    return out


def _what(value: object) -> str:
    return "list" if isinstance(value, list) else "map" if isinstance(value, dict) else type(value).__name__


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


def _speed(link: dict) -> int | None:
    """A link's `vars: {speed: 400G}` in Mb/s (fablab's render writes it); None when not given,
    0 when not a speed."""
    given = link.get("vars", {}).get("speed") if isinstance(link.get("vars"), dict) else None
    if given is None:
        return None
    if isinstance(given, (dict, list, bool)):
        return 0
    try:
        return speed_mbps(str(given), "auto")
    except ValueError:
        return 0


def _endpoints(link: object) -> list[tuple[str, str]] | None:
    ends = link.get("endpoints") if isinstance(link, dict) else None
    if not isinstance(ends, list) or len(ends) != 2:
        return None
    out = []
    for e in ends:
        if isinstance(e, str) and ":" in e:
            node, iface = e.split(":", 1)
        elif isinstance(e, dict) and isinstance(e.get("node"), (str, int)) and isinstance(e.get("interface"), str) \
                and e["node"] != "" and e["interface"]:
            node, iface = str(e["node"]), e["interface"]
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
