"""A mgmt subnet per lab: sized, in the pool, apart from other labs, and the plan moved into it."""
from __future__ import annotations

import random
import string
from dataclasses import replace
from ipaddress import IPv4Interface, IPv4Network

import pytest

from harness.core.errors import MgmtNetworkError
from harness.core.mgmtnet import POOL, lab_mgmt_network, mgmt_prefixlen, with_mgmt_network
from harness.core.model import Plane

# Subnets a lab's mgmt network must never touch: Docker's default address pools,
# containerlab's default mgmt subnet, fablab's default data ranges.
AVOID = [IPv4Network(f"172.{n}.0.0/16") for n in range(17, 32)] + [
    IPv4Network("192.168.0.0/16"), IPv4Network("172.20.20.0/24"),
    IPv4Network("10.0.0.0/16"), IPv4Network("10.16.0.0/16")]


def names(count: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    out: set[str] = set()
    while len(out) < count:
        out.add(rng.choice(string.ascii_lowercase) + "".join(rng.choices(string.ascii_lowercase + string.digits + "-", k=8)))
    return sorted(out)


def test_pool_avoids_docker_containerlab_and_data_ranges():
    assert not any(POOL.overlaps(net) for net in AVOID)


@pytest.mark.parametrize("nodes, prefixlen", [(0, 28), (5, 28), (6, 27), (26, 26), (125, 24), (245, 24), (246, 23)])
def test_subnet_holds_nodes_gateway_and_spare(nodes, prefixlen):
    assert mgmt_prefixlen(nodes) == prefixlen
    net = lab_mgmt_network("x", nodes)
    assert net.prefixlen == prefixlen and net.subnet_of(POOL)
    # node k sits at offset k + 2 (offset 1 is the bridge): the last node is below broadcast
    assert nodes + 1 < net.num_addresses - 1


def test_same_name_same_subnet():
    assert lab_mgmt_network("pod7", 26) == lab_mgmt_network("pod7", 26)


def test_hashing_alone_can_put_two_labs_in_one_subnet():
    """Why `taken` exists: among a few thousand names two land in the same slot."""
    seen: dict[IPv4Network, str] = {}
    for name in names(3000):
        net = lab_mgmt_network(name, 26)
        if net in seen:
            other = seen[net]
            assert not lab_mgmt_network(name, 26, taken={net}).overlaps(lab_mgmt_network(other, 26))
            return
        seen[net] = name
    pytest.fail("3000 names in 2048 slots without a clash: the hash is not what this test assumes")


def test_two_hundred_labs_with_taken_are_pairwise_disjoint():
    taken: list[IPv4Network] = []
    sizes = [26, 125, 10]
    for i, name in enumerate(names(200)):
        taken.append(lab_mgmt_network(name, sizes[i % 3], taken=taken))
    for i, a in enumerate(taken):
        for b in taken[i + 1:]:
            assert not a.overlaps(b), (a, b)


def test_taken_picks_the_next_free_slot_deterministically():
    first = lab_mgmt_network("pod7", 26)
    second = lab_mgmt_network("pod7", 26, taken={first})
    assert second == lab_mgmt_network("pod7", 26, taken={first})
    expected = IPv4Network((int(first.network_address) + first.num_addresses, 26))
    assert second == (expected if expected.subnet_of(POOL) else IPv4Network((POOL.network_address, 26)))


def test_full_pool_is_an_error():
    with pytest.raises(MgmtNetworkError, match="no free /26"):
        lab_mgmt_network("pod7", 26, taken={POOL})


def test_too_many_nodes_for_the_pool_is_an_error():
    with pytest.raises(MgmtNetworkError, match="larger than the pool"):
        lab_mgmt_network("huge", POOL.num_addresses)


def test_negative_node_count_is_an_error():
    with pytest.raises(MgmtNetworkError, match="-1 nodes"):
        mgmt_prefixlen(-1)


def mgmt_addresses(plan) -> dict[str, IPv4Interface]:
    out = {sw.name: sw.mgmt for sw in plan.switches}
    out.update({f"{h.name}:{n.name}": n.address for h in plan.hosts for n in h.nics if n.plane is Plane.MGMT})
    out.update({f"oob1:{p.name}": p.address for p in plan.oob if p.address is not None})
    return out


def test_every_mgmt_address_moves_at_the_same_offset(ai_plan):
    net = lab_mgmt_network("pod7", len(ai_plan.fabric.nodes))
    moved = with_mgmt_network(ai_plan, net)
    before, after = mgmt_addresses(ai_plan), mgmt_addresses(moved)
    assert moved.mgmt_network == net and before.keys() == after.keys()
    for key, old in before.items():
        new = after[key]
        assert new.network == net
        assert int(new.ip) - int(net.network_address) == int(old.ip) - int(ai_plan.mgmt_network.network_address)


def test_nothing_but_mgmt_moves(ai_plan):
    moved = with_mgmt_network(ai_plan, lab_mgmt_network("pod7", len(ai_plan.fabric.nodes)))
    assert [replace(sw, mgmt=None) for sw in moved.switches] == [replace(sw, mgmt=None) for sw in ai_plan.switches]
    for a, b in zip(moved.hosts, ai_plan.hosts):
        assert [n for n in a.nics if n.plane is not Plane.MGMT] == [n for n in b.nics if n.plane is not Plane.MGMT]
    assert (moved.cables, moved.be_rail_blocks, moved.fe_block) == (ai_plan.cables, ai_plan.be_rail_blocks,
                                                                   ai_plan.fe_block)


def test_the_plans_own_network_changes_nothing(ai_plan):
    assert with_mgmt_network(ai_plan, ai_plan.mgmt_network) is ai_plan


def test_a_network_too_small_for_the_offsets_is_an_error(ai_plan):
    with pytest.raises(MgmtNetworkError, match="does not fit 198.18.0.0/28"):
        with_mgmt_network(ai_plan, IPv4Network("198.18.0.0/28"))


def test_a_network_overlapping_a_data_range_is_an_error(ai_plan):
    with pytest.raises(MgmtNetworkError, match="overlaps the data range be 10.0.0.0/16"):
        with_mgmt_network(ai_plan, IPv4Network("10.0.255.0/24"))


def test_an_address_outside_the_plans_mgmt_network_is_an_error(ai_plan):
    stray = replace(ai_plan.switches[0], mgmt=IPv4Interface("192.0.2.9/24"))
    plan = replace(ai_plan, switches=(stray,) + ai_plan.switches[1:])
    with pytest.raises(MgmtNetworkError, match=f"{stray.name}: 192.0.2.9/24 is not in"):
        with_mgmt_network(plan, IPv4Network("198.18.0.0/24"))
