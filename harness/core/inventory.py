"""An inventory: how to reach each node of a staged fabric over SSH, and the declaration the
fabric must match (`fablab check --inventory FILE`).

    # the fabric as cabled and configured on the staging floor
    topology: ai-cluster            # what it must match: a built-in, a .py declaration, a cabling plan
    known_hosts: ~/.ssh/known_hosts # optional: the nodes' host keys must be in it
    defaults: {user: admin, key: ~/.ssh/staging_ed25519}
    nodes:
      be-s1:  {address: 10.250.0.14}                    # a SONiC switch (a switch's default kind)
      gpu01:  {address: 10.250.0.2, user: root}         # a GPU host (a host's default: linux)
      fe-l1:  {address: 10.250.0.20, kind: frr, config_db: /etc/sonic/config_db.json}

A node's `kind` says which commands answer it (harness/remote/commands.py): `sonic` (SONiC's
own CLI), `frr` (FRR on Linux, its CONFIG_DB kept in a file), `linux` (a host: iproute2, lldpd).
The key is a path, never its contents; a password is never read. Only what can be checked
before anything is reached is checked here: unknown fields, kinds, addresses, ports, and
nodes the declaration does not have, each named by its field.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from enum import StrEnum
from ipaddress import IPv4Address, IPv6Address, ip_address

import yaml

from harness.core.errors import InputError, Problem, TopologyError
from harness.core.inputfile import quoted, yaml_of


class RemoteKind(StrEnum):
    SONIC = "sonic"  # SONiC: show lldp table, sonic-cfggen -d, show pfc counters, sudo vtysh
    FRR = "frr"  # FRR on Linux (fablab's netns switches): vtysh, iproute2, lldpctl, CONFIG_DB in a file
    LINUX = "linux"  # a host: iproute2 and lldpctl


@dataclass(frozen=True)
class InventoryNode:
    name: str
    address: str
    kind: RemoteKind | None  # None: by its role in the plan (check_against)
    user: str = "admin"
    key: str | None = None  # a private key's path; None: the SSH agent's and ~/.ssh's default keys
    port: int = 22
    sudo: bool = False  # run privileged reads (vtysh, lldpctl) under sudo -n
    config_db: str | None = None  # frr: the file its running CONFIG_DB is kept in
    lldp_socket: str | None = None  # lldpctl -u, where lldpd's socket is not the default one
    vty_socket: str | None = None  # vtysh --vty_socket, where FRR's sockets are not in the default directory


@dataclass(frozen=True)
class Inventory:
    source: str  # the file, or "lab NAME" for a lab's own mgmt plane
    topology: str  # what the fabric must match (a built-in name or a path), as written
    nodes: tuple[InventoryNode, ...]
    known_hosts: str | None = None  # the nodes' host keys must be in it; None: a key first seen is accepted

    def node(self, name: str) -> InventoryNode | None:
        return next((n for n in self.nodes if n.name == name), None)


_NODE_FIELDS = {"address", "kind", "user", "key", "port", "sudo", "config_db", "lldp_socket", "vty_socket"}
_TOP_FIELDS = {"topology", "defaults", "nodes", "known_hosts"}


def parse_inventory(text: str, source: str) -> Inventory:
    """The inventory in `text` (YAML) read from `source`; every problem at once, by field."""
    doc = yaml_of(text, source)
    if not isinstance(doc, dict):
        raise InputError(f"{source}: an inventory is a mapping with topology, defaults and nodes "
                         "(docs/staged.md)")
    problems = [Problem(str(k), "is not an inventory field", f"use {', '.join(sorted(_TOP_FIELDS))}")
                for k in doc if k not in _TOP_FIELDS]
    topology = doc.get("topology")
    if not isinstance(topology, str) or not topology:
        problems.append(Problem("topology", "names no declaration",
                                "the built-in, .py declaration or cabling plan the fabric must match"))
    defaults = doc.get("defaults") or {}
    if not isinstance(defaults, dict):
        problems.append(Problem("defaults", "is not a mapping", "e.g. defaults: {user: admin, key: ~/.ssh/id_ed25519}"))
        defaults = {}
    problems += [Problem(f"defaults.{k}", "is not a node field", f"use {', '.join(sorted(_NODE_FIELDS - {'address'}))}")
                 for k in defaults if k not in _NODE_FIELDS - {"address"}]
    nodes = doc.get("nodes")
    if not isinstance(nodes, dict) or not nodes:
        problems.append(Problem("nodes", "lists no node", "nodes: {NAME: {address: A.B.C.D}, ...}"))
        nodes = {}
    parsed = []
    for name, fields in nodes.items():
        node, found = _node(str(name), fields, defaults)
        problems += found
        if node is not None:
            parsed.append(node)
    known_hosts = doc.get("known_hosts")
    if known_hosts is not None and (not isinstance(known_hosts, str) or not known_hosts):
        problems.append(Problem("known_hosts", f"{known_hosts!r} is not a path", "an OpenSSH known_hosts file"))
    if problems:
        raise TopologyError(problems, source, "inventory")
    return Inventory(source, topology, tuple(parsed), known_hosts)


def _node(name: str, fields: object, defaults: dict) -> tuple[InventoryNode | None, list[Problem]]:
    where = f"nodes.{name}"
    if not isinstance(fields, dict):
        return None, [Problem(where, "is not a mapping", "e.g. {address: 10.250.0.14}")]
    problems = [Problem(f"{where}.{k}", "is not a node field", f"use {', '.join(sorted(_NODE_FIELDS))}")
                for k in fields if k not in _NODE_FIELDS]
    merged = {**defaults, **fields}
    address = merged.get("address", "")
    address = str(address) if isinstance(address, (str, int)) and not isinstance(address, bool) else repr(address)
    try:
        parsed: IPv4Address | IPv6Address = ip_address(address)
        address = str(parsed)
    except ValueError:
        problems.append(Problem(f"{where}.address", f"{quoted(address)} is not an IP address",
                                "the node's management address"))
    kind = merged.get("kind")
    if kind is not None and (not isinstance(kind, str) or kind not in {k.value for k in RemoteKind}):
        problems.append(Problem(f"{where}.kind", f"{quoted(kind)} is not a kind", ", ".join(k.value for k in RemoteKind)))
        kind = None
    port = merged.get("port", 22)
    if not isinstance(port, int) or isinstance(port, bool) or not 0 < port < 65536:
        problems.append(Problem(f"{where}.port", f"{port!r} is not a TCP port", "1-65535; 22 by default"))
        port = 22
    for text_field in ("user", "key", "config_db", "lldp_socket", "vty_socket"):
        value = merged.get(text_field)
        if value is not None and (not isinstance(value, str) or not value):
            problems.append(Problem(f"{where}.{text_field}", f"{value!r} is not a string", "a name or a path"))
    sudo = merged.get("sudo", False)
    if not isinstance(sudo, bool):
        problems.append(Problem(f"{where}.sudo", f"{sudo!r} is not true or false", "sudo: true"))
    if problems:
        return None, problems
    return InventoryNode(name, address, RemoteKind(kind) if kind else None, str(merged.get("user", "admin")),
                         merged.get("key"), port, sudo, merged.get("config_db"), merged.get("lldp_socket"),
                         merged.get("vty_socket")), []


def check_against(inventory: Inventory, nodes: set[str], hosts: set[str]) -> Inventory:
    """Every node of the inventory is one of the declaration's; a kind left out is `linux` for
    a host of the plan and `sonic` for a switch."""
    unknown = [n.name for n in inventory.nodes if n.name not in nodes]
    if unknown:
        listed = ", ".join(sorted(nodes)[:8]) + (" …" if len(nodes) > 8 else "")
        raise TopologyError([Problem(f"nodes.{n}", f"is no node of {inventory.topology}", f"its nodes: {listed}")
                             for n in unknown], inventory.source, "inventory")
    fixed = tuple(n if n.kind is not None else
                  replace(n, kind=RemoteKind.LINUX if n.name in hosts else RemoteKind.SONIC)
                  for n in inventory.nodes)
    return replace(inventory, nodes=fixed)


@dataclass(frozen=True)
class Reach:
    """How this machine reaches a fabric's management network: the inventory, the network
    namespace the connections start in (a lab's management station; None: this process's
    own), and a known_hosts file the nodes' host keys must be in (None: first seen, kept)."""

    inventory: Inventory
    station_netns: str | None = None
    known_hosts: str | None = None


def inventory_yaml(inventory: Inventory, comment: str) -> str:
    """The inventory as `parse_inventory` reads it back."""
    nodes = {}
    for n in inventory.nodes:
        fields = {"address": n.address, "kind": str(n.kind) if n.kind else None, "user": n.user, "key": n.key,
                  "port": n.port if n.port != 22 else None, "sudo": n.sudo or None, "config_db": n.config_db,
                  "lldp_socket": n.lldp_socket, "vty_socket": n.vty_socket}
        nodes[n.name] = {k: v for k, v in fields.items() if v is not None}
    doc = {"topology": inventory.topology, **({"known_hosts": inventory.known_hosts} if inventory.known_hosts else {}),
           "nodes": nodes}
    return f"# {comment}\n" + yaml.safe_dump(doc, sort_keys=False, default_flow_style=None, width=200)
