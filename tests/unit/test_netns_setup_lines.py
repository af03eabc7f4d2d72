"""The iproute2 batches the netns runtime gives each node's namespace (harness/runtime/
netns_setup.py); their effect on a booted lab is tests/integration/test_netns_runtime.py's."""
from __future__ import annotations

import pytest

from harness.core.model import Role, build
from harness.core.plan import make_plan
from harness.runtime.netns_setup import OOB_BRIDGE, address_lines, veth_lines, without_link_local
from topologies import BUILTINS

PLAN = make_plan(build(BUILTINS["ai-cluster"]()))


def test_a_leaf_brings_up_its_peer_ends_and_lo_then_its_addresses():
    sw = PLAN.switch("be-g1-r0")
    lines = address_lines(PLAN, ["Ethernet0", "Ethernet8"], sw, None, oob=False)
    assert lines[:5] == ["link set Ethernet0 up", "link set Ethernet8 up", "link set lo up",
                         f"addr add {sw.loopback.ip}/32 dev lo", f"addr add {sw.mgmt} dev eth0"]
    assert lines[5:] == [f"addr add {p.address} dev {p.name}" for p in sw.host_ports]
    assert all("/" in x.split()[2] for x in lines if x.startswith("addr add"))  # every address with its length


def test_a_gpu_node_gets_each_nic_address_and_its_routes_via_the_leaf():
    host = PLAN.hosts[0]
    lines = address_lines(PLAN, [], None, host, oob=False)
    nic = host.nics[0]
    assert lines[0] == "link set lo up"
    assert lines[1] == f"addr add {nic.address} dev {nic.name}"
    assert f"route add {nic.routes[0]} via {nic.gateway} dev {nic.name}" in lines
    assert len([x for x in lines if x.startswith("addr add")]) == len(host.nics)


def test_the_oob_node_bridges_every_mgmt_port_before_bringing_its_bridge_up():
    lines = address_lines(PLAN, [], None, None, oob=True)
    assert lines[1] == f"link add {OOB_BRIDGE} type bridge"
    assert lines[-1] == f"link set {OOB_BRIDGE} up"
    assert lines[2:-1] == [f"link set {p.name} master {OOB_BRIDGE}" for p in PLAN.oob]
    assert len(lines[2:-1]) == len([n for n in PLAN.fabric.nodes if n.role is not Role.OOB])


@pytest.mark.parametrize("mtu", [1500, 9100])
def test_a_veth_pair_is_made_with_both_mtus_this_end_up_its_peer_in_the_other_namespace(mtu):
    cable = PLAN.cables[0]
    [line] = veth_lines([cable], lambda c: mtu, lambda node: f"fl_t_{node}")
    assert line == (f"link add {cable.a_port} mtu {mtu} up type veth peer name {cable.b_port} mtu {mtu} "
                    f"netns fl_t_{cable.b_node}")


# `ip -6 route show table main` in a spine, recorded at gpu4096 (be-ss10: Ethernet200 had its
# link-local address and no route)
_SPINE_ROUTES = (
    "fe80::/64 dev Ethernet196 proto kernel metric 256 pref medium\n"
    "fe80::/64 dev Ethernet204 proto kernel metric 256 pref medium\n"
    "fe80::/64 dev eth0 proto kernel metric 256 pref medium\n"
)


@pytest.mark.parametrize("routes, ports, missing", [
    (_SPINE_ROUTES, ["Ethernet196", "Ethernet200", "Ethernet204"], ["Ethernet200"]),
    (_SPINE_ROUTES, ["Ethernet196", "Ethernet204"], []),  # the control: every port has its route
    ("", ["Ethernet0"], ["Ethernet0"]),
    # a route of the prefix through a gateway, or another prefix on the port, is not the port's own
    ("fe80::/64 via fe80::1 dev Ethernet0 proto static metric 1024 pref medium\n"
     "fe80::/10 dev Ethernet4 proto kernel metric 256 pref medium\n", ["Ethernet0", "Ethernet4"],
     ["Ethernet0", "Ethernet4"]),
    ("fe80::/64 dev Ethernet0 proto kernel metric 256 linkdown pref medium\n", ["Ethernet0"], []),
])
def test_the_ports_left_without_their_link_local_route(routes, ports, missing):
    assert without_link_local(routes, ports) == missing
