"""Faults in what keeps traffic apart on a leaf: an ACL entry the wrong way round, a member port
in another tenant's bridge, a tenant routed into the underlay, and a rail-only leaf that
forwards between its rails."""
from __future__ import annotations

from dataclasses import dataclass

from harness.core.errors import InputError
from harness.core.tenancy import NFT_TABLE, bridge_device
from harness.faults.protocol import Applied
from harness.faults.targets import Port, Switch
from harness.plumbing.labview import LabView

# --------------------------------------------------------------------------- acl-flip


@dataclass(frozen=True)
class AclVerdict:
    entry: str
    was: str  # its nft verdict as declared: accept or drop


def _acl_rule(lab: LabView, leaf: str, entry: str) -> tuple[str, str, str]:
    """The entry's rule in the leaf's ingress chain: (match, handle, verdict)."""
    listing = lab.ns_exec(leaf, ["nft", "-a", "list", "chain", "bridge", NFT_TABLE, "ingress"], check=True).stdout
    line = next((x for x in listing.splitlines() if f'comment "{entry}"' in x), None)
    if line is None:
        raise InputError(f"{leaf} has no ACL entry {entry!r} (its entries are named R<rule>_<n>: fablab show)")
    rule, handle = line.strip().rsplit(" # handle ", 1)
    return rule.split(" counter ")[0], handle, "accept" if " accept " in line else "drop"


def set_acl_verdict(lab: LabView, leaf: str, entry: str, verdict: str) -> str:
    """The entry's rule with `verdict`; the verdict it had."""
    match, handle, had = _acl_rule(lab, leaf, entry)
    lab.ns_exec(leaf, ["nft", "replace", "rule", "bridge", NFT_TABLE, "ingress", "handle", handle,
                       f'{match} counter {verdict} comment "{entry}"'], check=True)
    return had


def acl_flip(lab: LabView, target: Switch, entry: str = "") -> Applied[AclVerdict]:
    """One ACL entry on one leaf with the opposite action (a rule typed the wrong way round);
    without an entry, the plan's first deny."""
    if not entry:
        if not lab.plan.acl:
            raise InputError(f"{lab.plan.name} declares no ACL: nothing to flip")
        entry = (next((e for e in lab.plan.acl if e.action == "deny"), None) or lab.plan.acl[0]).name
    _, _, had = _acl_rule(lab, target.name, entry)
    verdict = "drop" if had == "accept" else "accept"
    set_acl_verdict(lab, target.name, entry, verdict)
    return Applied(f"{target.name}: ACL entry {entry} turned to {verdict}", AclVerdict(entry, had))


def acl_back(lab: LabView, target: Switch, state: AclVerdict) -> None:
    set_acl_verdict(lab, target.name, state.entry, state.was)


# --------------------------------------------------------------------------- wrong-vlan

@dataclass(frozen=True)
class Bridged:
    own: int  # the VNI whose bridge the port belongs in
    into: int  # the VNI it was moved into


def move_port(lab: LabView, leaf: str, port: str, vni: int) -> None:
    """A leaf port into the bridge of tenant VNI `vni`."""
    lab.ns_exec(leaf, ["ip", "link", "set", port, "master", bridge_device(vni)], check=True)


def wrong_vlan(lab: LabView, target: Port, into_vni: int = 0) -> Applied[Bridged]:
    """A tenant member's leaf port moved into another tenant's bridge (the wrong VLAN on an
    access port): its frames now reach the other tenant. Without `into_vni`, the first other
    tenant with a bridge on that leaf."""
    leaf, port = target.node, target.port
    own = next((t.vni for t in lab.plan.tenants for m in t.members if (m.leaf, m.leaf_port) == (leaf, port)), None)
    into = into_vni or next((t.vni for t in lab.plan.tenants if t.vni != own and leaf in t.leaves), None)
    if own is None or into is None:
        raise InputError(f"--on {target}: not a member port on a leaf with another tenant's bridge")
    move_port(lab, leaf, port, into)
    return Applied(f"{leaf}:{port} moved from VNI {own}'s bridge into VNI {into}'s", Bridged(own, into))


def right_vlan(lab: LabView, target: Port, state: Bridged) -> None:
    move_port(lab, target.node, target.port, state.own)


# --------------------------------------------------------------------------- tenant-routed

@dataclass(frozen=True)
class Routed:
    vni: int


def tenant_routed(lab: LabView, target: Switch, vni: int = 0) -> Applied[Routed]:
    """A leaf that routes a tenant into the underlay: an address on the tenant's bridge (an SVI
    in the default VRF, which is what a missing VRF makes of an anycast gateway). Without
    `vni`, the first tenant with a bridge on the leaf."""
    leaf = target.name
    vni = vni or next((t.vni for t in lab.plan.tenants if leaf in t.leaves), 0)
    if not vni:
        raise InputError(f"--on {leaf}: no tenant has a bridge on it")
    lab.set_sysctls(leaf, {f"net.ipv4.conf.{bridge_device(vni)}.forwarding": 1})
    lab.ns_exec(leaf, ["nft", "flush", "chain", "bridge", NFT_TABLE, "to_leaf"], check=True)
    return Applied(f"{leaf} routes VNI {vni}'s bridge into the underlay", Routed(vni))


def tenant_unrouted(lab: LabView, target: Switch, state: Routed) -> None:
    """The tenant's bridge no longer forwards IP, and the leaf takes none for itself."""
    leaf = target.name
    lab.ns_exec(leaf, ["nft", "add", "rule", "bridge", NFT_TABLE, "to_leaf", "ether", "type", "{", "ip,", "ip6", "}",
                       "counter", "drop", "comment", '"to-leaf"'], check=True)
    lab.set_sysctls(leaf, {f"net.ipv4.conf.{bridge_device(state.vni)}.forwarding": 0})


# --------------------------------------------------------------------------- joined-rails

@dataclass(frozen=True)
class NftRule:
    where: tuple[str, ...]  # family, table, chain
    rule: str


@dataclass(frozen=True)
class Removed:
    rules: tuple[NftRule, ...]


def joined_rails(lab: LabView, target: Switch) -> Applied[Removed]:
    """A rail-only leaf of several rails that forwards between them (its rails in one VRF, the
    port groups' separation forgotten): a GPU's NIC on one rail reaches another rail."""
    leaf = target.name
    if not lab.plan.switch(leaf).separate_rails:
        raise InputError(f"--on {leaf}: it keeps no rails apart (not a rail-only leaf of several rails)")
    listing = lab.ns_exec(leaf, ["nft", "-a", "list", "ruleset"], check=True).stdout
    found: list[tuple[NftRule, str]] = []  # each with its handle
    where: list[str] = []
    for line in map(str.strip, listing.splitlines()):
        if line.startswith("table "):
            where = line.split()[1:3]
        elif line.startswith("chain "):
            where = where[:2] + [line.split()[1]]
        elif "oifname !=" in line:
            rule, handle = line.rsplit(" # handle ", 1)
            found.append((NftRule(tuple(where), rule), handle))
    if not found:
        raise InputError(f"--on {leaf}: it has no rule keeping its rails apart")
    for rule, handle in found:
        lab.ns_exec(leaf, ["nft", "delete", "rule", *rule.where, "handle", handle], check=True)
    return Applied(f"{leaf} forwards between its rails' port groups", Removed(tuple(r for r, _ in found)))


def rails_apart(lab: LabView, target: Switch, state: Removed) -> None:
    for rule in state.rules:
        lab.ns_exec(target.name, ["nft", "add", "rule", *rule.where, rule.rule], check=True)
