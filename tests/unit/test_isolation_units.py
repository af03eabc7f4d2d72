"""The isolation check's parts that need no lab: which probes it sends, what counts as a
delivery, and what it calls a route or a session across planes."""
from __future__ import annotations

import socket
from collections import Counter
from ipaddress import IPv4Network

import pytest

from harness.checks.isolation import MGMT_PORT, cross_plane_sessions, plan_probes, route_leaks
from harness.core.model import Plane, Role, build
from harness.observe.routing import BgpPeer
from harness.core.plan import make_plan
from harness.traffic.probe import NONCE_BYTES, _read, frame, parse, payload
from topologies import BUILTINS


@pytest.fixture(scope="module", params=sorted(BUILTINS))
def planned(request):
    plan = make_plan(build(BUILTINS[request.param]()))
    return plan, plan_probes(plan)


def test_every_negative_has_a_control_to_its_listener_and_from_its_port(planned):
    plan, probes = planned
    negatives = [p for p in probes if not p.expect_delivery]
    controls = [p for p in probes if p.expect_delivery]
    assert negatives and controls
    to = {(p.dst_node, p.dst_addr) for p in controls}
    assert {(p.dst_node, p.dst_addr) for p in negatives} <= to  # each "nothing arrived" could have arrived
    assert {(p.src_node, p.src_port) for p in negatives} <= {(p.src_node, p.src_port) for p in controls}


def test_no_probe_is_addressed_to_its_own_node(planned):
    _, probes = planned
    assert all(p.dst_node != p.src_node for p in probes)


def test_every_switch_is_probed_through_eth0_both_ways_and_on_a_data_port(planned):
    plan, probes = planned
    for sw in plan.switches:
        through = [p for p in probes if (p.next_hop_node, p.next_hop_port) == (sw.name, MGMT_PORT)]
        assert any(p.expect_delivery and p.dst_addr == str(sw.mgmt.ip) for p in through), sw.name
        assert any(not p.expect_delivery and p.dst_addr == str(sw.loopback.ip) for p in through), sw.name
        assert any(p.src_node == sw.name and p.src_port == MGMT_PORT and p.expect_delivery for p in probes)
        data_in = [p for p in probes if p.next_hop_node == sw.name and p.next_hop_port != MGMT_PORT]
        assert any(not p.expect_delivery and p.dst_addr == str(sw.mgmt.ip) for p in data_in), sw.name
        assert any(p.expect_delivery and p.dst_addr == str(sw.loopback.ip) for p in data_in), sw.name


def test_probes_grow_with_the_fabric_not_with_host_pairs(planned):
    plan, probes = planned
    kinds = Counter(p.kind for p in probes)
    # a destination per leaf, per port group on a leaf of several rails
    leaves = {pl: sum(max(len(s.rails), 1) for s in plan.switches if s.plane is pl and s.host_ports)
              for pl in (Plane.BE, Plane.FE)}
    # routed NICs only: a tenant member's FE NIC is an L2 port, the tenant check's to probe
    nics = {pl: sum(1 for h in plan.hosts for n in h.nics if n.plane is pl and n.tenant is None)
            for pl in (Plane.BE, Plane.FE)}
    # one probe per (source NIC × destination leaf or loopback block)
    assert kinds["fe->be"] == nics[Plane.FE] * (leaves[Plane.BE] + 1)
    assert kinds["be->fe"] == nics[Plane.BE] * (leaves[Plane.FE] + 1)
    if plan.fabric.cluster.backend.kind == "rail-only":
        rails = plan.fabric.cluster.backend.rails
        assert sum(v for k, v in kinds.items() if k.startswith("rail")) == nics[Plane.BE] * (rails - 1)


def test_large_needs_a_few_thousand_probes_not_a_hundred_thousand():
    probes = plan_probes(make_plan(build(BUILTINS["large"]())))
    assert len(probes) < 10_000  # per host pair it was 109,244


def test_frame_carries_id_and_nonce():
    nonce = b"\x01" * NONCE_BYTES
    data = frame(b"\xaa" * 6, b"\xbb" * 6, "10.0.1.1", "10.16.1.1", 7, nonce)
    udp_payload = data[14 + 20 + 8:]
    assert parse(udp_payload) == (7, nonce)
    assert parse(udp_payload[:-1]) is None
    assert parse(b"X" + udp_payload[1:]) is None


def test_a_listener_counts_only_the_current_nonce():
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    with a, b:
        b.setblocking(False)
        a.send(payload(1, b"\x00" * NONCE_BYTES))  # an earlier round's probe 1
        a.send(payload(1, b"\x11" * NONCE_BYTES))
        a.send(payload(9, b"\x22" * NONCE_BYTES))  # not a probe of this round
        a.send(b"noise")
        got = _read(b, "gpu02", {1: b"\x11" * NONCE_BYTES})
    assert [(g.probe, g.node) for g in got] == [(1, "gpu02")]


def _route(prefix: str, *devs: str) -> tuple[str, tuple[str, ...]]:
    """A FIB entry as the isolation check's observation holds it: prefix -> the next hops' ports."""
    return str(IPv4Network(prefix)), tuple(devs)


@pytest.fixture(scope="module")
def ai():
    return make_plan(build(BUILTINS["ai-cluster"]()))


def test_planned_fibs_show_no_leak(ai):
    host = ai.hosts[0]
    fibs = {host.name: dict(_route(str(r), n.name) for n in host.nics for r in n.routes)}
    fibs[host.name].update(dict([_route(str(n.address.network), n.name) for n in host.nics]))
    fibs["fe-l1"] = dict([_route("10.16.0.1/32", "Ethernet0"), _route("172.31.0.0/20", "eth0")])
    assert route_leaks(ai, fibs) == []


def test_a_default_route_on_mgmt_and_another_planes_prefix_on_a_switch_are_leaks(ai):
    host = ai.hosts[0].name
    fibs = {host: dict([_route("0.0.0.0/0", "mgmt0")]),
            "fe-l1": dict([_route("10.0.1.0/31", "Ethernet60"), _route("10.0.2.0/31", "Ethernet60")]),
            "be-s1": dict([_route("172.31.0.0/20", "Ethernet0")])}
    found = route_leaks(ai, fibs)
    assert any(f.startswith(f"{host} (host) has a route to 1 prefixes of BE") for f in found), found
    assert any(f.startswith("fe-l1 (FE) has a route to 2 prefixes of BE 10.0.0.0/16") for f in found), found
    assert any(f.startswith("be-s1 (BE) has a route to 1 prefixes of MGMT") for f in found), found


def test_a_route_into_a_tenant_subnet_outside_its_members_is_a_leak(ai):
    train = ai.tenant("train")
    member = train.members[0]
    own = dict([_route(str(train.subnet), member.nic)])
    assert route_leaks(ai, {member.host: own}) == []  # the control: its own tenant NIC
    found = route_leaks(ai, {member.host: {**own, **dict([_route(str(ai.tenant("infer").subnet), member.nic)])},
                             "be-g1-r0": dict([_route(str(train.subnet), "Ethernet16")]),
                             "fe-s1": dict([_route(str(train.subnet), "Ethernet0")])})
    assert any(f.startswith(f"{member.host} (host) has a route to 1 prefixes of tenant infer") for f in found), found
    assert any(f.startswith("be-g1-r0 (BE) has a route to 1 prefixes of tenant train") for f in found), found
    assert any(f.startswith("fe-s1 (FE) has a route to 1 prefixes of tenant train") for f in found), found


def test_a_tenant_nic_routing_into_the_fe_underlay_is_a_leak(ai):
    member = ai.tenant("train").members[0]
    found = route_leaks(ai, {member.host: dict([_route("10.16.0.0/24", member.nic)])})
    assert found and found[0].startswith(f"{member.host} (host) has a route to 1 prefixes of FE"), found


def test_the_routed_planes_are_probed_towards_every_tenant_with_a_control(ai):
    probes = plan_probes(ai)
    towards = {p.dst_addr for p in probes if p.kind in ("be->tenant", "fe->tenant") and not p.expect_delivery}
    controlled = {p.dst_addr for p in probes if p.kind == "tenant control"}
    members = {str(m.address.ip): t.name for t in ai.tenants for m in t.members}
    assert towards and towards <= controlled
    assert {members[a] for a in towards} == {t.name for t in ai.tenants}


def test_a_route_out_of_an_undeclared_port_is_named(ai):
    host = ai.hosts[0].name
    found = route_leaks(ai, {host: dict([_route("10.0.0.0/8", "eth9")])})
    assert found and "eth9, a port the plan does not have" in found[0]


def test_rail_only_routes_between_rails_are_leaks():
    plan = make_plan(build(BUILTINS["rail-only"]()))
    gpu = next(h for h in plan.hosts if h.role is Role.GPU)
    found = route_leaks(plan, {gpu.name: dict([_route(str(plan.be_rail_blocks[1]), "rail0")])})
    assert found and "rail 1" in found[0]


def test_a_bgp_session_to_the_other_plane_is_named_with_its_port(ai):
    be_asn = ai.switch("be-g1-r0").asn
    peers = {"fe-l1": (BgpPeer("fe-l1", "Ethernet60", "Established", be_asn, 0, 1000),
                       BgpPeer("fe-l1", "Ethernet48", "Established", ai.switch("fe-s1").asn, 3, 1000),
                       BgpPeer("fe-l1", "Ethernet64", "Active", 64999, 0, 0))}
    found = cross_plane_sessions(ai, peers)
    assert len(found) == 1 and found[0].startswith(f"fe-l1:Ethernet60 (FE) has a BGP session with BE AS {be_asn}")
