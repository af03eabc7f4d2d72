"""The one stand-in for a running lab in unit tests: a `LabView` with the same signatures as
`harness.lab.Lab` (tests/architecture/test_lab_door.py holds it to that), answering from what a test
scripts (a recorded FRR answer, a node's MTUs, the shortfalls a wait sees in turn) and
refusing, by name, whatever it was not given, so a test never passes on an answer it did not
choose. A test that needs a real kernel or FRR is an integration test: tests/integration/.

    lab = FakeLab(plan, mtus={"gpu01": {"eth1": 9000}}, vtysh={("be-l1", "show bgp summary json"): "{}"})
"""
from __future__ import annotations

import subprocess
from collections.abc import Callable, Sequence
from ipaddress import IPv4Network
from pathlib import Path
from typing import Any

from harness.core.capabilities import Feature
from harness.core.lossless_counters import LosslessCounters


class NotScripted(AssertionError):
    """The code under test asked the lab something the test did not script."""


class FakeLab:
    def __init__(self, plan: Any, name: str = "fake", *, mtus: dict | None = None, vtysh: dict | None = None,
                 shortfalls: list | None = None, routes: dict | None = None, bgp: dict | None = None,
                 bfd: dict | None = None, counters: dict | None = None, sysctls: dict | None = None,
                 lacks: dict | None = None, run_dir: Path = Path("/nonexistent/fakelab")) -> None:
        self.plan, self.name, self.run_dir = plan, name, run_dir
        self.mtus_of, self.vtysh_answers = dict(mtus or {}), dict(vtysh or {})
        self.shortfall_looks = list(shortfalls or [])
        self.routes_of, self.bgp, self.bfd = dict(routes or {}), dict(bgp or {}), dict(bfd or {})
        self.counters_of, self.sysctls = dict(counters or {}), dict(sysctls or {})
        self.lacking = dict(lacks or {})  # Feature -> why the data plane lacks it (none lacked by default)
        self.extra_cables, self.asked = [], []

    def _refuse(self, member: str, *args: object) -> NotScripted:
        return NotScripted(f"FakeLab.{member}{args!r}: not scripted by this test")

    def _ask(self, member: str) -> None:
        self.asked.append(member)

    # -- a node's network namespace
    def check_node(self, node: str) -> None:
        self._ask("check_node")
        if node not in {n.name for n in (*self.plan.switches, *self.plan.hosts)}:
            raise self._refuse("check_node", node)

    def namespace(self, node: str) -> str:
        return f"{self.name}-{node}"

    def ns_exec(self, node: str, argv: Sequence[str], check: bool = False, timeout: float | None = 60.0,
                input: str | None = None) -> subprocess.CompletedProcess:
        raise self._refuse("ns_exec", node, tuple(argv))

    def netlink(self, node: str):
        raise self._refuse("netlink", node)

    def in_namespace(self, node: str, fn: Callable[[], Any]) -> Any:
        raise self._refuse("in_namespace", node)

    def sysctl(self, node: str, key: str) -> str:
        self._ask("sysctl")
        try:
            return self.sysctls[(node, key)]
        except KeyError:
            raise self._refuse("sysctl", node, key) from None

    def set_sysctls(self, node: str, values: dict[str, str | int]) -> None:
        self._ask("set_sysctls")
        self.sysctls.update({(node, k): str(v) for k, v in values.items()})

    def vtysh(self, node: str, *commands: str) -> str:
        self._ask("vtysh")
        key = (node, " ; ".join(commands))
        if key not in self.vtysh_answers:
            raise self._refuse("vtysh", node, *commands)
        return self.vtysh_answers[key]

    # -- cables
    def all_cables(self) -> list:
        return list(self.plan.cables) + list(self.extra_cables)

    def cables(self, a: str, b: str) -> list:
        return [c for c in self.all_cables() if {c.a_node, c.b_node} == {a, b}]

    def link(self, a: str, b: str, index: int = 0):
        raise self._refuse("link", a, b, index)

    def set_carriers(self, handles: Sequence[Any], up: bool) -> None:
        raise self._refuse("set_carriers", len(handles), up)

    def kernel_port_names(self) -> dict[tuple[str, str], str]:
        return {}

    def cabling_scope(self):
        raise self._refuse("cabling_scope")

    def lldp(self, node: str):
        raise self._refuse("lldp")

    def port_states(self, node: str):
        raise self._refuse("port_states")

    # -- observation
    def counters(self, node: str, ifname: str | None = None) -> dict:
        self._ask("counters")
        if node not in self.counters_of:
            raise self._refuse("counters", node, ifname)
        seen = self.counters_of[node]
        return {ifname: seen[ifname]} if ifname else dict(seen)

    def acl_counters(self, switch: str) -> dict[str, int]:
        raise self._refuse("acl_counters", switch)

    def set_config_db(self, switch: str, table: str, key: str, field: str, value: str | None) -> str | None:
        raise self._refuse("set_config_db", switch, table, key, field, value)

    def acl_data_path(self, switch: str) -> str | None:
        return self.lacks(Feature.ACL_DATA_PATH)

    def lacks(self, feature: Feature) -> str | None:
        return self.lacking.get(feature)

    def acl_rules(self, switch: str) -> dict[str, str]:
        raise self._refuse("acl_rules", switch)

    def running_config_db(self, switch: str) -> dict:
        raise self._refuse("running_config_db", switch)

    def set_pause_storm(self, node: str, port: str, priorities: frozenset[int]) -> None:
        raise self._refuse("set_pause_storm", node, port, priorities)

    def lossless_counters(self) -> LosslessCounters:
        raise self._refuse("lossless_counters")

    def mtus(self, node: str) -> dict[str, int]:
        self._ask("mtus")
        if node not in self.mtus_of:
            raise self._refuse("mtus", node)
        return dict(self.mtus_of[node])

    def routes(self, node: str) -> dict[IPv4Network, Any]:
        self._ask("routes")
        if node not in self.routes_of:
            raise self._refuse("routes", node)
        return dict(self.routes_of[node])

    def route(self, node: str, prefix: IPv4Network):
        return self.routes(node).get(prefix)

    def bgp_peers(self, node: str) -> tuple:
        self._ask("bgp_peers")
        if node not in self.bgp:
            raise self._refuse("bgp_peers", node)
        return self.bgp[node]

    def bfd_peers(self, node: str) -> tuple:
        self._ask("bfd_peers")
        if node not in self.bfd:
            raise self._refuse("bfd_peers", node)
        return self.bfd[node]

    def shortfalls(self) -> list:
        self._ask("shortfalls")
        if not self.shortfall_looks:
            raise self._refuse("shortfalls")
        seen = sum(1 for a in self.asked if a == "shortfalls")
        return self.shortfall_looks[min(seen - 1, len(self.shortfall_looks) - 1)]

    def logs(self, nodes) -> dict[str, str]:
        self._ask("logs")
        self.logs_asked = tuple(nodes)
        return {f"{n}/bgpd.log": f"{n}: the log a failed case keeps\n" for n in nodes}

    def daemon_pids(self, nodes) -> dict[str, int]:
        return {}

    def address(self, node: str, nic: str) -> str:
        host = self.plan.host(node)
        return str(host.nic(nic).address.ip)
