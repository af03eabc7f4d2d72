"""SONiC config_db.json per switch.

config_db is data, not text: it is built as a mapping and serialised with sorted keys, so
the golden files are stable. PORT names, lanes, aliases and indexes are the rows of the
switch's HwSKU (the plan picks it), so docker-sonic-vs wires each PORT to its container
interface. On BE switches the lossless RoCEv2 settings are included, as the cluster declares
them (`Lossless`; by default PFC on priority 3, DSCP 26 -> TC 3 -> queue 3 -> PG 3, ECN/WRED
on queue 3, CNP (DSCP 48) on strict queue 6), and the buffers a lossless class needs on
hardware (ingress PG and egress queue profiles of the RoCE class, cable lengths).
"""
from __future__ import annotations

import json

from harness.core.acl import TABLE, AclEntry, priority
from harness.core.model import Role
from harness.core.plan import Plan, SwitchPlan

# SONiC's device roles by tier: a 2-tier Clos has ToRs under leaves; a 5-stage BE's
# super-spines are its T2 ("SpineRouter").
_TYPES = {Role.BE_LEAF: "ToRRouter", Role.FE_LEAF: "ToRRouter",
          Role.BE_SPINE: "LeafRouter", Role.FE_SPINE: "LeafRouter", Role.BE_SUPERSPINE: "SpineRouter"}
MGMT_PORT = "eth0"
# Per-port cable lengths size the PFC headroom on hardware: host links are in-rack copper or
# short optics, leaf-spine links cross the hall.
HOST_CABLE = "5m"
FABRIC_CABLE = "40m"
# A lossless PG's headroom (its profile's `xoff`) is what may still arrive after it sends pause:
# the bits in flight, which grow with the port's speed and the cable's length. As SONiC's
# buffer manager, one profile per speed and cable length (pg_lossless_<speed>_<cable>_profile).
# 400G over 5 m keeps Mellanox's default; the cable adds its round trip at the speed (5 ns/m).
HEADROOM_400G_5M = 165888


def _mac(sw: SwitchPlan) -> str:
    # Locally administered, derived from the loopback so each switch differs and stays stable.
    octets = sw.loopback.ip.packed
    return "02:fa:{:02x}:{:02x}:{:02x}:{:02x}".format(*octets)


def config_db(plan: Plan, sw: SwitchPlan) -> dict:
    db: dict[str, dict] = {
        "DEVICE_METADATA": {"localhost": {
            "hostname": sw.name,
            "bgp_asn": str(sw.asn),
            "type": _TYPES[sw.role],
            "platform": "x86_64-kvm_x86_64-r0",
            "hwsku": sw.hwsku,
            "mac": _mac(sw),
            # frr.conf is rendered by fablab, not by SONiC's templates from config_db.
            "docker_routing_config_mode": "split-unified",
            "buffer_model": "traditional",
        }},
        "PORT": {},
        "INTERFACE": {},
        "LOOPBACK_INTERFACE": {"Loopback0": {}, f"Loopback0|{sw.loopback}": {}},
        "MGMT_PORT": {MGMT_PORT: {"admin_status": "up", "alias": MGMT_PORT}},
        # The gateway is the mgmt network's first host: the management bridge.
        "MGMT_INTERFACE": {f"{MGMT_PORT}|{sw.mgmt}": {"gwaddr": str(next(plan.mgmt_network.hosts()))}},
        # eth0 in a VRF of its own ("mgmt"), so that the switch routes nothing between it and
        # the data ports; hostcfgd applies it on hardware. docker-sonic-vs does not (no hostcfgd):
        # there init.sh makes the same separation with iptables, and the netns runtime with nft.
        "MGMT_VRF_CONFIG": {"vrf_global": {"mgmtVrfEnabled": "true"}},
    }
    for p in sw.ports:
        row = p.row
        db["PORT"][p.name] = {
            "admin_status": "up", "alias": row.alias, "index": str(row.index),
            "lanes": row.lanes_text, "mtu": str(p.mtu), "speed": str(p.speed * 1000),
            "description": f"{p.peer}:{p.peer_port}",
        }
        # what the cable reaches, as SONiC's minigraph writes it (sonic-device_neighbor.yang)
        db.setdefault("DEVICE_NEIGHBOR", {})[p.name] = {"name": p.peer, "port": p.peer_port}
        if p.unnumbered:
            db["INTERFACE"][p.name] = {"ipv6_use_link_local_only": "enable"}
        elif p.address is not None:
            # A rail-only leaf of several rails keeps them apart: a VRF per rail's port group.
            db["INTERFACE"][p.name] = {"vrf_name": rail_vrf(p.rail)} if sw.separate_rails else {}
            db["INTERFACE"][f"{p.name}|{p.address}"] = {}
    if sw.breakout:  # every cage's mode, as SONiC's dynamic port breakout keeps it (hwsku.json's default)
        db["BREAKOUT_CFG"] = {parent: {"brkout_mode": mode} for parent, mode in sw.breakout}
    if sw.separate_rails:
        db["VRF"] = {rail_vrf(r): {} for r in sw.rails}
    if sw.lossless:
        db.update(_lossless(plan, sw))
    if sw.vnis:
        db.update(tenant_tables(plan, sw))
    return db


VTEP = "vtep"


def rail_vrf(rail: int) -> str:
    return f"Vrf_rail{rail}"


def tenant_tables(plan: Plan, sw: SwitchPlan) -> dict[str, dict]:
    """A VTEP leaf: a VLAN per tenant behind it, its members' ports in it (tagged on a trunk),
    the VLAN mapped to the tenant's VNI on the loopback's VTEP, EVPN as the control plane,
    and the edge ACL on every member port (ingress)."""
    tenants = [t for t in plan.tenants if t.vni in sw.vnis]
    tables: dict[str, dict] = {
        "VLAN": {f"Vlan{t.vlan}": {"vlanid": str(t.vlan), "description": f"tenant {t.name}"} for t in tenants},
        "VLAN_MEMBER": {f"Vlan{v}|{p.name}": {"tagging_mode": "tagged" if p.tagged else "untagged"}
                        for p in sw.tenant_ports for v in p.vlans},
        "VXLAN_TUNNEL": {VTEP: {"src_ip": str(sw.loopback.ip)}},
        "VXLAN_TUNNEL_MAP": {f"{VTEP}|map_{t.vni}_Vlan{t.vlan}": {"vlan": f"Vlan{t.vlan}", "vni": str(t.vni)}
                             for t in tenants},
        "VXLAN_EVPN_NVO": {"nvo": {"source_vtep": VTEP}},
    }
    entries = plan.acl
    tables["ACL_TABLE"] = {TABLE: {"policy_desc": "FE edge ACL (fablab)", "type": "L3", "stage": "ingress",
                                   "ports": [p.name for p in sw.tenant_ports]}}
    tables["ACL_RULE"] = {f"{TABLE}|{e.name}": _acl_rule(e, priority(i, len(entries))) for i, e in enumerate(entries)}
    return tables


def _acl_rule(e: AclEntry, prio: int) -> dict[str, str]:
    rule = {"PRIORITY": str(prio), "PACKET_ACTION": "FORWARD" if e.action == "permit" else "DROP"}
    if e.src is not None:
        rule["SRC_IP"] = str(e.src)
    if e.dst is not None:
        rule["DST_IP"] = str(e.dst)
    if e.src is None and e.dst is None:
        rule["IP_TYPE"] = "IPV4ANY"
    if e.protocol is not None:
        rule["IP_PROTOCOL"] = str(e.protocol)
    for ports, single, ranged in ((e.dst_ports, "L4_DST_PORT", "L4_DST_PORT_RANGE"),
                                  (e.src_ports, "L4_SRC_PORT", "L4_SRC_PORT_RANGE")):
        if ports is not None:
            rule[single if ports.low == ports.high else ranged] = str(ports)
    return rule


def pg_headroom(speed_g: int, cable: str) -> int:
    """The headroom of a lossless PG on a port of `speed_g` with a `cable` ("40m") to its peer."""
    metres = int(cable.rstrip("m"))
    return round(HEADROOM_400G_5M * speed_g / 400 + speed_g * 1e9 / 8 * 2 * (metres - 5) * 5e-9)


def _pg_profile(speed_g: int, cable: str) -> str:
    return f"pg_lossless_{speed_g * 1000}_{cable}_profile"


def _lossless(plan: Plan, sw: SwitchPlan) -> dict[str, dict]:
    q = plan.fabric.cluster.lossless
    roce, cnp = str(q.roce_priority), str(q.cnp_priority)
    names = [p.name for p in sw.ports]
    switches = {s.name for s in plan.switches}
    cables = {p.name: FABRIC_CABLE if p.peer in switches else HOST_CABLE for p in sw.ports}
    speeds = {p.name: p.speed for p in sw.ports}
    dscp_to_tc = {str(d): "0" for d in range(64)}
    dscp_to_tc[str(q.roce_dscp)] = roce
    dscp_to_tc[str(q.cnp_dscp)] = cnp
    identity = {str(i): str(i) for i in range(8)}
    tables: dict[str, dict] = {
        "DSCP_TO_TC_MAP": {"AI_ROCE": dscp_to_tc},
        "TC_TO_QUEUE_MAP": {"AI_ROCE": identity},
        # The RoCE class has a priority group of its own (its number); every other class shares PG 0.
        "TC_TO_PRIORITY_GROUP_MAP": {"AI_ROCE": {str(i): (roce if i == q.roce_priority else "0") for i in range(8)}},
        "MAP_PFC_PRIORITY_TO_QUEUE": {"AI_ROCE": identity},
        "WRED_PROFILE": {"AI_LOSSLESS": {
            "ecn": "ecn_all", "wred_green_enable": "true", "wred_yellow_enable": "true",
            "wred_red_enable": "true", "green_min_threshold": str(q.ecn.min_bytes),
            "green_max_threshold": str(q.ecn.max_bytes), "green_drop_probability": str(q.ecn.probability_pct), "yellow_min_threshold": "1048576",
            "yellow_max_threshold": "2097152", "yellow_drop_probability": "5",
            "red_min_threshold": "1048576", "red_max_threshold": "2097152", "red_drop_probability": "5",
        }},
        "SCHEDULER": {"scheduler.0": {"type": "DWRR", "weight": "14"},
                      "scheduler.1": {"type": "DWRR", "weight": "15"},
                      "scheduler.strict": {"type": "STRICT"}},
        "PORT_QOS_MAP": {},
        "QUEUE": {},
        "PFC_WD": {},
        "BUFFER_POOL": {
            "ingress_lossless_pool": {"mode": "dynamic", "size": "12766208", "type": "ingress"},
            "egress_lossless_pool": {"mode": "static", "size": "12766208", "type": "egress"},
        },
        "BUFFER_PROFILE": {
            **{_pg_profile(speed, cable): {"pool": "ingress_lossless_pool", "size": "0", "dynamic_th": "-3",
                                           "xon": "18432", "xoff": str(pg_headroom(speed, cable))}
               for speed, cable in sorted({(p.speed, cables[p.name]) for p in sw.ports})},
            "egress_lossless_profile": {"pool": "egress_lossless_pool", "size": "0", "static_th": "12766208"},
        },
        "BUFFER_PG": {},
        "BUFFER_QUEUE": {},
        # "AZURE" is the key SONiC's own buffer template writes (buffers_config.j2).
        "CABLE_LENGTH": {"AZURE": cables},
    }
    for name in names:
        tables["PORT_QOS_MAP"][name] = {
            "dscp_to_tc_map": "AI_ROCE", "tc_to_queue_map": "AI_ROCE", "tc_to_pg_map": "AI_ROCE",
            "pfc_to_queue_map": "AI_ROCE", "pfc_enable": roce, "pfcwd_sw_enable": roce,
        }
        tables["QUEUE"][f"{name}|{roce}"] = {"scheduler": "scheduler.1", "wred_profile": "AI_LOSSLESS"}
        tables["QUEUE"][f"{name}|{cnp}"] = {"scheduler": "scheduler.strict"}
        tables["QUEUE"][f"{name}|0"] = {"scheduler": "scheduler.0"}
        tables["PFC_WD"][name] = {"action": "drop", "detection_time": "200", "restoration_time": "200"}
        tables["BUFFER_PG"][f"{name}|{roce}"] = {"profile": _pg_profile(speeds[name], cables[name])}
        tables["BUFFER_QUEUE"][f"{name}|{roce}"] = {"profile": "egress_lossless_profile"}
    return tables


def config_db_json(plan: Plan, sw: SwitchPlan) -> str:
    return json.dumps(config_db(plan, sw), indent=4, sort_keys=True) + "\n"
