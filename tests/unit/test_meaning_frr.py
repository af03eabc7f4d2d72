"""frr.conf judged by what it does (harness.core.meaning): a table of rewordings of fablab's own
render that FRR 8.4 reads as the same config (no difference), and a table of faults, each named
by the behaviour it changes. No root, no FRR: the model is pure."""
from __future__ import annotations

import re

import pytest

from harness.catalog import load_fabric
from harness.core.declarations import Bfd
from harness.core.errors import InputError
from harness.core.meaning.compare import diff_frr
from harness.core.meaning.frr import parse
from harness.core.plan import make_plan
from harness.render import artifacts

LEAF, SPINE, FE_LEAF = "be-g1-r0", "be-s1", "fe-l1"


@pytest.fixture(scope="module")
def render():
    plan = make_plan(load_fabric("ai-cluster"))
    return plan, artifacts(plan)


def _no_exits(t: str) -> str:
    return "\n".join(ln for ln in t.splitlines() if ln.strip() not in ("exit", "exit-address-family", "exit-vni"))


def _flat(t: str) -> str:
    return "\n".join(ln.strip() for ln in t.splitlines())


def _no_seq(t: str) -> str:
    return re.sub(r" seq \d+ ", " ", t)


def _renamed(t: str) -> str:
    for old, new in (("fabric", "PEER_V4"), ("BE-PLANE", "PL_BE"), ("FE-PLANE", "PL_FE"), ("ORIGINATED", "LOCAL_V4"),
                     ("CONNECTED", "REDIST_CONN")):
        t = re.sub(rf"\b{old}\b", new, t)
    return t


def _route_maps(t: str) -> str:
    """Prefix filters attached through route maps, as SONiC's bgpcfgd templates attach them."""
    t = re.sub(r"neighbor fabric prefix-list (\S+) (in|out)", r"neighbor fabric route-map RM_\1_\2 \2", t)
    maps = "".join(f"route-map RM_{pl}_{d} permit 10\n match ip address prefix-list {pl}\n!\n"
                   for pl in set(re.findall(r"route-map RM_(\S+)_(?:in|out) ", t))
                   for d in ("in", "out"))
    return maps + t


def _defaults_written(t: str) -> str:
    return t.replace("frr defaults datacenter", "frr defaults traditional").replace(
        " no bgp default ipv4-unicast\n",
        " no bgp default ipv4-unicast\n no bgp ebgp-requires-policy\n bgp deterministic-med\n timers bgp 3 9\n"
        " bgp log-neighbor-changes\n").replace(" neighbor fabric timers connect 1\n",
                                               " neighbor fabric timers connect 1\n")


def _bfd_profile_alone(t: str) -> str:
    return t.replace(" neighbor fabric bfd\n", "")


def _per_neighbour(t: str) -> str:
    ports = re.findall(r"neighbor (\S+) interface peer-group fabric", t)
    out = []
    for ln in t.splitlines():
        m = re.match(r"(\s*)neighbor fabric (.+)$", ln)
        if m and m.group(2) != "peer-group":
            out += [f"{m.group(1)}neighbor {p} {m.group(2)}" for p in ports]
        elif re.match(r"\s*neighbor fabric peer-group$", ln):
            continue
        elif (m := re.match(r"(\s*)neighbor (\S+) interface peer-group fabric$", ln)):
            out.append(f"{m.group(1)}neighbor {m.group(2)} interface")
        else:
            out.append(ln)
    return "\n".join(out)


def _address_family_ipv4(t: str) -> str:
    return t.replace("address-family ipv4 unicast", "address-family ipv4")


def _ge_only(t: str) -> str:
    return t.replace("ge 32 le 32", "ge 32")


def _evpn_first(t: str) -> str:
    """The EVPN family before IPv4's, and `vni` blocks closed by nothing."""
    m = re.search(r" address-family l2vpn evpn\n.*? exit-address-family\n", t, re.S)
    if not m:
        return t
    block = m.group(0).replace("  exit-vni\n", "")
    t = t.replace(m.group(0), "")
    return t.replace(" !\n address-family ipv4 unicast", block + " !\n address-family ipv4 unicast", 1)


def _vrf_default(t: str) -> str:
    return re.sub(r"router bgp (\d+)\n", r"router bgp \1 vrf default\n", t)


def _legacy_bfd(t: str) -> str:
    b = Bfd()  # the profile's timers, written on the neighbour the pre-profile way
    return t.replace(" neighbor fabric bfd profile fabric\n",
                     f" neighbor fabric bfd {b.multiplier} {b.interval_ms} {b.interval_ms}\n")


def _max_prefix_threshold(t: str) -> str:
    return re.sub(r"maximum-prefix (\d+) 75", r"maximum-prefix \1", t)


def _explicit_defaults_in_profile(t: str) -> str:
    """A profile line at bfdd's own default (detect-multiplier 3) left out, as FRR writes it."""
    assert "  detect-multiplier 3\n" in t
    return t.replace("  detect-multiplier 3\n", "")


def _v6only_and_forwarding(t: str) -> str:
    return re.sub(r"neighbor (\S+) interface peer-group", r"neighbor \1 interface v6only peer-group", t).replace(
        "service integrated-vtysh-config\n", "service integrated-vtysh-config\nip forwarding\n")


def _emulation_lines_written(t: str) -> str:
    """What only the emulation needs, written by an engineer who copied a lab's running config:
    the runtime adds it at boot, and it is nobody's difference (harness.core.emulation)."""
    assert "nexthop kernel" not in t
    return t.replace("service integrated-vtysh-config\n", "service integrated-vtysh-config\n"
                                                         "no zebra nexthop kernel enable\n")


def _kernel_nexthop_groups_said_on(t: str) -> str:
    return t.replace("service integrated-vtysh-config\n", "service integrated-vtysh-config\n"
                                                         "zebra nexthop kernel enable\n")


def _multipath_relax_no_as_set(t: str) -> str:
    return t.replace("bgp bestpath as-path multipath-relax", "bgp bestpath as-path multipath-relax no-as-set")


SAME = [_emulation_lines_written, _kernel_nexthop_groups_said_on, _v6only_and_forwarding, _multipath_relax_no_as_set, _no_exits, _flat, _no_seq, _renamed, _route_maps, _defaults_written, _bfd_profile_alone, _per_neighbour,
        _address_family_ipv4, _ge_only, _evpn_first, _vrf_default, _legacy_bfd, _max_prefix_threshold,
        _explicit_defaults_in_profile, lambda t: _no_exits(_renamed(_route_maps(_address_family_ipv4(t))))]


@pytest.mark.parametrize("switch", [LEAF, SPINE, FE_LEAF])
@pytest.mark.parametrize("reword", SAME, ids=lambda f: f.__name__)
def test_a_rewording_fabric_reads_the_same(render, switch, reword):
    plan, files = render
    ours = files[f"configs/{switch}/frr.conf"]
    assert diff_frr(plan, switch, ours, reword(ours)) == []


FAULTS = [  # (name, switch, edit, behaviour named)
    ("permit-all route map", LEAF, lambda t: _route_maps(t).replace(
        "route-map RM_BE-PLANE_in permit 10\n match ip address prefix-list BE-PLANE\n!\n",
        "route-map RM_BE-PLANE_in permit 10\n match ip address prefix-list BE-PLANE\n!\n"
        "route-map RM_BE-PLANE_in permit 20\n!\n"), "accepts"),
    ("BGP in a VRF", LEAF, lambda t: t.replace("router bgp 64601", "router bgp 64601 vrf BLUE"), "comes up"),
    ("maximum-paths 1", LEAF, lambda t: t.replace("maximum-paths 64", "maximum-paths 1"), "multipath"),
    ("no maximum-paths is 256", SPINE, lambda t: t.replace("  maximum-paths 64\n", "  maximum-paths 4\n"), "multipath"),
    ("BFD slower", LEAF, lambda t: t.replace("detect-multiplier 3", "detect-multiplier 5"), "BFD"),
    ("BFD off", LEAF, lambda t: t.replace(" neighbor fabric bfd\n", "").replace(" neighbor fabric bfd profile fabric\n",
                                                                               ""), "BFD"),
    ("remote-as internal", LEAF, lambda t: t.replace("neighbor fabric remote-as external",
                                                     "neighbor fabric remote-as internal"), "comes up"),
    ("a prefix-list entry dropped", LEAF, lambda t: re.sub(r"ip prefix-list BE-PLANE seq 30 [^\n]*\n", "", t),
     "accepts"),
    ("timers", LEAF, lambda t: t.replace("neighbor fabric timers 3 9", "neighbor fabric timers 10 30"), "BGP timers"),
    ("the traditional profile", LEAF, lambda t: t.replace("frr defaults datacenter", "frr defaults traditional")
     .replace("neighbor fabric timers 3 9\n", ""), "BGP timers"),
    ("a neighbour shut down", LEAF, lambda t: t.replace(" neighbor Ethernet0 interface peer-group fabric\n",
                                                        " neighbor Ethernet0 interface peer-group fabric\n"
                                                        " neighbor Ethernet0 shutdown\n"), "comes up"),
    ("an uncabled port", LEAF, lambda t: t.replace("neighbor Ethernet8 interface", "neighbor Ethernet240 interface"),
     "comes up"),
    ("maximum-prefix", LEAF, lambda t: re.sub(r"maximum-prefix \d+", "maximum-prefix 12000", t), "maximum-prefix"),
    ("leaks the FE out", FE_LEAF, lambda t: t.replace("prefix-list ORIGINATED out", "prefix-list FE-PLANE out"),
     "advertises"),
    ("redistributes everything", LEAF, lambda t: t.replace("redistribute connected route-map CONNECTED",
                                                           "redistribute connected"), "originates"),
    ("a VNI's route target", FE_LEAF, lambda t: t.replace("route-target import 65100:10200",
                                                          "route-target import 65100:10201"), "EVPN"),
    ("family not activated", LEAF, lambda t: t.replace("  neighbor fabric activate\n", ""), "address families"),
    ("le widened", SPINE, lambda t: t.replace("10.0.0.0/24 ge 32 le 32", "10.0.0.0/24 ge 24 le 32"), "accepts"),
    ("a seq reordering that changes the first match", LEAF, lambda t: t.replace(
        "ip prefix-list BE-PLANE seq 10 permit", "ip prefix-list BE-PLANE seq 5 deny 10.0.0.0/8 le 32\n"
                                                  "ip prefix-list BE-PLANE seq 10 permit"), "accepts"),
    ("a prepend on the way out", LEAF, lambda t: _route_maps(t).replace(
        "route-map RM_ORIGINATED_out permit 10\n match ip address prefix-list ORIGINATED\n",
        "route-map RM_ORIGINATED_out permit 10\n match ip address prefix-list ORIGINATED\n"
        " set as-path prepend 64601 64601\n"),
     "advertises: attributes"),
    ("IP forwarding off", LEAF, lambda t: t.replace("service integrated-vtysh-config\n",
                                                    "service integrated-vtysh-config\nno ip forwarding\n"),
     "other settings"),
    ("a filter naming a list that does not exist", LEAF, lambda t: t.replace("neighbor fabric prefix-list BE-PLANE in",
                                                                           "neighbor fabric prefix-list BE_PLANE in"),
     "accepts"),
    ("a route map naming a list that does not exist", LEAF, lambda t: _route_maps(t).replace(
        "route-map RM_ORIGINATED_out permit 10\n match ip address prefix-list ORIGINATED\n",
        "route-map RM_ORIGINATED_out permit 10\n match ip address prefix-list ORIGINATED_V4\n"), "advertises"),
    ("ebgp-requires-policy without a policy", LEAF, lambda t: t.replace("frr defaults datacenter",
                                                                        "frr defaults traditional")
     .replace("  neighbor fabric prefix-list BE-PLANE in\n", ""), "accepts"),
]


@pytest.mark.parametrize("name,switch,edit,behaviour", FAULTS, ids=[f[0] for f in FAULTS])
def test_a_fault_is_named(render, name, switch, edit, behaviour):
    plan, files = render
    ours = files[f"configs/{switch}/frr.conf"]
    theirs = edit(ours)
    assert theirs != ours, "the edit did not apply"
    found = diff_frr(plan, switch, ours, theirs, "x/frr.conf")
    assert behaviour in {d.behaviour for d in found}, found
    assert all(d.switch == switch for d in found)
    assert len(found) <= 6, found  # one fault reads as a few differences, never hundreds


def test_a_difference_names_the_lines_behind_it(render):
    plan, files = render
    ours = files[f"configs/{LEAF}/frr.conf"]
    theirs = ours.replace("maximum-paths 64", "maximum-paths 1")
    line = theirs.splitlines().index("  maximum-paths 1") + 1
    (d,) = diff_frr(plan, LEAF, ours, theirs, "x/frr.conf")
    assert d.source == f"x/frr.conf:{line}"


def test_an_uncabled_port_is_named_with_the_cabled_ones(render):
    plan, files = render
    ours = files[f"configs/{LEAF}/frr.conf"]
    found = diff_frr(plan, LEAF, ours, ours.replace("neighbor Ethernet8 interface", "neighbor Ethernet240 interface"))
    assert any("Ethernet240 is not cabled on be-g1-r0; its BGP ports are Ethernet0, Ethernet8" in d.found
               for d in found), found


def test_without_exit_the_parent_node_takes_the_line():
    """FRR climbs to the node that knows a command: remote-as written in an address family is
    the neighbour's, and an unindented prefix list after `router bgp` is at the top."""
    cfg = parse("router bgp 1\n address-family ipv4 unicast\n neighbor X remote-as 2\n  neighbor X activate\n"
                "ip prefix-list P permit 10.0.0.0/8\nroute-map M permit 10\n match ip address prefix-list P\n"
                "router bgp 1\n neighbor X timers 1 3\n")
    inst = cfg.bgp["default"]
    assert inst.peers["X"].remote_as == "2"
    assert "activate" in inst.afs[("ipv4", "unicast")].neighbors["X"]
    assert ("ip", "P") in cfg.prefix_lists and "timers" in inst.peers["X"].settings


def test_lists_that_do_not_exist_or_are_empty():
    """As FRR 8.4.4 applied them on a running lab: a neighbour's filter naming no list, or a list
    with a description and no entry, denies everything; a route-map match on no list never
    matches."""
    import ipaddress

    from harness.core.meaning.bgp import Behaviour

    b = Behaviour(parse("ip prefix-list EMPTY description nothing yet\nroute-map M permit 10\n"
                        " match ip address prefix-list NONE\n"))
    p = ipaddress.ip_network("10.0.0.0/24")
    assert not b.prefix_list("ip", "NONE", p).permit and not b.prefix_list("ip", "EMPTY", p).permit
    assert not b.access_list("NONE", p).permit
    assert not b.route_map("M", p).permit and not b.route_map("NO-SUCH-MAP", p).permit


def test_prefix_list_order_without_seq_is_file_order():
    cfg = parse("ip prefix-list P deny 10.1.0.0/16 le 32\nip prefix-list P permit 10.0.0.0/8 le 32\n")
    import ipaddress
    assert [e.seq for e in cfg.prefix_lists[("ip", "P")].ordered()] == [5, 10]
    assert cfg.prefix_lists[("ip", "P")].decide(ipaddress.ip_network("10.1.2.0/24"))[0] is False
    assert cfg.prefix_lists[("ip", "P")].decide(ipaddress.ip_network("10.2.2.0/24"))[0] is True


def test_a_malformed_line_is_bad_input_naming_file_and_line():
    with pytest.raises(InputError, match=r"my/frr.conf:2: .*10.0.0.300/24"):
        parse("!\nip prefix-list P permit 10.0.0.300/24\n", "my/frr.conf")


def test_up_says_which_sessions_cannot_come_up_before_it_boots(render):
    """`fablab up --configs` names a session on a port the plan does not cable, and a planned
    session nobody configured, instead of leaving them to read as BGP Idle."""
    from harness.core.meaning.compare import sessions_down

    plan, files = render
    ours = files[f"configs/{LEAF}/frr.conf"]
    assert sessions_down(plan, LEAF, ours) == []
    found = sessions_down(plan, LEAF, ours.replace("neighbor Ethernet8 interface", "neighbor Ethernet240 interface"))
    said = {(d.subject, d.found) for d in found}
    assert ("session Ethernet240", "down: Ethernet240 is not cabled on be-g1-r0; its BGP ports are Ethernet0, "
                                   "Ethernet8") in said
    assert ("session Ethernet8 (be-s2:Ethernet0)", "no neighbour on it") in said
