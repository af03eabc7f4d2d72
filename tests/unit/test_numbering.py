"""The engineer's own numbering (Addressing.asns, loopbacks, ports, mgmt_ips) is the plan, and its
audit names device and port: ai-cluster renumbered as an IPAM would (loopbacks from a /24 of
their own, host /31s handed out from a pool in no order fablab would choose, 4-byte ASNs by a
scheme, mgmt from another subnet), then one fault at a time."""
from __future__ import annotations

import dataclasses
import json
import random
from ipaddress import IPv4Interface, IPv4Network

import pytest

from harness.catalog import load_fabric
from harness.core.errors import TopologyError
from harness.core.model import Plane, Role, build
from harness.core.plan import make_plan
from harness.render.frr import frr_conf, plane_rules
from harness.render.sonic import config_db


@pytest.fixture(scope="module")
def base():
    return make_plan(load_fabric("ai-cluster"))


def _numbering(base, seed: int = 7) -> dict:
    """ai-cluster's own numbering, renumbered: what an engineer's IPAM and ASN scheme hand out."""
    rnd = random.Random(seed)
    routed = [s for s in base.switches]
    loopbacks = tuple((s.name, f"10.255.255.{k}/32") for k, s in enumerate(routed, start=1))
    asns = []
    for s in routed:
        if s.role is Role.BE_LEAF:
            asns.append((s.name, 4200100000 + s.group * 100 + s.rails[0] + 1))
        elif s.role is Role.BE_SPINE:
            asns.append((s.name, 4200100000))
        elif s.role is Role.FE_SPINE:
            asns.append((s.name, 4200200000))
        else:
            asns.append((s.name, 4200200000 + int(s.name[-1])))
    be_pool = list(IPv4Network("10.77.0.0/24").subnets(new_prefix=31))
    fe_pool = list(IPv4Network("10.78.0.0/24").subnets(new_prefix=31))
    rnd.shuffle(be_pool)
    rnd.shuffle(fe_pool)
    ports = []
    for s in base.switches:
        for k, p in enumerate(s.host_ports):
            net = (be_pool if s.plane is Plane.BE else fe_pool).pop()
            leaf, host = IPv4Interface(f"{net.network_address}/31"), IPv4Interface(f"{net.broadcast_address}/31")
            if k % 3 == 0:  # the leaf's side only (what a switch's config_db gives)
                ports.append((s.name, p.name, str(leaf)))
            elif k % 3 == 1:  # the host's side only
                ports.append((p.peer, p.peer_port, str(host)))
            else:
                ports += [(s.name, p.name, str(leaf)), (p.peer, p.peer_port, str(host))]
    mgmt = tuple((n.name, f"192.168.50.{10 + k}/24") for k, n in enumerate(base.fabric.nodes) if k % 2 == 0)
    return dict(asns=tuple(asns), loopbacks=loopbacks, ports=tuple(ports), mgmt_ips=mgmt)


def _plan(base, **numbering):
    cluster = base.fabric.cluster
    return make_plan(build(dataclasses.replace(cluster, addressing=dataclasses.replace(cluster.addressing, **numbering))))


def test_the_engineers_numbering_is_the_plan(base):
    given = _numbering(base)
    plan = _plan(base, **given)
    asns, loopbacks = dict(given["asns"]), dict(given["loopbacks"])
    for sw in plan.switches:
        assert sw.asn == asns[sw.name] and str(sw.loopback) == loopbacks[sw.name]
        assert f"router bgp {asns[sw.name]}" in frr_conf(plan, sw)
    ports = {(d, p): IPv4Interface(a) for d, p, a in given["ports"]}
    checked = 0
    for sw in plan.switches:
        for p in sw.host_ports:
            nic = plan.host(p.peer).nic(p.peer_port)
            assert p.address.network == nic.address.network and nic.gateway == p.address.ip
            assert ports.get((sw.name, p.name), p.address) == p.address
            assert ports.get((p.peer, p.peer_port), nic.address) == nic.address
            checked += 1
    assert checked == sum(len(s.host_ports) for s in base.switches)
    # the mgmt addresses given are kept, the rest come from their subnet
    mgmt = dict(given["mgmt_ips"])
    assert plan.mgmt_network == IPv4Network("192.168.50.0/24")
    for sw in plan.switches:
        assert str(sw.mgmt) == mgmt.get(sw.name, str(sw.mgmt)) and sw.mgmt.ip in plan.mgmt_network
    # what the planes carry follows the numbering: the filters let the engineer's prefixes through
    rules = plane_rules(plan, Plane.BE)
    for sw in plan.switches:
        if sw.plane is Plane.BE:
            assert any(sw.loopback.network.subnet_of(r.block) and r.ge == 32 for r in rules)
            for p in sw.host_ports:
                assert any(p.address.network.subnet_of(r.block) and r.ge <= 31 <= r.le for r in rules)
    assert all(n.subnet_of(IPv4Network("10.77.0.0/24")) or n.subnet_of(IPv4Network("10.255.255.0/24"))
               for n in plan.plane_nets[Plane.BE])
    # every GPU NIC routes its own rail's host links, wherever the pool put them
    for h in plan.hosts:
        for nic in h.nics:
            if nic.rail is not None:
                assert set(nic.routes) == set(plan.rail_nets[nic.rail]) - {nic.address.network}
                assert all(not nic.address.network.subnet_of(n) or n != nic.address.network for n in nic.routes)
    db = config_db(plan, plan.switch("be-g1-r0"))
    assert f"Loopback0|{loopbacks['be-g1-r0']}" in db["LOOPBACK_INTERFACE"]


def test_fablabs_allocation_is_unchanged_without_a_numbering(base):
    assert base.switch("be-s1").asn == 64600 and str(base.switch("be-s1").loopback) == "10.0.0.1/32"
    assert base.plane_nets[Plane.BE] == (IPv4Network("10.0.0.0/16"),)
    assert base.rail_nets == tuple((b,) for b in base.be_rail_blocks)


def _problems(base, **changes) -> str:
    given = {**_numbering(base), **changes}
    with pytest.raises(TopologyError) as e:
        _plan(base, **given)
    return "\n".join(f"{p.field}: {p.message} (hint: {p.hint})" for p in e.value.problems)


def _swap(items, index, value):
    items = list(items)
    items[index] = value
    return tuple(items)


@pytest.mark.parametrize("fault, expected", [
    ("duplicate loopback", ["10.255.255.1 is used twice", "be-s1's loopback", "be-s2's loopback"]),
    ("ends disagree", ["its ends are not in one subnet", "gpu01:rail0–be-g1-r0:Ethernet"]),
    ("overlapping planes", ["the BE and FE planes overlap"]),
    ("loopback in a link", ["loopback", "is inside the subnet of"]),
    ("leaves share an ASN", ["share ASN", "AS-path loop", "allowas-in"]),
    ("leaf and spine share an ASN", ["share ASN 4200100000", "iBGP"]),
    ("a switch left out", ["switches have none", "be-g1-r0"]),
    ("a link left out", ["has no address in your numbering"]),
    ("a fabric port numbered", ["is no end of an addressed host link", "unnumbered"]),
    ("a /29 given on one end", ["has more than one other address"]),
    ("mgmt in two subnets", ["mgmt addresses are in 2 subnets"]),
])
def test_a_numbering_fault_is_refused_naming_device_and_port(base, fault, expected):
    given = _numbering(base)
    lo, asns, ports, mgmt = list(given["loopbacks"]), list(given["asns"]), list(given["ports"]), list(given["mgmt_ips"])
    at = {(d, p): i for i, (d, p, _) in enumerate(ports)}
    leaf0 = next(s for s in base.switches if s.name == "be-g1-r0")
    p0 = leaf0.host_ports[0]
    if fault == "duplicate loopback":
        lo[1] = (lo[1][0], lo[0][1])
        changes = dict(loopbacks=tuple(lo))
    elif fault == "ends disagree":
        changes = dict(ports=tuple(ports) + ((p0.peer, p0.peer_port, "10.77.1.1/31"),)
                       if (p0.peer, p0.peer_port) not in at else
                       _swap(ports, at[(p0.peer, p0.peer_port)], (p0.peer, p0.peer_port, "10.77.1.1/31")))
    elif fault == "overlapping planes":
        fe = next(x for x in ports if x[0].startswith("fe-l"))  # an FE leaf's host link: its /31
        i = at[(leaf0.name, p0.name)]
        changes = dict(ports=_swap(ports, i, (leaf0.name, p0.name, str(IPv4Interface(fe[2]).network))))
        changes["ports"] = tuple(x for x in changes["ports"] if (x[0], x[1]) != (p0.peer, p0.peer_port))
    elif fault == "loopback in a link":
        d, p, addr = ports[0]
        lo[0] = (lo[0][0], f"{IPv4Interface(addr).network.network_address + 0}/32")
        changes = dict(loopbacks=tuple(lo))
    elif fault == "leaves share an ASN":
        asns = [(n, 4200100101) if n in ("be-g1-r0", "be-g1-r1") else (n, a) for n, a in asns]
        changes = dict(asns=tuple(asns))
    elif fault == "leaf and spine share an ASN":
        asns = [(n, 4200100000) if n == "be-g1-r0" else (n, a) for n, a in asns]
        changes = dict(asns=tuple(asns))
    elif fault == "a switch left out":
        changes = dict(asns=tuple(x for x in asns if x[0] != "be-g1-r0"))
    elif fault == "a link left out":
        changes = dict(ports=tuple(x for x in ports if (x[0], x[1]) not in ((leaf0.name, p0.name), (p0.peer, p0.peer_port))))
    elif fault == "a fabric port numbered":
        up = leaf0.fabric_ports[0]
        changes = dict(ports=tuple(ports) + ((leaf0.name, up.name, "10.99.0.0/31"),))
    elif fault == "a /29 given on one end":
        kept = tuple(x for x in ports if (x[0], x[1]) not in ((leaf0.name, p0.name), (p0.peer, p0.peer_port)))
        changes = dict(ports=kept + ((leaf0.name, p0.name, "10.77.3.1/29"),))
    else:
        mgmt[0] = (mgmt[0][0], "192.168.51.10/24")
        changes = dict(mgmt_ips=tuple(mgmt))
    said = _problems(base, **changes)
    for words in expected:
        assert words in said, (fault, said)


@pytest.mark.parametrize("value, words", [
    (dict(asns=(("be-s1", 0),)), "is not 1..4294967294"),
    (dict(loopbacks=(("be-s1", "10.1.2.300/32"),)), "is not an IPv4 address"),
    (dict(loopbacks=(("be-s1", "10.1.2.3"),)), "has no prefix length"),
    (dict(ports=(("be-s1", "Ethernet0"),)), "is not 3 values"),
    (dict(asns=(("be-s1", 65000), ("be-s1", 65001))), "numbered twice"),
])
def test_a_malformed_item_is_named_by_its_field(base, value, words):
    cluster = base.fabric.cluster
    with pytest.raises(TopologyError) as e:
        build(dataclasses.replace(cluster, addressing=dataclasses.replace(cluster.addressing, **value)))
    assert any(words in p.message and p.field.startswith("addressing.") for p in e.value.problems), e.value.problems


def test_configs_in_their_own_numbering_diff_as_the_plan_and_a_numbering_fault_is_named(base, tmp_path, capsys):
    """fablab diff PLAN DIR on configs that carry the engineer's numbering: no difference; a
    duplicate loopback in them is refused, naming both holders (exit 2, before anything runs)."""
    import json

    from harness.cli.main import main
    from harness.render import artifacts

    theirs = _plan(base, **_numbering(base))
    for rel, text in artifacts(theirs).items():
        if rel.startswith("configs/") and rel.endswith(("frr.conf", "config_db.json")):
            (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / rel).write_text(text)
    assert main(["diff", "ai-cluster", str(tmp_path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["differences"] == []
    db = tmp_path / "configs" / "be-s2" / "config_db.json"
    doc = json.loads(db.read_text())
    doc["LOOPBACK_INTERFACE"] = {"Loopback0": {}, f"Loopback0|{theirs.switch('be-s1').loopback}": {}}
    db.write_text(json.dumps(doc))
    assert main(["diff", "ai-cluster", str(tmp_path)]) == 2
    said = capsys.readouterr().err
    assert "is used twice" in said and "be-s1's loopback" in said and "be-s2's loopback" in said


EXAMPLE = __import__("pathlib").Path(__file__).resolve().parents[2] / "docs" / "examples" / "plan"


@pytest.mark.parametrize("value, code, said", [
    (None, 0, ""),  # the control: the devices file's own addresses
    ("10.250.0.300/24", 2, "sonic_lab_devices.csv:3: ctsw-01's ManagementIp '10.250.0.300/24' is not a host's IP address"),
    ("10.250.1.11/24", 2, "the mgmt addresses are in 2 subnets"),
    ("10.250.0.10/24", 2, "10.250.0.10 is used twice: cpu-x1's mgmt and ctsw-01's mgmt"),
])
def test_a_plans_devices_file_gives_the_mgmt_addresses(tmp_path, capsys, value, code, said):
    from harness.cli.main import main

    devices = (EXAMPLE / "sonic_lab_devices.csv").read_text()
    if value is not None:
        devices = devices.replace("ctsw-01,10.250.0.11/24,", f"ctsw-01,{value},")
    (tmp_path / "sonic_lab_devices.csv").write_text(devices)
    (tmp_path / "sonic_lab_links.csv").write_text((EXAMPLE / "sonic_lab_links.csv").read_text())
    assert main(["show", str(tmp_path / "sonic_lab_links.csv"), "--json"]) == code
    captured = capsys.readouterr()
    if code == 0:
        plan = make_plan(load_fabric(str(tmp_path / "sonic_lab_links.csv")))
        assert str(plan.switch("ctsw-01").mgmt) == "10.250.0.11/24" and plan.mgmt_network == IPv4Network("10.250.0.0/24")
        assert json.loads(captured.out)["ranges"]["mgmt"] == "10.250.0.0/24"
    else:
        assert said in " ".join(captured.err.split()), captured.err


def test_import_with_configs_writes_their_numbering_as_addressing(tmp_path, capsys):
    """`fablab import PLAN --configs DIR -o FILE.py`: the plan, with the numbering DIR's configs
    carry (a render of docs/examples/numbered) as Addressing's items, read back the same."""
    from harness.cli.main import main

    numbered = EXAMPLE.parent / "numbered" / "sonic_lab_links.csv"
    assert main(["render", str(numbered), "-o", str(tmp_path / "render")]) == 0
    target = tmp_path / "mine.py"
    assert main(["import", str(EXAMPLE / "sonic_lab_links.csv"), "--configs", str(tmp_path / "render"),
                 "-o", str(target)]) == 0
    capsys.readouterr()
    ours, theirs = make_plan(load_fabric(str(target))), make_plan(load_fabric(str(numbered)))
    assert [(s.name, s.asn, s.loopback) for s in ours.switches] == [(s.name, s.asn, s.loopback) for s in theirs.switches]
    assert [(h.name, [(n.name, n.address) for n in h.nics]) for h in ours.hosts] == \
        [(h.name, [(n.name, n.address) for n in h.nics]) for h in theirs.hosts]
    assert "asns=(" in target.read_text() and "4200100100" in target.read_text()


def test_a_render_of_a_plan_in_its_own_numbering_reads_back_the_same_numbers(tmp_path, capsys):
    from harness.cli.main import main

    numbered = EXAMPLE.parent / "numbered" / "sonic_lab_links.csv"
    assert main(["render", str(numbered), "-o", str(tmp_path / "r")]) == 0
    capsys.readouterr()
    ours = make_plan(load_fabric(str(numbered)))

    def numbers(plan):
        return ([(s.name, s.asn, s.loopback, s.mgmt, [(p.name, p.address) for p in s.ports]) for s in plan.switches],
                [(h.name, [(n.name, n.address, n.gateway, n.routes) for n in h.nics]) for h in plan.hosts])

    for back in ("cabling.csv", "sonic_sonic-lab_links.csv", "sonic-lab.clab.yml"):
        assert numbers(make_plan(load_fabric(str(tmp_path / "r" / back)))) == numbers(ours), back
    assert (tmp_path / "r" / "numbering.csv").is_file()
    # fablab's own numbering writes none: its ranges are the plan
    assert main(["render", str(EXAMPLE / "sonic_lab_links.csv"), "-o", str(tmp_path / "plain")]) == 0
    assert not (tmp_path / "plain" / "numbering.csv").exists()


def test_spines_of_two_pods_sharing_an_asn_are_refused():
    """A 5-stage BE whose pods' spines share an ASN: a route from one pod reaches the other's spines
    with their own ASN in its path and is dropped; the control: an ASN per pod's spines."""
    from topologies import BUILTINS

    base = make_plan(build(BUILTINS["pods"]()))
    asns = {s.name: 4200000000 + k for k, s in enumerate(base.switches, start=10)}
    for s in base.switches:
        if s.role is Role.BE_SPINE:
            asns[s.name] = 4200000001 + (s.pod or 0)
        elif s.role is Role.BE_SUPERSPINE or s.role is Role.FE_SPINE:
            asns[s.name] = 4200000000 if s.role is Role.BE_SUPERSPINE else 4200000009
    assert make_plan(build(dataclasses.replace(base.fabric.cluster, addressing=dataclasses.replace(
        base.fabric.cluster.addressing, asns=tuple(asns.items())))))  # the control
    for s in base.switches:
        if s.role is Role.BE_SPINE:
            asns[s.name] = 4200000001
    with pytest.raises(TopologyError) as e:
        make_plan(build(dataclasses.replace(base.fabric.cluster, addressing=dataclasses.replace(
            base.fabric.cluster.addressing, asns=tuple(asns.items())))))
    assert any("spines of pods 1, 2 share ASN 4200000001" in p.message for p in e.value.problems), e.value.problems


def test_the_planes_filters_follow_the_engineers_pools(base):
    """/31s and loopbacks from a /24 a plane give that /24, as the engineer's own filters write it;
    loopbacks of both planes from one /24 stay apart (a BE rule never takes in an FE loopback)."""
    pools = make_plan(load_fabric(str(EXAMPLE.parent / "numbered" / "sonic_lab_links.csv")))
    assert {str(r) for r in plane_rules(pools, Plane.BE)} == {"10.255.254.0/24 ge 32 le 32", "10.77.0.0/24 ge 31 le 31"}
    assert {str(r) for r in plane_rules(pools, Plane.FE)} == {"10.255.255.0/24 ge 32 le 32", "10.78.0.0/24 ge 31 le 31"}
    shared = _plan(base, **_numbering(base))  # both planes' loopbacks in 10.255.255.0/24
    fe_loopbacks = [s.loopback.ip for s in shared.switches if s.plane is Plane.FE]
    be_rules = plane_rules(shared, Plane.BE)
    assert not any(ip in r.block for ip in fe_loopbacks for r in be_rules)
    assert all(any(s.loopback.ip in r.block for r in be_rules) for s in shared.switches if s.plane is Plane.BE)
    # each rail's pool holds none of the other rail's links: a GPU NIC routes only its own rail
    for r, nets in enumerate(shared.rail_nets):
        others = [p.address.network for s in shared.switches for p in s.host_ports
                  if s.plane is Plane.BE and p.rail is not None and p.rail != r]
        assert not any(o.overlaps(n) for o in others for n in nets)


def test_leaves_sharing_an_asn_route_with_allowas_in(base, tmp_path, capsys):
    """Leaves of one rail sharing an ASN: refused with no allowas-in, naming Routing(allowas_in=1);
    declared, fablab's leaves carry `neighbor fabric allowas-in 1`; configs that carry it give it."""
    from harness.cli.main import main
    from harness.render import artifacts

    given = _numbering(base)
    asns = tuple((n, 4200100000 + 100 + int(n[-1]) if n.startswith("be-g") else a) for n, a in given["asns"])
    said = _problems(base, asns=asns)
    assert "share ASN" in said and "Routing(allowas_in=1)" in said
    cluster = base.fabric.cluster
    plan = make_plan(build(dataclasses.replace(
        cluster, routing=dataclasses.replace(cluster.routing, allowas_in=1),
        addressing=dataclasses.replace(cluster.addressing, **{**given, "asns": asns}))))
    leaf, spine = frr_conf(plan, plan.switch("be-g1-r0")), frr_conf(plan, plan.switch("be-s1"))
    assert "neighbor fabric allowas-in 1" in leaf and "allowas-in" not in spine
    for rel, text in artifacts(plan).items():
        if rel.startswith("configs/") and rel.endswith(("frr.conf", "config_db.json")):
            (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / rel).write_text(text)
    assert main(["diff", "ai-cluster", str(tmp_path)]) == 0, capsys.readouterr()


def test_show_with_configs_shows_their_numbering(tmp_path, capsys):
    from harness.cli.main import main

    numbered = EXAMPLE.parent / "numbered" / "sonic_lab_links.csv"
    assert main(["render", str(numbered), "-o", str(tmp_path / "r")]) == 0
    capsys.readouterr()
    assert main(["show", str(EXAMPLE / "sonic_lab_links.csv"), "--configs", str(tmp_path / "r"), "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["asn"]["rtsw-g1-r0"] == 4200100100 and "10.77.0.0/24" in shown["ranges"]["planes"]["be"]
    assert main(["show", str(EXAMPLE / "sonic_lab_links.csv"), "--json"]) == 0  # the control: fablab's ASNs
    assert json.loads(capsys.readouterr().out)["asn"]["rtsw-g1-r0"] < 4200000000
