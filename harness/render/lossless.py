"""The contract `fablab audit` holds configs to, computed from a declaration's plan: the
lossless settings of the BE, and the FE tenant tables of every VTEP leaf.

A render also writes it as lossless.json, for people to read. Nothing reads that file back:
it travels with the configs it would judge, so an edited copy beside edited configs would make
them pass. The audit computes the contract from the declaration it is given (`--against`) or
the one a running lab was booted from."""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field

from harness.core.model import Lossless

CONTRACT_FILE = "lossless.json"


@dataclass(frozen=True)
class Contract:
    """What the audit holds the configs to: the declaration, which switches are on the BE, and
    per VTEP leaf the tenant tables the declaration makes (VLAN, VLAN_MEMBER, VXLAN_*,
    ACL_TABLE, ACL_RULE), with the ports that must stay L2."""

    lossless: Lossless
    be_switches: tuple[str, ...]
    tenants: dict[str, dict[str, dict]] = field(default_factory=dict)  # leaf -> table -> key -> fields
    l2_ports: dict[str, tuple[str, ...]] = field(default_factory=dict)  # leaf -> tenant member ports
    # BE switch -> port -> "peer:peer_port": the cabling the audit walks, so that a port row
    # gone or a description changed in the configs under test cannot hide a hop
    be_ports: dict[str, dict[str, str]] = field(default_factory=dict)
    # FE switch -> port -> the least MTU that carries a tenant frame there: the tenant MTU on
    # a member port, that plus VXLAN's overhead on every fabric port a tenant frame crosses
    fe_mtu: dict[str, dict[str, int]] = field(default_factory=dict)
    # BE switch -> port -> its declared speed in Gb/s (both ends at the same wrong speed pass a
    # comparison of the two ends; the declaration does not)
    be_speeds: dict[str, dict[str, int]] = field(default_factory=dict)

    @property
    def switches(self) -> tuple[str, ...]:
        """Every switch whose config_db the audit reads."""
        return tuple(dict.fromkeys((*self.be_switches, *self.tenants, *self.fe_mtu)))

    def to_json(self) -> str:
        return json.dumps({"lossless": asdict(self.lossless), "be_switches": list(self.be_switches),
                           "tenants": self.tenants, "l2_ports": {k: list(v) for k, v in self.l2_ports.items()},
                           "be_ports": self.be_ports, "fe_mtu": self.fe_mtu, "be_speeds": self.be_speeds},
                          indent=1, sort_keys=True) + "\n"


def contract_of(plan) -> Contract:
    from harness.render.sonic import tenant_tables

    leaves = [s for s in plan.switches if s.vnis]
    be = [s for s in plan.switches if s.lossless]
    return Contract(plan.fabric.cluster.lossless, tuple(s.name for s in be),
                    {s.name: tenant_tables(plan, s) for s in leaves},
                    {s.name: tuple(p.name for p in s.tenant_ports) for s in leaves},
                    {s.name: {p.name: f"{p.peer}:{p.peer_port}" for p in s.ports} for s in be},
                    {s: dict(ports) for s, ports in plan.tenant_mtus.items()},
                    {s.name: {p.name: p.speed for p in s.ports} for s in be})

