"""fablab's render re-expressed in other people's styles: same meaning, different words.

    .venv/bin/python -m tests.corpus.styles STYLE SRC_RENDER_DIR DST_DIR
    (STYLE: sonic | frrdocs | nvue | running | all; SRC_RENDER_DIR as `fablab render` writes it)

then `fablab diff TOPOLOGY DST_DIR` and `fablab up TOPOLOGY --configs DST_DIR`.

Each style is a pair of writers: frr.conf from the structure in `model` (fablab's frr.conf read) and
config_db.json from fablab's JSON. A writer changes names, wording, order, defaults and layout, never
what the config does; where a fablab statement has no counterpart in a style it is kept as written.
The sources each style follows are in its docstring: they were read, not copied.
"""
from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
from pathlib import Path

from .model import Conf, _permit_all_maps, parse

# ---------------------------------------------------------------------------------------------------
# Shared helpers


def peer_asns(configs: Path) -> dict[str, str]:
    """hostname -> the ASN its frr.conf runs BGP with, for every switch (and routed host) in a render."""
    out: dict[str, str] = {}
    for f in sorted(configs.glob("*/frr.conf")):
        text = f.read_text()
        host = re.search(r"^hostname (\S+)$", text, re.M)
        asn = re.search(r"^router bgp (\d+)", text, re.M)
        if host and asn:
            out[host.group(1)] = asn.group(1)
    return out


def _remote_asn(c: Conf, name: str, asns: dict[str, str]) -> str | None:
    """The ASN the neighbour on port/address NAME runs, from the port's description (fablab writes the
    peer as `switch:port`) or a neighbour description `... (AS n)`; None when the render does not say."""
    n = next(x for x in c.bgp.neighbors if x.name == name)
    for s in n.settings:
        m = re.search(r"\(AS (\d+)\)", s)
        if s.startswith("description ") and m:
            return m.group(1)
        if s.startswith("description "):
            peer = s.split()[1].split(":")[0]
            if peer in asns:
                return asns[peer]
    for ifname, lines in c.interfaces:
        if ifname == name:
            for x in lines:
                if x.startswith("description "):
                    return asns.get(x.split()[1].split(":")[0])
    return None


def _bfd_values(c: Conf, profile: str) -> tuple[int, int, int]:
    """(detect-multiplier, receive-interval, transmit-interval) of a profile, bfdd's defaults where absent."""
    vals = {"detect-multiplier": 3, "receive-interval": 300, "transmit-interval": 300}
    for line in c.bfd_profiles.get(profile, []):
        k, _, v = line.partition(" ")
        if k in vals:
            vals[k] = int(v)
    return vals["detect-multiplier"], vals["receive-interval"], vals["transmit-interval"]


def _rename(line: str, names: dict[str, dict[str, str]]) -> str:
    """Rename what a statement refers to, by kind: {"peer-group": {...}, "prefix-list": {...},
    "route-map": {...}, "bfd profile": {...}}; a group and a BFD profile may share a name."""
    def sub(m: re.Match) -> str:
        return f"{m.group(1)} {names.get(m.group(1), {}).get(m.group(2), m.group(2))}"
    return re.sub(r"\b(bfd profile|prefix-list|route-map|peer-group) (\S+)", sub, line)


# ---------------------------------------------------------------------------------------------------
# (a) SONiC


def sonic_frr(c: Conf, asns: dict[str, str]) -> str:
    """SONiC's bgpcfgd style.

    Read (sonic-net/sonic-buildimage): dockers/docker-fpm-frr/frr/frr.conf.j2 (banner, include order:
    zebra interfaces, staticd, bgpd.main), frr/bgpd/bgpd.main.conf.j2 (`bgp log-neighbor-changes`,
    `no bgp default ipv4-unicast`, `no bgp ebgp-requires-policy`, `address-family ipv4` blocks for
    redistribute and `maximum-paths 64`, two-space indentation, `ip prefix-list NAME seq {{ loop.index
    * 5 }}`, route map V4_CONNECTED_ROUTES), frr/bgpd/templates/general/peer-group.conf.j2 (peer groups
    PEER_V4/PEER_V6, `neighbor PEER_V4 soft-reconfiguration inbound` (kept: it stores what the peer sent
    for a soft reset, no route accepted or sent changes), `route-map FROM_BGP_PEER_V4 in` /
    `TO_BGP_PEER_V4 out`, no activate on the group), .../general/policies.conf.j2 (the route maps;
    its `route-map FROM_BGP_PEER_V4 permit 100` with no match lets every prefix in, so here the maps end
    without one: FRR's implicit deny keeps the prefix list's meaning), .../general/instance.conf.j2 and
    src/sonic-bgpcfgd/tests/data/general/instance.conf/result_bfd_profile.conf, result_unnumbered_v4.conf
    (per neighbour: `neighbor Ethernet4 interface peer-group PEER_UNNUMBERED` then `remote-as <ASN>`,
    `description`, activate inside `address-family ipv4`; `neighbor X bfd profile P`), zebra's
    RM_SET_SRC (`ip protocol bgp route-map RM_SET_SRC`). No `exit` lines: `!` ends a block, as in every
    template; FRR walks up to the parent node for a command the current one lacks (lib/command.c).
    `frr defaults traditional` with the datacenter profile written out, from FRR 8.4 bgpd/bgp_vty.c
    FRR_CFG_DEFAULT_*: log-neighbor-changes, deterministic-med, show-hostname, show-nexthop-hostname,
    ebgp-requires-policy off, keepalive/hold 3/9 (`timers bgp 3 9`), connect-retry 10 (every group sets
    `timers connect` itself). BFD is switched on by `neighbor X bfd profile P` alone (bgp_bfd.c:
    the profile command enables BFD). `ge 32 le 32` is written `ge 32`; prefix lists are renamed
    (PL_*_V4) and renumbered 5, 10, 15, ...
    """
    assert c.bgp is not None
    b = c.bgp
    groups = list(b.groups)
    gname = {g: ("PEER_V4" if i == 0 else f"PEER_V4_{re.sub(r'[^A-Z0-9]', '_', g.upper())}")
             for i, g in enumerate(groups)}
    plname = {p: "PL_" + re.sub(r"[^A-Z0-9]", "_", p.upper()) + "_V4" for p in c.prefix_lists}
    rmname = {"CONNECTED": "V4_CONNECTED_ROUTES", "SOURCE": "RM_SET_SRC"}
    rmname.update({rm.name: "RM_" + re.sub(r"[^A-Z0-9]", "_", rm.name.upper()) + "_V4"
                   for rm in c.route_maps if rm.name not in rmname})
    profname = {p: ("fast-failover" if i == 0 else f"fast-failover-{i}") for i, p in enumerate(c.bfd_profiles)}
    names = {"peer-group": gname, "prefix-list": plname, "route-map": rmname, "bfd profile": profname}
    # inbound/outbound filters: one route map per (direction, prefix list), named after the first group using it
    maps: dict[tuple[str, str], str] = {}
    for who in groups + [n.name for n in b.neighbors if n.group is None]:
        for d, pl in c.filters(who).items():
            if (d, pl) not in maps:
                base = gname.get(who, "PEER_V4_" + re.sub(r"[^A-Za-z0-9]", "_", who).upper())
                maps[(d, pl)] = f"{'FROM' if d == 'in' else 'TO'}_BGP_{base}"
    permit_all = {maps[("in", c.filters(w)["in"])] for w in c.in_permit_all if "in" in c.filters(w)}

    out = ["!", "! =========== Managed by sonic-cfggen DO NOT edit manually! ====================",
           "! generated by templates/frr.conf.j2 with config DB data", "! file: frr.conf", "!"]
    for h in c.header:
        if h.startswith("frr defaults"):
            out.append("frr defaults traditional")
        elif h.startswith("hostname "):
            out += [h, "log syslog informational", "log facility local4"]
        else:
            out.append(h)
    out += ["!", "! template: zebra/zebra.interfaces.conf.j2", "!"]
    for name, lines in c.interfaces:
        out += [f"interface {name}"] + [f"  {x}" for x in lines] + ["!"]
    out += ["! end of template: zebra/zebra.interfaces.conf.j2", "!"]
    for name, entries in c.prefix_lists.items():
        for i, e in enumerate(entries, 1):
            out.append(f"ip prefix-list {plname[name]} seq {i * 5} {e.action} {e.match(ge32_short=True)}")
        out.append("!")
    for (d, pl), rm in maps.items():
        out += [f"route-map {rm} permit 10", f"  match ip address prefix-list {plname[pl]}", "!"]
        if rm in permit_all:
            out += [f"route-map {rm} permit 100", "!"]
    for rm in c.route_maps:
        out += [f"route-map {rmname[rm.name]} {rm.action} {rm.seq}"] + [f"  {_rename(x, names)}" for x in rm.lines]
        out.append("!")
    out += [_rename(z, names) for z in c.zebra] + (["!"] if c.zebra else [])
    if c.bfd_profiles:
        out.append("bfd")
        for p, lines in c.bfd_profiles.items():
            out += [f"  profile {profname[p]}"] + [f"    {x}" for x in lines]
        out.append("!")
    out += ["! template: bgpd/bgpd.main.conf.j2", "!"]
    out.append(f"router bgp {b.asn}" + (f" vrf {b.vrf}" if b.vrf else ""))
    out += ["!", "  bgp log-neighbor-changes", "  bgp deterministic-med", "  bgp default show-hostname",
            "  bgp default show-nexthop-hostname", "  no bgp ebgp-requires-policy"]
    out += [f"  {g}" for g in b.globals if g.startswith("no bgp default")]
    out += ["  timers bgp 3 9", "!"]
    out += [f"  {g}" for g in b.globals if g.startswith("bgp bestpath")] + ["!"]
    out += [f"  {g}" for g in b.globals if not g.startswith(("no bgp default", "bgp bestpath"))] + ["!"]
    v4 = b.af("ipv4 unicast")

    def session(who: str, settings: list[str]) -> list[str]:
        lines = []
        for s in settings:
            if s == "bfd" and any(x.startswith("bfd profile ") for x in settings):
                continue  # the profile alone switches BFD on
            lines.append(f"  neighbor {gname.get(who, who)} {_rename(s, names)}")
        return lines

    def af_lines(who: str) -> list[str]:
        lines = []
        for s in (v4.peers.get(who, []) if v4 else []):
            m = re.match(r"^prefix-list (\S+) (in|out)$", s)
            if m:
                lines.append(f"    neighbor {gname.get(who, who)} route-map {maps[(m.group(2), m.group(1))]} {m.group(2)}")
            elif s == "activate" and who in b.groups:
                continue  # SONiC activates each neighbour, never the group
            else:
                lines.append(f"    neighbor {gname.get(who, who)} {_rename(s, names)}")
        return lines

    out += ["! template: bgpd/templates/general/peer-group.conf.j2", "!"]
    for g, settings in b.groups.items():
        own = [s for s in settings if not s.startswith("remote-as ")]
        out += [f"  neighbor {gname[g]} peer-group"] + session(g, own)
        out += ["  address-family ipv4", f"    neighbor {gname[g]} soft-reconfiguration inbound"]
        out += af_lines(g) + ["  exit-address-family", "!"]
    out += ["! end of template: bgpd/templates/general/peer-group.conf.j2", "!"]
    for n in b.neighbors:
        out += ["! template: bgpd/templates/general/instance.conf.j2", "!"]
        if n.group is not None:
            remote = next(s for s in b.groups[n.group] if s.startswith("remote-as "))
            asn = _remote_asn(c, n.name, asns) if remote == "remote-as external" else None
            if n.interface:  # result_unnumbered_v4.conf: the group first, then the peer's ASN
                out.append(f"  neighbor {n.name} interface peer-group {gname[n.group]}")
            out.append(f"  neighbor {n.name} {f'remote-as {asn}' if asn else remote}")
            out += session(n.name, n.settings)
            activated = v4 is not None and "activate" in v4.peers.get(n.group, [])
        else:
            remote = next(s for s in n.settings if s.startswith("remote-as "))
            asn = _remote_asn(c, n.name, asns) if remote == "remote-as external" else None
            rest = [s for s in n.settings if s != remote]
            out.append(f"  neighbor {n.name} {'interface ' if n.interface else ''}"
                       f"{f'remote-as {asn}' if asn else remote}")
            out += session(n.name, rest)
            activated = False
        out.append("  address-family ipv4")
        if n.group is not None and not n.interface:  # result_bfd_profile.conf: bound inside the family
            out.append(f"    neighbor {n.name} peer-group {gname[n.group]}")
        if activated:
            out.append(f"    neighbor {n.name} activate")
        out += af_lines(n.name) + ["  exit-address-family", "!",
                                    "! end of template: bgpd/templates/general/instance.conf.j2", "!"]
    if v4:
        out.append("  address-family ipv4")
        out += [f"    {_rename(x, names)}" for x in v4.lines]
        out += ["  exit-address-family", "!"]
    for af in b.afs:
        if af.name == "ipv4 unicast":
            continue
        out.append(f"  address-family {af.name}")
        for who, settings in af.peers.items():
            out += [f"    neighbor {gname.get(who, who)} {_rename(s, names)}" for s in settings]
        out += [f"    {x}" for x in af.lines]
        for vni, lines in af.vnis:
            out += [f"    vni {vni}"] + [f"      {x}" for x in lines]  # no exit-vni: `!`-style, as above
        out += ["  exit-address-family", "!"]
    out += ["! end of template: bgpd/bgpd.main.conf.j2", "!"] + c.trailer + ["!"]
    return "\n".join(out) + "\n"


# SONiC's names for fablab's QoS and buffer objects (sonic-buildimage
# src/sonic-config-engine/tests/sample_output/py3/qos-*.json and buffer-*.json; sonic-mgmt's
# ansible/vars and files/build qos.json.j2 / buffers_config.j2): maps AZURE, WRED AZURE_LOSSLESS,
# schedulers scheduler.N, lossless PG profiles pg_lossless_<speed>_<cable>_profile (buffermgrd's naming
# in the traditional buffer model), ACL rules RULE_n and DEFAULT_RULE (acl-loader), table DATAACL,
# VXLAN vtep1/nvo1 (SONiC's EVPN VXLAN HLD examples).
_SONIC_QOS_MAPS = ("DSCP_TO_TC_MAP", "TC_TO_QUEUE_MAP", "TC_TO_PRIORITY_GROUP_MAP", "MAP_PFC_PRIORITY_TO_QUEUE",
                   "DOT1P_TO_TC_MAP", "PFC_PRIORITY_TO_PRIORITY_GROUP_MAP")
_QOS_REF = {"dscp_to_tc_map", "tc_to_queue_map", "tc_to_pg_map", "pfc_to_queue_map", "dot1p_to_tc_map",
            "pfc_to_pg_map"}


def sonic_config_db(db: dict) -> dict:
    """config_db.json as SONiC's own samples write it.

    Read: sonic-buildimage src/sonic-config-engine/tests/sample_output/py3/qos-arista7800r3-48cq2-lc.json
    (maps AZURE, WRED AZURE_LOSSLESS, scheduler.0/1, PORT_QOS_MAP fields), buffer-lt2-p32o64.json
    (BUFFER_POOL/PROFILE names, CABLE_LENGTH|AZURE); src/sonic-yang-models/yang-models (202411, in
    ../shared/reference/sonic-yang): sonic-acl.yang (stage pattern ingress|egress|INGRESS|EGRESS, default
    INGRESS), sonic-scheduler.yang (meter_type default bytes), sonic-interface.yang and
    sonic-loopback-interface.yang (nat_zone "0", ipv6_use_link_local_only "disable"), sonic-port.yang
    (role "Ext", dhcp_rate_limit 300), sonic-device_metadata.yang (default_bgp_status up,
    default_pfcwd_status disable, synchronous_mode enable, timezone UTC); swss portmgrd's default MTU 9100
    (a PORT without `mtu` runs 9100), so an mtu of 9100 is left out. Renamed: maps -> AZURE, WRED ->
    AZURE_LOSSLESS, the strict scheduler -> scheduler.2, ingress lossless profile ->
    pg_lossless_<speed>_<cable>_profile per port, ACL table -> DATAACL, rules -> RULE_n by priority and
    DEFAULT_RULE, VXLAN tunnel vtep1, NVO nvo1. Every reference follows its object.
    """
    db = json.loads(json.dumps(db))
    # QoS maps: every map -> AZURE (fablab renders one of each kind)
    mapname: dict[tuple[str, str], str] = {}
    for t in _SONIC_QOS_MAPS:
        if t in db:
            new = {}
            for i, (k, v) in enumerate(db[t].items()):
                nk = "AZURE" if i == 0 else f"AZURE_{i}"
                mapname[(t, k)] = nk
                new[nk] = v
            db[t] = new
    ref_table = {"dscp_to_tc_map": "DSCP_TO_TC_MAP", "tc_to_queue_map": "TC_TO_QUEUE_MAP",
                 "tc_to_pg_map": "TC_TO_PRIORITY_GROUP_MAP", "pfc_to_queue_map": "MAP_PFC_PRIORITY_TO_QUEUE",
                 "dot1p_to_tc_map": "DOT1P_TO_TC_MAP", "pfc_to_pg_map": "PFC_PRIORITY_TO_PRIORITY_GROUP_MAP"}
    for port, fields in db.get("PORT_QOS_MAP", {}).items():
        for f in list(fields):
            if f in _QOS_REF:
                fields[f] = mapname.get((ref_table[f], fields[f]), fields[f])
    # WRED and schedulers
    wred = {k: ("AZURE_LOSSLESS" if i == 0 else f"AZURE_LOSSLESS_{i}") for i, k in enumerate(db.get("WRED_PROFILE", {}))}
    if wred:
        db["WRED_PROFILE"] = {wred[k]: v for k, v in db["WRED_PROFILE"].items()}
    sched: dict[str, str] = {}
    used = {k for k in db.get("SCHEDULER", {}) if re.fullmatch(r"scheduler\.\d+", k)}
    nxt = 0
    for k in db.get("SCHEDULER", {}):
        if re.fullmatch(r"scheduler\.\d+", k):
            sched[k] = k
            continue
        while f"scheduler.{nxt}" in used:
            nxt += 1
        sched[k] = f"scheduler.{nxt}"
        used.add(sched[k])
    if sched:
        db["SCHEDULER"] = {sched[k]: {**v, **({"meter_type": "bytes"} if "meter_type" not in v else {})}
                           for k, v in db["SCHEDULER"].items()}
    for q in db.get("QUEUE", {}).values():
        if "scheduler" in q:
            q["scheduler"] = sched.get(q["scheduler"], q["scheduler"])
        if "wred_profile" in q:
            q["wred_profile"] = wred.get(q["wred_profile"], q["wred_profile"])
    # lossless PG profiles per speed and cable length
    cable = next(iter(db.get("CABLE_LENGTH", {}).values()), {})
    if "CABLE_LENGTH" in db:
        db["CABLE_LENGTH"] = {"AZURE": cable}
    profiles = db.get("BUFFER_PROFILE", {})
    pg_profiles = {v["profile"] for v in db.get("BUFFER_PG", {}).values()}
    new_profiles = {k: v for k, v in profiles.items() if k not in pg_profiles}
    for key, v in db.get("BUFFER_PG", {}).items():
        port = key.split("|")[0]
        speed = db.get("PORT", {}).get(port, {}).get("speed", "0")
        name = f"pg_lossless_{speed}_{cable.get(port, '0m')}_profile" if "xoff" in profiles[v["profile"]] \
            else v["profile"].replace("ingress_lossless", "ingress_lossy")
        new_profiles[name] = profiles[v["profile"]]
        v["profile"] = name
    if profiles:
        db["BUFFER_PROFILE"] = new_profiles
    # MTU: SONiC's default left out
    for port, fields in db.get("PORT", {}).items():
        if fields.get("mtu") == "9100":
            del fields["mtu"]
        fields.setdefault("role", "Ext")
        fields.setdefault("dhcp_rate_limit", "300")
    for key, fields in db.get("INTERFACE", {}).items():
        if "|" not in key:
            fields.setdefault("ipv6_use_link_local_only", "disable")
            fields.setdefault("nat_zone", "0")
    for key, fields in db.get("LOOPBACK_INTERFACE", {}).items():
        if "|" not in key:
            fields.setdefault("nat_zone", "0")
    md = db.get("DEVICE_METADATA", {}).get("localhost")
    if md is not None:
        for k, v in {"default_bgp_status": "up", "default_pfcwd_status": "disable",
                     "synchronous_mode": "enable", "timezone": "UTC"}.items():
            md.setdefault(k, v)
    # ACLs: DATAACL, RULE_n in priority order, stage in capitals
    tables = {k: ("DATAACL" if i == 0 else f"DATAACL_{i}") for i, k in enumerate(db.get("ACL_TABLE", {}))}
    if tables:
        db["ACL_TABLE"] = {tables[k]: {**v, "stage": v.get("stage", "ingress").upper()}
                           for k, v in db["ACL_TABLE"].items()}
        rules: dict[str, dict] = {}
        for t in tables:
            mine = [(k, v) for k, v in db.get("ACL_RULE", {}).items() if k.split("|")[0] == t]
            mine.sort(key=lambda kv: -int(kv[1].get("PRIORITY", "0")))
            n = 0
            for k, v in mine:
                rule = k.split("|", 1)[1]
                if rule.upper().startswith("DEFAULT"):
                    rules[f"{tables[t]}|DEFAULT_RULE"] = v
                else:
                    n += 1
                    rules[f"{tables[t]}|RULE_{n}"] = v
        db["ACL_RULE"] = rules
    # VXLAN
    if "VXLAN_TUNNEL" in db:
        vt = {k: ("vtep1" if i == 0 else f"vtep{i + 1}") for i, k in enumerate(db["VXLAN_TUNNEL"])}
        db["VXLAN_TUNNEL"] = {vt[k]: v for k, v in db["VXLAN_TUNNEL"].items()}
        if "VXLAN_EVPN_NVO" in db:
            db["VXLAN_EVPN_NVO"] = {("nvo1" if i == 0 else f"nvo{i + 1}"): {**v, "source_vtep": vt.get(v.get("source_vtep"), v.get("source_vtep"))}
                                    for i, v in enumerate(db["VXLAN_EVPN_NVO"].values())}
        if "VXLAN_TUNNEL_MAP" in db:
            db["VXLAN_TUNNEL_MAP"] = {f"{vt.get(k.split('|')[0], k.split('|')[0])}|map_{v['vni']}_{v['vlan']}": v
                                      for k, v in db["VXLAN_TUNNEL_MAP"].items()}
    return db


# ---------------------------------------------------------------------------------------------------
# (b) FRR's documentation


def frrdocs_frr(c: Conf, asns: dict[str, str]) -> str:
    """FRR's documentation style.

    Read (FRRouting/frr): doc/user/bgp.rst (examples one space deep, `!` between blocks, no `exit`
    lines; BGP unnumbered written `neighbor eth0 interface remote-as external`; settings given per
    neighbour; `address-family ipv4 unicast` ... `exit-address-family`; `ip prefix-list NAME permit
    PREFIX` without `seq`, which FRR numbers 5, 10, ... in file order: lib/plist.c), doc/user/bfd.rst
    (`bfd` / ` profile NAME` / `  receive-interval`, `neighbor X bfd profile NAME`), doc/user/basic.rst
    (`frr defaults datacenter`). Peer groups are unrolled into every member's own settings.
    """
    assert c.bgp is not None
    c = c.copy()
    for n in list(c.bgp.neighbors):
        c.detach(n.name)
    c.bgp.groups = {}
    for af in c.bgp.afs:
        af.peers = {k: v for k, v in af.peers.items() if any(n.name == k for n in c.bgp.neighbors)}
    accept = _permit_all_maps(c, lambda who: f"{who}-IN")
    out = ["! -*- bgp -*-", "!", f"! {c.hostname}: BGP unnumbered leaf/spine, FRR's documentation style", "!"]
    out += c.header + ["!"]
    for name, lines in c.interfaces:
        out += [f"interface {name}"] + [f" {x}" for x in lines] + ["!"]
    b = c.bgp
    out.append(f"router bgp {b.asn}" + (f" vrf {b.vrf}" if b.vrf else ""))
    out += [f" {g}" for g in b.globals]
    for n in b.neighbors:
        first, *rest = n.settings
        out.append(f" neighbor {n.name} {'interface ' if n.interface else ''}{first}")
        out += [f" neighbor {n.name} {s}" for s in rest]
    for af in b.afs:
        out += [" !", f" address-family {af.name}"]
        out += [f"  {x}" for x in af.lines]
        for who, settings in af.peers.items():
            for s in settings:
                if who in accept and s.startswith("prefix-list ") and s.endswith(" in"):
                    s = f"route-map {who}-IN in"
                out.append(f"  neighbor {who} {s}")
        for vni, lines in af.vnis:
            out += [f"  vni {vni}"] + [f"   {x}" for x in lines] + ["  exit-vni"]
        out.append(" exit-address-family")
    out.append("!")
    for name, entries in c.prefix_lists.items():
        out += [f"ip prefix-list {name} {e.action} {e.match()}" for e in entries] + ["!"]
    for rm in c.route_maps + [m for ms in accept.values() for m in ms]:
        out += [f"route-map {rm.name} {rm.action} {rm.seq}"] + [f" {x}" for x in rm.lines] + ["!"]
    out += c.zebra + (["!"] if c.zebra else [])
    if c.bfd_profiles:
        out.append("bfd")
        for p, lines in c.bfd_profiles.items():
            out += [f" profile {p}"] + [f"  {x}" for x in lines] + [" !"]
        out.append("!")
    out += c.trailer + ["!"]
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------------------------------------------
# (c) Cumulus / NVUE


def nvue_frr(c: Conf, asns: dict[str, str]) -> str:
    """NVIDIA Cumulus Linux, frr.conf as NVUE renders it.

    Read (CumulusNetworks/docs): content/cumulus-linux-55/Layer-3/Border-Gateway-Protocol-BGP/
    Configuration-Example.md (the /etc/frr/frr.conf tab: `vrf default` / `exit-vrf`, `router bgp 65101 vrf
    default`, nothing indented, `timers bgp 3 9`, `bgp deterministic-med`, `! Neighbors`, `neighbor swp51
    interface remote-as external`, `neighbor swp51 advertisement-interval 0`, `neighbor swp51 capability
    extended-nexthop`, `! Address families`, `distance bgp 20 200 200`, `exit-address-family`, `! end of
    router bgp N vrf default`), .../Optional-BGP-Configuration.md (peer groups: `neighbor SPINE peer-group`,
    `neighbor swp51 interface peer-group SPINE`; NVUE allows no hyphen in a group name, the docs' group is
    `underlay`), and NVUE's BFD rendering `neighbor X bfd <detect-mult> <min-rx> <min-tx>` (FRR 8.4
    bgpd/bgp_bfd.c keeps that form) instead of a bfdd profile. Each added statement is FRR's default
    for these sessions: MRAI 0, extended next hop on an unnumbered (IPv6 link-local) session, distances
    20/200/200 (bgpd.h ZEBRA_EBGP_DISTANCE_DEFAULT, ..._IBGP_..., ..._LOCAL_...), the datacenter
    keepalive/hold 3/9 and deterministic-med.
    """
    assert c.bgp is not None
    b = c.bgp
    gname = {g: ("underlay" if i == 0 else re.sub(r"[^A-Za-z0-9_]", "_", g)) for i, g in enumerate(b.groups)}
    if "hosts" in gname:
        gname["hosts"] = "servers"
    names = dict(gname)
    accept = _permit_all_maps(c, lambda who: f"{names.get(who, who)}_permit_in")
    vrf = b.vrf or "default"
    out = list(c.header)
    out += ["log syslog informational"] + [t for t in c.trailer] + [""]
    out += ["vrf default", "exit-vrf"]
    for name, lines in c.interfaces:
        out += [f"interface {name}"] + [f" {x}" for x in lines]
    for name, entries in c.prefix_lists.items():
        out += [f"ip prefix-list {name} seq {e.seq} {e.action} {e.match()}" for e in entries]
    for rm in c.route_maps + [m for ms in accept.values() for m in ms]:
        out += [f"route-map {rm.name} {rm.action} {rm.seq}"] + list(rm.lines)
    out += c.zebra
    out.append(f"router bgp {b.asn} vrf {vrf}")
    out += [g for g in b.globals if g.startswith("bgp router-id")]
    out += ["timers bgp 3 9", "bgp deterministic-med"]
    out += [g for g in b.globals if not g.startswith("bgp router-id")]
    out.append("! Neighbors")

    def neighbour_settings(who: str, settings: list[str], interface: bool) -> list[str]:
        lines = []
        prof = next((s.split()[-1] for s in settings if s.startswith("bfd profile ")), None)
        for s in settings:
            if s == "bfd" and prof:
                continue
            if s.startswith("bfd profile "):
                mult, rx, tx = _bfd_values(c, prof)
                s = f"bfd {mult} {rx} {tx}"
            lines.append(f"neighbor {names.get(who, who)} {s}")
        lines.append(f"neighbor {names.get(who, who)} advertisement-interval 0")
        if interface:
            lines.append(f"neighbor {names.get(who, who)} capability extended-nexthop")
        return lines

    for g, settings in b.groups.items():
        out.append(f"neighbor {gname[g]} peer-group")
        out += neighbour_settings(g, settings, False)
    for n in b.neighbors:
        if n.group:
            out.append(f"neighbor {n.name} interface peer-group {gname[n.group]}" if n.interface
                       else f"neighbor {n.name} peer-group {gname[n.group]}")
            out += [f"neighbor {n.name} {s}" for s in n.settings]
            if n.interface:
                out.append(f"neighbor {n.name} capability extended-nexthop")
        else:
            first, *rest = n.settings
            out.append(f"neighbor {n.name} {'interface ' if n.interface else ''}{first}")
            out += neighbour_settings(n.name, rest, n.interface)
    out.append("! Address families")
    for af in b.afs:
        out.append(f"address-family {af.name}")
        out += [x for x in af.lines]
        if af.name == "ipv4 unicast":
            out.append("distance bgp 20 200 200")
        for who, settings in af.peers.items():
            for s in settings:
                if who in accept and s.startswith("prefix-list ") and s.endswith(" in"):
                    s = f"route-map {names.get(who, who)}_permit_in in"
                out.append(f"neighbor {names.get(who, who)} {s}")
        for vni, lines in af.vnis:
            out += [f"vni {vni}"] + list(lines) + ["exit-vni"]
        out.append("exit-address-family")
    out.append(f"! end of router bgp {b.asn} vrf {vrf}")
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------------------------------------------
# (d) FRR's own running-config


def running_frr(c: Conf, asns: dict[str, str]) -> str:
    """What FRR 8.4 itself writes (`show running-config`, `write memory`) for fablab's config.

    Read (FRRouting/frr, stable/8.4): vtysh/vtysh_config.c (one merged file: the header, then interfaces,
    router blocks, then prefix lists, route maps, `bfd`, `line vty`; every block closed by `exit` since
    8.2, `!` between), bgpd/bgp_vty.c bgp_config_write() (globals, peer groups, then each neighbour;
    address families with redistribute and maximum-paths before the neighbours' lines — maximum-paths is
    written because Debian builds FRR with --enable-multipath=256, 64 is no default), bfdd/bfdd_cli.c
    (a profile's detect-multiplier 3, receive-interval 300 and transmit-interval 300 are bfdd's
    defaults and are not written), lib/plist.c (seq written). Comments are gone: FRR keeps none.
    The `frr version` line carries the running build's version.
    """
    assert c.bgp is not None
    b = c.bgp
    accept = _permit_all_maps(c)
    out = []
    for h in c.header:
        out.append("frr version 8.4.4" if h.startswith("frr version") else h)
    out.append("!")
    for name, lines in c.interfaces:
        out += [f"interface {name}"] + [f" {x}" for x in lines] + ["exit", "!"]
    out.append(f"router bgp {b.asn}" + (f" vrf {b.vrf}" if b.vrf else ""))
    out += [f" {g}" for g in b.globals]
    for g, settings in b.groups.items():
        out.append(f" neighbor {g} peer-group")
        order = sorted(settings, key=lambda s: (0 if s.startswith("remote-as") else
                                                  1 if s.startswith("bfd") else 2))
        out += [f" neighbor {g} {s}" for s in order]
    for n in b.neighbors:
        if n.group:
            out.append(f" neighbor {n.name} interface peer-group {n.group}" if n.interface
                       else f" neighbor {n.name} peer-group {n.group}")
            out += [f" neighbor {n.name} {s}" for s in n.settings]
        else:
            first, *rest = n.settings
            out.append(f" neighbor {n.name} {'interface ' if n.interface else ''}{first}")
            out += [f" neighbor {n.name} {s}" for s in sorted(rest, key=lambda s: 0 if s.startswith("bfd") else 1)]
    for af in b.afs:
        out += [" !", f" address-family {af.name}"]
        out += [f"  {x}" for x in af.lines if x.startswith("redistribute")]
        out += [f"  {x}" for x in af.lines if x.startswith("maximum-paths")]
        for who, settings in af.peers.items():
            for s in settings:
                if who in accept and s.startswith("prefix-list ") and s.endswith(" in"):
                    s = f"route-map ACCEPT_{who} in"
                out.append(f"  neighbor {who} {s}")
        out += [f"  {x}" for x in af.lines if not x.startswith(("redistribute", "maximum-paths"))]
        for vni, lines in af.vnis:
            out += [f"  vni {vni}"] + [f"   {x}" for x in lines] + ["  exit-vni"]
        out.append(" exit-address-family")
    out += ["exit", "!"]
    for name, entries in c.prefix_lists.items():
        out += [f"ip prefix-list {name} seq {e.seq} {e.action} {e.match()}" for e in entries]
    out.append("!")
    for rm in c.route_maps + [m for ms in accept.values() for m in ms]:
        out += [f"route-map {rm.name} {rm.action} {rm.seq}"] + [f" {x}" for x in rm.lines] + ["exit", "!"]
    out += c.zebra + (["!"] if c.zebra else [])
    if c.bfd_profiles:
        out.append("bfd")
        defaults = {"detect-multiplier 3", "receive-interval 300", "transmit-interval 300"}
        for p, lines in c.bfd_profiles.items():
            out += [f" profile {p}"] + [f"  {x}" for x in lines if x not in defaults] + [" exit", " !"]
        out += ["exit", "!"]
    out += c.trailer + ["!", "end"]
    return "\n".join(out) + "\n"


def running_config_db(db: dict) -> dict:
    """`show runningconfiguration all` / `config save` order: tables and keys sorted (sonic-cfggen
    --print-data sorts keys); contents as the switch holds them."""
    return json.loads(json.dumps(db, sort_keys=True))


def sonic_samples_frr(c: Conf, asns: dict[str, str]) -> str:
    """SONiC's style with zebra's interface statements as SONiC's sample configs and FRR's own
    documentation write them: `link-detect` on every port (FRR's default: lib/if.c, a port's link
    state is followed unless `no link-detect`), and the router-advertisement interval in
    milliseconds (`ipv6 nd ra-interval msec 10000` = `ipv6 nd ra-interval 10`: zebra/rtadv.c)."""
    text = sonic_frr(c, asns)
    text = re.sub(r"(?m)^(\s*)ipv6 nd ra-interval (\d+)$",
                  lambda m: f"{m.group(1)}ipv6 nd ra-interval msec {int(m.group(2)) * 1000}", text)
    return re.sub(r"(?m)^(interface \S+)$", r"\1\n  link-detect", text)


def sonic_samples_config_db(db: dict) -> dict:
    """SONiC's sample config_db.json with the fields its samples write out at their YANG defaults:
    PORT `pfc_asym` off and `tpid` 0x8100 (sonic-port.yang), and each INTERFACE address row's
    `family` and `scope` (sonic-interface.yang), which describe the address and change nothing."""
    db = sonic_config_db(db)
    for fields in db.get("PORT", {}).values():
        fields.setdefault("pfc_asym", "off")
        fields.setdefault("tpid", "0x8100")
    for table in ("INTERFACE", "LOOPBACK_INTERFACE"):
        for key, fields in db.get(table, {}).items():
            if "|" in key:
                fields.setdefault("family", "IPv6" if ":" in key.split("|", 1)[1] else "IPv4")
                fields.setdefault("scope", "global")
    return db


def _same_db(db: dict) -> dict:
    return db


STYLES = {
    "sonic": (sonic_frr, sonic_config_db),
    "sonic-samples": (sonic_samples_frr, sonic_samples_config_db),
    "frrdocs": (frrdocs_frr, _same_db),
    "nvue": (nvue_frr, _same_db),
    "running": (running_frr, running_config_db),
}


def write_switch(style: str, conf: Conf, db: dict | None, asns: dict[str, str], dst: Path) -> None:
    """One switch's directory in STYLE: frr.conf and (when given) config_db.json."""
    frr_writer, db_writer = STYLES[style]
    dst.mkdir(parents=True, exist_ok=True)
    (dst / "frr.conf").write_text(frr_writer(conf, asns))
    if db is not None:
        indent = 4 if style in ("sonic", "sonic-samples", "running") else 2
        (dst / "config_db.json").write_text(json.dumps(db_writer(db), indent=indent) + "\n")


def rewrite(style: str, src: Path, dst: Path) -> list[str]:
    """SRC (a fablab render directory) -> DST in STYLE; the switches written."""
    if style not in STYLES:
        raise ValueError(f"unknown style {style!r}: one of {', '.join(STYLES)}")
    configs = src / "configs"
    if not configs.is_dir():
        raise ValueError(f"{src} has no configs/: give a directory `fablab render` wrote")
    asns = peer_asns(configs)
    done = []
    for d in sorted(p for p in configs.iterdir() if p.is_dir()):
        frr = d / "frr.conf"
        if not frr.is_file():
            continue
        db = json.loads((d / "config_db.json").read_text()) if (d / "config_db.json").is_file() else None
        write_switch(style, parse(frr.read_text()), db, asns, dst / "configs" / d.name)
        for extra in d.iterdir():  # init.sh and the like travel unchanged
            if extra.name not in ("frr.conf", "config_db.json") and extra.is_file():
                shutil.copy2(extra, dst / "configs" / d.name / extra.name)
        done.append(d.name)
    return done


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tests.corpus.styles",
                                description="rewrite a fablab render directory in another style, same meaning")
    p.add_argument("style", choices=[*STYLES, "all"])
    p.add_argument("src", type=Path, help="a directory `fablab render TOPOLOGY -o SRC` wrote")
    p.add_argument("dst", type=Path, help="where to write (DST/configs/<switch>/...; with `all`, DST/<style>/...)")
    a = p.parse_args(argv)
    try:
        for style in (STYLES if a.style == "all" else [a.style]):
            dst = a.dst / style if a.style == "all" else a.dst
            done = rewrite(style, a.src, dst)
            print(f"{style}: {len(done)} switches in {dst}")
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
