"""What the clab runtime does differently, proven on a running netns lab: the same checks must
give the same verdict.

- The ACL: docker-sonic-vs has no ACL data path, so on clab the tenants check must not probe
  the ACL with frames (they would prove nothing) and must say so, proving the rules loaded
  instead (`show acl rule`). No SONiC runs here: the clab runtime's own ACL methods are driven
  with `docker exec` answered from each leaf's rendered config_db, and everything else (the
  tenants' segments, EVPN, frames) is the running netns lab's.
- eth0: on clab a switch's management port is kept apart by init.sh with iptables, on netns by
  nft. With a switch's nft table swapped for init.sh's own rules, the isolation check must
  still pass; with neither, it must name the leak."""
from __future__ import annotations

import json
import os
import re
import subprocess

import pytest

from harness.checks.registry import case, run_case
from harness.core.capabilities import Feature, lacks
from harness.lab import Lab
from harness.render import artifacts
from harness.render.sonic import config_db_json
from harness.runtime.clab import ClabRuntime
from harness.runtime.netns_setup import MGMT_TABLE, switch_rules
from topologies import BUILTINS

from .conftest import leftovers_of


@pytest.fixture(scope="module")
def tenanted():
    name = f"t{os.getpid() % 100000}c"
    with Lab.up(BUILTINS["ai-cluster"](), name=name) as running:
        assert len(running.plan.tenants) >= 2
        yield running
    assert leftovers_of(name) == []


class ClabAclFace:
    """This lab as the clab runtime shows its ACL: the clab runtime's own answers (no ACL data
    path on SONiC-VS; the rules from `show acl rule`), with `docker exec ... show acl rule`
    answered by SONiC's table of the rules each leaf's config_db holds (`drop`: one left out).
    Everything else is the running lab."""

    def __init__(self, lab, drop: tuple[str, str] | None = None) -> None:
        self._lab, self._drop = lab, drop
        self._clab = ClabRuntime(run=self._docker_exec)

    def __getattr__(self, name):
        return getattr(self._lab, name)

    def acl_data_path(self, switch: str) -> str | None:
        return lacks(self._clab.name, Feature.ACL_DATA_PATH)

    def acl_rules(self, switch: str) -> dict[str, str]:
        return self._clab.switch_kind.acl_rules(self._clab.node_access(self._lab.name, switch))

    def _docker_exec(self, argv, **kwargs):
        assert argv[:3] == ["docker", "exec", "-i"] and argv[4:] == ["show", "acl", "rule"], argv
        leaf = argv[3].removeprefix(f"fablab-{self._lab.name}-")
        db = json.loads(config_db_json(self._lab.plan, self._lab.plan.switch(leaf)))
        rows = [("Table", "Rule", "Priority", "Action", "Match", "Status")]
        for key, rule in db.get("ACL_RULE", {}).items():
            table, name = key.split("|")
            if (leaf, name) != self._drop:
                rows.append((table, name, rule["PRIORITY"], rule["PACKET_ACTION"], "IP_TYPE: IPV4ANY", "Active"))
        widths = [max(len(r[k]) for r in rows) for k in range(6)]  # tabulate's "simple" layout
        lines = ["  ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip() for r in rows]
        lines.insert(1, "  ".join("-" * w for w in widths))
        return subprocess.CompletedProcess(argv, 0, "\n".join(lines) + "\n", "")


def test_on_sonic_vs_the_acl_is_proven_as_configuration(tenanted):
    """docker-sonic-vs filters nothing by its ACL: on the clab runtime the check sends no ACL
    frame, says why, and proves every rule loaded on every VTEP leaf instead (the tenants'
    segments and EVPN still with frames). Its control: a rule missing on one leaf fails it."""
    face = ClabAclFace(tenanted)
    result = run_case(case("tenants"), face)
    assert result.passed, result.reason
    assert "no ACL data path" in result.acl_not_probed and "ACL data path not applicable" in result.reason
    assert result.acl_entries == 0 and result.acl_rules > 0 and result.controls_landed == result.controls > 0
    leaf = next(s.name for s in tenanted.plan.switches if s.vnis)
    rule = tenanted.plan.acl[0].name
    broken = run_case(case("tenants"), ClabAclFace(tenanted, drop=(leaf, rule)))
    assert not broken.passed and broken.acl_rules_missing == (f"{leaf}: rule {rule} is not loaded",), broken.reason


def separate_mgmt(lab, switch: str) -> str:
    """init.sh's own eth0 step, as rendered for this switch: its settings and the function."""
    text = artifacts(lab.plan)[f"configs/{switch}/init.sh"]
    settings = [line for line in text.splitlines() if line.startswith(("MGMT=", "MGMT_IP=", "MGMT_BROADCAST="))]
    function = re.search(r"^separate_mgmt\(\) \{\n.*?^\}\n", text, re.S | re.M).group(0)
    return "\n".join(settings) + "\n" + function + "separate_mgmt\n"


def test_init_sh_keeps_eth0_apart_as_the_netns_runtime_does(tenanted):
    switch = next(s for s in tenanted.plan.switches if s.rails)  # a BE leaf
    tenanted.ns_exec(switch.name, ["nft", "delete", "table", "inet", MGMT_TABLE], check=True)
    try:
        open_ = run_case(case("isolation"), tenanted)  # the control: nothing keeps eth0 apart
        assert not open_.passed and any(switch.name in str(leak) for leak in open_.leaks), open_.reason
        tenanted.ns_exec(switch.name, ["bash", "-c", separate_mgmt(tenanted, switch.name)], check=True)
        held = run_case(case("isolation"), tenanted)
        assert held.passed, held.reason
        assert held.controls_delivered == held.controls > 0
    finally:
        for cmd in ("iptables", "ip6tables"):
            tenanted.ns_exec(switch.name, ["bash", "-c", f"{cmd} -w -F && {cmd} -w -X"])
        tenanted.ns_exec(switch.name, ["nft", "-f", "-"], input=switch_rules(switch), check=True)
    assert run_case(case("isolation"), tenanted).passed
