"""topology.svg: the planes drawn apart. BE above the GPU nodes, FE below, OOB at the bottom.
Drawn too: each pod of a 5-stage BE (a dashed frame), the port groups of a leaf of several rails
(under it), and the leaf pairs of a dual-homed FE (a dashed frame; a host's second NIC darker)."""
from __future__ import annotations

from dataclasses import dataclass

from harness.core.declarations import NicRole
from harness.core.model import Plane, Role
from harness.core.plan import Plan
from harness.render.templates import render_template

_RAIL_COLORS = ("#1f77b4", "#ff7f0e", "#9467bd", "#d62728", "#8c564b", "#e377c2", "#17becf", "#bcbd22")
_FE = "#2ca02c"
_FE_SECOND = "#125c12"  # a dual-homed host's second FE NIC (fe1)
_BE_SHARED = "#1f4e79"  # BE links of no single rail: a multi-rail leaf's uplinks, spine to super-spine
_MGMT = "#7f7f7f"
_STEP = 74
_MARGIN = 40


@dataclass(frozen=True)
class _Box:
    x: int
    y: int
    w: int
    h: int
    label: str
    fill: str
    stroke: str


@dataclass(frozen=True)
class _Node:
    x: float
    y: int
    w: int
    label: str
    fill: str
    notes: tuple[str, ...] = ()  # small lines under the box: a multi-rail leaf's port groups


@dataclass(frozen=True)
class _Line:
    x1: float
    y1: int
    x2: float
    y2: int
    color: str
    width: float
    dash: bool = False
    key: str = ""  # "a:port b:port", where a live view marks the cable's state
    state: str = ""  # up | failed | down (a live view); "" in a render


@dataclass(frozen=True)
class LinkNote:
    """A few characters a live view writes beside a cable (its load, queue, pause, drops)."""

    a: str  # node:port, as the plan's cable row has its ends
    b: str
    text: str
    alert: bool = False  # drawn red: something to look at (a pause, a drop)


@dataclass(frozen=True)
class _Label:
    x: float
    y: float
    anchor: str  # SVG text-anchor: start | middle
    text: str
    color: str
    key: str  # "a:port b:port" of its cable


_LABEL_PX_PER_CHAR = 6.0  # font-size 9 sans-serif, generously: the box must not reach the line
_LABEL_HEIGHT = 10.0
_LABEL_GAP = 3.0  # between the line and the nearest corner of the label's box


_LABEL_AT = (0.5, 0.38, 0.62, 0.28, 0.72, 0.2, 0.8)  # along a line: its midpoint, else nearer an end


def label_position(x1: float, y1: float, x2: float, y2: float, chars: int, gap: float = _LABEL_GAP,
                   t: float = 0.5) -> tuple[float, float, str]:
    """Where a label of `chars` characters goes beside the segment's point at `t` (0.5: its
    midpoint): offset along the segment's normal until the nearest corner of its box is `gap`
    from the line, so the text never lies on the line it labels. (x, baseline y, text-anchor)."""
    w, h = chars * _LABEL_PX_PER_CHAR, _LABEL_HEIGHT
    mx, my = x1 + (x2 - x1) * t, y1 + (y2 - y1) * t
    dx, dy = x2 - x1, y2 - y1
    length = (dx * dx + dy * dy) ** 0.5 or 1.0
    nx, ny = abs(dy) / length, (-dx if dy >= 0 else dx) / length  # the normal pointing right (nx >= 0)
    if nx >= 0.2:  # steep enough: the box to the right, centred on the midpoint's height
        x = mx + (gap + h / 2 * abs(ny)) / nx
        return round(x, 1), round(my + h / 2 - 2, 1), "start"
    # nearly level: the box above the line, centred on the midpoint
    up_x, up_y = (nx, ny) if ny < 0 else (-nx, -ny)
    y = my + (gap + w / 2 * abs(up_x)) / up_y
    return round(mx, 1), round(y, 1), "middle"


def label_box(x: float, y: float, anchor: str, chars: int) -> tuple[float, float, float, float]:
    """The box (left, top, right, bottom) a label placed by label_position takes."""
    w, h = chars * _LABEL_PX_PER_CHAR, _LABEL_HEIGHT
    if anchor == "start":
        return x, y + 2 - h, x + w, y + 2
    return x - w / 2, y - h, x + w / 2, y


def _overlaps(a: tuple[float, float, float, float], b: tuple[float, float, float, float]) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def _place(x1: float, y1: float, x2: float, y2: float, chars: int,
           taken: list[tuple[float, float, float, float]]) -> tuple[float, float, str]:
    """Beside the midpoint if that is free of the labels placed before, else beside the first
    free point further along the line (many links of a row share their midpoints' height)."""
    first = label_position(x1, y1, x2, y2, chars)
    for t in _LABEL_AT:
        spot = label_position(x1, y1, x2, y2, chars, t=t)
        box = label_box(*spot, chars)
        if not any(_overlaps(box, other) for other in taken):
            taken.append(box)
            return spot
    taken.append(label_box(*first, chars))
    return first


def _row(names: list[str], y: int, width: int) -> dict[str, tuple[float, int]]:
    if not names:
        return {}
    step = (width - 2 * _MARGIN) / len(names)
    return {n: (_MARGIN + step * (i + 0.5), y) for i, n in enumerate(names)}


def rail_color(rail: int | None) -> str:
    return _FE if rail is None else _RAIL_COLORS[rail % len(_RAIL_COLORS)]


_STATE_COLORS = {"failed": "#000000", "down": "#000000"}  # no rail's colour: a failed cable is black, dashed, marked


def topology_svg(plan: Plan, states: dict[tuple[str, str], str] | None = None,
                 notes: tuple[LinkNote, ...] = ()) -> str:
    """`states`: ("node:port", "node:port") of a cable -> up | failed | down, as `fablab view`
    saw them; a failed or down cable is drawn red (dashed when down) and marked in the SVG.
    `notes`: text written beside a cable's midpoint, off the line (label_position)."""
    noted = {(n.a, n.b): n for n in notes if n.text}
    ends: list[tuple[LinkNote, float, int, float, int]] = []  # each noted cable with its line
    f = plan.fabric
    hosts = [h.name for h in plan.hosts]
    names_of = {role: [n.name for n in f.nodes_with(role)] for role in Role}
    widest = max(len(hosts), len(names_of[Role.BE_LEAF]), 4)
    width = 2 * _MARGIN + widest * _STEP
    y = {"be_superspine": 55, "be_spine": 60, "be_leaf": 150, "hosts": 260, "fe_leaf": 370, "fe_spine": 450,
         "oob": 560}
    if names_of[Role.BE_SUPERSPINE]:  # 5-stage: super-spines on top, spines between them and the leaves
        y["be_spine"] = 105
    pos: dict[str, tuple[float, int]] = {}
    pos |= _row(names_of[Role.BE_SUPERSPINE], y["be_superspine"], width)
    pos |= _row(names_of[Role.BE_SPINE], y["be_spine"], width)
    pos |= _row(names_of[Role.BE_LEAF], y["be_leaf"], width)
    pos |= _row(hosts, y["hosts"], width)
    pos |= _row(names_of[Role.FE_LEAF], y["fe_leaf"], width)
    pos |= _row(names_of[Role.FE_SPINE], y["fe_spine"], width)
    pos |= _row(names_of[Role.OOB], y["oob"], width)

    be_label = f"Backend (BE): {f.cluster.backend.kind}, RoCEv2, lossless, {f.cluster.backend.rails} rails"
    boxes = [
        _Box(10, 25, width - 20, 160, be_label, "#eef4fb", "#1f4e79"),
        _Box(10, 335, width - 20, 140, "Frontend (FE): leaf-spine Clos, TCP" + (
            ", dual-homed hosts" if f.cluster.frontend.dual_homed else ""),
            "#eef8ee", "#1e6b1e"),
        _Box(10, 530, width - 20, 50, "Management (OOB)", "#f3f3f3", "#555555"),
    ]
    lines = []
    second_nics = {(lk.a, lk.a_port) for lk in f.links if lk.nic is NicRole.FE2}
    for row in plan.cables:
        if row.a_node not in pos or row.b_node not in pos:
            continue
        (x1, y1), (x2, y2) = pos[row.a_node], pos[row.b_node]
        if row.plane is Plane.MGMT:
            if f.node(row.a_node).is_switch:
                continue  # switch mgmt ports would cross every box; hosts show the plane
            lines.append(_Line(x1, y1, x2, y2, _MGMT, 0.6, dash=True))
            continue
        if row.plane is Plane.BE:
            color, stroke = _BE_SHARED if row.rail is None else rail_color(row.rail), 1.2 if row.speed < 800 else 2.0
        else:
            second = (row.a_node, row.a_port) in second_nics
            color, stroke = _FE_SECOND if second else _FE, 1.2
        key = (f"{row.a_node}:{row.a_port}", f"{row.b_node}:{row.b_port}")
        state = (states or {}).get(key, "")
        lines.append(_Line(x1, y1, x2, y2, _STATE_COLORS.get(state, color), stroke * (2 if state in _STATE_COLORS else 1),
                           dash=state in _STATE_COLORS, key=" ".join(key) if states else "", state=state))
        if key in noted:
            ends.append((noted[key], x1, y1, x2, y2))
    labels, taken = [], []
    for note, x1, y1, x2, y2 in sorted(ends, key=lambda e: not e[0].alert):  # what is red gets its best spot first
        lx, ly, anchor = _place(x1, y1, x2, y2, len(note.text), taken)
        labels.append(_Label(lx, ly, anchor, note.text, "#c00000" if note.alert else "#222222", f"{note.a} {note.b}"))
    fills = {Role.GPU: "#fff2cc", Role.STORAGE: "#dae8fc", Role.CPU: "#e1d5e7", Role.GATEWAY: "#f8cecc",
             Role.BE_SPINE: "#c9daf8", Role.BE_SUPERSPINE: "#a4c2f4", Role.FE_SPINE: "#c8e6c9", Role.FE_LEAF: "#e3f2e3", Role.OOB: "#dddddd"}
    nodes = []
    for name, (x, yy) in pos.items():
        node = f.node(name)
        fill = fills.get(node.role) or rail_color(node.rails[0] if node.rails else None) + "55"
        nodes.append(_Node(x, yy, min(_STEP - 6, 68), name, fill, _port_groups(plan, name)))
    frames = _pod_frames(plan, pos) + _leaf_pairs(plan, pos)
    legend = [{"x": 20 + 120 * i, "y": 610, "color": rail_color(r), "label": f"BE rail {r}"}
              for i, r in enumerate(range(f.cluster.backend.rails))]
    if any(row.plane is Plane.BE and row.rail is None for row in plan.cables):
        legend.append({"x": 20 + 120 * len(legend), "y": 610, "color": _BE_SHARED, "label": "BE, every rail"})
    if f.cluster.frontend.dual_homed:
        legend.append({"x": 20 + 120 * len(legend), "y": 610, "color": _FE_SECOND, "label": "FE, 2nd NIC"})
    legend += [{"x": 20 + 120 * len(legend), "y": 610, "color": _FE, "label": "FE"},
               {"x": 20 + 120 * (len(legend) + 1), "y": 610, "color": _MGMT, "label": "mgmt (OOB)"}]
    if states is not None:
        legend.append({"x": 20 + 120 * len(legend), "y": 610, "color": "#000000", "label": "✕ failed / down"})
    width = max(width, 20 + 120 * len(legend) + 20)
    key_line = ("beside a BE link: its busier direction's load in % of its scaled rate, q its deepest queue now, "
                "‖ paused now or since the last look, ✕ packets dropped (red: a pause or a drop)") if notes else ""
    return render_template("topology.svg.j2", lab=plan.name, width=width, height=630 + (16 if notes else 0),
                           boxes=boxes, lines=lines, nodes=nodes, legend=legend, frames=frames, labels=labels,
                           key_line=key_line)


def _pod_frames(plan: Plan, pos: dict[str, tuple[float, int]]) -> list[_Box]:
    """A dashed frame around each pod of a 5-stage BE: its spines and leaves."""
    pods: dict[int, list[tuple[float, int]]] = {}
    for sw in plan.switches:
        if sw.pod is not None and sw.name in pos:
            pods.setdefault(sw.pod, []).append(pos[sw.name])
    frames = []
    for p, points in sorted(pods.items()):
        xs, ys = [x for x, _ in points], [y for _, y in points]
        left, top = int(min(xs)) - 38, min(ys) - 16
        frames.append(_Box(left, top, int(max(xs)) + 38 - left, max(ys) + 16 - top, f"pod {p}", "none", "#1f4e79"))
    return frames


def _port_groups(plan: Plan, name: str) -> tuple[str, ...]:
    """A leaf of several rails: each rail's port group, "r0 Eth0-12" (Ethernet0 to Ethernet12)."""
    sw = next((s for s in plan.switches if s.name == name), None)
    if sw is None or len(sw.rails) < 2:
        return ()
    return tuple(f"r{r} Eth{ports[0].name.removeprefix('Ethernet')}-{ports[-1].name.removeprefix('Ethernet')}"
                 for r, ports in sw.port_groups.items() if ports)


def _leaf_pairs(plan: Plan, pos: dict[str, tuple[float, int]]) -> list[_Box]:
    """A dashed frame around each pair of FE leaves that dual-homed hosts hang off."""
    pairs = dict.fromkeys(tuple(n.peer for n in h.fe_nics) for h in plan.hosts if h.routed and len(h.fe_nics) > 1)
    frames = []
    for k, pair in enumerate(pairs, 1):
        xs = [pos[leaf][0] for leaf in pair if leaf in pos]
        if not xs:
            continue
        top = pos[pair[0]][1] - 16
        left = int(min(xs)) - 38
        frames.append(_Box(left, top, int(max(xs)) + 38 - left, 32, f"leaf pair {k}", "none", "#1e6b1e"))
    return frames
