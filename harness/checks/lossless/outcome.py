"""The lossless audit's verdict: each finding names the switch (or GPU node), the port, the
table and what was expected, as an engineer fixing it would need."""
from __future__ import annotations

from dataclasses import dataclass

from harness.checks.base import Outcome, Table
from harness.render.lossless import Contract


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
