"""The FE side of the audit: each VTEP leaf's tenant tables held to the declaration by what
they do (VLANs by vlanid, VNIs by the VLAN they map, ACLs by their decisions on every member
port), and every FE port a tenant frame crosses up and with an MTU that carries it."""
from __future__ import annotations

from harness.checks.lossless.hops import admin_text, mtu_text
from harness.checks.lossless.outcome import Finding
from harness.core.meaning.configdb import port_settings
from harness.core.meaning.configdb_acl import acl_tables, bindings, compare
from harness.core.meaning.configdb_norm import number
from harness.core.meaning.configdb_vlan import evpn_sources, members, tunnel_sources, vlan_id, vlan_ids, vni_maps


def tenant_table_findings(leaf: str, expected: dict[str, dict], l2_ports: tuple[str, ...], db: dict) -> list[Finding]:
    """One VTEP leaf's tenant tables against the declaration, by what they do: VLANs by vlanid
    and their members, each VNI's VLAN, the VTEP's and EVPN's source, the ACL's decisions on
    every member port. What the objects and rules are called never counts."""
    out: list[Finding] = []
    want_ids, have_ids = set(vlan_ids(expected).values()), set(vlan_ids(db).values())
    out += [Finding(leaf, f"Vlan{v}", "VLAN", f"VLAN {v}", "absent") for v in sorted(want_ids - have_ids)]
    out += [Finding(leaf, f"Vlan{v}", "VLAN", f"no VLAN {v}", "present") for v in sorted(have_ids - want_ids)]
    want = {(m.vlan, m.port): m.tagging for m in members(expected)}
    have = {(m.vlan, m.port): m.tagging for m in members(db)}
    for (vid, port), mode in sorted(want.items(), key=str):
        if (vid, port) not in have:
            out.append(Finding(leaf, port, "VLAN_MEMBER", f"Vlan{vid}|{port} {{tagging_mode={mode}}}", "absent"))
        elif have[(vid, port)] != mode:
            out.append(Finding(leaf, port, "VLAN_MEMBER", f"Vlan{vid}|{port} tagging_mode={mode}",
                               f"tagging_mode={have[(vid, port)]}"))
    out += [Finding(leaf, port, "VLAN_MEMBER", f"no Vlan{vid}|{port}", f"{{tagging_mode={mode}}}")
            for (vid, port), mode in sorted(have.items(), key=str) if (vid, port) not in want]
    for table, label, a, b in (("VXLAN_TUNNEL", "src_ip", sorted(set(tunnel_sources(expected).values())),
                                sorted(set(tunnel_sources(db).values()))),
                               ("VXLAN_EVPN_NVO", "source", [s for s, _ in evpn_sources(expected)],
                                [s for s, _ in evpn_sources(db)])):
        if a != b:
            out.append(Finding(leaf, table.split("_")[-1].lower(), table, f"{label}={','.join(a) or 'none'}",
                               f"{label}={','.join(b) or 'none'}"))
    want_vni = {m.vni: m.vlan for m in vni_maps(expected)}
    have_vni: dict[int | None, list[int | None]] = {}
    for m in vni_maps(db):
        have_vni.setdefault(m.vni, []).append(m.vlan)
    for vni, vid in sorted(want_vni.items(), key=str):
        got = have_vni.get(vni, [])
        if not got:
            out.append(Finding(leaf, f"VNI {vni}", "VXLAN_TUNNEL_MAP", f"VNI {vni} vlan=Vlan{vid}", "absent"))
        elif got != [vid]:
            out.append(Finding(leaf, f"VNI {vni}", "VXLAN_TUNNEL_MAP", f"VNI {vni} vlan=Vlan{vid}",
                               ",".join(f"vlan=Vlan{v}" for v in got)))
    out += [Finding(leaf, f"VNI {vni}", "VXLAN_TUNNEL_MAP", f"no VNI {vni}", ",".join(f"vlan=Vlan{v}" for v in vids))
            for vni, vids in sorted(have_vni.items(), key=str) if vni not in want_vni]
    out += _acl_findings(leaf, expected, l2_ports, db)
    for key, vid in sorted((k, vlan_id(db, k.split("|")[0])) for k in db.get("VLAN_INTERFACE", {})):
        if vid in want_ids:
            out.append(Finding(leaf, key.split("|")[0], "VLAN_INTERFACE", "no entry (tenants are declared L2 only: "
                               "an SVI routes the tenant into the default table)", key))
    routed = db.get("INTERFACE", {})
    for port in l2_ports:
        addresses = [k.split("|", 1)[1] for k in routed if k.startswith(f"{port}|")]
        if port in routed or addresses:
            out.append(Finding(leaf, port, "INTERFACE", "no entry (a tenant member's L2 port)",
                               ", ".join(addresses) or "routed"))
    return out


def _acl_findings(leaf: str, expected: dict, l2_ports: tuple[str, ...], db: dict) -> list[Finding]:
    """The ACL's decisions on every tenant member port, each stage: one finding per way they
    differ, naming the ports it holds on and the engineer's rules that decide the examples."""
    a, b = bindings(acl_tables(expected)), bindings(acl_tables(db))
    told: dict[tuple[str, str, str], list[str]] = {}
    done: dict[tuple, object] = {}
    for port, stage in sorted((k for k in set(a) | set(b) if k[0] in l2_ports), key=str):
        ea, fb = a.get((port, stage), ()), b.get((port, stage), ())
        ident = (tuple(map(id, ea)), tuple(map(id, fb)))
        d = done[ident] if ident in done else done.setdefault(ident, compare(ea, fb))
        if d is None:
            continue
        exp, fnd = d.texts()
        by = ", ".join(sorted({r.key for r in d.rows if r.table == "ACL_RULE"}))
        if not fb:
            key = ("ACL_TABLE", f"an ACL at {stage} on {{ports}}: {exp}", f"no ACL: {fnd}")
        elif not ea:
            key = ("ACL_TABLE", f"no ACL at {stage} on {{ports}}", f"{fnd} (by {by})")
        else:
            key = ("ACL_RULE", f"at {stage}: {exp}", f"{fnd} (by {by})" if by else fnd)
        told.setdefault(key, []).append(port)
    return [Finding(leaf, ",".join(ports), table, expected_.format(ports=",".join(ports)), found)
            for (table, expected_, found), ports in told.items()]


def tenant_path_findings(switch: str, needs: dict[str, int], db: dict) -> list[Finding]:
    """The FE ports a tenant frame crosses: up, and with an MTU that carries it (VXLAN's 50
    bytes included on fabric ports)."""
    out = []
    for port, need in sorted(needs.items()):
        row = port_settings(db, port)
        if row is None:
            out.append(Finding(switch, port, "PORT", "a row (a tenant frame crosses it)", "absent"))
            continue
        if row["admin_status"] != "up":
            out.append(Finding(switch, port, "PORT", "admin_status up (a tenant frame crosses it)",
                               admin_text(db, port)))
        if (number(row["mtu"]) or 0) < need:
            out.append(Finding(switch, port, "PORT", f"mtu >= {need} (a tenant frame"
                               f"{' with VXLAN' if need != min(needs.values()) else ''})", mtu_text(db, port)))
    return out

