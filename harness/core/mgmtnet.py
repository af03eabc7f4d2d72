"""A management subnet of its own for a lab whose declared mgmt range another lab holds.

A lab's mgmt network is its declared `addressing.mgmt`, on every runtime and in every
artifact. Docker refuses a network whose subnet overlaps another network's, so when a
containerlab lab's declared range overlaps a running lab's (two labs of one declaration), the
runtime moves the second lab's mgmt plane to a subnet drawn from 198.18.0.0/15 (RFC 2544,
benchmarking), and says so:
outside Docker's default address pools (172.17.0.0/16-172.31.0.0/16, 192.168.0.0/16),
containerlab's default 172.20.20.0/24 and fablab's default data ranges (10.0.0.0/16,
10.16.0.0/16).

The slot follows from a hash of the lab name, so one lab gets the same subnet on every
render. A hash cannot keep every pair of names apart: two labs of ai-cluster's size (/26,
2048 slots) share a subnet with probability 1/2048, and 200 such labs are all apart with
probability 4e-5. So a runtime that knows the subnets in use passes them as `taken` and gets
the first free slot from the hashed one on, still deterministic for the same name and `taken`.

`with_mgmt_network` moves a plan's mgmt addresses into the chosen subnet, each at the same
offset from the network address, so node k keeps being the (k+2)-th address.
"""
from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import replace
from ipaddress import IPv4Interface, IPv4Network

from harness.core.errors import MgmtNetworkError
from harness.core.model import Plane
from harness.core.plan import HostPlan, Nic, Plan, Port

POOL = IPv4Network("198.18.0.0/15")
# Addresses kept free beyond the nodes: room for containers a runtime adds next to the lab.
SPARE = 8


def mgmt_prefixlen(nodes: int) -> int:
    """The longest prefix holding network, gateway (the bridge), `nodes` nodes, SPARE, broadcast."""
    if nodes < 0:
        raise MgmtNetworkError(f"a lab cannot have {nodes} nodes")
    needed = nodes + SPARE + 3
    return 32 - (needed - 1).bit_length()


def lab_mgmt_network(lab: str, nodes: int, taken: Iterable[IPv4Network] = ()) -> IPv4Network:
    """The mgmt subnet of `lab`: sized for `nodes`, in POOL, overlapping nothing in `taken`."""
    prefixlen = mgmt_prefixlen(nodes)
    if prefixlen < POOL.prefixlen:
        raise MgmtNetworkError(f"{nodes} nodes need a /{prefixlen} mgmt subnet, larger than the pool {POOL}")
    slots = 1 << (prefixlen - POOL.prefixlen)
    size = 1 << (32 - prefixlen)
    first = int.from_bytes(hashlib.sha256(lab.encode()).digest()[:8], "big") % slots
    taken = tuple(taken)
    for step in range(slots):
        slot = (first + step) % slots
        candidate = IPv4Network((int(POOL.network_address) + slot * size, prefixlen))
        if not any(candidate.overlaps(t) for t in taken):
            return candidate
    raise MgmtNetworkError(f"no free /{prefixlen} left in {POOL} for lab {lab!r}: "
                           f"{len(taken)} subnets are taken")


def with_mgmt_network(plan: Plan, network: IPv4Network) -> Plan:
    """The same plan with every mgmt address moved into `network` at the same offset."""
    old = plan.mgmt_network
    if network == old:
        return plan
    clashes = [f"{plane.value} {net}" for plane in (Plane.BE, Plane.FE) for net in plan.plane_nets[plane]
               if net.overlaps(network)]
    if clashes:
        raise MgmtNetworkError(f"mgmt subnet {network} overlaps the data range {', '.join(clashes)}")

    def move(address: IPv4Interface, where: str) -> IPv4Interface:
        if address.ip not in old:
            raise MgmtNetworkError(f"{where}: {address} is not in the plan's mgmt network {old}")
        offset = int(address.ip) - int(old.network_address)
        if offset >= network.num_addresses - 1:
            raise MgmtNetworkError(f"{where}: offset {offset} of {address} does not fit {network} "
                                   f"(its broadcast address is offset {network.num_addresses - 1})")
        return IPv4Interface((int(network.network_address) + offset, network.prefixlen))

    def move_nic(host: HostPlan, nic: Nic) -> Nic:
        if nic.plane is not Plane.MGMT:
            return nic
        return replace(nic, address=move(nic.address, f"{host.name}:{nic.name}"))

    def move_port(port: Port) -> Port:
        return port if port.address is None else replace(port, address=move(port.address, f"oob1:{port.name}"))

    return replace(
        plan,
        mgmt_network=network,
        switches=tuple(replace(sw, mgmt=move(sw.mgmt, sw.name)) for sw in plan.switches),
        hosts=tuple(replace(h, nics=tuple(move_nic(h, n) for n in h.nics)) for h in plan.hosts),
        oob=tuple(move_port(p) for p in plan.oob),
    )
