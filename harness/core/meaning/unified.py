"""A switch whose BGP lives in CONFIG_DB, as SONiC holds it in unified mode
(`docker_routing_config_mode: unified`, the mode of SONiC's management framework): BGP_GLOBALS,
BGP_GLOBALS_AF, BGP_NEIGHBOR(_AF), BGP_PEER_GROUP(_AF), ROUTE_MAP, PREFIX_SET / PREFIX,
ROUTE_REDISTRIBUTE, BGP_GLOBALS_AF_NETWORK / _AGGREGATE_ADDR and BFD_PROFILE, with no frr.conf.

`frr_conf(db)` writes the frr.conf SONiC's frrcfgd starts FRR with from those tables: the
statements its startup templates write (sonic-buildimage src/sonic-frr-mgmt-framework/templates/
bgpd/bgpd.conf.db*.j2), with the neighbour BFD fields of frrcfgd.py's `hdl_bfd_timers` (a profile
wins over legacy timers) and BFD_PROFILE as its `bfd_profile_handler` writes a profile. Read, not
copied: the same table gives the same statements. What it writes is then read as any frr.conf is
(FRR itself, harness.plumbing.frr_reader), so a switch given as config_db.json alone and the same
switch given as frr.conf compare as the same.

Keys as SONiC's YANG gives them (sonic-bgp-global/-neighbor/-peergroup, sonic-route-map,
sonic-routing-policy-sets, sonic-route-common: 202411): BGP_NEIGHBOR|vrf|neighbor (the older
BGP_NEIGHBOR|address is the default VRF's), PREFIX|set|seq|prefix|masklength_range (the older
PREFIX|set|prefix|range with a `sequence_number` field too), ROUTE_MAP|map|seq.
"""
from __future__ import annotations

import ipaddress
from collections.abc import Iterator, Mapping

from harness.core.meaning.configdb_norm import ConfigDb, norm, norm_list, rows_of

TABLES = ("BGP_GLOBALS", "BGP_GLOBALS_AF", "BGP_NEIGHBOR", "BGP_NEIGHBOR_AF", "BGP_PEER_GROUP", "BGP_PEER_GROUP_AF",
          "ROUTE_MAP", "PREFIX_SET", "PREFIX", "ROUTE_REDISTRIBUTE", "BGP_GLOBALS_AF_NETWORK",
          "BGP_GLOBALS_AF_AGGREGATE_ADDR", "BFD_PROFILE")
_FAMILIES = {"ipv4_unicast": ("ipv4", "unicast"), "ipv6_unicast": ("ipv6", "unicast"), "l2vpn_evpn": ("l2vpn", "evpn")}
Row = Mapping[str, object]

# BGP_GLOBALS fields that switch a `bgp ...` statement on when "true" (off: left out)
_GLOBAL_FLAGS = {"log_nbr_state_changes": "bgp log-neighbor-changes", "always_compare_med": "bgp always-compare-med",
                 "default_show_hostname": "bgp default show-hostname", "default_shutdown": "bgp default shutdown",
                 "disable_ebgp_connected_rt_check": "bgp disable-ebgp-connected-route-check",
                 "deterministic_med": "bgp deterministic-med", "graceful_restart_enable": "bgp graceful-restart",
                 "graceful_shutdown": "bgp graceful-shutdown",
                 "gr_preserve_fw_state": "bgp graceful-restart preserve-fw-state",
                 "compare_confed_as_path": "bgp bestpath as-path confed",
                 "rr_allow_out_policy": "bgp route-reflector allow-outbound-policy",
                 "med_confed": "bgp bestpath med confed", "network_import_check": "bgp network import-check"}
_GLOBAL_VALUES = {"router_id": "bgp router-id", "default_local_preference": "bgp default local-preference",
                  "default_subgroup_pkt_queue_max": "bgp default subgroup-pkt-queue-max", "rr_cluster_id": "bgp cluster-id",
                  "read_quanta": "read-quanta", "write_quanta": "write-quanta", "coalesce_time": "coalesce-time",
                  "gr_stale_routes_time": "bgp graceful-restart stalepath-time",
                  "gr_restart_time": "bgp graceful-restart restart-time", "confed_id": "bgp confederation identifier",
                  "max_dynamic_neighbors": "bgp listen limit", "route_map_process_delay": "bgp route-map delay-timer"}
# neighbour / peer-group fields: "true" -> a statement; a value -> a statement with it
_PEER_FLAGS = {"solo_peer": "solo", "passive_mode": "passive", "disable_ebgp_connected_route_check": "disable-connected-check",
               "enforce_first_as": "enforce-first-as", "capability_dynamic": "capability dynamic",
               "capability_ext_nexthop": "capability extended-nexthop",
               "dont_negotiate_capability": "dont-capability-negotiate", "enforce_multihop": "enforce-multihop",
               "override_capability": "override-capability", "bfd_check_ctrl_plane_failure": "bfd check-control-plane-failure"}
_PEER_VALUES = {"local_asn": "local-as", "name": "description", "ttl_security_hops": "ttl-security hops",
                "peer_port": "port", "local_addr": "update-source", "min_adv_interval": "advertisement-interval",
                "conn_retry": "timers connect"}
_AF_FLAGS = {"as_override": "as-override", "rrclient": "route-reflector-client",
             "soft_reconfiguration_in": "soft-reconfiguration inbound", "route_server_client": "route-server-client"}
_AF_VALUES = {"weight": "weight", "cap_orf": "capability orf prefix-list", "unsuppress_map_name": "unsuppress-map"}
_MAP_MATCHES = {"match_interface": "match interface", "match_tag": "match tag", "match_community": "match community",
                "match_ext_community": "match extcommunity", "match_as_path": "match as-path",
                "match_med": "match metric", "match_local_pref": "match local-preference",
                "match_protocol": "match source-protocol", "match_src_vrf": "match source-vrf",
                "call_route_map": "call"}
_MAP_SETS = {"set_local_pref": "set local-preference", "set_local_preference": "set local-preference",
             "set_next_hop": "set ip next-hop", "set_ipv6_next_hop_global": "set ipv6 next-hop global",
             "set_tag": "set tag", "set_src": "set src", "set_community_ref": "set community",
             "set_ext_community_ref": "set extcommunity", "next_statement": "continue"}
_BFD_PROFILE = (("detect_multiplier", "detect-multiplier"), ("receive_interval", "receive-interval"),
                ("transmit_interval", "transmit-interval"), ("echo_interval", "echo-interval"),
                ("minimum_ttl", "minimum-ttl"))


def holds_bgp(db: ConfigDb) -> bool:
    """Whether a config_db.json carries a BGP instance of its own (unified mode)."""
    return any(isinstance(row, Mapping) and "local_asn" in row for row in rows_of(db, "BGP_GLOBALS").values())


def frr_conf(db: ConfigDb) -> str:
    """The frr.conf SONiC's frrcfgd writes from the unified tables of `db`."""
    host = rows_of(db, "DEVICE_METADATA").get("localhost", {}).get("hostname")
    lines = [f"hostname {host}"] if host else []
    lines += _prefix_lists(db) + _route_maps(db) + _bfd_profiles(db)
    for vrf, row in sorted(rows_of(db, "BGP_GLOBALS").items()):
        if "local_asn" in row:
            lines += _instance(db, str(vrf), row)
    return "\n".join(lines) + "\n"


def _true(row: Row, name: str) -> bool:
    return norm(row.get(name, "")) in ("true", "up")


def _split(key: object, parts: int) -> tuple[str, ...]:
    """A key's parts, a default VRF's first where the key leaves it out (BGP_NEIGHBOR|10.0.0.1)."""
    items = tuple(str(key).split("|"))
    return ("default",) * (parts - len(items)) + items if len(items) < parts else items


def _prefix_lists(db: ConfigDb) -> list[str]:
    modes = {str(name): norm(row.get("mode", "IPv4")) for name, row in rows_of(db, "PREFIX_SET").items()}
    out = []
    for key, row in rows_of(db, "PREFIX").items():
        parts = str(key).split("|")
        if len(parts) == 4:
            name, seq, prefix, lengths = parts
        elif len(parts) == 3:
            (name, prefix, lengths), seq = parts, norm(row.get("sequence_number", ""))
        else:
            continue
        family = "ipv6" if modes.get(name, "IPv4").lower() == "ipv6" else "ip"
        action = norm(row.get("action", "permit")).lower()
        text = f"{family} prefix-list {name}" + (f" seq {seq}" if seq else "") + f" {action} {prefix}"
        if lengths != "exact" and ".." in lengths:
            low, high = lengths.split("..", 1)
            try:
                own = ipaddress.ip_network(prefix, strict=False).prefixlen
            except ValueError:
                own = -1
            text += (f" ge {low} le {high}" if int(low) > own else f" le {high}") if low.isdigit() else ""
        out.append(text)
    return out


def _route_maps(db: ConfigDb) -> list[str]:
    modes = {str(name): norm(row.get("mode", "IPv4")).lower() for name, row in rows_of(db, "PREFIX_SET").items()}
    out = []
    for key, row in rows_of(db, "ROUTE_MAP").items():
        name, _, seq = str(key).rpartition("|")
        if "route_operation" not in row:
            continue
        out += ["!", f"route-map {name} {norm(row['route_operation']).lower()} {seq}"]
        for field in ("match_prefix_set", "match_ipv6_prefix_set"):
            if field in row:
                plist = norm(row[field])
                out.append(f" match {'ipv6' if modes.get(plist) == 'ipv6' else 'ip'} address prefix-list {plist}")
        if "match_next_hop_set" in row:
            out.append(f" match ip next-hop prefix-list {norm(row['match_next_hop_set'])}")
        if "match_origin" in row:
            out.append(f" match origin {norm(row['match_origin']).lower()}")
        if "match_neighbor" in row:
            out.append(f" match peer {norm_list(row['match_neighbor'])[0]}")
        out += [f" {words} {norm_list(row[field])[0] if field == 'match_tag' else norm(row[field])}"
                for field, words in _MAP_MATCHES.items() if field in row]
        out += [f" {words} {norm(row[field])}" for field, words in _MAP_SETS.items() if field in row]
        for field in ("set_med", "set_metric"):
            if field in row:
                out.append(f" set metric {norm(row[field])}")
                break
        if "set_origin" in row:
            out.append(f" set origin {norm(row['set_origin']).lower()}")
        if "set_community_inline" in row:
            out.append(" set community " + " ".join(norm_list(row["set_community_inline"])))
        if _true(row, "set_ipv6_next_hop_prefer_global"):
            out.append(" set ipv6 next-hop prefer-global")
        if "on_match_next" in row:
            out.append(" on-match next" if _true(row, "on_match_next") else
                       f" on-match goto {norm(row.get('on_match_goto_statement', ''))}")
    return out


def _bfd_profiles(db: ConfigDb) -> list[str]:
    profiles = rows_of(db, "BFD_PROFILE")
    if not profiles:
        return []
    out = ["!", "bfd"]
    for name, row in sorted(profiles.items()):
        out.append(f" profile {name}")
        out += [f"  {words} {norm(row[field])}" for field, words in _BFD_PROFILE if field in row]
        for field, words in (("echo_mode", "echo-mode"), ("passive_mode", "passive-mode")):
            if field in row:
                out.append(f"  {'' if _true(row, field) else 'no '}{words}")
        out.append(" exit")
    return out + ["exit"]


def _instance(db: ConfigDb, vrf: str, row: Row) -> list[str]:
    out = ["!", f"router bgp {norm(row['local_asn'])}" + ("" if vrf == "default" else f" vrf {vrf}")]
    if norm(row.get("fast_external_failover", "")) == "false":
        out.append(" no bgp fast-external-failover")
    if norm(row.get("rr_clnt_to_clnt_reflection", "")) == "false":
        out.append(" no bgp client-to-client reflection")
    # the startup template writes `no bgp default ipv4-unicast` unless the field says true
    out.append(" bgp default ipv4-unicast" if _true(row, "default_ipv4_unicast") else " no bgp default ipv4-unicast")
    out += [f" {words}" for field, words in _GLOBAL_FLAGS.items() if _true(row, field)]
    out += [f" {words} {norm(row[field])}" for field, words in _GLOBAL_VALUES.items() if field in row]
    if "confed_peers" in row:
        out.append(" bgp confederation peers " + " ".join(norm_list(row["confed_peers"])))
    if "ignore_as_path_length" in row:
        out.append(" bgp bestpath as-path ignore")
    if "external_compare_router_id" in row:
        out.append(" bgp bestpath compare-routerid")
    if _true(row, "med_missing_as_worst"):
        out.append(" bgp bestpath med missing-as-worst")
    if _true(row, "load_balance_mp_relax"):
        relax = {"true": " as-set", "false": " no-as-set"}.get(norm(row.get("as_path_mp_as_set", "")), "")
        out.append(f" bgp bestpath as-path multipath-relax{relax}")
    if "keepalive" in row and "holdtime" in row:
        out.append(f" timers bgp {norm(row['keepalive'])} {norm(row['holdtime'])}")
    if "max_delay" in row:
        out.append(f" update-delay {norm(row['max_delay'])}" + (f" {norm(row['establish_wait'])}"
                                                                 if "establish_wait" in row else ""))
    for table, kind in (("BGP_PEER_GROUP", "peer-group"), ("BGP_NEIGHBOR", "neighbor")):
        for key, peer in sorted(rows_of(db, table).items()):
            at, name = _split(key, 2)
            if at == vrf:
                out += list(_peer(name, peer, kind))
    return out + list(_families(db, vrf)) + ["exit"]


def _is_address(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def _peer(name: str, row: Row, kind: str) -> Iterator[str]:
    how = "" if kind == "peer-group" or _is_address(name) else "interface "
    if kind == "peer-group":
        yield f" neighbor {name} peer-group"
    remote = norm(row["peer_type"]) if "peer_type" in row else norm(row["asn"]) if "asn" in row else ""
    if remote:
        yield f" neighbor {name} {how}remote-as {remote}"
    if "peer_group_name" in row:
        yield f" neighbor {name} {how}peer-group {norm(row['peer_group_name'])}"
    if norm(row.get("admin_status", "")) in ("down", "false"):
        yield f" neighbor {name} shutdown"
    if _true(row, "bfd"):
        timers = [norm(row[f]) for f in ("detect_mult", "min_rx", "min_tx") if f in row]
        if row.get("bfd_profile"):  # frrcfgd's hdl_bfd_timers: a profile wins over legacy timers
            yield f" neighbor {name} bfd"
            yield f" neighbor {name} bfd profile {norm(row['bfd_profile'])}"
        else:
            yield f" neighbor {name} bfd" + (f" {' '.join(timers)}" if len(timers) == 3 else "")
    if "auth_password" in row:
        yield f" neighbor {name} password {norm(row['auth_password'])} encrypted"
    hops = norm(row["ebgp_multihop_ttl"]) if "ebgp_multihop_ttl" in row else "255" if _true(row, "ebgp_multihop") else ""
    if hops:
        yield f" neighbor {name} ebgp-multihop {hops}"
    yield from (f" neighbor {name} {words}" for field, words in _PEER_FLAGS.items() if _true(row, field))
    yield from (f" neighbor {name} {words} {norm(row[field])}" for field, words in _PEER_VALUES.items() if field in row)
    if "keepalive" in row and "holdtime" in row:
        yield f" neighbor {name} timers {norm(row['keepalive'])} {norm(row['holdtime'])}"


def _families(db: ConfigDb, vrf: str) -> Iterator[str]:
    used = [t for t in ("BGP_GLOBALS_AF", "BGP_GLOBALS_AF_NETWORK", "BGP_GLOBALS_AF_AGGREGATE_ADDR", "ROUTE_REDISTRIBUTE",
                        "BGP_PEER_GROUP_AF", "BGP_NEIGHBOR_AF") if rows_of(db, t)]
    if not used:
        return
    for af, (afi, safi) in sorted(_FAMILIES.items()):
        yield f" address-family {afi} {safi}"
        glob = {k: r for k, r in rows_of(db, "BGP_GLOBALS_AF").items() if _split(k, 2) == (vrf, af)}
        for row in glob.values():
            if all(f in row for f in ("ebgp_route_distance", "ibgp_route_distance", "local_route_distance")):
                yield f"  distance bgp {norm(row['ebgp_route_distance'])} {norm(row['ibgp_route_distance'])} " \
                      f"{norm(row['local_route_distance'])}"
        for key, row in rows_of(db, "BGP_GLOBALS_AF_NETWORK").items():
            at, fam, prefix = str(key).split("|", 2)
            if (at, fam) == (vrf, af):
                yield f"  network {prefix}" + (f" route-map {norm(row['policy'])}" if "policy" in row else "")
        for key, row in rows_of(db, "BGP_GLOBALS_AF_AGGREGATE_ADDR").items():
            at, fam, prefix = str(key).split("|", 2)
            if (at, fam) == (vrf, af):
                yield f"  aggregate-address {prefix}" + (" as-set" if _true(row, "as_set") else "") + \
                    (" summary-only" if _true(row, "summary_only") else "")
        for key, row in rows_of(db, "ROUTE_REDISTRIBUTE").items():
            parts = str(key).split("|")
            if len(parts) == 4 and parts[0] == vrf and parts[3] == afi and parts[2] == "bgp":
                maps = norm_list(row.get("route_map", ""))
                yield from ([f"  redistribute {parts[1]} route-map {m}" for m in maps] or [f"  redistribute {parts[1]}"])
        for table in ("BGP_PEER_GROUP_AF", "BGP_NEIGHBOR_AF"):
            for key, row in sorted(rows_of(db, table).items()):
                at, name, fam = _split(key, 3)
                if (at, fam) == (vrf, af):
                    yield from _peer_family(name, row)
        for row in glob.values():
            if "max_ebgp_paths" in row:
                yield f"  maximum-paths {norm(row['max_ebgp_paths'])}"
            if "max_ibgp_paths" in row:
                yield f"  maximum-paths ibgp {norm(row['max_ibgp_paths'])}"
            if "route_download_filter" in row:
                yield f"  table-map {norm(row['route_download_filter'])}"
            if _true(row, "redistribute_connected"):
                yield "  redistribute connected"
            if af == "l2vpn_evpn":
                yield from (f"  {w}" for f, w in (("advertise-all-vni", "advertise-all-vni"),
                                                   ("advertise-default-gw", "advertise-default-gw")) if _true(row, f))
        yield " exit-address-family"


def _peer_family(name: str, row: Row) -> Iterator[str]:
    if "admin_status" in row:
        yield f"  {'' if _true(row, 'admin_status') else 'no '}neighbor {name} activate"
    if _true(row, "nhself"):
        yield f"  neighbor {name} next-hop-self" + (" force" if _true(row, "nexthop_self_force") else "")
    if _true(row, "remove_private_as_enabled"):
        yield f"  neighbor {name} remove-private-AS" + (" all" if _true(row, "remove_private_as_all") else "") + \
            (" replace-AS" if _true(row, "replace_private_as") else "")
    if _true(row, "send_default_route"):
        yield f"  neighbor {name} default-originate" + (f" route-map {norm(row['default_rmap'])}"
                                                          if "default_rmap" in row else "")
    yield from (f"  neighbor {name} {words}" for field, words in _AF_FLAGS.items() if _true(row, field))
    yield from (f"  neighbor {name} {words} {norm(row[field])}" for field, words in _AF_VALUES.items() if field in row)
    if "max_prefix_limit" in row:
        more = (f" {norm(row['max_prefix_warning_threshold'])}" if "max_prefix_warning_threshold" in row else "") + \
            (f" restart {norm(row['max_prefix_restart_interval'])}" if "max_prefix_restart_interval" in row
             else " warning-only" if _true(row, "max_prefix_warning_only") else "")
        yield f"  neighbor {name} maximum-prefix {norm(row['max_prefix_limit'])}{more}"
    if _true(row, "allow_as_in"):
        yield f"  neighbor {name} allowas-in" + (" origin" if _true(row, "allow_as_origin") else
                                                 f" {norm(row['allow_as_count'])}" if "allow_as_count" in row else "")
    for direction in ("in", "out"):
        if f"prefix_list_{direction}" in row:
            yield f"  neighbor {name} prefix-list {norm(row[f'prefix_list_{direction}'])} {direction}"
        for m in norm_list(row.get(f"route_map_{direction}", "")):
            yield f"  neighbor {name} route-map {m} {direction}"
        if f"filter_list_{direction}" in row:
            yield f"  neighbor {name} filter-list {norm(row[f'filter_list_{direction}'])} {direction}"
