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
from dataclasses import dataclass, field, replace
from pathlib import Path

from harness.checks.result import Outcome
from harness.errors import HarnessError
from harness.model import Lossless
from harness.render.lossless import CONTRACT_FILE, Contract, contract_of

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
    problems: tuple[str, ...] = field(default=())
    vtep_leaves: int = 0  # FE leaves whose tenant tables were compared

    @property
    def reason(self) -> str:
        q = self.contract.lossless
        figures = (f"{self.switches} BE switches, {self.ports} ports, {self.links} links against RoCE DSCP "
                   f"{q.roce_dscp} -> priority {q.roce_priority}, CNP DSCP {q.cnp_dscp} -> strict queue "
                   f"{q.cnp_priority}, MTU >= {q.roce_frame_bytes}")
        if self.vtep_leaves:
            figures += f"; tenant tables of {self.vtep_leaves} VTEP leaves as declared"
        if self.passed:
            return f"lossless on every hop: {figures}"
        return f"{len(self.findings)} finding(s): " + "; ".join(map(str, self.findings[:10])) + \
            (" ..." if len(self.findings) > 10 else "") + f" | {figures}"


def load_dir(directory: Path) -> tuple[Contract, dict[str, dict]]:
    """The contract and every switch's config_db.json of a render directory."""
    directory = Path(directory)
    if not directory.is_dir():
        raise HarnessError(f"{directory}: no such directory; give a `fablab render` output directory")
    contract_path = directory / CONTRACT_FILE
    if not contract_path.exists():
        raise HarnessError(f"{contract_path} is missing: render the topology with this fablab "
                           "(`fablab render TOPOLOGY -o DIR`), which writes the declared contract beside the configs")
    contract = Contract.from_json(contract_path.read_text(), str(contract_path))
    configs = {}
    for name in (*contract.be_switches, *contract.tenants):
        path = directory / "configs" / name / "config_db.json"
        try:
            configs[name] = json.loads(path.read_text())
        except FileNotFoundError:
            raise HarnessError(f"{path} is missing: switch {name} has no config_db.json") from None
        except ValueError as e:
            raise HarnessError(f"{path}: not JSON ({e})") from e
    return contract, configs


def audit(contract: Contract, configs: dict[str, dict]) -> LosslessAudit:
    """Every BE switch's ports against the contract, and both ends of every BE link."""
    findings: list[Finding] = []
    ports = 0
    for name in contract.be_switches:
        db = configs.get(name, {})
        for port in sorted(db.get("PORT", {})):
            ports += 1
            findings += _port(contract.lossless, name, port, db)
    links = 0
    seen: set[tuple[str, str]] = set()
    for name in contract.be_switches:
        for port, row in sorted(configs.get(name, {}).get("PORT", {}).items()):
            peer, _, peer_port = str(row.get("description", "")).partition(":")
            if peer not in configs or (peer, peer_port) in seen:
                continue
            seen.add((name, port))
            links += 1
            findings += _link(name, port, configs[name], peer, peer_port, configs[peer])
    for leaf, tables in sorted(contract.tenants.items()):
        findings += _tenant_tables(leaf, tables, contract.l2_ports.get(leaf, ()), configs.get(leaf, {}))
    return LosslessAudit(contract, len(contract.be_switches), ports, links, tuple(findings),
                         tuple(str(f) for f in findings), len(contract.tenants))


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
    routed = db.get("INTERFACE", {})
    for port in l2_ports:
        addresses = [k.split("|", 1)[1] for k in routed if k.startswith(f"{port}|")]
        if port in routed or addresses:
            out.append(Finding(leaf, port, "INTERFACE", "no entry (a tenant member's L2 port)",
                               ", ".join(addresses) or "routed"))
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


def _priorities(text: object) -> set[str]:
    return {p.strip() for p in str(text or "").split(",") if p.strip()}


def _port(q: Lossless, sw: str, port: str, db: dict) -> list[Finding]:
    out: list[Finding] = []
    roce, cnp = str(q.roce_priority), str(q.cnp_priority)

    def miss(table: str, expected: str, found: object, at: str = port) -> None:
        out.append(Finding(sw, at, table, expected, "nothing" if found is None else str(found)))

    mtu = (_get(db, "PORT", port) or {}).get("mtu")
    if not str(mtu or "").isdigit() or int(mtu) < q.roce_frame_bytes:
        miss("PORT", f"mtu >= {q.roce_frame_bytes} (RoCE MTU {q.roce_mtu} with its headers)", mtu)
    qos = _get(db, "PORT_QOS_MAP", port)
    if qos is None:
        miss("PORT_QOS_MAP", "a row: the port's QoS maps and PFC", None)
        return out
    if roce not in _priorities(qos.get("pfc_enable")):
        miss("PORT_QOS_MAP", f"pfc_enable including {roce}", qos.get("pfc_enable"))
    if roce not in _priorities(qos.get("pfcwd_sw_enable")) or _get(db, "PFC_WD", port) is None:
        miss("PFC_WD", f"the PFC watchdog on priority {roce}",
             f"pfcwd_sw_enable={qos.get('pfcwd_sw_enable')}, PFC_WD row {'present' if _get(db, 'PFC_WD', port) else 'absent'}")

    def mapped(map_field: str, table: str, key: str) -> str | None:
        name = qos.get(map_field)
        row = _get(db, table, str(name)) if name else None
        if row is None:
            miss(table, f"map {name!r} (PORT_QOS_MAP.{map_field}) defined", None if not name else "no such map")
            return None
        return None if row.get(key) is None else str(row.get(key))

    tc = mapped("dscp_to_tc_map", "DSCP_TO_TC_MAP", str(q.roce_dscp))
    if tc is not None and tc != roce:
        miss("DSCP_TO_TC_MAP", f"DSCP {q.roce_dscp} -> TC {roce}", f"TC {tc}")
    cnp_tc = mapped("dscp_to_tc_map", "DSCP_TO_TC_MAP", str(q.cnp_dscp))
    if cnp_tc is not None and cnp_tc != cnp:
        miss("DSCP_TO_TC_MAP", f"CNP DSCP {q.cnp_dscp} -> TC {cnp}", f"TC {cnp_tc}")
    queue = mapped("tc_to_queue_map", "TC_TO_QUEUE_MAP", roce)
    if queue is not None and queue != roce:
        miss("TC_TO_QUEUE_MAP", f"TC {roce} -> queue {roce}", f"queue {queue}")
    pg = mapped("tc_to_pg_map", "TC_TO_PRIORITY_GROUP_MAP", roce)
    if pg is not None and pg != roce:
        miss("TC_TO_PRIORITY_GROUP_MAP", f"TC {roce} -> PG {roce}", f"PG {pg}")
    pfc_queue = mapped("pfc_to_queue_map", "MAP_PFC_PRIORITY_TO_QUEUE", roce)
    if pfc_queue is not None and pfc_queue != roce:
        miss("MAP_PFC_PRIORITY_TO_QUEUE", f"priority {roce} -> queue {roce}", f"queue {pfc_queue}")
    cnp_queue = mapped("tc_to_queue_map", "TC_TO_QUEUE_MAP", cnp) or cnp

    lossless_queue = _get(db, "QUEUE", f"{port}|{roce}") or {}
    wred = _get(db, "WRED_PROFILE", str(lossless_queue.get("wred_profile")))
    if wred is None or str(wred.get("ecn", "ecn_none")) == "ecn_none":
        miss("QUEUE", f"queue {roce} with a WRED profile that marks ECN",
             f"wred_profile={lossless_queue.get('wred_profile')}" + ("" if wred is None else f", ecn={wred.get('ecn')}"),
             f"{port}|{roce}")
    cnp_sched = _get(db, "SCHEDULER", str((_get(db, "QUEUE", f"{port}|{cnp_queue}") or {}).get("scheduler")))
    if cnp_sched is None or cnp_sched.get("type") != "STRICT":
        miss("QUEUE", f"CNP queue {cnp_queue} on a STRICT scheduler", None if cnp_sched is None else cnp_sched.get("type"),
             f"{port}|{cnp_queue}")
    for table, key, pool_kind in (("BUFFER_PG", f"{port}|{roce}", "ingress"), ("BUFFER_QUEUE", f"{port}|{roce}", "egress")):
        row = _get(db, table, key)
        profile = _get(db, "BUFFER_PROFILE", str((row or {}).get("profile")))
        if row is None or profile is None:
            miss(table, f"a {pool_kind} buffer profile for the lossless class, defined in BUFFER_PROFILE",
                 None if row is None else f"profile {row.get('profile')!r} undefined", key)
        elif _get(db, "BUFFER_POOL", str(profile.get("pool"))) is None:
            miss("BUFFER_PROFILE", f"pool {profile.get('pool')!r} defined in BUFFER_POOL", "no such pool", key)
        elif table == "BUFFER_PG" and not (profile.get("xoff") and profile.get("xon")):
            miss("BUFFER_PROFILE", "a lossless (xon/xoff) profile on the RoCE PG", f"profile {row.get('profile')!r}", key)
    lengths = next(iter(db.get("CABLE_LENGTH", {}).values()), {})
    if port not in lengths:
        miss("CABLE_LENGTH", "the port's cable length (it sizes the PFC headroom)", None)
    return out


def _link(a: str, a_port: str, a_db: dict, b: str, b_port: str, b_db: dict) -> list[Finding]:
    """Both ends of one switch-to-switch link: the same PFC priorities and the same MTU."""
    out = []
    pa = _priorities((_get(a_db, "PORT_QOS_MAP", a_port) or {}).get("pfc_enable"))
    pb = _priorities((_get(b_db, "PORT_QOS_MAP", b_port) or {}).get("pfc_enable"))
    if pa != pb:
        out.append(Finding(a, a_port, "PORT_QOS_MAP", f"pfc_enable as at its peer {b}:{b_port} "
                           f"({','.join(sorted(pb)) or 'none'})", ",".join(sorted(pa)) or "none"))
    ma = (_get(a_db, "PORT", a_port) or {}).get("mtu")
    mb = (_get(b_db, "PORT", b_port) or {}).get("mtu")
    if ma != mb:
        out.append(Finding(a, a_port, "PORT", f"mtu as at its peer {b}:{b_port} ({mb})", str(ma)))
    return out


def audit_lab(lab) -> LosslessAudit:
    """The running lab: every BE switch's CONFIG_DB as it runs (`Lab.running_config_db`) held
    to the lab's declaration, and every GPU NIC's MTU in its node's kernel (the first and last
    hop of every BE path)."""
    contract = contract_of(lab.plan)
    configs = {name: lab.running_config_db(name) for name in (*contract.be_switches, *contract.tenants)}
    result = audit(contract, configs)
    hosts: list[Finding] = []
    need = contract.lossless.roce_frame_bytes
    for host in lab.plan.hosts:
        nics = [n for n in host.nics if n.rail is not None]
        if not nics:
            continue
        mtus = lab.mtus(host.name)
        for nic in nics:
            if mtus.get(nic.name, 0) < need:
                hosts.append(Finding(host.name, nic.name, "kernel link", f"mtu >= {need} (RoCE MTU "
                                     f"{contract.lossless.roce_mtu} with its headers)", str(mtus.get(nic.name))))
    findings = result.findings + tuple(hosts)
    return replace(result, findings=findings, problems=tuple(str(f) for f in findings))
