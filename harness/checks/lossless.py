"""The lossless contract, hop by hop, from SONiC config_db.json files.

A RoCE backend is lossless only if every hop agrees: the RoCE DSCP maps to the RoCE traffic
class, that class to its queue and priority group, PFC is on for that priority on both ends
of every link, the lossless queue marks ECN, CNPs reach a strict-priority queue, the PFC
watchdog guards the priority, the buffer profiles the ports reference exist, and every
port's MTU carries a full RoCE frame. One switch that disagrees pauses (or drops) a whole
job. The expected values are the cluster's declaration (`Lossless`), never the configs
under test. Each finding names the switch, the port, the table and what was expected.
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass, replace
from pathlib import Path

from harness.checks.base import Case, Check, Outcome, Table
from harness.core.errors import InputError
from harness.plumbing.labview import LabView
from harness.core.model import Lossless
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
    for name in contract.be_switches:
        db = configs.get(name, {})
        for port, far in sorted(contract.be_ports.get(name, {}).items()):
            ports += 1
            if _row(db, "PORT", port) is None:
                findings.append(Finding(name, port, "PORT", f"a row for the port cabled to {far}", "absent"))
                continue
            findings += _port(contract.lossless, name, port, db, contract.be_speeds.get(name, {}).get(port))
            peer, _, peer_port = far.partition(":")
            if peer not in contract.be_switches or (peer, peer_port) in seen:
                continue
            seen.add((name, port))
            peer_db = configs.get(peer, {})
            if _row(peer_db, "PORT", peer_port) is not None:  # an absent far end is its own finding
                links += 1
                across += _link(name, port, db, peer, peer_port, peer_db)
    findings += across
    for leaf, tables in sorted(contract.tenants.items()):
        findings += _tenant_tables(leaf, tables, contract.l2_ports.get(leaf, ()), configs.get(leaf, {}))
    for name, needs in sorted(contract.fe_mtu.items()):
        findings += _tenant_path(name, needs, configs.get(name, {}))
    return LosslessAudit(contract, len(contract.be_switches), ports, links, tuple(findings), len(contract.tenants),
                         sum(len(needs) for needs in contract.fe_mtu.values()),
                         problems=tuple(str(f) for f in findings))


def _check_shape(switch: str, db: object) -> None:
    """SONiC's config_db shape: an object of tables, each an object of rows, each an object
    of fields. Anything else is no config SONiC would load (bad input, not a finding)."""
    fix = "SONiC's config_db.json is {TABLE: {KEY: {field: value}}}; render again or fix the file"
    if not isinstance(db, dict):
        raise InputError(f"{switch}: config_db is a {type(db).__name__}, not an object of tables; {fix}")
    for table, rows in db.items():
        if not isinstance(rows, dict):
            raise InputError(f"{switch}: table {table} is a {type(rows).__name__}, not an object of rows; {fix}")
        for key, row in rows.items():
            if not isinstance(row, dict):
                raise InputError(f"{switch}: {table}|{key} is a {type(row).__name__}, not an object of fields; {fix}")


# Tables a VTEP leaf holds only for the declared tenants: an entry the declaration does not
# make (a member in another VLAN, a VNI mapped twice, a rule nobody declared) is a finding too.
_EXACT = ("VLAN", "VLAN_MEMBER", "VXLAN_TUNNEL", "VXLAN_TUNNEL_MAP", "VXLAN_EVPN_NVO")


def _tenant_tables(leaf: str, expected: dict[str, dict], l2_ports: tuple[str, ...], db: dict) -> list[Finding]:
    """One VTEP leaf's tenant tables against the declaration, entry by entry and field by field."""
    out: list[Finding] = []

    def where(key: str) -> str:
        return next((part for part in key.split("|") if part.startswith("Ethernet")), key)

    for table, rows in sorted(expected.items()):
        found = db.get(table, {})
        for key, fields in sorted(rows.items()):
            have = found.get(key)
            if have is None:
                out.append(Finding(leaf, where(key), table, f"{key} {_fields(fields)}", "absent"))
                continue
            for name in sorted(set(have) - set(fields)):  # a field nobody declared: a match narrowed, a knob set
                out.append(Finding(leaf, where(key), table, f"{key} without {name}", f"{name}={_text(have[name])}"))
            for name, value in sorted(fields.items()):
                got = have.get(name)
                if name == "ports":
                    same = sorted(_as_list(got)) == sorted(value)
                else:
                    same = str(got) == str(value)
                if not same:
                    out.append(Finding(leaf, where(key), table, f"{key} {name}={_text(value)}",
                                       f"{name}={_text(got) if got is not None else 'unset'}"))
        extra = [k for k in found if k not in rows and (table in _EXACT or
                                                        (table == "ACL_RULE" and k.startswith(_acl_table(rows))))]
        out += [Finding(leaf, where(k), table, f"no {k}", _fields(found[k])) for k in sorted(extra)]
    declared_acls = expected.get("ACL_TABLE", {})
    for name, row in sorted(db.get("ACL_TABLE", {}).items()):
        bound = sorted(set(_as_list(row.get("ports") if isinstance(row, dict) else None)) & set(l2_ports))
        if name not in declared_acls and bound:
            out.append(Finding(leaf, bound[0], "ACL_TABLE", f"no ACL table but {', '.join(declared_acls)} on "
                               "tenant member ports", f"{name} on {','.join(bound)}"))
    vlans = set(expected.get("VLAN", {}))
    for key in sorted(k for k in db.get("VLAN_INTERFACE", {}) if k.split("|")[0] in vlans):
        out.append(Finding(leaf, key.split("|")[0], "VLAN_INTERFACE", "no entry (tenants are declared L2 only: "
                           "an SVI routes the tenant into the default table)", key))
    routed = db.get("INTERFACE", {})
    for port in l2_ports:
        addresses = [k.split("|", 1)[1] for k in routed if k.startswith(f"{port}|")]
        if port in routed or addresses:
            out.append(Finding(leaf, port, "INTERFACE", "no entry (a tenant member's L2 port)",
                               ", ".join(addresses) or "routed"))
    return out


def _tenant_path(switch: str, needs: dict[str, int], db: dict) -> list[Finding]:
    """The FE ports a tenant frame crosses: up, and with an MTU that carries it (VXLAN's 50
    bytes included on fabric ports)."""
    out = []
    for port, need in sorted(needs.items()):
        row = _row(db, "PORT", port)
        if row is None:
            out.append(Finding(switch, port, "PORT", "a row (a tenant frame crosses it)", "absent"))
            continue
        if row.get("admin_status") != "up":
            out.append(Finding(switch, port, "PORT", "admin_status up (a tenant frame crosses it)",
                               row.get("admin_status", "unset (SONiC's default: down)")))
        if (_number(row.get("mtu")) or 0) < need:
            out.append(Finding(switch, port, "PORT", f"mtu >= {need} (a tenant frame"
                               f"{' with VXLAN' if need != min(needs.values()) else ''})", str(row.get("mtu"))))
    return out


def _acl_table(rules: dict) -> str:
    return next(iter(rules), "|").split("|")[0] + "|"


def _as_list(value: object) -> list[str]:
    if isinstance(value, list):
        return [str(v) for v in value]
    return [v for v in str(value or "").split(",") if v]


def _text(value: object) -> str:
    return ",".join(map(str, value)) if isinstance(value, list) else str(value)


def _fields(fields: dict) -> str:
    return "{" + ", ".join(f"{k}={_text(v)}" for k, v in sorted(fields.items())) + "}"


def _get(db: dict, table: str, key: str) -> dict | None:
    row = db.get(table, {}).get(key)
    return row if isinstance(row, dict) else None


def _row(db: dict, table: str, port: str, index: str | None = None) -> dict | None:
    """The row of `port` (and queue or PG `index`) as SONiC keys it: exactly, or in a key that
    lists ports ("Ethernet0,Ethernet4") or spans indexes ("Ethernet0|3-4")."""
    exact = _get(db, table, port if index is None else f"{port}|{index}")
    if exact is not None:
        return exact
    for key, row in db.get(table, {}).items():
        ports, _, span = str(key).partition("|")
        if port not in ports.split(",") or not isinstance(row, dict):
            continue
        if index is None and not span:
            return row
        low, _, high = span.partition("-")
        if index is not None and low.isdigit() and (high or low).isdigit() and int(low) <= int(index) <= int(high or low):
            return row
    return None


def _priorities(text: object) -> set[str]:
    return {p.strip() for p in str(text or "").split(",") if p.strip()}


def _number(value: object) -> int | None:
    return int(value) if str(value or "").isdigit() else None


# ECN modes that mark green packets: RoCE data is green (nothing colours it otherwise)
_ECN_MARKS_GREEN = {"ecn_green", "ecn_green_yellow", "ecn_green_red", "ecn_all"}


def _port(q: Lossless, sw: str, port: str, db: dict, speed_gbps: int | None = None) -> list[Finding]:
    """One BE port: admin state, declared speed, MTU, PFC and its watchdog, the DSCP -> TC ->
    queue/PG maps, ECN on the lossless queue, CNPs on the declared strict queue, buffers and
    cable length."""
    out: list[Finding] = []
    roce, cnp = str(q.roce_priority), str(q.cnp_priority)

    def miss(table: str, expected: str, found: object, at: str = port) -> None:
        out.append(Finding(sw, at, table, expected, "nothing" if found is None else str(found)))

    row = _row(db, "PORT", port) or {}
    if row.get("admin_status") != "up":
        miss("PORT", "admin_status up (a BE path crosses it)", row.get("admin_status", "unset (SONiC's default: down)"))
    if speed_gbps is not None and str(row.get("speed")) != str(speed_gbps * 1000):
        miss("PORT", f"speed {speed_gbps * 1000} (the declared {speed_gbps}G)", row.get("speed"))
    mtu = row.get("mtu")
    if (_number(mtu) or 0) < q.roce_frame_bytes:
        miss("PORT", f"mtu >= {q.roce_frame_bytes} (RoCE MTU {q.roce_mtu} with its headers)", mtu)
    qos = _row(db, "PORT_QOS_MAP", port)
    if qos is None:
        miss("PORT_QOS_MAP", "a row: the port's QoS maps and PFC", None)
        return out
    pfc = _priorities(qos.get("pfc_enable"))
    if roce not in pfc:
        miss("PORT_QOS_MAP", f"pfc_enable including {roce}", qos.get("pfc_enable"))
    if pfc - {roce}:
        miss("PORT_QOS_MAP", f"pfc_enable on no priority but {roce} (a paused class without lossless buffers "
             "backs up the fabric)", qos.get("pfc_enable"))
    out += _watchdog(sw, port, roce, qos, db)

    def mapped(map_field: str, table: str) -> dict | None:
        name = qos.get(map_field)
        found = _get(db, table, str(name)) if name else None
        if found is None and not name:
            miss("PORT_QOS_MAP", f"{map_field} naming a {table}", None)
        elif found is None:
            miss(table, f"map {name!r} (PORT_QOS_MAP.{map_field}) defined", "no such map")
        return found

    dscp_map = mapped("dscp_to_tc_map", "DSCP_TO_TC_MAP")
    if dscp_map is not None:
        for dscp, tc, what in ((q.roce_dscp, roce, "DSCP"), (q.cnp_dscp, cnp, "CNP DSCP")):
            got = dscp_map.get(str(dscp))
            if str(got) != tc:
                miss("DSCP_TO_TC_MAP", f"{what} {dscp} -> TC {tc}", f"TC {got}")
        strays = sorted((d for d, tc in dscp_map.items() if str(tc) == roce and str(d) != str(q.roce_dscp)),
                        key=lambda d: (_number(d) is None, _number(d) or 0, str(d)))
        if strays:
            miss("DSCP_TO_TC_MAP", f"no DSCP but {q.roce_dscp} in lossless TC {roce}",
                 f"DSCP {','.join(strays)} -> TC {roce}")
    to_queue = mapped("tc_to_queue_map", "TC_TO_QUEUE_MAP")
    for map_field, table, source, target in (("tc_to_queue_map", "TC_TO_QUEUE_MAP", "TC", "queue"),
                                             ("tc_to_pg_map", "TC_TO_PRIORITY_GROUP_MAP", "TC", "PG"),
                                             ("pfc_to_queue_map", "MAP_PFC_PRIORITY_TO_QUEUE", "priority", "queue")):
        found = to_queue if table == "TC_TO_QUEUE_MAP" else mapped(map_field, table)
        if found is not None and str(found.get(roce)) != roce:
            miss(table, f"{source} {roce} -> {target} {roce}", f"{target} {found.get(roce)}")
    if to_queue is not None and str(to_queue.get(cnp)) != cnp:
        miss("TC_TO_QUEUE_MAP", f"TC {cnp} -> queue {cnp} (CNPs, lossless.cnp_priority)", f"queue {to_queue.get(cnp)}")
    out += _queues(sw, port, roce, cnp, db)
    out += _buffers(sw, port, roce, db)
    lengths = next(iter(db.get("CABLE_LENGTH", {}).values()), {})
    if port not in lengths:
        miss("CABLE_LENGTH", "the port's cable length (it sizes the PFC headroom)", None)
    return out


def _watchdog(sw: str, port: str, roce: str, qos: dict, db: dict) -> list[Finding]:
    wd = _row(db, "PFC_WD", port)
    if roce not in _priorities(qos.get("pfcwd_sw_enable")) or wd is None:
        return [Finding(sw, port, "PFC_WD", f"the PFC watchdog on priority {roce}",
                        f"pfcwd_sw_enable={qos.get('pfcwd_sw_enable')}, PFC_WD row {'present' if wd else 'absent'}")]
    out = []
    for name, low, high in (("detection_time", 100, 5000), ("restoration_time", 100, 60000)):
        value = _number(wd.get(name))
        if value is None or not low <= value <= high:
            out.append(Finding(sw, port, "PFC_WD", f"{name} {low}..{high} ms", wd.get(name, "unset")))
    if wd.get("action") not in ("drop", "forward", "alert"):
        out.append(Finding(sw, port, "PFC_WD", "action drop, forward or alert", wd.get("action", "unset")))
    return out


def _queues(sw: str, port: str, roce: str, cnp_queue: str, db: dict) -> list[Finding]:
    """ECN marking on the lossless queue; the CNP queue on a strict scheduler."""
    out = []
    lossless = _row(db, "QUEUE", port, roce) or {}
    wred = _get(db, "WRED_PROFILE", str(lossless.get("wred_profile")))
    at = f"{port}|{roce}"
    if wred is None or str(wred.get("ecn", "ecn_none")) not in _ECN_MARKS_GREEN:
        out.append(Finding(sw, at, "QUEUE", f"queue {roce} with a WRED profile that marks ECN on green packets",
                           f"wred_profile={lossless.get('wred_profile')}" + ("" if wred is None else f", ecn={wred.get('ecn', 'unset')}")))
    elif str(wred.get("wred_green_enable", "true")) != "true":
        out.append(Finding(sw, at, "WRED_PROFILE", f"{lossless['wred_profile']}: wred_green_enable true (ECN marks "
                           "only where WRED runs)", wred.get("wred_green_enable")))
    elif (_number(wred.get("green_min_threshold")) or 0) > (_number(wred.get("green_max_threshold")) or 0):
        out.append(Finding(sw, at, "WRED_PROFILE", f"{lossless['wred_profile']}: green_min_threshold <= green_max_threshold",
                           f"{wred.get('green_min_threshold')} > {wred.get('green_max_threshold')}"))
    scheduler = _get(db, "SCHEDULER", str((_row(db, "QUEUE", port, cnp_queue) or {}).get("scheduler")))
    if scheduler is None or scheduler.get("type") != "STRICT":
        out.append(Finding(sw, f"{port}|{cnp_queue}", "QUEUE", f"CNP queue {cnp_queue} on a STRICT scheduler",
                           "nothing" if scheduler is None else str(scheduler.get("type"))))
    return out


def _buffers(sw: str, port: str, roce: str, db: dict) -> list[Finding]:
    """The lossless PG on an ingress xon/xoff profile, the lossless queue on an egress profile,
    each profile on a defined pool of its direction with a threshold."""
    out = []
    for table, pool_kind in (("BUFFER_PG", "ingress"), ("BUFFER_QUEUE", "egress")):
        at = f"{port}|{roce}"
        row = _row(db, table, port, roce)
        name = (row or {}).get("profile")
        profile = _get(db, "BUFFER_PROFILE", str(name))
        pool = _get(db, "BUFFER_POOL", str((profile or {}).get("pool")))

        def miss(where: str, expected: str, found: str) -> None:
            out.append(Finding(sw, at, where, expected, found))

        if row is None or profile is None:
            miss(table, f"a {pool_kind} buffer profile for the lossless class, defined in BUFFER_PROFILE",
                 "nothing" if row is None else f"profile {name!r} undefined")
        elif pool is None:
            miss("BUFFER_PROFILE", f"{name}: pool {profile.get('pool')!r} defined in BUFFER_POOL", "no such pool")
        elif pool.get("type") != pool_kind:
            miss("BUFFER_POOL", f"{profile.get('pool')} (of {name}): type {pool_kind}", str(pool.get("type")))
        elif "dynamic_th" not in profile and "static_th" not in profile:
            miss("BUFFER_PROFILE", f"{name}: a threshold (dynamic_th or static_th)", "neither")
        elif table == "BUFFER_PG" and not ((_number(profile.get("xoff")) or 0) > 0 and _number(profile.get("xon")) is not None):
            miss("BUFFER_PROFILE", f"{name} on the RoCE PG: lossless, xoff > 0 and xon set",
                 f"xoff={profile.get('xoff', 'unset')}, xon={profile.get('xon', 'unset')}")
    return out


def _link(a: str, a_port: str, a_db: dict, b: str, b_port: str, b_db: dict) -> list[Finding]:
    """Both ends of one switch-to-switch link: the same PFC priorities, MTU and speed."""
    out = []
    pa = _priorities((_row(a_db, "PORT_QOS_MAP", a_port) or {}).get("pfc_enable"))
    pb = _priorities((_row(b_db, "PORT_QOS_MAP", b_port) or {}).get("pfc_enable"))
    if pa != pb:
        out.append(Finding(a, a_port, "PORT_QOS_MAP", f"pfc_enable as at its peer {b}:{b_port} "
                           f"({','.join(sorted(pb)) or 'none'})", ",".join(sorted(pa)) or "none"))
    for name in ("mtu", "speed"):
        ours = (_row(a_db, "PORT", a_port) or {}).get(name)
        theirs = (_row(b_db, "PORT", b_port) or {}).get(name)
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
