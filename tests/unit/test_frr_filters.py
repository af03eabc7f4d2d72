"""Per-plane prefix filters and maximum-prefix limits in the rendered frr.conf: they admit
every route the plan needs, nothing of another plane, and the limits clear what a session
carries by the stated headroom."""
from __future__ import annotations

import dataclasses
import re
from ipaddress import IPv4Network

import pytest

from harness.core.model import Plane, Role, Routing, build
from harness.observe.convergence import expectations
from harness.core.plan import make_plan
from harness.render.frr import MAX_PREFIX_HEADROOM, advertised, frr_conf
from topologies import BUILTINS

RULE = re.compile(r"^ip prefix-list (\S+) seq \d+ permit (\S+)(?: ge (\d+))?(?: le (\d+))?$")


def prefix_lists(text: str) -> dict[str, list[tuple[IPv4Network, int, int]]]:
    lists: dict[str, list[tuple[IPv4Network, int, int]]] = {}
    for line in text.splitlines():
        m = RULE.match(line)
        if m:
            net = IPv4Network(m.group(2))
            ge = int(m.group(3) or net.prefixlen)
            le = int(m.group(4) or (32 if m.group(3) else net.prefixlen))
            lists.setdefault(m.group(1), []).append((net, ge, le))
    return lists


def admits(rules: list[tuple[IPv4Network, int, int]], prefix: IPv4Network) -> bool:
    """FRR's prefix-list match: inside the block, length within [ge, le]."""
    return any(prefix.subnet_of(net) and ge <= prefix.prefixlen <= le for net, ge, le in rules)


SUMMARIZED = "ai-cluster, hosts summarized"


def _cluster(name: str):
    if name == SUMMARIZED:
        return dataclasses.replace(BUILTINS["ai-cluster"](), routing=Routing(summarize_hosts=True))
    return BUILTINS[name]()


@pytest.fixture(scope="module", params=sorted(BUILTINS) + [SUMMARIZED])
def plan(request):
    return make_plan(build(_cluster(request.param)))


def test_every_session_is_filtered_in_and_out_and_limited(plan):
    for sw in plan.switches:
        text = frr_conf(plan, sw)
        plane = f"{sw.plane.value.upper()}-PLANE"
        out = "ORIGINATED" if sw.role in (Role.BE_LEAF, Role.FE_LEAF) else plane
        assert f"  neighbor fabric prefix-list {plane} in\n" in text, sw.name
        assert f"  neighbor fabric prefix-list {out} out\n" in text, sw.name
        assert re.search(r"^  neighbor fabric maximum-prefix \d+ \d+$", text, re.M), sw.name


def test_filters_admit_every_planned_route_and_nothing_of_another_plane(plan):
    a = plan.fabric.cluster.addressing
    other = {Plane.BE: [IPv4Network(a.fe), plan.mgmt_network], Plane.FE: [IPv4Network(a.be), plan.mgmt_network]}
    needed = {pl: [p for s in plan.switches if s.plane is pl for p in advertised(plan, s)] for pl in (Plane.BE, Plane.FE)}
    for sw in plan.switches:
        lists = prefix_lists(frr_conf(plan, sw))
        plane = lists[f"{sw.plane.value.upper()}-PLANE"]
        assert all(admits(plane, p) for p in needed[sw.plane]), sw.name
        assert not any(net.overlaps(o) for net, _, _ in plane for o in other[sw.plane]), sw.name
        assert not admits(plane, IPv4Network("0.0.0.0/0"))
        assert not admits(plane, IPv4Network(a.be if sw.plane is Plane.BE else a.fe))  # no aggregate of the plane
        own = lists["ORIGINATED"]
        assert sorted(n for n, _, _ in own) == sorted(advertised(plan, sw))  # with a dual-homed host's /32
        assert all(admits(plane, n) for n, _, _ in own)  # what a leaf sends passes its peers' filter


def test_limits_clear_what_each_session_carries_by_the_headroom(plan):
    exp = expectations(plan)
    switches = {s.name: s for s in plan.switches}
    for sw in plan.switches:
        limit = int(re.search(r"maximum-prefix (\d+)", frr_conf(plan, sw)).group(1))
        if not sw.fabric_ports:
            continue
        if sw.role in (Role.BE_LEAF, Role.FE_LEAF, Role.BE_SUPERSPINE) or sw.pod is not None:
            # at most everything it learns, from one spine (a 5-stage spine: from one super-spine)
            carried = len(exp[sw.name].routes)
        else:
            carried = max(len(advertised(plan, switches[p.peer])) for p in sw.fabric_ports)
        assert limit >= MAX_PREFIX_HEADROOM * carried, sw.name
        assert limit <= MAX_PREFIX_HEADROOM * (carried + 1), sw.name  # sized from the plan, not a guess


def test_summaries_replace_a_leafs_host_links_and_the_links_still_feed_them():
    plan = make_plan(build(_cluster(SUMMARIZED)))
    leaf = next(s for s in plan.switches if s.role is Role.BE_LEAF)
    text = frr_conf(plan, leaf)
    hosts = [p.address.network for p in leaf.host_ports]
    summaries = plan.originated(leaf)[1:]
    assert len(summaries) < len(hosts) and all(any(h.subnet_of(s) for s in summaries) for h in hosts)
    for s in summaries:
        assert f"  aggregate-address {s} summary-only\n" in text
    lists = prefix_lists(text)
    assert sorted(n for n, _, _ in lists["CONNECTED"]) == sorted([leaf.loopback.network] + hosts)
    assert " match ip address prefix-list CONNECTED\n" in text
    # Control: without summaries the same leaf advertises its /31s and aggregates nothing.
    plain = make_plan(build(BUILTINS["ai-cluster"]()))
    assert "aggregate-address" not in frr_conf(plain, plain.switch(leaf.name))
    assert plain.originated(plain.switch(leaf.name))[1:] == tuple(hosts)


def test_route_prefix_is_the_summary_or_the_link():
    summarized, plain = make_plan(build(_cluster(SUMMARIZED))), make_plan(build(BUILTINS["ai-cluster"]()))
    host = next(h for h in plain.hosts if any(n.plane is Plane.BE for n in h.nics))
    nic = next(n for n in host.nics if n.plane is Plane.BE)
    assert plain.route_prefix(nic) == nic.address.network
    wide = summarized.route_prefix(summarized.host(host.name).nic(nic.name))
    assert wide.prefixlen < 31 and nic.address.ip in wide
