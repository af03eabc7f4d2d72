"""A config_db.json alone is a switch's config (issue 67, item 3): BGP held in CONFIG_DB as SONiC's
unified mode holds it is written to frr.conf as frrcfgd's startup templates write it, then read as
any frr.conf is. fablab's BE switches given that way diff as the same as their frr.conf form; a
fault made in the tables is named by the behaviour it changes."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from corpus.unified import rewrite
from harness.cli.diff import directory_differences
from harness.core.meaning.unified import frr_conf, holds_bgp
from harness.plumbing.frr_reader import unavailable

BE = ["be-g1-r0", "be-g1-r1", "be-g2-r0", "be-g2-r1", "be-s1", "be-s2"]
LEAF = "be-g1-r0"


def test_the_tables_are_written_as_frrcfgds_templates_write_them():
    db = {"DEVICE_METADATA": {"localhost": {"hostname": "leaf1"}},
          "BGP_GLOBALS": {"default": {"local_asn": "65001", "router_id": "10.0.0.1", "load_balance_mp_relax": "true"}},
          "BGP_PEER_GROUP": {"default|PEERS": {"peer_type": "external", "bfd": "true", "detect_mult": "3",
                                               "min_rx": "300", "min_tx": "300"}},
          "BGP_NEIGHBOR": {"default|Ethernet0": {"peer_group_name": "PEERS"}, "10.1.1.1": {"asn": "65009"}},
          "BGP_PEER_GROUP_AF": {"default|PEERS|ipv4_unicast": {"admin_status": "true", "route_map_in": ["IN"]}},
          "PREFIX_SET": {"PL": {"mode": "IPv4"}},
          "PREFIX": {"PL|5|10.0.0.0/8|16..24": {"action": "permit"}, "PL|10|10.2.0.0/16|exact": {"action": "deny"}},
          "ROUTE_MAP": {"IN|10": {"route_operation": "permit", "match_prefix_set": "PL"}}}
    text = frr_conf(db).splitlines()
    assert holds_bgp(db) and not holds_bgp({"BGP_NEIGHBOR": db["BGP_NEIGHBOR"]})
    for line in ("hostname leaf1", "ip prefix-list PL seq 5 permit 10.0.0.0/8 ge 16 le 24",
                 "ip prefix-list PL seq 10 deny 10.2.0.0/16", "route-map IN permit 10",
                 " match ip address prefix-list PL", "router bgp 65001", " no bgp default ipv4-unicast",
                 " bgp router-id 10.0.0.1", " bgp bestpath as-path multipath-relax", " neighbor PEERS peer-group",
                 " neighbor PEERS remote-as external", " neighbor PEERS bfd 3 300 300",
                 " neighbor Ethernet0 interface peer-group PEERS", " neighbor 10.1.1.1 remote-as 65009",
                 " address-family ipv4 unicast", "  neighbor PEERS activate", "  neighbor PEERS route-map IN in"):
        assert line in text, line
    # the group exists before its members name it, as FRR needs
    assert text.index(" neighbor PEERS peer-group") < text.index(" neighbor Ethernet0 interface peer-group PEERS")


@pytest.fixture(scope="module")
def render(tmp_path_factory):
    out = tmp_path_factory.mktemp("render")
    subprocess.run([sys.executable, "-m", "harness.cli", "render", "ai-cluster", "-o", str(out)], check=True,
                   capture_output=True)
    return out


@pytest.fixture(scope="module")
def unified(render, tmp_path_factory):
    out = tmp_path_factory.mktemp("unified") / "u"
    rewrite(render, out, BE)
    assert not (out / "configs" / LEAF / "frr.conf").exists()
    return out


def _edit(src: Path, tmp: Path, table: str, key: str, change) -> Path:
    d = tmp / "faulted"
    shutil.copytree(src, d)
    f = d / "configs" / LEAF / "config_db.json"
    db = json.loads(f.read_text())
    change(db[table][key])
    f.write_text(json.dumps(db))
    return d


def test_be_switches_given_as_config_db_alone_diff_as_their_frr_conf(unified):
    found = directory_differences("ai-cluster", unified)
    assert [str(d) for d in found.differences] == [] and found.refused == []
    assert found.note == ("" if unavailable() is None else found.note)


FAULTS = {  # (table, key, change) -> the behaviour that differs
    "one path": (("BGP_GLOBALS_AF", "default|ipv4_unicast", lambda r: r.update(max_ebgp_paths="1")), "multipath"),
    "iBGP to an eBGP peer": (("BGP_PEER_GROUP", "default|fabric", lambda r: r.update(peer_type="internal")),
                             "comes up"),
    "no inbound filter": (("BGP_PEER_GROUP_AF", "default|fabric|ipv4_unicast", lambda r: r.pop("prefix_list_in")),
                          "accepts"),
    "BFD 300 ms": (("BFD_PROFILE", "fabric", lambda r: r.update(receive_interval="300", transmit_interval="300")),
                   "BFD"),
}


@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_a_fault_in_the_tables_is_named(unified, tmp_path, fault):
    (table, key, change), behaviour = FAULTS[fault]
    found = directory_differences("ai-cluster", _edit(unified, tmp_path, table, key, change))
    assert {d.behaviour for d in found.differences} == {behaviour}, [str(d) for d in found.differences]
    assert {d.switch for d in found.differences} <= {LEAF, "be-s1", "be-s2"}
    assert all("config_db.json (its BGP tables)" in d.file for d in found.differences if d.switch == LEAF)


@pytest.mark.skipif(unavailable() is not None, reason="FRR cannot read here")
def test_what_frr_makes_of_the_tables_is_judged(unified, tmp_path):
    """A member row's own `asn` is written before its `peer-group` (frrcfgd's order): binding it to
    the group gives it the group's remote-as, silently (FRR 8.4), so no session differs. A member
    naming a group that does not exist is refused by bgpd: a warning naming the tables, and the
    session it leaves without a remote-as (nor the group's settings) is the difference."""
    own_asn = _edit(unified, tmp_path / "a", "BGP_NEIGHBOR", "default|Ethernet0", lambda r: r.update(asn="65535"))
    found = directory_differences("ai-cluster", own_asn)
    assert (found.differences, found.refused) == ([], [])
    no_group = _edit(unified, tmp_path / "b", "BGP_NEIGHBOR", "default|Ethernet0",
                     lambda r: r.update(peer_group_name="NOPE"))
    found = directory_differences("ai-cluster", no_group)
    assert (LEAF, "comes up") in [(d.switch, d.behaviour) for d in found.differences], found.differences
    assert {d.switch for d in found.differences} == {LEAF}
    assert len(found.refused) == 1 and found.refused[0].startswith(
        f"{no_group}/configs/{LEAF}/config_db.json (its BGP tables, as frrcfgd writes them): "
        "`neighbor Ethernet0 interface peer-group NOPE`: %"), found.refused
