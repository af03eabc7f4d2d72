"""fablab's rendered frr.conf of a switch re-expressed as SONiC's unified mode holds BGP: in the
switch's config_db.json (BGP_GLOBALS, BGP_GLOBALS_AF, BGP_PEER_GROUP(_AF), BGP_NEIGHBOR(_AF),
PREFIX_SET/PREFIX, ROUTE_MAP, ROUTE_REDISTRIBUTE, BFD_PROFILE: field names as SONiC's YANG and
frrcfgd give them), with no frr.conf. Same meaning, other words: `fablab diff` must find none.

    .venv/bin/python -m tests.corpus.unified SRC_RENDER_DIR DST_DIR [SWITCH ...]

What the tables cannot say is refused (ValueError naming the line): the converter covers the
BE switches' statements, not EVPN.
"""
from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path

from .model import Conf, parse

_PEER = {"timers connect": "conn_retry", "advertisement-interval": "min_adv_interval", "description": "name",
         "update-source": "local_addr"}
_PEER_FLAGS = {"capability extended-nexthop": "capability_ext_nexthop", "passive": "passive_mode",
               "bfd check-control-plane-failure": "bfd_check_ctrl_plane_failure"}
_AF_FLAGS = {"next-hop-self": "nhself", "soft-reconfiguration inbound": "soft_reconfiguration_in",
             "route-reflector-client": "rrclient", "as-override": "as_override"}


def _peer(settings: list[str]) -> dict[str, str]:
    row: dict[str, str] = {}
    for s in settings:
        w = s.split()
        if w[0] == "remote-as":
            row["peer_type" if w[1] in ("external", "internal") else "asn"] = w[1]
        elif w[:2] == ["timers", "connect"]:
            row["conn_retry"] = w[2]
        elif w[0] == "timers":
            row["keepalive"], row["holdtime"] = w[1], w[2]
        elif w == ["bfd"]:
            row["bfd"] = "true"
        elif w[:2] == ["bfd", "profile"]:
            row["bfd"], row["bfd_profile"] = "true", w[2]
        elif w[0] == "bfd" and len(w) == 4:
            row.update(bfd="true", detect_mult=w[1], min_rx=w[2], min_tx=w[3])
        elif s in _PEER_FLAGS:
            row[_PEER_FLAGS[s]] = "true"
        elif " ".join(w[:2]) in _PEER or w[0] in _PEER:
            key = " ".join(w[:2]) if " ".join(w[:2]) in _PEER else w[0]
            row[_PEER[key]] = " ".join(w[len(key.split()):])
        else:
            raise ValueError(f"no unified-mode field for `neighbor X {s}`")
    return row


def _peer_af(settings: list[str]) -> dict[str, object]:
    row: dict[str, object] = {}
    for s in settings:
        w = s.split()
        if w == ["activate"]:
            row["admin_status"] = "up"  # stypes:admin_status (sonic-bgp-common.yang): up or down
        elif w[0] in ("prefix-list", "filter-list"):
            row[f"{w[0].replace('-', '_')}_{w[2]}"] = w[1]
        elif w[0] == "route-map":
            row[f"route_map_{w[2]}"] = [w[1]]
        elif w[0] == "maximum-prefix":
            row["max_prefix_limit"] = w[1]
            if len(w) > 2 and w[2].isdigit():
                row["max_prefix_warning_threshold"] = w[2]
            if "warning-only" in w:
                row["max_prefix_warning_only"] = "true"
        elif w[0] == "allowas-in":
            row["allow_as_in"] = "true"
            if len(w) > 1:
                row["allow_as_count" if w[1].isdigit() else "allow_as_origin"] = w[1] if w[1].isdigit() else "true"
        elif s in _AF_FLAGS:
            row[_AF_FLAGS[s]] = "true"
        else:
            raise ValueError(f"no unified-mode field for `neighbor X {s}` in an address family")
    return row


def tables(c: Conf) -> dict[str, dict[str, dict[str, object]]]:
    """The unified-mode tables of one switch's parsed frr.conf."""
    if c.bgp is None:
        raise ValueError("no router bgp")
    b, vrf = c.bgp, c.bgp.vrf or "default"
    out: dict[str, dict[str, dict[str, object]]] = {t: {} for t in (
        "BGP_GLOBALS", "BGP_GLOBALS_AF", "BGP_PEER_GROUP", "BGP_PEER_GROUP_AF", "BGP_NEIGHBOR", "BGP_NEIGHBOR_AF",
        "PREFIX_SET", "PREFIX", "ROUTE_MAP", "ROUTE_REDISTRIBUTE", "BFD_PROFILE")}
    glob: dict[str, object] = {"local_asn": b.asn}
    if any(h == "frr defaults datacenter" for h in c.header):
        glob["deterministic_med"] = "true"  # the datacenter profile's; the tables have no profile
    for line in b.globals:
        w = line.split()
        if w[:2] == ["bgp", "router-id"]:
            glob["router_id"] = w[2]
        elif line.startswith("bgp bestpath as-path multipath-relax"):
            glob["load_balance_mp_relax"] = "true"
        elif line == "no bgp default ipv4-unicast":
            glob["default_ipv4_unicast"] = "false"
        elif line == "bgp default ipv4-unicast":
            glob["default_ipv4_unicast"] = "true"
        elif w[:2] == ["timers", "bgp"]:
            glob["keepalive"], glob["holdtime"] = w[2], w[3]
        else:
            raise ValueError(f"no unified-mode field for `{line}`")
    out["BGP_GLOBALS"][vrf] = glob
    for name, settings in b.groups.items():
        out["BGP_PEER_GROUP"][f"{vrf}|{name}"] = _peer(settings)
    for n in b.neighbors:
        row = _peer(n.settings)
        if n.group:
            row["peer_group_name"] = n.group
        out["BGP_NEIGHBOR"][f"{vrf}|{n.name}"] = row
    for af in b.afs:
        family = af.name.replace(" ", "_")
        if family != "ipv4_unicast":
            raise ValueError(f"address-family {af.name}: not converted")
        for peer, settings in af.peers.items():
            table = "BGP_PEER_GROUP_AF" if peer in b.groups else "BGP_NEIGHBOR_AF"
            out[table][f"{vrf}|{peer}|{family}"] = _peer_af(settings)
        af_row: dict[str, object] = {}
        for line in af.lines:
            w = line.split()
            if w[0] == "maximum-paths" and len(w) == 2:
                af_row["max_ebgp_paths"] = w[1]
            elif w[:2] == ["redistribute", "connected"]:
                out["ROUTE_REDISTRIBUTE"][f"{vrf}|connected|bgp|ipv4"] = {"route_map": [w[3]]} if len(w) > 3 else {}
            else:
                raise ValueError(f"no unified-mode field for `{line}` in address-family {af.name}")
        out["BGP_GLOBALS_AF"][f"{vrf}|{family}"] = af_row
    for name, entries in c.prefix_lists.items():
        out["PREFIX_SET"][name] = {"mode": "IPv4"}
        for e in entries:
            own = int(e.prefix.split("/")[1])
            lengths = "exact" if e.ge is None and e.le is None else f"{e.ge if e.ge is not None else own}..{e.le or 32}"
            out["PREFIX"][f"{name}|{e.seq}|{e.prefix}|{lengths}"] = {"action": e.action}
    for rm in c.route_maps:
        row: dict[str, object] = {"route_operation": rm.action}
        for line in rm.lines:
            m = re.match(r"^match ip address prefix-list (\S+)$", line)
            if not m:
                raise ValueError(f"route-map {rm.name} {rm.seq}: no unified-mode field for `{line}`")
            row["match_prefix_set"] = m.group(1)
        out["ROUTE_MAP"][f"{rm.name}|{rm.seq}"] = row
    names = {"detect-multiplier": "detect_multiplier", "receive-interval": "receive_interval",
             "transmit-interval": "transmit_interval"}
    for name, lines in c.bfd_profiles.items():
        out["BFD_PROFILE"][name] = {names[ln.split()[0]]: ln.split()[1] for ln in lines}
    return {t: rows for t, rows in out.items() if rows}


def rewrite(src: Path, dst: Path, switches: list[str]) -> None:
    """SRC's render with each of `switches` given as config_db.json alone (its BGP in tables)."""
    shutil.copytree(src, dst)
    for sw in switches:
        where = dst / "configs" / sw
        db = json.loads((where / "config_db.json").read_text())
        db.update(tables(parse((where / "frr.conf").read_text())))
        db.setdefault("DEVICE_METADATA", {}).setdefault("localhost", {})["docker_routing_config_mode"] = "unified"
        (where / "config_db.json").write_text(json.dumps(db, indent=4, sort_keys=True) + "\n")
        (where / "frr.conf").unlink()


if __name__ == "__main__":
    rewrite(Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3:])
