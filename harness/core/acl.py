"""The FE edge ACL compiled over a plan's tenants: each declared rule becomes entries of
concrete prefixes (a tenant is its subnet, a role or a host its members' tenant addresses), in
order, first match wins. `make_plan` compiles it once (`Plan.acl`); those entries render
SONiC's ACL_RULEs, the netns runtime's nftables rules, and the verdict a lab expects of a
5-tuple, so all three agree by construction and a lab can only find where the running switch
departs from them.
"""
from __future__ import annotations

from ipaddress import IPv4Address, IPv4Network
from typing import TYPE_CHECKING

from harness.core.model import ACL_PROTOCOLS, Acl, AclRule
from harness.core.planned import AclEntry
from harness.core.tenancy import parse_ports

if TYPE_CHECKING:
    from harness.core.planned import HostPlan, TenantPlan

TABLE = "FE_EDGE"  # SONiC's ACL table name, and the nftables table's suffix
DEFAULT_RULE = "DEFAULT"


def endpoint(spec: str, tenants: tuple[TenantPlan, ...], hosts: tuple[HostPlan, ...]) -> list[IPv4Network] | None:
    """The prefixes an ACL endpoint stands for; None is any."""
    if spec == "any":
        return None
    kind, _, name = spec.partition(":")
    if kind == "tenant":
        return [next(t.subnet for t in tenants if t.name == name)]
    if kind == "role":
        chosen = [h for h in hosts if h.role.value == name]
    else:
        chosen = [h for h in hosts if h.name == spec]
    return [IPv4Network(f"{n.address.ip}/32") for h in chosen for n in h.nics if n.tenant is not None]


def compile_acl(acl: Acl, tenants: tuple[TenantPlan, ...], hosts: tuple[HostPlan, ...]) -> tuple[AclEntry, ...]:
    """Every rule's entries (an endpoint with no tenant address yields none), then the default.
    Called by `make_plan`; everything else reads `Plan.acl`."""
    out: list[AclEntry] = []
    for i, r in enumerate(acl.rules):
        out += _expand(i, r, tenants, hosts)
    out.append(AclEntry(DEFAULT_RULE, None, acl.default, None, None, None, None, None))
    return tuple(out)


def _expand(i: int, r: AclRule, tenants: tuple[TenantPlan, ...], hosts: tuple[HostPlan, ...]) -> list[AclEntry]:
    srcs, dsts = endpoint(r.src, tenants, hosts), endpoint(r.dst, tenants, hosts)
    proto = ACL_PROTOCOLS[r.protocol]
    dports, sports = parse_ports(r.dst_ports), parse_ports(r.src_ports)
    pairs = [(s, d) for s in (srcs if srcs is not None else [None]) for d in (dsts if dsts is not None else [None])
             if _can_meet(tenants, s, d)]
    return [AclEntry(f"R{i}_{k}", i, r.action, s, d, proto, dports, sports) for k, (s, d) in enumerate(pairs)]


def _can_meet(tenants: tuple[TenantPlan, ...], src: IPv4Network | None, dst: IPv4Network | None) -> bool:
    """Traffic only flows inside a tenant: a pair of prefixes in no common tenant needs no entry."""
    if src is None or dst is None:
        return True
    return any(src.subnet_of(t.subnet) and dst.subnet_of(t.subnet) for t in tenants)


def verdict(entries: tuple[AclEntry, ...], src: IPv4Address, dst: IPv4Address, protocol: int, sport: int = 0,
            dport: int = 0) -> AclEntry:
    """The entry that decides an IPv4 packet (the default when no rule matches)."""
    for e in entries:
        if e.matches(src, dst, protocol, sport, dport):
            return e
    raise AssertionError("the default entry matches everything")


def priority(index: int, count: int) -> int:
    """SONiC: the higher PRIORITY wins; the first entry gets the highest."""
    return 10 + (count - 1 - index) * 10
