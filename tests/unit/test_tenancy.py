"""FE tenants and the edge ACL: one test per declaration error, the plan they make, the ACL's
compiled entries and verdicts, and what the netns runtime would run for them."""
from __future__ import annotations

import shutil
from dataclasses import replace
from ipaddress import IPv4Address, IPv4Network

import pytest

from harness.core.acl import verdict
from harness.core.errors import PrerequisiteError
from harness.core.model import Acl, AclRule, Addressing, Frontend, Tenant, build
from harness.core.plan import make_plan
from harness.runtime import tenants as rt
from test_errors import base, only

TCP, UDP, ICMP = 6, 17, 1


def with_tenants(*tenants: Tenant, acl: Acl | None = None, **kw):
    """ai-cluster with these tenants instead of its own, and no storage NICs (they would need a tenant)."""
    kw.setdefault("frontend", replace(base().frontend, storage_nics=False))
    return replace(base(), tenants=tenants, acl=acl if acl is not None else Acl(), **kw)


def test_member_names_no_host():
    msg = only(with_tenants(Tenant("a", vni=1, members=("gpu99",))), "tenants[0].members[0]", "names no host")
    assert "gpu01" in msg


def test_member_role_unknown():
    msg = only(with_tenants(Tenant("a", vni=1, members=("role:dpu",))), "tenants[0].members[0]", "names no host")
    assert "role:storage" in msg


def test_members_given_as_a_string():
    only(with_tenants(Tenant("a", vni=1, members="gpu01")), "tenants[0].members", "non-empty tuple")


def test_duplicate_vni():
    only(with_tenants(Tenant("a", vni=7, members=("gpu01",)), Tenant("b", vni=7, members=("gpu02",))),
         "tenants[1].vni", "already tenants[0]'s")


def test_duplicate_vlan():
    only(with_tenants(Tenant("a", vni=7, members=("gpu01",), vlan=300),
                      Tenant("b", vni=8, members=("gpu02",), vlan=300)), "tenants[1].vlan", "already")


def test_vni_out_of_range():
    only(with_tenants(Tenant("a", vni=2 ** 24, members=("gpu01",))), "tenants[0].vni", "not a VXLAN VNI")


def test_vni_too_wide_for_a_4_byte_asn_route_target():
    only(with_tenants(Tenant("a", vni=70000, members=("gpu01",)), addressing=Addressing(fe_asn=4200000000)),
         "tenants[0].vni", "does not fit the route target")


def test_vlan_one_is_reserved():
    only(with_tenants(Tenant("a", vni=5, members=("gpu01",), vlan=1)), "tenants[0].vlan", "not a usable VLAN")


def test_subnet_overlaps_the_fe():
    only(with_tenants(Tenant("a", vni=5, members=("gpu01",), subnet="10.16.5.0/24")), "tenants[0].subnet",
         "overlaps addressing.fe")


def test_subnet_overlaps_another_tenant():
    only(with_tenants(Tenant("a", vni=5, members=("gpu01",), subnet="10.40.0.0/16"),
                      Tenant("b", vni=6, members=("gpu02",), subnet="10.40.3.0/24")),
         "tenants[1].subnet", "overlaps tenant 'a'")


def test_subnet_too_small():
    only(with_tenants(Tenant("a", vni=5, members=("role:gpu",), subnet="10.40.0.0/30")), "tenants[0].subnet",
         "holds 2 hosts, the tenant has 8")


def test_tenant_range_overlaps_a_plane():
    only(replace(base(), addressing=Addressing(tenants="10.0.0.0/8")), "addressing.tenants", "overlaps")


def test_fe_mtu_too_small_for_vxlan():
    only(replace(base(), frontend=replace(base().frontend, mtu=1300)), "frontend.mtu", "after VXLAN's 50 bytes")


def test_acl_endpoint_unknown():
    acl = Acl(rules=(AclRule("deny", src="tenant:nope"),))
    msg = only(replace(base(), acl=acl), "acl.rules[0].src", "names nothing")
    assert "train" in msg and "infer" in msg


def test_acl_action_unknown():
    only(replace(base(), acl=Acl(rules=(AclRule("reject"),))), "acl.rules[0].action", "unknown action")


def test_acl_ports_without_tcp_or_udp():
    only(replace(base(), acl=Acl(rules=(AclRule("deny", protocol="icmp", dst_ports="22"),))),
         "acl.rules[0].dst_ports", "ports need protocol")


def test_acl_port_range_backwards():
    only(replace(base(), acl=Acl(rules=(AclRule("deny", protocol="tcp", dst_ports="90-80"),))),
         "acl.rules[0].dst_ports", "low before high")


def test_acl_default_unknown():
    only(replace(base(), acl=Acl(default="drop")), "acl.default", "unknown action")


def test_acl_without_tenants():
    only(with_tenants(acl=Acl(rules=(AclRule("deny"),))), "acl.rules", "no tenants")


# --------------------------------------------------------------------------- the plan


@pytest.fixture(scope="module")
def plan():
    return make_plan(build(base()))


def test_members_are_l2_ports_and_keep_others_routed(plan):
    leaf = plan.switch("fe-l1")
    assert {p.peer for p in leaf.tenant_ports if p.peer_port == "fe0"} == {"gpu01", "gpu02", "gpu05", "gpu06"}
    assert {p.peer for p in leaf.tenant_ports if p.peer_port == "st0"} == {f"gpu0{i}" for i in range(1, 7)}
    assert all(p.address is None and not p.unnumbered for p in leaf.tenant_ports)
    assert {p.peer for p in leaf.host_ports} == {"gpu03", "gpu04"}
    assert leaf.vnis == (10100, 10200, 10900)
    nic = plan.host("gpu01").nic("fe0")
    assert nic.tenant == "train" and nic.address.network == IPv4Network("10.32.0.0/24") and nic.mtu == 1450
    assert nic.gateway is None and nic.routes == ()


def test_a_host_in_two_tenants_is_a_trunk():
    c = with_tenants(Tenant("a", vni=5, members=("gpu01", "gw1")), Tenant("b", vni=6, members=("gpu02", "gw1")))
    p = make_plan(build(c))
    gw = p.host("gw1")
    assert [(n.name, n.vlan, n.parent) for n in gw.nics if n.tenant] == [("fe0.100", 100, "fe0"),
                                                                        ("fe0.101", 101, "fe0")]
    port = next(x for x in p.switch(gw.nics[0].peer).ports if x.peer == "gw1")
    assert port.vlans == (100, 101) and port.tagged


def test_the_netns_runtime_refuses_a_trunk_it_cannot_build(monkeypatch):
    c = with_tenants(Tenant("a", vni=5, members=("gpu01", "gw1")), Tenant("b", vni=6, members=("gpu02", "gw1")))
    monkeypatch.setattr(rt, "Path", lambda _: type("P", (), {"exists": lambda self: False})())
    with pytest.raises(PrerequisiteError, match="gw1 is in tenants a, b"):
        rt.check_supported(make_plan(build(c)))


def test_acl_verdicts_follow_first_match(plan):
    entries = plan.acl
    gpu01, stor1 = plan.host("gpu01").nic("st0").address.ip, plan.host("stor1").nic("fe0").address.ip
    gw1 = plan.host("gw1").nic("fe0").address.ip
    gpu01_fe = plan.host("gpu01").nic("fe0").address.ip
    assert verdict(entries, gpu01, stor1, TCP, 40000, 2049).action == "permit"
    assert verdict(entries, gpu01, stor1, TCP, 40000, 9050).action == "permit"
    assert verdict(entries, gpu01, stor1, TCP, 40000, 22).rule == 2  # the deny after the permits
    assert verdict(entries, gpu01, stor1, UDP, 40000, 2049).action == "deny"
    assert verdict(entries, gpu01_fe, gw1, TCP, 40000, 22).rule == 3
    assert verdict(entries, stor1, gpu01, TCP, 2049, 40000).rule is None  # replies: the default
    assert verdict(entries, gpu01_fe, gw1, ICMP).action == "permit"


def test_acl_entries_stay_inside_tenants(plan):
    for e in plan.acl:
        if e.src is not None and e.dst is not None:
            assert any(e.src.subnet_of(t.subnet) and e.dst.subnet_of(t.subnet) for t in plan.tenants), e


def test_leaf_commands_bridge_each_vni(plan):
    lines = rt.leaf_commands(plan, plan.switch("fe-l2"))
    assert "link add br10100 type bridge" in lines
    assert any(line.startswith("link add vx10200 type vxlan id 10200 local 10.16.0.4 dstport 4789 nolearning")
               for line in lines)
    assert "link set Ethernet8 master br10900" in lines  # stor1, in the storage plane


def test_acl_ruleset_counts_every_entry(plan):
    text = rt.acl_ruleset(plan.acl, plan.switch("fe-l1"))
    names = [e.name for e in plan.acl]
    assert all(f'comment "{n}"' in text for n in names)
    ports = ", ".join(f'"{p.name}"' for p in plan.switch("fe-l1").tenant_ports)
    assert f"iifname {{ {ports} }}" in text and "Ethernet0" in ports
    assert "th dport 9000-9100 counter accept" in text


def test_tenants_make_sonic_tables(plan):
    from harness.render.sonic import config_db

    db = config_db(plan, plan.switch("fe-l2"))
    assert db["VLAN_MEMBER"]["Vlan102|Ethernet8"] == {"tagging_mode": "untagged"}  # stor1 in storage
    assert db["VXLAN_TUNNEL_MAP"]["vtep|map_10100_Vlan100"] == {"vlan": "Vlan100", "vni": "10100"}
    assert "Ethernet8" not in db["INTERFACE"]
    assert db["ACL_RULE"]["FE_EDGE|DEFAULT"]["PACKET_ACTION"] == "FORWARD"
    assert IPv4Address(db["VXLAN_TUNNEL"]["vtep"]["src_ip"]) == plan.switch("fe-l2").loopback.ip


def test_spine_passes_evpn_on_unchanged(plan):
    from harness.render.frr import frr_conf

    spine, leaf = frr_conf(plan, plan.switch("fe-s1")), frr_conf(plan, plan.switch("fe-l1"))
    assert "attribute-unchanged next-hop" in spine and "advertise-all-vni" not in spine
    assert "route-target import 65100:10100" in leaf and "advertise-all-vni" in leaf
    assert "l2vpn evpn" not in frr_conf(plan, plan.switch("be-s1"))


@pytest.mark.skipif(shutil.which("vtysh") is None, reason="FRR's vtysh is not installed")
@pytest.mark.parametrize("exits", [True, False], ids=["with-exit", "without-exit"])
def test_zebra_never_gets_bgps_vni_lines(plan, exits):
    """Read by zebra, bgpd's `vni 10100` (inside `address-family l2vpn evpn`) is zebra's own
    top-level `vni`: the default VRF's L3 VNI. vtysh, which hands out the parts, knows better,
    with or without `exit` lines."""
    import re

    from harness.render.frr import frr_conf
    from harness.runtime.frr_parts import daemon_parts

    conf = frr_conf(plan, plan.switch("fe-l1"))
    if not exits:
        conf = re.sub(r"(?m)^\s*(exit|exit-address-family|exit-vni)\s*\n", "", conf)
    parts, refused = daemon_parts(conf, "fe-l1")
    assert refused == ""
    assert "  vni 10100" in parts["bgpd"].splitlines() and "advertise-all-vni" in parts["bgpd"]
    assert "vni" not in parts["zebra"] and "router bgp" not in parts["zebra"]


def test_storage_nics_need_a_tenant():
    c = replace(base(), tenants=base().tenants[:2])
    only(c, "frontend.storage_nics", "8 storage NICs are in no tenant")


def test_a_storage_tenant_needs_storage_nics():
    only(with_tenants(Tenant("s", vni=5, members=("role:storage",), nic="st0")), "tenants[0].nic",
         "frontend.storage_nics is False")


def test_the_storage_plane_is_a_tenant_on_its_own_nics(plan):
    storage = plan.tenant("storage")
    assert {(m.host, m.nic) for m in storage.members} == (
        {(f"gpu0{i}", "st0") for i in range(1, 9)} | {("stor1", "fe0"), ("stor2", "fe0")})
    gpu01 = plan.host("gpu01")
    assert {n.name: n.tenant for n in gpu01.nics if n.tenant} == {"fe0": "train", "st0": "storage"}
    assert not any(n.parent for h in plan.hosts for n in h.nics)  # no trunk: the netns runtime can run it


def test_frontend_without_tenants_is_unchanged():
    c = replace(base(), tenants=(), acl=Acl(), frontend=Frontend(spines=2, leaves=2, storage_servers=2, gateways=2))
    p = make_plan(build(c))
    assert not any(s.vnis for s in p.switches) and p.tenants == ()


# --------------------------------------------------------------------------- the check's parts

FRR_MACIP = """\
Route Distinguisher: 10.16.0.4:2
*> [2]:[0]:[48]:[2a:6b:13:68:9a:81]
                    10.16.0.4(fe-s1)
                                                           0 65100 65102 i
                    RT:65100:10100 ET:8
*> [2]:[0]:[48]:[2a:6b:13:68:9a:81]:[32]:[10.32.0.1]
                    10.16.0.4(fe-s1)
                                                           0 65100 65102 i
                    RT:65100:10100 ET:8
Route Distinguisher: 10.16.0.4:3
*> [2]:[0]:[48]:[26:3c:c0:29:17:73]:[32]:[10.32.1.3]
                    10.16.0.4(fe-s2)
                                                           0 65100 65102 i
                    RT:65100:10200 ET:8
"""


def test_type2_routes_read_mac_ip_and_vni():
    from harness.checks.tenants import type2_routes

    assert type2_routes(FRR_MACIP, 65100) == {(10100, "2a:6b:13:68:9a:81", "10.32.0.1"),
                                             (10200, "26:3c:c0:29:17:73", "10.32.1.3")}


def test_every_acl_entry_gets_a_tuple_it_decides(plan):
    from harness.checks.tenants import plan_shots

    shots, gaps = plan_shots(plan)
    acl = [x for x in shots if x.entry]
    entries = plan.acl
    assert gaps == []
    assert {x.entry for x in acl} == {e.name for e in entries}
    for x in acl:
        s = x.shot
        decided = verdict(entries, IPv4Address(s.src_addr), IPv4Address(s.dst_addr), s.protocol, s.sport, s.dport)
        assert decided.name == x.entry
        assert (x.must_land is not None) == (decided.action == "permit")


def test_a_shadowed_entry_gets_no_tuple():
    from harness.checks.tenants import plan_shots

    acl = Acl(rules=(AclRule("deny", "role:gpu", "role:storage"),
                     AclRule("permit", "role:gpu", "role:storage", "tcp", "2049")))
    p = make_plan(build(replace(base(), acl=acl)))
    names = {x.entry for x in plan_shots(p)[0] if x.entry}
    assert not any(n.startswith("R1_") for n in names) and any(n.startswith("R0_") for n in names)


def test_controls_use_tuples_the_acl_permits(plan):
    from harness.checks.tenants import plan_shots

    entries = plan.acl
    for x in plan_shots(plan)[0]:
        if x.kind == "tenant control":
            s = x.shot
            assert verdict(entries, IPv4Address(s.src_addr), IPv4Address(s.dst_addr), s.protocol, s.sport,
                           s.dport).action == "permit"


def test_under_a_deny_default_controls_and_negatives_take_what_the_acl_permits():
    """Default deny, only TCP 443 to one gateway and ICMP open: every member still gets a
    control, and cross-tenant frames go on a tuple the ACL permits, so that the segment, not
    the ACL, is what must stop them."""
    from harness.checks.tenants import plan_shots

    acl = Acl(rules=(AclRule("permit", "any", "gw1", "tcp", "443"), AclRule("permit", "any", "any", "icmp")),
              default="deny")
    p = make_plan(build(replace(base(), acl=acl)))
    entries = p.acl
    shots, gaps = plan_shots(p)
    assert gaps == []
    negatives = [x for x in shots if x.must_land is None and not x.entry]
    assert negatives and all(not x.kind.endswith("denies it too)") for x in negatives)
    for x in shots:
        if not x.entry:
            s = x.shot
            assert verdict(entries, IPv4Address(s.src_addr), IPv4Address(s.dst_addr), s.protocol, s.sport,
                           s.dport).action == "permit", x


def test_a_deny_everything_acl_leaves_gaps_and_says_the_negatives_prove_less():
    from harness.checks.tenants import plan_shots

    p = make_plan(build(replace(base(), acl=Acl(default="deny"))))
    shots, gaps = plan_shots(p)
    assert gaps and all("permits nothing" in g for g in gaps)
    negatives = [x for x in shots if x.must_land is None and not x.entry]
    assert negatives and all(x.kind.endswith("(the ACL denies it too)") for x in negatives)


@pytest.mark.parametrize("protocol", [TCP, UDP, ICMP])
def test_frames_are_well_formed(protocol):
    from scapy.layers.inet import ICMP as ScapyIcmp, IP, TCP as ScapyTcp, UDP as ScapyUdp
    from scapy.layers.l2 import Ether

    from harness.traffic.frames import Shot, is_vxlan, l4_frame, tag_of

    shot = Shot(7, b"12345678", "a", "fe0", "10.32.0.1", "b", "fe0", "10.32.0.3", protocol, 40000, 2049)
    data = l4_frame(b"\x02" * 6, b"\x04" * 6, shot)
    pkt = Ether(data)
    layer = {TCP: ScapyTcp, UDP: ScapyUdp, ICMP: ScapyIcmp}[protocol]
    assert pkt[IP].src == "10.32.0.1" and pkt[IP].dst == "10.32.0.3" and layer in pkt
    rebuilt = Ether(data)
    del rebuilt[IP].chksum
    del rebuilt[layer].chksum  # scapy computes both afresh: they must equal the frame's
    again = Ether(bytes(rebuilt))
    assert (again[IP].chksum, again[layer].chksum) == (pkt[IP].chksum, pkt[layer].chksum)
    assert tag_of(data) == (7, b"12345678") and not is_vxlan(data)
