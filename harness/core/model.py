"""Validate a declared cluster and expand it into its fabric (`build`), all problems at once.

`build()` checks every field's type, choice and limit (harness.core.declcheck), then the
declaration's own rules, then expands it (harness.core.layout) and checks the expanded graph
(cables, port budgets, oversubscription, tenants), so that every problem is reported
together, each with its field and a hint. Nothing here touches the system. The declaration
types live in harness.core.declarations; their names are importable from here too.
"""
from __future__ import annotations

import ipaddress
import math

from harness.core import declcheck
from harness.core.cabling.apply import apply as apply_cabling
from harness.core.codec import CodecError, from_plain, to_plain
from harness.core.declarations import (  # the declaration types: importable from here as well
    ACL_ACTIONS, ACL_PROTOCOLS, Acl, AclRule, Addressing, BACKEND_KINDS, Backend, Bfd, Cable, Cabling, Cluster,
    DECLARATIONS, HOST_ASN, Dcqcn, Ecn, Hardware, ECMP_HASHES, FE_NIC, FE_NIC2, Frontend, GpuNodes, Lossless, MGMT_NIC, Management,
    Objectives, Plane, ROCE_MTUS, Role, Routing, SPEEDS_GBPS, STORAGE_NIC, Tenant, _NAME, check_lab_name,
    rail_nic, switch_mgmt_port)
from harness.core.declguard import CallProblems
from harness.core.fabric import Fabric, Link, Node
from harness.core.fabriccheck import check_fabric
from harness.core.numbering import field_problems
from harness.core.errors import Problem, TopologyError
from harness.core.layout import _cables, _expand, gpu_node_names, host_nics
from harness.core.tenancy import check_tenancy

__all__ = [
    "ACL_ACTIONS", "ACL_PROTOCOLS", "Acl", "AclRule", "Addressing", "BACKEND_KINDS", "Backend", "Bfd", "Cable",
    "Cabling", "Cluster", "DECLARATIONS", "Dcqcn", "ECMP_HASHES", "Ecn", "FE_NIC", "FE_NIC2", "Fabric", "Frontend", "GpuNodes", "HOST_ASN", "Hardware", "Link", "Lossless",
    "MGMT_NIC", "Management", "Node", "Objectives", "Plane", "ROCE_MTUS", "Role", "Routing", "SPEEDS_GBPS",
    "STORAGE_NIC", "Tenant", "build", "check_lab_name", "check_lossless", "cluster_from_dict",
    "cluster_to_dict", "gpu_node_names", "host_nics", "oversubscription", "rail_nic", "switch_mgmt_port",
]


# --------------------------------------------------------------------------- build + validate


def build(cluster: Cluster, calls: CallProblems | None = None) -> Fabric:
    """Expand and validate a declaration; raise TopologyError listing every problem.

    First every field's type, choice and limit (harness.core.declcheck); then the declaration's
    rules, skipping what reads a field that failed; then, when gpu, backend, frontend and
    mgmt passed whole and the totals are within what fablab can plan, the expansion and the
    checks over the expanded graph (cables, port budgets, tenants). `calls`: the wrong calls
    of declaration classes its file made (harness.core.declguard), said with the rest.
    """
    checked = declcheck.check(cluster, calls)
    cluster, ok = checked.cluster, checked.ok
    problems = _check_declaration(cluster, ok)
    said = {p.field for p in (*checked.problems, *problems)}

    def settled(*paths: str) -> bool:  # no problem yet at, above or below these fields
        return not any(declcheck.related(path, f) for path in paths for f in said)

    fabric = None
    if checked.can_expand:
        nodes, links = _expand(cluster)
        later = []
        if ok("cabling") and (cluster.cabling.names or cluster.cabling.cables):  # your names, ports: cabling/apply.py
            nodes, links, later = apply_cabling(cluster, nodes, links)
        cable_links, cable_problems = _cables(cluster, nodes, links, ok)
        later += cable_problems
        fabric = Fabric(cluster, tuple(nodes), tuple(links + cable_links))
        later += check_fabric(fabric, balance=settled(*_BE_SHAPE))
        if ok("tenants", "acl", "addressing") and settled(*_HOSTS):
            later += check_tenancy(fabric)
        problems += [p for p in later if p.field not in said]  # one problem per field the user wrote
    problems = checked.after(problems)
    if problems or fabric is None:
        raise TopologyError(_dedupe(problems), source=checked.source)
    return fabric


# The fields that shape the BE's leaves and uplinks, and those that name and count the hosts:
# with a problem on one, the oversubscription, resp. the tenants, would be judged on a made-up
# expansion, so they wait for it to be fixed.
_BE_SHAPE = ("gpu.count", "gpu.gpus_per_node", "backend.kind", "backend.rails", "backend.rails_per_leaf",
             "backend.groups", "backend.spines", "backend.uplinks_per_spine", "backend.pods", "backend.superspines",
             "backend.uplinks_per_superspine")
_HOSTS = ("gpu.count", "gpu.prefix", "frontend.leaves", "frontend.cpu_servers", "frontend.storage_servers",
          "frontend.gateways")


def _check_pods(c: Cluster, ok) -> list[Problem]:
    """The 5-stage rules of a rail-optimized backend (pods, super-spines); a rule reading a
    field that failed the first pass is skipped, as in _check_declaration."""
    be = c.backend
    p: list[Problem] = []
    if not ok("backend.pods"):
        return p
    if be.pods < 1:
        return [Problem("backend.pods", f"{be.pods} pods", "set pods >= 1 (1: a 3-stage fabric)")]
    if not ok("backend.superspines"):
        return p
    if be.superspines < 0:
        return [Problem("backend.superspines", f"{be.superspines} super-spines", "set superspines >= 0")]
    if be.pods == 1 and be.superspines:
        p.append(Problem("backend.superspines", f"one pod needs no super-spine tier, but superspines={be.superspines}",
                         "set pods >= 2 for a 5-stage fabric, or superspines=0"))
    if be.pods > 1 and be.superspines < 1:
        p.append(Problem("backend.superspines", f"{be.pods} pods need a super-spine tier to reach each other",
                         "set superspines >= 1 (e.g. as many as spines per pod)"))
    if be.pods > 1 and ok("backend.uplinks_per_superspine") and be.uplinks_per_superspine < 1:
        p.append(Problem("backend.uplinks_per_superspine", f"{be.uplinks_per_superspine}", "set it >= 1"))
    if be.pods > 1 and ok("backend.spines", "backend.uplinks_per_superspine", "backend.superspine_ports") \
            and be.superspines >= 1 and be.spines >= 1 and be.uplinks_per_superspine >= 1:
        links = be.pods * be.spines * be.uplinks_per_superspine
        if links > be.superspine_ports and be.superspines % be.spines:
            p.append(Problem("backend.superspines",
                             f"{links} spine links do not fit a super-spine's {be.superspine_ports} ports, and "
                             f"{be.superspines} super-spines do not split into planes of {be.spines} (one per spine "
                             "of a pod)", f"make superspines a multiple of {be.spines}, or raise superspine_ports"))
    return p


def _check_dual_homing(c: Cluster, ok) -> list[Problem]:
    """A dual-homed host is routed on both its NICs; what needs it on one L2 port is refused."""
    fe = c.frontend
    p: list[Problem] = []
    if ok("frontend.leaves") and fe.leaves >= 1 and fe.leaves % 2:
        p.append(Problem("frontend.leaves", f"dual-homed hosts hang off pairs of leaves, and {fe.leaves} is odd",
                         f"set frontend.leaves={fe.leaves + 1} (or {fe.leaves - 1})" if fe.leaves > 1
                         else "set frontend.leaves=2"))
    if isinstance(c.tenants, tuple) and c.tenants:
        p.append(Problem("tenants", "a tenant member is an L2 attachment on one leaf port (VLAN, VXLAN); a host "
                                    "routed on two leaves has none, and two-leaf L2 needs EVPN multihoming or MLAG "
                                    "with a bond, which fablab does not build",
                         "declare tenants on a single-homed frontend (dual_homed=False), or drop them"))
    if ok("frontend.storage_nics") and fe.storage_nics:
        p.append(Problem("frontend.storage_nics", "a storage NIC is a tenant's L2 member, and a dual-homed "
                                                  "frontend has no tenants",
                         "set storage_nics=False, or dual_homed=False"))
    return p


def _dedupe(problems: list[Problem]) -> list[Problem]:
    seen: dict[Problem, None] = {}
    for p in problems:
        seen.setdefault(p, None)
    return list(seen)


def _check_declaration(c: Cluster, ok) -> list[Problem]:
    """The declaration's own rules. `ok(*fields)`: none of them failed the first pass
    (declcheck: type, choice, limit); a rule reading one that did is skipped."""
    p: list[Problem] = []
    gpu, be, fe = c.gpu, c.backend, c.frontend
    if ok("name") and not _NAME.match(c.name):
        p.append(Problem("name", f"{c.name!r} is not a usable cluster name",
                         "lower-case letters, digits and '-', starting with a letter, at most 31"))
    if ok("gpu.prefix") and not _NAME.match(gpu.prefix):
        p.append(Problem("gpu.prefix", f"{gpu.prefix!r} is not a usable name prefix", "e.g. 'gpu'"))
    if ok("gpu.count") and gpu.count < 1:
        p.append(Problem("gpu.count", f"{gpu.count} GPU nodes: a cluster needs at least one",
                         "set gpu.count >= 1"))
    if ok("gpu.gpus_per_node") and gpu.gpus_per_node < 1:
        p.append(Problem("gpu.gpus_per_node", f"{gpu.gpus_per_node} GPUs per node", "set it >= 1"))
    if ok("backend.rails", "gpu.gpus_per_node") and be.rails != gpu.gpus_per_node >= 1:
        p.append(Problem("backend.rails",
                         f"{be.rails} rails but {gpu.gpus_per_node} GPUs per node",
                         "one rail per GPU: set backend.rails = gpu.gpus_per_node"))
    if ok("backend.rails_per_leaf") and be.rails_per_leaf < 1:
        p.append(Problem("backend.rails_per_leaf", f"{be.rails_per_leaf} rails per leaf",
                         "set it >= 1 (1: a leaf per rail)"))
    elif ok("backend.rails_per_leaf", "backend.rails") and be.rails >= 1 and be.rails % be.rails_per_leaf:
        divisors = [k for k in range(1, be.rails + 1) if be.rails % k == 0]
        p.append(Problem("backend.rails_per_leaf",
                         f"{be.rails} rails do not split evenly into leaves of {be.rails_per_leaf}",
                         f"use a divisor of backend.rails: {', '.join(map(str, divisors))}"))
    if ok("backend.kind", "backend.pods") and be.kind == "rail-only" and be.pods != 1:
        p.append(Problem("backend.pods", f"a rail-only backend has no spine tier to gather in pods, but pods={be.pods}",
                         "set pods=1, or kind='rail-optimized'"))
    if ok("backend.kind", "backend.spines") and be.kind == "rail-only" and be.spines:
        p.append(Problem("backend.spines", f"a rail-only backend has no spine tier, but spines={be.spines}",
                         "set spines=0, or kind='rail-optimized'"))
    if ok("backend.kind") and be.kind == "rail-optimized":
        if ok("backend.spines") and be.spines < 1:
            p.append(Problem("backend.spines", f"rail-optimized needs a spine tier, spines={be.spines}",
                             "set spines >= 1, or kind='rail-only'"))
        if ok("backend.groups") and be.groups < 1:
            p.append(Problem("backend.groups", f"{be.groups} groups", "set groups >= 1"))
        elif ok("backend.groups", "backend.pods", "gpu.count") and gpu.count >= 1 and be.pods >= 1 \
                and gpu.count % (be.groups * be.pods):
            split = f"{be.groups} groups" if be.pods == 1 else f"{be.pods} pods × {be.groups} groups"
            p.append(Problem("backend.groups", f"{gpu.count} GPU nodes do not split evenly into {split}",
                             f"make gpu.count a multiple of {be.groups * be.pods}"))
        p += _check_pods(c, ok)
        if ok("backend.uplinks_per_spine") and be.uplinks_per_spine < 1:
            p.append(Problem("backend.uplinks_per_spine", f"{be.uplinks_per_spine}", "set it >= 1"))
    if ok("frontend.leaves") and fe.leaves < 1:
        p.append(Problem("frontend.leaves", f"{fe.leaves} FE leaves", "set frontend.leaves >= 1"))
    if ok("frontend.dual_homed") and fe.dual_homed:
        p += _check_dual_homing(c, ok)
    if ok("frontend.spines") and fe.spines < 1:
        p.append(Problem("frontend.spines", f"{fe.spines} FE spines", "set frontend.spines >= 1"))
    for fname in ("frontend.cpu_servers", "frontend.storage_servers", "frontend.gateways"):
        if ok(fname) and (value := getattr(fe, fname.split(".")[1])) < 0:
            p.append(Problem(fname, f"{value} is negative", "set it >= 0"))
    for fname in ("backend.mtu", "frontend.mtu"):
        if ok(fname) and not 1280 <= (mtu := getattr(c, fname.split(".")[0]).mtu) <= 9216:
            p.append(Problem(fname, f"MTU {mtu} out of range", "use 1280..9216 (9100 is usual on the BE)"))
    if ok("bfd.interval_ms", "bfd.multiplier") and (c.bfd.interval_ms < 10 or c.bfd.multiplier < 1):
        p.append(Problem("bfd", f"interval {c.bfd.interval_ms} ms × {c.bfd.multiplier}",
                         "use interval_ms >= 10 and multiplier >= 1"))
    if ok("routing.allowas_in") and not 0 <= c.routing.allowas_in <= 10:
        p.append(Problem("routing.allowas_in", f"{c.routing.allowas_in} is not 0..10 (FRR's allowas-in takes 1-10)",
                         "1 where leaves share an ASN (RFC 7938 gives each its own; then 0)"))
    if ok("routing.keepalive_s", "routing.hold_s") and not (
            c.routing.hold_s >= 3 and 1 <= c.routing.keepalive_s <= c.routing.hold_s // 3):
        p.append(Problem("routing", f"BGP keepalive {c.routing.keepalive_s} s, hold {c.routing.hold_s} s",
                         "use hold_s >= 3 and keepalive_s from 1 to a third of hold_s (e.g. 10 and 30)"))
    if ok("bfd.profile") and not _NAME.match(c.bfd.profile):
        p.append(Problem("bfd.profile", f"{c.bfd.profile!r} is not a usable profile name", "e.g. 'fabric'"))
    if isinstance(c.addressing, Addressing):
        p += _check_addressing(c.addressing, ok)
    if isinstance(c.objectives, Objectives):
        p += _check_objectives(c.objectives, ok)
    if ok("lossless", "backend.mtu"):  # an MTU out of range is reported as such, not as too small for RoCE
        p += check_lossless(c.lossless, be.mtu if 1280 <= be.mtu <= 9216 else 1 << 30)
    return p


def check_lossless(q: Lossless, be_mtu: int) -> list[Problem]:
    p: list[Problem] = []
    if not isinstance(q, Lossless):
        return [Problem("lossless", f"{q!r} is not a Lossless", "write lossless=Lossless(roce_priority=3, ...)")]
    for name in ("roce_priority", "cnp_priority"):
        if not 0 <= getattr(q, name) <= 7:
            p.append(Problem(f"lossless.{name}", f"{getattr(q, name)} is not an 802.1p priority", "use 0..7"))
    for name in ("roce_dscp", "cnp_dscp"):
        if not 0 <= getattr(q, name) <= 63:
            p.append(Problem(f"lossless.{name}", f"{getattr(q, name)} is not a DSCP", "use 0..63"))
    if q.cnp_priority == q.roce_priority:
        p.append(Problem("lossless.cnp_priority", f"CNPs in the RoCE class ({q.roce_priority})",
                         "give CNPs their own strict queue, e.g. 6, so they are not paused behind the data"))
    if q.cnp_dscp == q.roce_dscp:
        p.append(Problem("lossless.cnp_dscp", f"CNPs marked like RoCE data (DSCP {q.roce_dscp})",
                         "mark CNPs apart, e.g. DSCP 48"))
    if q.roce_mtu not in ROCE_MTUS:
        p.append(Problem("lossless.roce_mtu", f"{q.roce_mtu} is not an InfiniBand MTU",
                         f"use one of {', '.join(map(str, ROCE_MTUS))}"))
    elif q.roce_frame_bytes > be_mtu:
        p.append(Problem("lossless.roce_mtu", f"RoCE frames of {q.roce_mtu} bytes need an MTU of "
                         f"{q.roce_frame_bytes}, backend.mtu is {be_mtu}",
                         f"raise backend.mtu to >= {q.roce_frame_bytes} or lower roce_mtu"))
    if not isinstance(q.time_scale, int) or isinstance(q.time_scale, bool) or not 1 <= q.time_scale <= 1_000_000:
        p.append(Problem("lossless.time_scale", f"{q.time_scale!r} is not a whole number in 1..1000000",
                         "e.g. 2000: a 400G link runs at 200 Mbit/s and a pause lasts 2000 times longer"))
    if not isinstance(q.dcqcn, Dcqcn):
        p.append(Problem("lossless.dcqcn", f"{q.dcqcn!r} is not a Dcqcn", "write dcqcn=Dcqcn(...)"))
    else:
        p += _check_dcqcn(q.dcqcn)
    if not isinstance(q.ecn, Ecn):
        p.append(Problem("lossless.ecn", f"{q.ecn!r} is not an Ecn", "write ecn=Ecn(min_bytes=..., max_bytes=...)"))
    else:
        p += _check_ecn(q.ecn)
    return p


def _check_ecn(e: Ecn) -> list[Problem]:
    whole = lambda v: isinstance(v, int) and not isinstance(v, bool)  # noqa: E731
    p: list[Problem] = []
    if not whole(e.min_bytes) or e.min_bytes < 0:
        p.append(Problem("lossless.ecn.min_bytes", f"{e.min_bytes!r} is not a number of bytes >= 0",
                         f"SONiC's default is {Ecn().min_bytes}"))
    elif not whole(e.max_bytes) or e.max_bytes <= e.min_bytes:
        p.append(Problem("lossless.ecn.max_bytes", f"{e.max_bytes!r} is not a number of bytes above min_bytes "
                         f"({e.min_bytes})", "marking grows from min_bytes to max_bytes: make it larger"))
    if not whole(e.probability_pct) or not 1 <= e.probability_pct <= 100:
        p.append(Problem("lossless.ecn.probability_pct", f"{e.probability_pct!r} is not a percentage in 1..100",
                         f"SONiC's default is {Ecn().probability_pct}"))
    return p


def _check_dcqcn(d: Dcqcn) -> list[Problem]:
    p: list[Problem] = []
    positive = ("cnp_interval_us", "rpg_time_reset_us", "rpg_byte_reset", "rpg_ai_rate_mbps", "rpg_hai_rate_mbps",
                "rpg_min_rate_mbps", "alpha_update_us")
    for name in positive:
        value = getattr(d, name)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
            p.append(Problem(f"lossless.dcqcn.{name}", f"{value!r} must be a number > 0",
                             f"ConnectX's default is {getattr(Dcqcn(), name)}"))
    if isinstance(d.rpg_threshold, bool) or not isinstance(d.rpg_threshold, int) or d.rpg_threshold < 1:
        p.append(Problem("lossless.dcqcn.rpg_threshold", f"{d.rpg_threshold!r} must be a whole number >= 1",
                         "ConnectX's default is 1"))
    if isinstance(d.rpg_min_dec_fac_pct, bool) or not isinstance(d.rpg_min_dec_fac_pct, int) \
            or not 1 <= d.rpg_min_dec_fac_pct <= 100:
        p.append(Problem("lossless.dcqcn.rpg_min_dec_fac_pct", f"{d.rpg_min_dec_fac_pct!r} is not a percentage "
                         "in 1..100", "ConnectX's default is 50"))
    for name in ("alpha_g", "initial_alpha"):
        value = getattr(d, name)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
            p.append(Problem(f"lossless.dcqcn.{name}", f"{value!r} is not in 0..1",
                             f"ConnectX's default is {getattr(Dcqcn(), name):.4f}"))
    return p


def _check_objectives(o: Objectives, ok) -> list[Problem]:
    p: list[Problem] = []
    for name in ("hard_ms", "remote_ms", "gray_ms", "restore_ms"):
        if not ok(f"objectives.{name}"):
            continue
        value = getattr(o, name)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            p.append(Problem(f"objectives.{name}", f"{value!r} is not a number of milliseconds",
                             f"e.g. {name}={getattr(Objectives(), name):g}"))
        elif value <= 0:
            p.append(Problem(f"objectives.{name}", f"{value:g} ms: a loss window objective must be > 0",
                             "a zero objective cannot be measured (one packet slot is the resolution)"))
        elif value > 60_000:
            p.append(Problem(f"objectives.{name}", f"{value:g} ms is over a minute: no job survives that",
                             "declare what the job can bear, in ms (default "
                             f"{getattr(Objectives(), name):g})"))
    return p


def _check_addressing(addr: Addressing, ok) -> list[Problem]:
    p: list[Problem] = []
    nets: dict[str, ipaddress.IPv4Network] = {}
    for plane in ("be", "fe", "mgmt", "tenants"):
        if not ok(f"addressing.{plane}"):
            continue
        text = getattr(addr, plane)
        try:
            nets[plane] = ipaddress.IPv4Network(text)
        except ValueError as e:
            p.append(Problem(f"addressing.{plane}", f"{text!r} is not an IPv4 network ({e})",
                             "write it like 10.0.0.0/16 with no host bits set"))
    planes = list(nets)
    for i, x in enumerate(planes):
        for y in planes[i + 1:]:
            if nets[x].overlaps(nets[y]):
                p.append(Problem(f"addressing.{y}", f"{nets[y]} overlaps addressing.{x} {nets[x]}",
                                 "each plane needs its own disjoint range"))
    for fname in ("addressing.be_asn", "addressing.fe_asn"):
        if ok(fname) and not 1 <= (asn := getattr(addr, fname.split(".")[1])) <= 4294967294:
            p.append(Problem(fname, f"ASN {asn} out of range", "use a private ASN, e.g. 64600"))
    return p + field_problems(addr)  # the engineer's own numbering, item by item


def oversubscription(fabric: Fabric, leaf: str) -> float | None:
    """Downlink over uplink bandwidth of a leaf; None where it has no uplinks (rail-only)."""
    plane = fabric.node(leaf).role.plane
    down = sum(lk.speed for lk in fabric.links if lk.b == leaf and lk.plane is plane)
    up = sum(lk.speed for lk in fabric.links if lk.a == leaf and lk.plane is plane)
    return round(down / up, 3) if up else None


# --------------------------------------------------------------------------- (de)serialisation


def cluster_to_dict(cluster: Cluster) -> dict:
    """Plain data, for a running lab's state file (the declaration it was booted from)."""
    return to_plain(cluster)


def cluster_from_dict(data: dict) -> Cluster:
    """The inverse of cluster_to_dict (harness.core.codec, driven by the classes' own annotations,
    so a new field or section survives the state file without being listed here: routing
    once did not, and an attached lab then expected /31s where it advertised summaries). A
    field or section missing from an older state file gets its default; data that does not
    fit (a key no class has, a section that is no object) is a TopologyError naming where it
    is (source "state file")."""
    try:
        return from_plain(Cluster, data, where="cluster")
    except CodecError as e:
        field = e.where.removeprefix("cluster.") if e.where != "cluster" else "cluster"
        hint = e.hint or "the state file is damaged: tear the lab down and boot it again"
        raise TopologyError([Problem(field, e.message, hint)], source="state file") from None
