"""The lossless contract, hop by hop, from SONiC config_db.json files.

A RoCE backend is lossless only if every hop agrees: the RoCE DSCP maps to the RoCE traffic
class, that class to its queue and priority group, PFC is on for that priority on both ends
of every link, the lossless queue marks ECN, CNPs reach a strict-priority queue, the PFC
watchdog guards the priority, the buffer profiles the ports reference exist, and every
port's MTU carries a full RoCE frame. One switch that disagrees pauses (or drops) a whole
job. The expected values are the cluster's declaration (`Lossless`), never the configs
under test. Each finding names the switch, the port, the table and what was expected.

The configs are read as harness.core.meaning.configdb reads them, by meaning: maps, profiles,
ACL rules and tables, VXLAN objects are followed from the port, never judged by name; a VLAN
is its vlanid; an ACL is its decisions; a field left out is SONiC's default (an absent mtu is
9100, absent wred_green_enable is false).
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass, replace
from pathlib import Path

from harness.checks.base import Case, Check, Outcome, Table
from harness.core.errors import InputError
from harness.core.meaning.configdb import port_settings
from harness.core.meaning.configdb_acl import acl_tables, bindings, compare
from harness.core.meaning.configdb_norm import check_shape, norm, number, port_rows
from harness.core.meaning.configdb_qos import (ECN_MARKS_GREEN, MAPS, Buffer, PortQos, Queue, buffers, cable_lengths,
                                               port_qoses, queues)
from harness.core.meaning.configdb_vlan import evpn_sources, members, tunnel_sources, vlan_id, vlan_ids, vni_maps
from harness.core.model import Lossless
from harness.plumbing.labview import LabView
from harness.core.plan import Plan
from harness.render.lossless import Contract, contract_of

@dataclass(frozen=True)
class Finding:
    node: str  # a switch, or a GPU node for its NIC's MTU
    port: str
    table: str
    expected: str
    found: str

    def __str__(self) -> str:
        where = f"{self.node}:{self.port}" if self.port else self.node
        return f"{where} {self.table}: expected {self.expected}, found {self.found}"


@dataclass(frozen=True)
class _Read:
    """One switch's config_db read once, as the model reads it: the audit asks of every port."""
    db: dict
    qos: dict[str, PortQos]
    queues: dict[tuple[str, int], Queue]
    pgs: dict[tuple[str, int], Buffer]
    egress: dict[tuple[str, int], Buffer]
    cables: dict[str, tuple[str, str]]
    watchdogs: dict[str, tuple[str, dict]]


def _read(db: dict) -> _Read:
    return _Read(db, port_qoses(db), queues(db), buffers(db, "BUFFER_PG"), buffers(db, "BUFFER_QUEUE"),
                 cable_lengths(db), port_rows(db, "PFC_WD"))


@dataclass(frozen=True)
class LosslessAudit(Outcome):
    contract: Contract
    switches: int
    ports: int
    links: int  # switch-to-switch links whose two ends were compared
    findings: tuple[Finding, ...]
    vtep_leaves: int = 0  # FE leaves whose tenant tables were compared
    tenant_ports: int = 0  # FE ports a tenant frame crosses, checked up and with its MTU

    held = "lossless on every hop"
    shown = 10

    @property
    def broken(self) -> str:
        return f"{len(self.findings)} finding(s)"

    def sentence(self) -> str:
        q = self.contract.lossless
        figures = (f"{self.switches} BE switches, {self.ports} ports, {self.links} links against RoCE DSCP "
                   f"{q.roce_dscp} -> priority {q.roce_priority}, CNP DSCP {q.cnp_dscp} -> strict queue "
                   f"{q.cnp_priority}, MTU >= {q.roce_frame_bytes}")
        if self.vtep_leaves:
            figures += (f"; tenant tables of {self.vtep_leaves} VTEP leaves as declared, {self.tenant_ports} FE "
                        "ports up and carrying a tenant frame")
        return figures

    def findings_table(self) -> Table:
        return Table(("node", "port", "table", "expected", "found"),
                     tuple((f.node, f.port, f.table, f.expected, f.found) for f in self.findings))


def load_dir(directory: Path, contract: Contract) -> dict[str, dict]:
    """Every config_db.json of a render directory that the contract (the declaration's, never
    one read from the directory) holds to account. A switch the declaration has and the
    directory lacks is left out: `audit` reports it as a finding."""
    directory = Path(directory)
    if not directory.is_dir():
        raise InputError(f"{directory}: no such directory; give a `fablab render` output directory")
    configs = {}
    for name in contract.switches:
        path = directory / "configs" / name / "config_db.json"
        try:
            configs[name] = json.loads(path.read_text())
            _check_shape(str(path), configs[name])
        except FileNotFoundError:
            continue
        except ValueError as e:
            raise InputError(f"{path}: not JSON ({e})") from e
    return configs


def audit(contract: Contract, configs: dict[str, dict]) -> LosslessAudit:
    """Every declared port of every BE switch against the contract, both ends of every BE link,
    every VTEP leaf's tenant tables, and every FE port a tenant frame crosses."""
    findings: list[Finding] = [Finding(name, "", "config_db.json", "the switch's configuration", "absent")
                               for name in contract.switches if name not in configs]
    for name in contract.switches:
        _check_shape(name, configs.get(name, {}))
    across: list[Finding] = []  # after every port's own findings: a link names the hop twice
    ports = links = 0
    seen: set[tuple[str, str]] = set()
    reads = {name: _read(configs.get(name, {})) for name in contract.be_switches}
    for name in contract.be_switches:
        db = configs.get(name, {})
        for port, far in sorted(contract.be_ports.get(name, {}).items()):
            ports += 1
            if port_settings(db, port) is None:
                findings.append(Finding(name, port, "PORT", f"a row for the port cabled to {far}", "absent"))
                continue
            findings += _port(contract.lossless, name, port, reads[name], contract.be_speeds.get(name, {}).get(port))
            peer, _, peer_port = far.partition(":")
            if peer not in contract.be_switches or (peer, peer_port) in seen:
                continue
            seen.add((name, port))
            peer_db = configs.get(peer, {})
            if port_settings(peer_db, peer_port) is not None:  # an absent far end is its own finding
                links += 1
                across += _link(name, port, reads[name], peer, peer_port, reads[peer])
    findings += across
    for leaf, tables in sorted(contract.tenants.items()):
        findings += _tenant_tables(leaf, tables, contract.l2_ports.get(leaf, ()), configs.get(leaf, {}))
    for name, needs in sorted(contract.fe_mtu.items()):
        findings += _tenant_path(name, needs, configs.get(name, {}))
    return LosslessAudit(contract, len(contract.be_switches), ports, links, tuple(findings), len(contract.tenants),
                         sum(len(needs) for needs in contract.fe_mtu.values()),
                         problems=tuple(str(f) for f in findings))


def _check_shape(switch: str, db: object) -> None:
    """SONiC's config_db shape (anything else is bad input, not a finding)."""
    check_shape(switch, db)


def _tenant_tables(leaf: str, expected: dict[str, dict], l2_ports: tuple[str, ...], db: dict) -> list[Finding]:
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


def _tenant_path(switch: str, needs: dict[str, int], db: dict) -> list[Finding]:
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
                               _admin(db, port)))
        if (number(row["mtu"]) or 0) < need:
            out.append(Finding(switch, port, "PORT", f"mtu >= {need} (a tenant frame"
                               f"{' with VXLAN' if need != min(needs.values()) else ''})", _mtu(db, port)))
    return out


def _admin(db: dict, port: str) -> str:
    row = db.get("PORT", {}).get(port, {})
    return norm(row["admin_status"]) if "admin_status" in row else "unset (SONiC's default: down)"


def _mtu(db: dict, port: str) -> str:
    row = db.get("PORT", {}).get(port, {})
    return norm(row["mtu"]) if "mtu" in row else "unset (SONiC's default: 9100)"


def _port(q: Lossless, sw: str, port: str, read: _Read, speed_gbps: int | None = None) -> list[Finding]:
    """One BE port: admin state, declared speed, MTU, PFC and its watchdog, the DSCP -> TC ->
    queue/PG maps, ECN on the lossless queue, CNPs on the declared strict queue, buffers and
    cable length. Maps and profiles are followed from the port, whatever they are called."""
    out: list[Finding] = []
    roce, cnp, db = q.roce_priority, q.cnp_priority, read.db

    def miss(table: str, expected: str, found: object, at: str = port) -> None:
        out.append(Finding(sw, at, table, expected, "nothing" if found is None else str(found)))

    row = port_settings(db, port) or {}
    if row.get("admin_status") != "up":
        miss("PORT", "admin_status up (a BE path crosses it)", _admin(db, port))
    if speed_gbps is not None and row.get("speed") != str(speed_gbps * 1000):
        miss("PORT", f"speed {speed_gbps * 1000} (the declared {speed_gbps}G)", row.get("speed"))
    if (number(row.get("mtu")) or 0) < q.roce_frame_bytes:
        miss("PORT", f"mtu >= {q.roce_frame_bytes} (RoCE MTU {q.roce_mtu} with its headers)", _mtu(db, port))
    qos = read.qos.get(port)
    if qos is None:
        miss("PORT_QOS_MAP", "a row: the port's QoS maps and PFC", None)
        return out
    if roce not in qos.pfc:
        miss("PORT_QOS_MAP", f"pfc_enable including {roce}", qos.pfc_text or None)
    if qos.pfc - {roce}:
        miss("PORT_QOS_MAP", f"pfc_enable on no priority but {roce} (a paused class without lossless buffers "
             "backs up the fabric)", qos.pfc_text)
    out += _watchdog(sw, port, roce, qos, read)
    maps = {}
    for field, table in MAPS.items():
        m = qos.map(field)
        if not m.name:
            miss("PORT_QOS_MAP", f"{field} naming a {table}", None)
        elif m.entries is None:
            miss(table, f"map {m.name!r} (PORT_QOS_MAP.{field}) defined", "no such map")
        else:
            maps[field] = m
    if "dscp_to_tc_map" in maps:
        for dscp, tc, what in ((q.roce_dscp, roce, "DSCP"), (q.cnp_dscp, cnp, "CNP DSCP")):
            if maps["dscp_to_tc_map"].get(dscp) != tc:
                miss("DSCP_TO_TC_MAP", f"{what} {dscp} -> TC {tc}", f"TC {maps['dscp_to_tc_map'].get(dscp)}")
        strays = [str(d) for d, tc in maps["dscp_to_tc_map"].entries or () if tc == roce and d != q.roce_dscp]
        if strays:
            miss("DSCP_TO_TC_MAP", f"no DSCP but {q.roce_dscp} in lossless TC {roce}",
                 f"DSCP {','.join(strays)} -> TC {roce}")
    for field, table, source, target in (("tc_to_queue_map", "TC_TO_QUEUE_MAP", "TC", "queue"),
                                         ("tc_to_pg_map", "TC_TO_PRIORITY_GROUP_MAP", "TC", "PG"),
                                         ("pfc_to_queue_map", "MAP_PFC_PRIORITY_TO_QUEUE", "priority", "queue")):
        if field in maps and maps[field].get(roce) != roce:
            miss(table, f"{source} {roce} -> {target} {roce}", f"{target} {maps[field].get(roce)}")
    if "tc_to_queue_map" in maps and maps["tc_to_queue_map"].get(cnp) != cnp:
        miss("TC_TO_QUEUE_MAP", f"TC {cnp} -> queue {cnp} (CNPs, lossless.cnp_priority)",
             f"queue {maps['tc_to_queue_map'].get(cnp)}")
    out += _queues(sw, port, roce, cnp, read)
    out += _buffers(sw, port, roce, read)
    if port not in read.cables:
        miss("CABLE_LENGTH", "the port's cable length (it sizes the PFC headroom)", None)
    return out


def _watchdog(sw: str, port: str, roce: int, qos: PortQos, read: _Read) -> list[Finding]:
    found = read.watchdogs.get(port)
    if roce not in qos.pfcwd or found is None:
        return [Finding(sw, port, "PFC_WD", f"the PFC watchdog on priority {roce}",
                        f"pfcwd_sw_enable={qos.pfcwd_text or None}, PFC_WD row {'present' if found else 'absent'}")]
    wd = found[1]
    out = []
    for name, low, high in (("detection_time", 100, 5000), ("restoration_time", 100, 60000)):
        value = number(wd.get(name))
        if value is None or not low <= value <= high:
            out.append(Finding(sw, port, "PFC_WD", f"{name} {low}..{high} ms", norm(wd.get(name, "unset"))))
    if norm(wd.get("action")) not in ("drop", "forward", "alert"):
        out.append(Finding(sw, port, "PFC_WD", "action drop, forward or alert", norm(wd.get("action", "unset"))))
    return out


def _queues(sw: str, port: str, roce: int, cnp_queue: int, read: _Read) -> list[Finding]:
    """ECN marking on the lossless queue; the CNP queue on a strict scheduler. A WRED field
    left out is SONiC's default (no ECN, WRED off)."""
    out = []
    every = read.queues
    lossless = every.get((port, roce))
    wred = lossless.wred if lossless else None
    at = f"{port}|{roce}"
    ref = lossless.wred_ref if lossless and lossless.wred_ref else None
    if wred is None or wred.get("ecn") not in ECN_MARKS_GREEN:
        out.append(Finding(sw, at, "QUEUE", f"queue {roce} with a WRED profile that marks ECN on green packets",
                           f"wred_profile={ref}" + ("" if wred is None else f", ecn={wred.get('ecn')}")))
    elif wred.get("wred_green_enable") != "true":
        out.append(Finding(sw, at, "WRED_PROFILE", f"{ref}: wred_green_enable true (ECN marks only where WRED runs)",
                           wred.get("wred_green_enable")))
    elif (number(wred.get("green_min_threshold")) or 0) > (number(wred.get("green_max_threshold")) or 0):
        out.append(Finding(sw, at, "WRED_PROFILE", f"{ref}: green_min_threshold <= green_max_threshold",
                           f"{wred.get('green_min_threshold')} > {wred.get('green_max_threshold')}"))
    cnp = every.get((port, cnp_queue))
    scheduler = cnp.scheduler if cnp else None
    if scheduler is None or scheduler.type != "STRICT":
        out.append(Finding(sw, f"{port}|{cnp_queue}", "QUEUE", f"CNP queue {cnp_queue} on a STRICT scheduler",
                           "nothing" if scheduler is None else scheduler.type))
    return out


def _buffers(sw: str, port: str, roce: int, read: _Read) -> list[Finding]:
    """The lossless PG on an ingress xon/xoff profile, the lossless queue on an egress profile,
    each profile on a defined pool of its direction with a threshold."""
    out = []
    at = f"{port}|{roce}"
    for table, pool_kind in (("BUFFER_PG", "ingress"), ("BUFFER_QUEUE", "egress")):
        b = (read.pgs if table == "BUFFER_PG" else read.egress).get((port, roce))

        def miss(where: str, expected: str, found: str) -> None:
            out.append(Finding(sw, at, where, expected, found))

        if b is None or not b.defined:
            miss(table, f"a {pool_kind} buffer profile for the lossless class, defined in BUFFER_PROFILE",
                 "nothing" if b is None else f"profile {b.profile!r} undefined")
        elif not b.pool_defined:
            miss("BUFFER_PROFILE", f"{b.profile}: pool {b.pool!r} defined in BUFFER_POOL", "no such pool")
        elif b.get("pool type") != pool_kind:
            miss("BUFFER_POOL", f"{b.pool} (of {b.profile}): type {pool_kind}", str(b.get("pool type")))
        elif b.get("dynamic_th") is None and b.get("static_th") is None:
            miss("BUFFER_PROFILE", f"{b.profile}: a threshold (dynamic_th or static_th)", "neither")
        elif table == "BUFFER_PG" and not (number(b.get("xoff")) or 0) > 0:
            miss("BUFFER_PROFILE", f"{b.profile} on the RoCE PG: lossless, xoff > 0 and xon set",
                 f"xoff={b.get('xoff')}, xon={b.get('xon')}")
    return out


def _link(a: str, a_port: str, a_read: _Read, b: str, b_port: str, b_read: _Read) -> list[Finding]:
    """Both ends of one switch-to-switch link: the same PFC priorities, MTU and speed."""
    out = []
    pa, pb = (getattr(r.qos.get(p), "pfc", frozenset()) for r, p in ((a_read, a_port), (b_read, b_port)))
    a_db, b_db = a_read.db, b_read.db
    if pa != pb:
        out.append(Finding(a, a_port, "PORT_QOS_MAP", f"pfc_enable as at its peer {b}:{b_port} "
                           f"({','.join(map(str, sorted(pb))) or 'none'})", ",".join(map(str, sorted(pa))) or "none"))
    for name in ("mtu", "speed"):
        ours = (port_settings(a_db, a_port) or {}).get(name)
        theirs = (port_settings(b_db, b_port) or {}).get(name)
        if ours != theirs:
            out.append(Finding(a, a_port, "PORT", f"{name} as at its peer {b}:{b_port} ({theirs})", str(ours)))
    return out


def audit_lab(lab: LabView, plan: Plan | None = None) -> LosslessAudit:
    """The running lab: every BE switch's CONFIG_DB as it runs (`Lab.running_config_db`) held
    to `plan` (by default the declaration the lab was booted from, as fablab recorded it), and
    every GPU NIC's MTU in its node's kernel (the first and last hop of every BE path)."""
    t0 = time.monotonic()
    plan = plan or lab.plan
    contract = contract_of(plan)
    running = {n.name for n in lab.plan.switches}
    configs = {name: lab.running_config_db(name) for name in contract.switches if name in running}
    result = audit(contract, configs)
    hosts: list[Finding] = []
    need = contract.lossless.roce_frame_bytes
    lab_hosts = {n.name for n in lab.plan.hosts}
    for host in plan.hosts:
        nics = [n for n in host.nics if n.rail is not None]
        if not nics:
            continue
        if host.name not in lab_hosts:
            hosts.append(Finding(host.name, "", "node", "a GPU node of the declaration", "not in the lab"))
            continue
        mtus = lab.mtus(host.name)
        for nic in nics:
            if mtus.get(nic.name, 0) < need:
                hosts.append(Finding(host.name, nic.name, "kernel link", f"mtu >= {need} (RoCE MTU "
                                     f"{contract.lossless.roce_mtu} with its headers)", str(mtus.get(nic.name))))
    findings = result.findings + tuple(hosts)
    return replace(result, findings=findings, problems=tuple(str(f) for f in findings),
                   seconds=round(time.monotonic() - t0, 2))


def _wire(lab: LabView):
    from harness.checks.lossless_wire import check_jumbo  # imported late: it brings the traffic generators

    return check_jumbo(lab)


CHECK = Check("lossless", "the declared lossless contract on every BE hop (PFC, DSCP/TC/queue/PG, ECN, CNP queue, "
              "watchdog, buffers, MTU), then RoCE frames at the RoCE MTU and DSCP on the wire of every BE path",
              (Case("lossless-audit", audit_lab), Case("lossless-wire", _wire)))
