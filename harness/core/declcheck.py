"""The first pass over a declaration: the type, the choice and the bounds of every field, read
from the dataclass annotations in one walk, before any value is used or any count expanded.

`check()` reports each field that fails ONE problem, and remembers it: the later checks
(model.build's, tenancy's) skip what reads a failed field, so a mistyped count, an unknown
kind or a count over what fablab can plan yields its own problem and no follow-on errors, and
the expansion runs only over sections that passed whole. Pure: no I/O but reading the SONiC
HwSKU folder a Hardware field names by path or by a name fablab does not ship (harness.core.hwsku.find).

Bounds. Counts that multiply into nodes and links have an upper limit, and so have the
totals estimated from them before anything is expanded: planning is quadratic in places
(every host visits every link), so the totals keep build + make_plan within a few seconds on a
2-core machine. Measured there: xlarge (229 nodes, 2,426 links) 0.15 s; twice xlarge (421,
4,794) 0.5 s; docs/examples/gpu4096.py, 4,096 GPUs (892 nodes, 13,730 links) 2.2 s.
Hence the limits of 1,024 nodes and 16,384 links. The lower bounds and the design's rules (one rail per GPU, groups dividing the
nodes, port budgets) stay with model.build and tenancy, which report them in their words.
"""
from __future__ import annotations

import difflib
import functools
import types
import typing
from dataclasses import MISSING, dataclass, fields, is_dataclass, replace

from harness.core.declguard import CallProblems
from harness.core.errors import Problem, TopologyError
from harness.core.hwsku import HwSku, catalogue_hint, find as find_hwsku, known as known_hwsku, names as hwsku_names
from harness.core.defaults import MAX_UPLINKS
from harness.core.declarations import BACKEND_KINDS, DECLARATIONS, ECMP_HASHES, SPEEDS_GBPS, Cluster

MAX_NODES = 1024  # nodes of every kind, switches and the OOB switch included (xlarge: 229, gpu4096: 892)
MAX_LINKS = 16384  # cables of every plane (xlarge: 2,426, gpu4096: 13,730)
MAX_TEXT = 256  # characters of any string field
MAX_MEMBERS = 256  # member patterns of all tenants together (each is matched against every host)
_INT_ENVELOPE = 1 << 63  # beyond it no field has a meaning (and Python will not even print some)

PLAN_HINT = (f"fablab plans clusters of up to {MAX_NODES} nodes and {MAX_LINKS:,} links in all "
             "(xlarge, the largest built-in, has 229 and 2,426; docs/examples/gpu4096.py 892 and 13,730): "
             "scale the declaration down or split it")


@dataclass(frozen=True)
class Limit:
    """The largest value of a field (of a tuple field: its length)."""

    high: int
    message: str = "{v} is over the {high} fablab can plan"
    hint: str = PLAN_HINT


_PORTS = Limit(4096, "{v} ports, over the {high} a switch may declare", "`fablab hwskus` lists the data ports of every HwSKU fablab ships")
LIMITS: dict[str, Limit] = {
    "GpuNodes.count": Limit(MAX_NODES),
    "GpuNodes.gpus_per_node": Limit(16),
    "Backend.rails": Limit(16),
    "Backend.rails_per_leaf": Limit(16),
    "Backend.pods": Limit(16),
    "Backend.superspines": Limit(128),
    "Backend.uplinks_per_superspine": Limit(MAX_UPLINKS),
    "Backend.superspine_ports": _PORTS,
    "Backend.groups": Limit(128),
    "Backend.spines": Limit(128),
    "Backend.uplinks_per_spine": Limit(MAX_UPLINKS),
    "Backend.leaf_ports": _PORTS,
    "Backend.spine_ports": _PORTS,
    "Frontend.spines": Limit(128),
    "Frontend.leaves": Limit(128),
    "Frontend.cpu_servers": Limit(MAX_NODES),
    "Frontend.storage_servers": Limit(MAX_NODES),
    "Frontend.gateways": Limit(MAX_NODES),
    "Frontend.leaf_ports": _PORTS,
    "Frontend.spine_ports": _PORTS,
    "Management.ports": _PORTS,
    "Bfd.interval_ms": Limit(60_000, "{v} ms is over the {high} ms FRR accepts", "e.g. interval_ms=300"),
    "Bfd.multiplier": Limit(255, "{v} is over the {high} FRR accepts", "e.g. multiplier=3"),
    "Routing.keepalive_s": Limit(65535, "{v} s is over the {high} s FRR accepts", "e.g. keepalive_s=10"),
    "Routing.hold_s": Limit(65535, "{v} s is over the {high} s FRR accepts", "e.g. hold_s=30"),
    "Cluster.cables": Limit(1024, "{v} declared cables, over the {high} fablab can plan"),
    "Cluster.tenants": Limit(128, "{v} tenants, over the {high} fablab can plan"),
    "Acl.rules": Limit(256, "{v} ACL rules, over the {high} fablab can plan"),
}

_SPEED = (SPEEDS_GBPS, "{v}G is not a port speed", f"use one of {', '.join(f'{s}G' for s in SPEEDS_GBPS)}")
_HASH = (tuple(ECMP_HASHES), "unknown ECMP hash {v!r}", f"valid: {', '.join(ECMP_HASHES)}")
# Enum-like fields: (values, message, hint). A value outside is one problem; nothing derived follows.
# A HwSku object (HwSku.from_sonic) is checked as the dataclass it is; a name the catalogue's, or
# a SONiC HwSKU folder's path or name (_folder_hwsku).
_HWSKU = (hwsku_names(), "unknown HwSKU {v!r}", catalogue_hint())
_ROLES = ("be_leaf", "be_spine", "superspine", "fe_leaf", "fe_spine")
_HARDWARE = frozenset(f"Hardware.{role}" for role in _ROLES)
CHOICES: dict[str, tuple[tuple, str, str]] = {
    "Backend.kind": (BACKEND_KINDS, "unknown backend kind {v!r}", f"valid kinds: {', '.join(BACKEND_KINDS)}"),
    "Backend.ecmp_hash": _HASH,
    "Frontend.ecmp_hash": _HASH,
    "GpuNodes.nic_speed": _SPEED,
    "GpuNodes.fe_speed": _SPEED,
    "Backend.uplink_speed": _SPEED,
    "Frontend.host_speed": _SPEED,
    "Frontend.uplink_speed": _SPEED,
    "Frontend.storage_nic_speed": _SPEED,
    "Management.speed": _SPEED,
    "Cable.speed": _SPEED,
    **{f"Hardware.{role}": _HWSKU for role in _ROLES},
}

# How to write a field that has no default to show, or that needs more words than its type.
EXAMPLES = {
    "Cluster.name": "name='mylab'",
    "Cable.a": "Cable('fe-l1', 'fe-l2')", "Cable.b": "Cable('fe-l1', 'fe-l2')",
    "Tenant.name": "name='alpha'", "Tenant.vni": "vni=10100",
    "Tenant.members": "members=('gpu0[1-4]', 'role:storage', 'gw1')",
    "AclRule.action": "AclRule('deny', src='role:gpu', dst='role:gateway')",
    "Cluster.cables": "cables=(Cable('fe-l1', 'fe-l2'),)",
    "Cluster.tenants": "tenants=(Tenant('alpha', vni=10100, members=('gpu01',)),)",
    "Acl.rules": "rules=(AclRule('deny', src='role:gpu', dst='role:gateway'),)",
    "AclRule.dst_ports": "dst_ports='2049' or '8000-8100' ('' for any)",
    "AclRule.src_ports": "src_ports='2049' or '8000-8100' ('' for any)",
    **{f"Hardware.{r}": f"{r}='ACS-SN5600' (`fablab hwskus`) or {r}=HwSku.from_sonic(DIR)" for r in _ROLES},
}
_WHAT = {"Tenant.members": "a non-empty tuple of host names or patterns",
         **{f"Hardware.{r}": "a HwSKU's name or a HwSku" for r in _ROLES}}

# What layout._expand reads: expansion (and every check over the expanded graph) runs only
# when these passed whole.
EXPANDED = ("gpu", "backend", "frontend", "mgmt")


@dataclass(frozen=True)
class Checked:
    """The declaration as read (lists taken as tuples), its problems, and the fields that failed."""

    cluster: Cluster
    problems: tuple[Problem, ...]
    bad: frozenset[str]
    source: str

    def ok(self, *paths: str) -> bool:
        """True when nothing at, above or below any of these paths failed this pass."""
        return not any(related(path, b) for path in paths for b in self.bad)

    @property
    def can_expand(self) -> bool:
        return self.ok(*EXPANDED, "nodes", "links")

    def after(self, problems: list[Problem]) -> list[Problem]:
        """This pass's problems, then the later ones that are not about a field it already failed."""
        later = [p for p in problems if not any(related(p.field, b) for b in self.bad)]
        return [*self.problems, *later]


def related(path: str, other: str) -> bool:
    """`path` is `other`, or one is inside the other (`backend` and `backend.kind`, `cables[0].a`)."""
    return path == other or _under(path, other) or _under(other, path)


def _under(path: str, parent: str) -> bool:
    return path.startswith(parent) and path[len(parent):len(parent) + 1] in (".", "[")


def check(cluster: object, calls: CallProblems | None = None) -> Checked:
    """Types, choices and limits of every field, and the totals the counts would expand to.
    `calls`: the wrong calls of declaration classes found as its file was read (declguard),
    said first; a field they left not as meant counts as failed, and is not said again."""
    if not isinstance(cluster, Cluster):
        raise TopologyError([Problem("cluster", f"{show(cluster)} is {kind_of(cluster)}, not a Cluster",
                                     "declare cluster = Cluster(name='mylab', gpu=GpuNodes(...), ...)")])
    out: list[tuple[str, Problem]] = []
    cluster = _walk(cluster, Cluster, "", out)
    failed = calls.failed if calls is not None else frozenset()
    out = [(path, p) for path, p in out if not any(related(path, f) for f in failed)]
    bad = {path for path, _ in out} | failed
    if not any(related(s, b) for s in EXPANDED for b in bad):
        out += _totals(cluster)
    out += _members(cluster, bad)
    name = cluster.name if isinstance(cluster.name, str) else show(cluster.name)
    said = calls.problems if calls is not None else ()
    return Checked(cluster, (*said, *(p for _, p in out)), frozenset({path for path, _ in out} | failed), name)


# --------------------------------------------------------------------------- the typed walk


@functools.cache
def hints(cls: type) -> dict[str, object]:
    """A declaration class's field types, resolved (the annotations are strings)."""
    return typing.get_type_hints(cls)


def _walk(obj, cls: type, path: str, out: list[tuple[str, Problem]]):
    """Check every field of a dataclass instance; return it with lists read as tuples."""
    changes = {}
    for f in fields(cls):
        where = f"{path}.{f.name}" if path else f.name
        value = getattr(obj, f.name, _MISSING)
        if value is _MISSING:  # an instance not made by its __init__
            out.append((where, Problem(where, "has no value", _example(where, f"{cls.__name__}.{f.name}"))))
            continue
        new = _value(value, hints(cls)[f.name], where, f"{cls.__name__}.{f.name}", out)
        if new is not value:
            changes[f.name] = new
    return replace(obj, **changes) if changes else obj


_MISSING = object()


def _value(value, t, where: str, key: str, out: list[tuple[str, Problem]]):
    """Check one value against its annotation `t`; return it as read (a list as a tuple)."""
    optional = False
    if isinstance(t, types.UnionType):
        args = [a for a in t.__args__ if a is not type(None)]
        # of several (str | HwSku), the one the value is; a value of none is checked as the first
        optional, t = len(args) < len(t.__args__), next((a for a in args if _is(value, a)), args[0])
    if value is None and optional:
        return value
    if not _is(value, t):
        out.append((where, _type_problem(value, t, where, key, optional)))
        return value
    if key in _HARDWARE and isinstance(value, str) and not known_hwsku(value) and len(value) <= MAX_TEXT:
        return _folder_hwsku(value, where, out)
    if is_dataclass(t):
        return _walk(value, t, where, out)
    if typing.get_origin(t) is tuple:
        limit = LIMITS.get(key)
        if limit is not None and len(value) > limit.high:
            out.append((where, _limit_problem(len(value), limit, where)))
            return value
        args = typing.get_args(t)
        if len(args) > 1 and args[-1] is not Ellipsis:  # a fixed shape, (switch, ASN): each place its type
            if len(value) != len(args):
                out.append((where, Problem(where, f"{show(value)} is not {len(args)} values",
                                           f"write {len(args)}: {', '.join(describe(a) for a in args)}")))
                return value
            items = tuple(_value(v, a, f"{where}[{i}]", f"{key}[{i}]", out) for i, (v, a) in enumerate(zip(value, args)))
        else:
            items = tuple(_value(v, args[0], f"{where}[{i}]", f"{key}[]", out) for i, v in enumerate(value))
        return items if (type(value) is not tuple or any(a is not b for a, b in zip(items, value))) else value
    problem = _bounds(value, where, key)
    if problem is not None:
        out.append((where, problem))
    return value


def _folder_hwsku(value: str, where: str, out: list[tuple[str, Problem]]) -> str | HwSku:
    """A Hardware field naming a HwSKU fablab does not ship: the HwSku its SONiC folder holds (by
    path, or by name under FABLAB_SONIC_DEVICES), so that the plan, a lab's state and its hash
    carry the ports themselves and not a path another working directory reads otherwise."""
    try:
        found = find_hwsku(value, field=where)
    except TopologyError as e:  # a folder that is no HwSKU's: its file and line
        out += [(where, p) for p in e.problems]
        return value
    if isinstance(found, HwSku):
        return found
    out.append((where, Problem(where, f"unknown HwSKU {value!r}: {found}",
                               f"{did_you_mean(value, hwsku_names())}{catalogue_hint()}")))
    return value


def _is(value, t) -> bool:
    if t is bool:
        return isinstance(value, bool)
    if t is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if t is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if typing.get_origin(t) is tuple:
        return isinstance(value, (tuple, list))
    return isinstance(value, t)


def _bounds(value, where: str, key: str) -> Problem | None:
    if isinstance(value, str):
        if len(value) > MAX_TEXT:
            return Problem(where, f"a string of {len(value)} characters", f"use at most {MAX_TEXT}")
        if key in CHOICES:
            return _choice_problem(value, where, key)
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        limit = LIMITS.get(key)
        if limit is not None and value > limit.high:
            return _limit_problem(value, limit, where)
        if abs(value) >= _INT_ENVELOPE:
            return Problem(where, f"{show(value)} is no usable number", _example(where, key))
        if key in CHOICES:
            return _choice_problem(value, where, key)
    return None


def _choice_problem(value, where: str, key: str) -> Problem | None:
    values, message, hint = CHOICES[key]
    if value in values:
        return None
    near = did_you_mean(value, values)
    return Problem(where, message.format(v=value), f"{near}{hint}")


def _limit_problem(value: int, limit: Limit, where: str) -> Problem:
    return Problem(where, limit.message.format(v=show(value), high=limit.high), limit.hint)


def _type_problem(value, t, where: str, key: str, optional: bool) -> Problem:
    if value is t:
        name = key.partition(".")[2].removesuffix("[]")
        return Problem(where, f"{t.__name__} is the class, not a {t.__name__}", f"call it: {name}={t.__name__}(...)")
    what = _WHAT.get(key) or describe(t) + (" or None" if optional else "")
    message = f"None is not {what}" if value is None else f"{show(value)} is {kind_of(value)}, not {what}"
    return Problem(where, message, _example(where, key, t))


def _example(where: str, key: str, t=None) -> str:
    name = key.partition(".")[2].removesuffix("[]")
    if key.removesuffix("[]") in EXAMPLES:
        return f"e.g. {EXAMPLES[key.removesuffix('[]')]}"
    if t is not None and is_dataclass(t):
        first = fields(t)[0]
        if _has_default(first):
            return f"write {name}={t.__name__}({first.name}={_default(first)!r}, ...)"
        return f"write {name}={t.__name__}(...)"
    f = _FIELDS.get(key)
    if f is not None and _has_default(f):
        return f"e.g. {name}={_default(f)!r}"
    return f"see {key.partition('.')[0]} in harness.core.model"


def _has_default(f) -> bool:
    return f.default is not MISSING or f.default_factory is not MISSING


def _default(f):
    return f.default if f.default is not MISSING else f.default_factory()


_FIELDS = {f"{cls.__name__}.{f.name}": f for cls in DECLARATIONS for f in fields(cls)}


def describe(t) -> str:
    if t is int:
        return "an integer"
    if t is float:
        return "a number"
    if t is bool:
        return "True or False"
    if t is str:
        return "a string"
    if typing.get_origin(t) is tuple:
        item = typing.get_args(t)[0]
        return f"a tuple of {'strings' if item is str else item.__name__}"
    name = getattr(t, "__name__", str(t))
    return f"{'an' if name[:1] in 'AEIOU' else 'a'} {name}"


def kind_of(value) -> str:
    name = type(value).__name__
    return f"{'an' if name[:1].lower() in 'aeiou' else 'a'} {name}"


def show(value) -> str:
    """A short, always printable rendering of any value (Python refuses to print huge integers)."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 64:
        if value.bit_length() < 1000:
            return f"{float(value):.3g}"
        return f"a {'negative ' if value < 0 else ''}number of about {int(value.bit_length() * 0.30103) + 1} digits"
    if is_dataclass(value) and not isinstance(value, type):
        return f"{type(value).__name__}(...)"
    try:
        text = repr(value)
    except Exception:  # a huge integer inside a container, a broken __repr__
        text = f"<{type(value).__name__}>"
    return text if len(text) <= 60 else text[:57] + "..."


def did_you_mean(value, choices) -> str:
    """'did you mean X? ' for a string close to one of the choices, else ''."""
    if not isinstance(value, str):
        return ""
    near = difflib.get_close_matches(value, [str(c) for c in choices], n=1, cutoff=0.6)
    return f"did you mean {near[0]!r}? " if near else ""


# --------------------------------------------------------------------------- totals


def estimate(c: Cluster) -> tuple[int, int]:
    """Nodes and links the builders would lay (layout._expand), from the counts alone."""
    gpu, be, fe = c.gpu, c.backend, c.frontend
    rail_only = be.kind == "rail-only"
    count = max(gpu.count, 0)
    servers = sum(max(k, 0) for k in (fe.storage_servers, fe.cpu_servers, fe.gateways))
    pods = 1 if rail_only else max(be.pods, 1)
    spines = 0 if rail_only else max(be.spines, 0)  # per pod
    supers = max(be.superspines, 0) if pods > 1 else 0
    leaves = (1 if rail_only else max(be.groups, 1)) * -(-max(be.rails, 0) // max(be.rails_per_leaf, 1))  # per pod
    fe_spines, fe_leaves = max(fe.spines, 0), max(fe.leaves, 0)
    nodes = count + servers + pods * (spines + leaves) + supers + fe_spines + fe_leaves + 1
    homes = 2 if fe.dual_homed is True else 1
    fe_hosts = ((count + servers) * homes + (count if fe.storage_nics else 0)) if fe_leaves else 0
    links = (count * min(max(gpu.gpus_per_node, 0), max(be.rails, 0))
             + pods * leaves * spines * max(be.uplinks_per_spine, 0)
             + pods * spines * supers * max(be.uplinks_per_superspine, 0)  # at most: every spine to every one
             + fe_hosts + fe_leaves * fe_spines + nodes - 1
             + (len(c.cables) if isinstance(c.cables, tuple) else 0))
    return nodes, links


def _totals(c: Cluster) -> list[tuple[str, Problem]]:
    nodes, links = estimate(c)
    out = []
    if nodes > MAX_NODES:
        out.append(("nodes", Problem("nodes", f"the declaration lays {nodes:,} nodes, over the {MAX_NODES} "
                                              "fablab can plan", PLAN_HINT)))
    if links > MAX_LINKS:
        out.append(("links", Problem("links", f"the declaration lays {links:,} links, over the {MAX_LINKS:,} "
                                              "fablab can plan", PLAN_HINT)))
    return out


def _members(c: Cluster, bad: set[str]) -> list[tuple[str, Problem]]:
    """Member patterns of all tenants together: each is matched against every host, more than once."""
    if any(related("tenants", b) for b in bad):
        return []
    total = sum(len(t.members) for t in c.tenants)
    if total <= MAX_MEMBERS:
        return []
    return [("tenants", Problem("tenants", f"{total} member patterns in all, over the {MAX_MEMBERS} fablab can plan",
                                "use patterns and roles: members=('gpu0[1-8]', 'role:storage')"))]
