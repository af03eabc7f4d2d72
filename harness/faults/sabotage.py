"""The faults as functions, for the labs' negative controls: each applies one entry of the table
(harness.faults.table) on a target made from plain names, and returns the handle that undoes
it (`with l3_hashing(lab, [leaf]) as s: ... s.description`, or `s.undo()`).

These are the names (and signatures) harness.checks.sabotage and harness.checks.ecmp_faults
had; each is one fault of the table, so a lab and `fablab break` put in the same thing.
"""
from __future__ import annotations

from harness.faults.cabling import free_port, move_far_ends, remove_stray, stray_ends, unplug
from harness.faults.failover import bfd_timers
from harness.faults.protocol import InPlace, applied
from harness.faults.table import BY_NAME, knob
from harness.faults.targets import Cable, Nic, Port, Ports, Route, Switch, Switches
from harness.faults.tenants import move_port
from harness.plumbing.labview import LabView

__all__ = ["Sabotage", "bfd_off", "bfd_timers", "carrier_blind", "fib_lag", "flip_acl_entry", "forwarding_blackhole",
           "free_port", "hash_seed", "join_rails", "l3_hashing", "leak_route", "merge_tenants", "move_far_ends",
           "move_port", "remove_stray", "rogue_cable", "route_tenant", "slow_bfd", "stray_cable", "stray_ends",
           "swap_cables", "unplug", "weighted_uplink"]

Sabotage = InPlace  # what these return: a fault in place, until undone


def _switches(names) -> Switches:
    return Switches(tuple(names))


def stray_cable(lab: LabView, a: str, b: str, peer_group: bool = True,
                ports: tuple[str, str] | None = None) -> InPlace:
    """stray-cable (in the fabric peer group) or, without `peer_group`, stray-cable-unfiltered."""
    pa, pb = ports or ("", "")
    name = "stray-cable" if peer_group else "stray-cable-unfiltered"
    return applied(lab, BY_NAME[name], Cable(Port(a, pa), Port(b, pb)))


def rogue_cable(lab: LabView, a: tuple[str, str | None], b: tuple[str, str | None]) -> InPlace:
    """rogue-cable: a port of None takes the switch's first free HwSKU port."""
    return applied(lab, BY_NAME["rogue-cable"], Cable(Port(a[0], a[1] or ""), Port(b[0], b[1] or "")))


def swap_cables(lab: LabView, a: tuple[str, str], b: tuple[str, str]) -> InPlace:
    return applied(lab, BY_NAME["swapped-cables"], Ports((Port(*a), Port(*b))))


def leak_route(lab: LabView, host: str) -> InPlace:
    return applied(lab, BY_NAME["route-leak"], Nic(host))


def join_rails(lab: LabView, leaf: str) -> InPlace:
    return applied(lab, BY_NAME["joined-rails"], Switch(leaf))


def l3_hashing(lab: LabView, switches: list[str] | None = None) -> InPlace:
    """l3-hashing on these switches (every BE switch for None)."""
    return applied(lab, BY_NAME["l3-hashing"], _switches(switches) if switches else None)


def weighted_uplink(lab: LabView, leaf: str, prefix: str, uplink: str, weight: int = 2) -> InPlace:
    return applied(lab, BY_NAME["weighted-uplink"].but(weight=weight), Route(leaf, uplink, prefix))


def hash_seed(lab: LabView, node: str, seed: int) -> InPlace:
    return applied(lab, knob("hash-seed").but(seed=seed), Switch(node))


def bfd_off(lab: LabView, switches: list[str]) -> InPlace:
    """bfd-removed (BFD taken off the fabric sessions); `fablab break`'s bfd-off slows BFD beyond
    BGP's hold time instead."""
    return applied(lab, BY_NAME["bfd-removed"], _switches(switches))


def slow_bfd(lab: LabView, switches: list[str], interval_ms: int = 1000, multiplier: int = 3) -> InPlace:
    return applied(lab, BY_NAME["slow-bfd"].but(interval_ms=interval_ms, multiplier=multiplier),
                   _switches(switches))


def carrier_blind(lab: LabView, node: str, ports: list[str]) -> InPlace:
    return applied(lab, BY_NAME["carrier-blind"], Ports(tuple(Port(node, p) for p in ports)))


def fib_lag(lab: LabView, switches: list[str], hold_ms: int = 2000) -> InPlace:
    return applied(lab, BY_NAME["fib-lag"].but(hold_ms=hold_ms), _switches(switches))


def forwarding_blackhole(lab: LabView, switch: str, port: str) -> InPlace:
    return applied(lab, BY_NAME["forwarding-blackhole"], Port(switch, port))


def merge_tenants(lab: LabView, leaf: str, port: str, into_vni: int) -> InPlace:
    return applied(lab, BY_NAME["wrong-vlan"].but(into_vni=into_vni), Port(leaf, port))


def flip_acl_entry(lab: LabView, leaf: str, entry: str) -> InPlace:
    return applied(lab, BY_NAME["acl-flip"].but(entry=entry), Switch(leaf))


def route_tenant(lab: LabView, leaf: str, vni: int) -> InPlace:
    return applied(lab, BY_NAME["tenant-routed"].but(vni=vni), Switch(leaf))
