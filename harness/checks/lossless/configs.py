"""The lossless-audit case: what every switch's CONFIG_DB and every GPU node's kernel say,
held to the declaration's contract.

`measure_audit` reads a running lab: each switch's CONFIG_DB as it runs (with its ports'
MTUs as the kernel has them) and each GPU node's interface MTUs. `configs_of_dir` reads the
same from a render directory (`fablab audit --against TOPOLOGY DIR`), with no kernels.
`judge_audit` holds either to the contract of a plan, with no lab: every BE port and both
ends of every BE link (`hops`), every VTEP leaf's tenant tables and every FE port a tenant
frame crosses (`tenants`), and every GPU NIC's MTU (the first and last hop of every BE path).
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass, replace
from pathlib import Path

from harness.checks.base import Observation
from harness.checks.lossless.hops import link_findings, port_findings, read_db
from harness.checks.lossless.outcome import Finding, LosslessAudit
from harness.checks.lossless.tenants import tenant_path_findings, tenant_table_findings
from harness.core.errors import InputError
from harness.core.meaning import configdb_qos
from harness.core.meaning.configdb import port_settings
from harness.core.meaning.configdb_norm import check_shape
from harness.core.plan import Plan
from harness.plumbing.labview import LabView
from harness.render.configs import read_configs
from harness.render.lossless import Contract, contract_of

Value = str | int | float | bool | None  # a field as SONiC takes it: "9100" or 9100, "true" or true
Field = Value | tuple[Value, ...]  # a JSON list (ACL_TABLE ports) is kept as a tuple: observations are frozen
Config = dict[str, dict[str, dict[str, Field]]]  # table -> key -> field -> value

# The tables the audit reads (tests/judges/test_judge_lossless.py proves it reads no other):
# the rest of a CONFIG_DB (BREAKOUT_CFG, DEVICE_METADATA, MGMT_*) is never read, and left
# out it makes ai-cluster's observation a third smaller.
TABLES = frozenset({"PORT", "PORT_QOS_MAP", "QUEUE", "BUFFER_PG", "BUFFER_QUEUE", "PFC_WD", "CABLE_LENGTH",
                    "VLAN", "VLAN_MEMBER", "VLAN_INTERFACE", "INTERFACE", "VXLAN_TUNNEL", "VXLAN_TUNNEL_MAP",
                    "VXLAN_EVPN_NVO", "ACL_TABLE", "ACL_RULE", *configdb_qos.TABLES})


@dataclass(frozen=True)
class LosslessConfigs(Observation):
    """What the audit read: each switch's CONFIG_DB (the tables it reads), as it ran or as a
    render wrote it; and, on a lab, each GPU node's interface MTUs in its kernel."""

    configs: dict[str, Config]  # switch -> its CONFIG_DB; a switch not read is absent
    kernels: dict[str, dict[str, int]] | None = None  # GPU node -> interface -> MTU; None: no lab (a directory)


def frozen(db: dict) -> Config:
    """A config_db as an observation holds it: the audit's tables, lists as tuples."""
    return {table: {key: {name: tuple(v) if isinstance(v, list) else v for name, v in row.items()}
                    for key, row in rows.items()}
            for table, rows in db.items() if table in TABLES}


def thawed(config: Config) -> dict:
    """A config_db as SONiC writes it again (lists as lists), for the meaning readers."""
    return {table: {key: {name: list(v) if isinstance(v, tuple) else v for name, v in row.items()}
                    for key, row in rows.items()}
            for table, rows in config.items()}


def measure_audit(lab: LabView, against: Plan | None = None) -> LosslessConfigs:
    """Every switch and GPU node of the lab that the contract of `against` (the lab's own plan
    by default) holds to account, read as it runs now."""
    t0 = time.monotonic()
    plan = against or lab.plan
    running = {n.name for n in lab.plan.switches}
    configs = {}
    for name in contract_of(plan).switches:
        if name in running:
            db = lab.running_config_db(name)
            check_shape(name, db)  # a hand-edited CONFIG_DB SONiC would not load is bad input, not a finding
            configs[name] = frozen(db)
    hosts = {n.name for n in lab.plan.hosts}
    kernels = {h.name: lab.mtus(h.name) for h in plan.hosts
               if h.name in hosts and any(nic.rail is not None for nic in h.nics)}
    return LosslessConfigs(configs, kernels, seconds=round(time.monotonic() - t0, 2))


def load_dir(directory: Path, contract: Contract) -> dict[str, dict]:
    """Every config_db.json of a render directory that the contract (the declaration's, never
    one read from the directory) holds to account. A switch the declaration has and the
    directory lacks is left out: `audit` reports it as a finding."""
    directory = Path(directory)
    if not directory.is_dir():
        raise InputError(f"{directory}: no such directory; give a `fablab render` output directory")
    read = read_configs(directory, contract.switches, frr=False)  # checked as read: JSON, shape, YANG
    return {name: json.loads(text) for name, text in read.config_db.items()}


def configs_of_dir(directory: Path, contract: Contract) -> LosslessConfigs:
    """A render directory's configs as the audit's observation (no lab: no kernels)."""
    return LosslessConfigs({name: frozen(db) for name, db in load_dir(directory, contract).items()})


def judge_audit(plan: Plan, seen: LosslessConfigs) -> LosslessAudit:
    """The configs held to the plan's contract; on a lab, every GPU NIC's MTU too."""
    contract = contract_of(plan)
    result = audit(contract, {name: thawed(config) for name, config in seen.configs.items()})
    nics = () if seen.kernels is None else tuple(_gpu_nics(plan, contract, seen.kernels))
    return replace(result, findings=result.findings + nics, problems=result.problems + tuple(map(str, nics)),
                   seconds=seen.seconds)


def _gpu_nics(plan: Plan, contract: Contract, kernels: dict[str, dict[str, int]]) -> list[Finding]:
    out = []
    need = contract.lossless.roce_frame_bytes
    for host in plan.hosts:
        nics = [n for n in host.nics if n.rail is not None]
        if not nics:
            continue
        if host.name not in kernels:
            out.append(Finding(host.name, "", "node", "a GPU node of the declaration", "not in the lab"))
            continue
        for nic in nics:
            if kernels[host.name].get(nic.name, 0) < need:
                out.append(Finding(host.name, nic.name, "kernel link", f"mtu >= {need} (RoCE MTU "
                                   f"{contract.lossless.roce_mtu} with its headers)",
                                   str(kernels[host.name].get(nic.name))))
    return out


def audit(contract: Contract, configs: dict[str, dict]) -> LosslessAudit:
    """Every declared port of every BE switch against the contract, both ends of every BE link,
    every VTEP leaf's tenant tables, and every FE port a tenant frame crosses."""
    findings: list[Finding] = [Finding(name, "", "config_db.json", "the switch's configuration", "absent")
                               for name in contract.switches if name not in configs]
    for name in contract.switches:
        check_shape(name, configs.get(name, {}))
    across: list[Finding] = []  # after every port's own findings: a link names the hop twice
    ports = links = 0
    seen: set[tuple[str, str]] = set()
    reads = {name: read_db(configs.get(name, {})) for name in contract.be_switches}
    for name in contract.be_switches:
        db = configs.get(name, {})
        for port, far in sorted(contract.be_ports.get(name, {}).items()):
            ports += 1
            if port_settings(db, port) is None:
                findings.append(Finding(name, port, "PORT", f"a row for the port cabled to {far}", "absent"))
                continue
            findings += port_findings(contract.lossless, name, port, reads[name],
                                      contract.be_speeds.get(name, {}).get(port))
            peer, _, peer_port = far.partition(":")
            if peer not in contract.be_switches or (peer, peer_port) in seen:
                continue
            seen.add((name, port))
            if port_settings(configs.get(peer, {}), peer_port) is not None:  # an absent far end is its own finding
                links += 1
                across += link_findings(name, port, reads[name], peer, peer_port, reads[peer])
    findings += across
    for leaf, tables in sorted(contract.tenants.items()):
        findings += tenant_table_findings(leaf, tables, contract.l2_ports.get(leaf, ()), configs.get(leaf, {}))
    for name, needs in sorted(contract.fe_mtu.items()):
        findings += tenant_path_findings(name, needs, configs.get(name, {}))
    return LosslessAudit(contract, len(contract.be_switches), ports, links, tuple(findings), len(contract.tenants),
                         sum(len(needs) for needs in contract.fe_mtu.values()),
                         problems=tuple(str(f) for f in findings))

