"""lossless.json: the contract a render declares, beside its configs, so that `fablab audit
DIR` holds the configs to the declaration and not to themselves: the lossless settings of the
BE, and the FE tenant tables of every VTEP leaf."""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field

from harness.errors import HarnessError
from harness.model import Lossless, Plane, check_lossless
from harness.tenancy import VXLAN_OVERHEAD

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

    @property
    def switches(self) -> tuple[str, ...]:
        """Every switch whose config_db the audit reads."""
        return tuple(dict.fromkeys((*self.be_switches, *self.tenants, *self.fe_mtu)))

    def to_json(self) -> str:
        return json.dumps({"lossless": asdict(self.lossless), "be_switches": list(self.be_switches),
                           "tenants": self.tenants, "l2_ports": {k: list(v) for k, v in self.l2_ports.items()},
                           "be_ports": self.be_ports, "fe_mtu": self.fe_mtu},
                          indent=1, sort_keys=True) + "\n"

    @classmethod
    def from_json(cls, text: str, source: str) -> Contract:
        try:
            data = json.loads(text)
            if not isinstance(data, dict):
                raise TypeError(f"a {type(data).__name__}, not an object")
            for name in ("tenants", "l2_ports", "be_ports", "fe_mtu"):
                if not isinstance(data.get(name, {}), dict) or not all(
                        isinstance(v, (dict, list)) for v in data.get(name, {}).values()):
                    raise TypeError(f"{name} is not an object of switches")
            lossless = Lossless(**data["lossless"])
            bad = [k for k, v in asdict(lossless).items() if isinstance(v, bool) or not isinstance(v, int)]
            problems = [f"lossless.{k} is not an integer" for k in bad] or [
                str(p) for p in check_lossless(lossless, be_mtu=1 << 30)]
            if problems:
                raise TypeError("; ".join(problems))
            return cls(lossless, tuple(data["be_switches"]), data.get("tenants", {}),
                       {k: tuple(v) for k, v in data.get("l2_ports", {}).items()}, data.get("be_ports", {}),
                       data.get("fe_mtu", {}))
        except (ValueError, KeyError, TypeError) as e:
            raise HarnessError(f"{source}: not a lossless contract ({e}); render the topology again") from e


def contract_of(plan) -> Contract:
    from harness.render.sonic import tenant_tables

    leaves = [s for s in plan.switches if s.vnis]
    be = [s for s in plan.switches if s.lossless]
    return Contract(plan.fabric.cluster.lossless, tuple(s.name for s in be),
                    {s.name: tenant_tables(plan, s) for s in leaves},
                    {s.name: tuple(p.name for p in s.tenant_ports) for s in leaves},
                    {s.name: {p.name: f"{p.peer}:{p.peer_port}" for p in s.ports} for s in be},
                    _tenant_path_mtus(plan))


def _tenant_path_mtus(plan) -> dict[str, dict[str, int]]:
    if not plan.tenants:
        return {}
    frame = plan.fabric.cluster.frontend.mtu - VXLAN_OVERHEAD
    return {s.name: {p.name: frame if p.vlans else frame + VXLAN_OVERHEAD for p in s.ports if p.vlans or p.unnumbered}
            for s in plan.switches if s.plane is Plane.FE}
