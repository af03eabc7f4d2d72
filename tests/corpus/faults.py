"""Semantic faults, made once and written by every style in its own words.

An frr.conf fault changes the structure `model.parse` read from fablab's render (so SONiC's writer
puts it in a route map FROM_BGP_PEER_V4, NVUE's in `neighbor underlay bfd 3 1000 200`, FRR's docs'
on one neighbour's own lines); a config_db.json fault changes fablab's JSON before the style's
writer renames and reshapes it. Each fault names the behaviour a difference must report (words any
of which may name it) and the switch it is made on.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

from .model import Conf


@dataclass(frozen=True)
class Fault:
    name: str
    file: str  # frr.conf | config_db.json
    words: tuple[str, ...]  # a difference naming this fault carries one of these (lower case)
    apply: Callable  # Conf -> None (frr.conf) | dict -> None (config_db.json), in place
    needs: Callable = lambda x: True  # does this switch have what the fault changes?


def _first_filtered_group(c: Conf) -> str:
    return next(g for g in c.bgp.groups if "in" in c.filters(g))


def _first_member(c: Conf) -> str:
    g = next(iter(c.bgp.groups))
    return c.bgp.members(g)[0].name


def permit_all(c: Conf) -> None:
    """A route-map entry that permits with no match on a session's way in: every prefix gets in."""
    c.in_permit_all.add(_first_filtered_group(c))


def maximum_paths_1(c: Conf) -> None:
    af = c.bgp.af("ipv4 unicast")
    af.lines = [("maximum-paths 1" if x.startswith("maximum-paths ") else x) for x in af.lines]


def bfd_timers(c: Conf) -> None:
    for p, lines in c.bfd_profiles.items():
        lines[:] = [x for x in lines if not x.startswith("receive-interval")] + ["receive-interval 1000"]


def bfd_off_one(c: Conf) -> None:
    """BFD off on one neighbour: it leaves its group, keeping every other setting."""
    n = c.detach(_first_member(c))
    n.settings = [s for s in n.settings if not s.startswith("bfd")]


def remote_as(c: Conf) -> None:
    """One neighbour expects an ASN its peer does not run: the session never comes up."""
    n = c.detach(_first_member(c))
    n.settings = ["remote-as 65535" if s.startswith("remote-as ") else s for s in n.settings]


def bgp_in_vrf(c: Conf) -> None:
    """`router bgp N vrf X`: BGP in a VRF no port belongs to."""
    c.bgp.vrf = "BLUE"


def prefix_list_entry_dropped(c: Conf) -> None:
    pl = c.filters(_first_filtered_group(c))["in"]
    entries = c.prefix_lists[pl]
    del entries[-1 if len(entries) > 1 else 0]


def _has_filter(c: Conf) -> bool:
    return c.bgp is not None and any("in" in c.filters(g) for g in c.bgp.groups)


def _has_bfd(c: Conf) -> bool:
    return bool(c.bfd_profiles)


# config_db.json


def _lossless_port(db: dict) -> str:
    return sorted(db["PORT_QOS_MAP"])[0]


def mtu_changed(db: dict) -> None:
    port = sorted(db["PORT"])[0]
    db["PORT"][port]["mtu"] = "4000"


def dscp_to_tc(db: dict) -> None:
    """The RoCE DSCP lands in another traffic class (off the lossless one)."""
    m = next(iter(db["DSCP_TO_TC_MAP"].values()))
    dscp = next(k for k, v in m.items() if v != "0")
    m[dscp] = "0"


def pfc_enable(db: dict) -> None:
    db["PORT_QOS_MAP"][_lossless_port(db)]["pfc_enable"] = "4"


def acl_action(db: dict) -> None:
    """A FORWARD rule of the edge ACL becomes DROP."""
    key = next(k for k, v in sorted(db["ACL_RULE"].items(), key=lambda kv: -int(kv[1]["PRIORITY"]))
               if v.get("PACKET_ACTION") == "FORWARD" and not k.upper().endswith("DEFAULT"))
    db["ACL_RULE"][key]["PACKET_ACTION"] = "DROP"


FAULTS = [
    Fault("route-map permits with no match", "frr.conf", ("accept", "filter", "prefix", "route-map", "route map"),
          permit_all, _has_filter),
    Fault("maximum-paths 1", "frr.conf", ("multipath", "maximum-paths"), maximum_paths_1),
    Fault("BFD timers changed", "frr.conf", ("bfd",), bfd_timers, _has_bfd),
    Fault("BFD off on one neighbour", "frr.conf", ("bfd",), bfd_off_one, _has_bfd),
    Fault("remote-as changed", "frr.conf", ("remote-as", "come", "comes up", "session", "asn"), remote_as),
    Fault("router bgp N vrf X", "frr.conf", ("vrf", "come", "comes up", "session"), bgp_in_vrf),
    Fault("prefix-list entry dropped", "frr.conf", ("accept", "advertis", "prefix", "filter"),
          prefix_list_entry_dropped, _has_filter),
    Fault("MTU changed", "config_db.json", ("mtu",), mtu_changed, lambda db: bool(db.get("PORT"))),
    Fault("DSCP -> TC changed", "config_db.json", ("dscp", "tc", "traffic class", "qos"), dscp_to_tc,
          lambda db: bool(db.get("DSCP_TO_TC_MAP"))),
    Fault("pfc_enable changed", "config_db.json", ("pfc",), pfc_enable, lambda db: bool(db.get("PORT_QOS_MAP"))),
    Fault("ACL action changed", "config_db.json", ("acl",), acl_action, lambda db: bool(db.get("ACL_RULE"))),
]


def names_fault(differences, switch: str, fault: Fault) -> bool:
    """Does one of the differences name the fault on this switch? Works with either shape of
    Difference (harness.core.meaning.difference: subject/behaviour; harness.render.compare: where/area)."""
    for d in differences:
        if getattr(d, "switch", None) != switch:
            continue
        text = " ".join(str(getattr(d, a, "")) for a in ("subject", "behaviour", "area", "where",
                                                             "expected", "found", "fablab", "theirs")).lower()
        if any(re.search(r"\b" + re.escape(w), text) for w in fault.words):
            return True
    return False
