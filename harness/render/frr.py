"""frr.conf per routed switch: eBGP unnumbered on fabric ports, multipath-relax, BFD profile,
and on every session a per-plane prefix filter (in and out) and a maximum-prefix limit.

What a session may carry follows from the plan. A plane's prefixes are its switches'
loopbacks (/32s in the plane's block 0) and its host links (/31s in its host blocks, or the
leaves' summaries of them, `Plan.originated`); a filter admits nothing else, so a cable
that joins two planes carries no route between them.
A leaf sends only what it originates: in a two-tier Clos it is never transit between
spines (they share an ASN and would refuse such paths anyway). The limit is the most a
session can legitimately carry times MAX_PREFIX_HEADROOM: a leaf hears at most every other
prefix of its plane from a spine, a spine hears from a leaf what that leaf originates (in a
5-stage BE, spines and super-spines may hear the rest of the plane).
A dual-homed FE host (`Frontend(dual_homed=True)`) speaks BGP to both its leaves, from an ASN
of its own: it sends its own /32 and hears the FE plane; its leaves pass that /32 on.
"""
from __future__ import annotations

from dataclasses import dataclass
from ipaddress import IPv4Network

from harness.core.model import Plane, Role
from harness.core.plan import HostPlan, Plan, SwitchPlan
from harness.render.templates import render_template

MAX_PATHS = 64
MAX_PREFIX_HEADROOM = 2  # growth without re-rendering; a leak of a whole table still trips it
MAX_PREFIX_WARNING = 75  # % of the limit at which FRR logs a warning before it tears down
LEAVES = (Role.BE_LEAF, Role.FE_LEAF)
# The router advertisements that teach an unnumbered session its neighbour's link-local
# address: every 10 s, what bgpd itself asks zebra for (BGP_UNNUM_DEFAULT_RA_INTERVAL) and what
# Cumulus renders. A port that comes up still gets four, one a second (zebra's fast
# retransmits), so a restore waits for none. At 1 s, gpu4096's 24,576 fabric ports sent about
# 25,000 a second, and zebra took 30 % of the machine sending and reading them.
RA_INTERVAL_S = 10


@dataclass(frozen=True)
class PrefixRule:
    block: IPv4Network
    ge: int
    le: int

    def __str__(self) -> str:
        return f"{self.block} ge {self.ge} le {self.le}"


def plane_rules(plan: Plan, plane: Plane) -> tuple[PrefixRule, ...]:
    """The prefixes a plane's sessions may carry: loopback /32s, and host links as /31s or
    as the summaries its leaves advertise (down to the shortest of them)."""
    hosts = list(plan.link_nets[plane])
    loopbacks = sorted(plan.loopback_nets[plane])
    shortest = min((p.prefixlen for s in plan.switches if s.plane is plane for p in plan.originated(s)[1:]),
                   default=31)
    own = [PrefixRule(plan.host_block, 32, 32)] if plane is Plane.FE and plan.host_block is not None else []
    return tuple([PrefixRule(b, 32, 32) for b in loopbacks] + [PrefixRule(b, shortest, 31) for b in hosts] + own)


def advertised(plan: Plan, sw: SwitchPlan) -> tuple[IPv4Network, ...]:
    """What sw sends a spine: what it originates, and the /32s of the dual-homed hosts behind it."""
    return plan.originated(sw) + plan.heard(sw)


def session_limit(plan: Plan, sw: SwitchPlan) -> int:
    """maximum-prefix of sw's fabric sessions: what the plan lets one carry, with headroom."""
    peers = {s.name: s for s in plan.switches}
    plane_total = _plane_total(plan, sw.plane)
    if sw.role in LEAVES or sw.role is Role.BE_SUPERSPINE or sw.pod is not None:
        # a leaf hears the rest of its plane; so may a 5-stage spine from a super-spine, and a
        # super-spine from a spine hears its pod's
        most = plane_total - len(plan.originated(sw))
    else:
        most = max((len(advertised(plan, peers[p.peer])) for p in sw.fabric_ports if p.peer in peers), default=1)
    return MAX_PREFIX_HEADROOM * max(most, 1)


def frr_conf(plan: Plan, sw: SwitchPlan) -> str:
    plane_list = f"{sw.plane.value.upper()}-PLANE"
    leaf = sw.role in LEAVES
    return render_template(
        "frr.conf.j2", lab=plan.name, sw=sw, routing=plan.fabric.cluster.routing, bfd=plan.fabric.cluster.bfd, max_paths=MAX_PATHS, ra_interval=RA_INTERVAL_S,
        plane_list=plane_list, plane_rules=plane_rules(plan, sw.plane), own=plan.originated(sw), leaf=leaf,
        heard=plan.heard(sw), host_block=plan.host_block, host_limit=MAX_PREFIX_HEADROOM,
        aggregates=_aggregates(plan, sw),
        out_list="ORIGINATED" if leaf else plane_list, max_prefix=session_limit(plan, sw),
        max_prefix_warning=MAX_PREFIX_WARNING, headroom=MAX_PREFIX_HEADROOM,
        tenants=bool(plan.tenants) and sw.plane is Plane.FE, vnis=[t for t in plan.tenants if t.vni in sw.vnis],
        rt_asn=plan.fabric.cluster.addressing.fe_asn, allowas_in=plan.fabric.cluster.routing.allowas_in)


def _aggregates(plan: Plan, sw: SwitchPlan) -> tuple[IPv4Network, ...]:
    """The summaries sw advertises in place of its host /31s (none unless summarize_hosts)."""
    hosts = {p.address.network for p in sw.host_ports}
    return tuple(p for p in plan.originated(sw)[1:] if p not in hosts)


def host_frr_conf(plan: Plan, host: HostPlan) -> str:
    """frr.conf of a dual-homed FE host: BGP to both its leaves, its /32 out, a default in."""
    return render_template("frr-host.conf.j2", lab=plan.name, host=host, bfd=plan.fabric.cluster.bfd,
                           leaves=host.fe_nics, max_paths=len(host.fe_nics), plane_list="FE-PLANE",
                           plane_rules=plane_rules(plan, Plane.FE), max_prefix=MAX_PREFIX_HEADROOM * _plane_total(
                               plan, Plane.FE), max_prefix_warning=MAX_PREFIX_WARNING, routing=plan.fabric.cluster.routing)


def _plane_total(plan: Plan, plane: Plane) -> int:
    """Every prefix a plane carries: what its switches originate, and its dual-homed hosts' /32s."""
    routed_hosts = len({p for s in plan.switches if s.plane is plane for p in plan.heard(s)})
    return sum(len(plan.originated(s)) for s in plan.switches if s.plane is plane) + routed_hosts
