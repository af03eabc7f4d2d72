"""Switch kinds: how a switch's running config and its edge ACL are read and changed, apart
from the runtime that boots it (containerlab's nodes/sonic_vs is a kind; its docker runtime is
another thing). A runtime holds one kind for its switches and hands it a `NodeAccess`: how to
run a tool in the node, and where the node's files are.

- SONiC-VS (the clab runtime): CONFIG_DB in the switch's redis (`sonic-cfggen -d`,
  `sonic-db-cli`), the ACL as SONiC shows it (`aclshow -a`, `show acl rule`).
- FRR in a namespace (the netns runtime): no SONiC runs, so CONFIG_DB is the config_db.json the
  switch was booted with, in the lab's run directory, with each port's MTU as the kernel has it;
  the ACL is the nftables table that enforces it, and a rule with a counter is a rule in force.

A host is no switch: it has neither (`LINUX_HOST` has no SwitchKind).
"""
from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from harness.core.errors import LabError
from harness.core.kinds import NodeKind
from harness.runtime import configdb, tenants

Run = Callable[[list[str]], subprocess.CompletedProcess]  # argv -> completed, output captured as text


@dataclass(frozen=True)
class NodeAccess:
    """What a kind needs of one node of a running lab."""

    lab: str
    node: str
    run: Run  # a tool of the node's own (its filesystem and namespace)
    directory: Path  # the node's files in the lab's run directory
    kernel_mtus: Callable[[], dict[str, int]]  # interface -> MTU, as the node's kernel has them now

    def output(self, argv: list[str], what: str) -> str:
        done = self.run(argv)
        if done.returncode != 0:
            raise LabError(f"{self.node}: {what} failed: {(done.stderr or done.stdout).strip()[-400:]}")
        return done.stdout


class SwitchKind(Protocol):
    kind: NodeKind

    def running_config_db(self, node: NodeAccess) -> dict:
        """The switch's CONFIG_DB as it runs now (SONiC's tables), with the kernel's port MTUs."""
        ...

    def set_config_db(self, node: NodeAccess, table: str, key: str, field: str, value: str | None) -> str | None:
        """Set (None: remove) one field of the running CONFIG_DB; the value it had."""
        ...

    def acl_counters(self, node: NodeAccess) -> dict[str, int]:
        """Packets each FE edge ACL entry matched, by entry name."""
        ...

    def acl_rules(self, node: NodeAccess) -> dict[str, str]:
        """Every FE edge ACL rule the switch has loaded, by entry name -> its status."""
        ...


class SonicVs:
    """docker-sonic-vs. Not run on this machine (no SONiC image): held to SONiC's own outputs
    in tests/unit/test_clab_runtime.py."""

    kind = NodeKind.SONIC_VS

    def running_config_db(self, node: NodeAccess) -> dict:
        out = node.output(["sonic-cfggen", "-d", "--print-data"], "reading CONFIG_DB (sonic-cfggen -d --print-data)")
        try:
            return json.loads(out)
        except ValueError as e:
            raise LabError(f"{node.node}: CONFIG_DB dump is not JSON ({e})") from e

    def set_config_db(self, node: NodeAccess, table: str, key: str, field: str, value: str | None) -> str | None:
        def db(*args: str) -> str:
            return node.output(["sonic-db-cli", "CONFIG_DB", *args], f"sonic-db-cli CONFIG_DB {' '.join(args)}").strip()

        old = db("HGET", f"{table}|{key}", field) or None
        db(*(("HDEL", f"{table}|{key}", field) if value is None else ("HSET", f"{table}|{key}", field, value)))
        return old

    def acl_counters(self, node: NodeAccess) -> dict[str, int]:
        return tenants.aclshow_counters(node.output(["aclshow", "-a"], "aclshow -a"))

    def acl_rules(self, node: NodeAccess) -> dict[str, str]:
        return tenants.show_acl_rules(node.output(["show", "acl", "rule"], "show acl rule"))


class FrrNetns:
    """FRR in a network namespace, the kernel forwarding: what the netns runtime runs."""

    kind = NodeKind.FRR_NETNS

    def running_config_db(self, node: NodeAccess) -> dict:
        return configdb.with_mtus(configdb.read_booted(node.directory / "config_db.json", node.lab),
                                  node.kernel_mtus())

    def set_config_db(self, node: NodeAccess, table: str, key: str, field: str, value: str | None) -> str | None:
        return configdb.set_field(node.directory / "config_db.json", table, key, field, value)

    def acl_counters(self, node: NodeAccess) -> dict[str, int]:
        out = node.output(["nft", "-j", "list", "table", "bridge", tenants.NFT_TABLE], "reading the edge ACL's counters")
        return tenants.nft_counters(out)

    def acl_rules(self, node: NodeAccess) -> dict[str, str]:
        return {name: "Active" for name in self.acl_counters(node)}  # nft has no other state


SWITCH_KINDS: dict[NodeKind, SwitchKind] = {NodeKind.SONIC_VS: SonicVs(), NodeKind.FRR_NETNS: FrrNetns()}
