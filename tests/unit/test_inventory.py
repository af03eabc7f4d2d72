"""The inventory of a staged fabric: read, checked against its declaration, and written back
(fablab inventory LAB) as it is read; every problem named by its field, before anything is reached."""
from __future__ import annotations

import pytest

from harness.core.errors import InputError, TopologyError
from harness.core.inventory import (Inventory, InventoryNode, RemoteKind, check_against, inventory_yaml,
                                    parse_inventory)

GOOD = """\
# the staging floor, as the engineer's automation writes it
topology: ai-cluster
known_hosts: ~/.ssh/known_hosts
defaults:
  user: admin
  key: ~/.ssh/staging_ed25519
nodes:
  be-s1: {address: 10.250.0.14}
  fe-l1: {address: 10.250.0.20, kind: frr, config_db: /etc/sonic/config_db.json, sudo: true}
  gpu01:
    address: 10.250.0.2
    user: root
    port: 2222
"""


def test_a_good_inventory_reads_with_its_defaults_and_kinds_by_role():
    inv = check_against(parse_inventory(GOOD, "floor.yml"), {"be-s1", "fe-l1", "gpu01", "gpu02"}, {"gpu01", "gpu02"})
    assert inv.topology == "ai-cluster" and inv.known_hosts == "~/.ssh/known_hosts"
    assert inv.node("be-s1") == InventoryNode("be-s1", "10.250.0.14", RemoteKind.SONIC, "admin", "~/.ssh/staging_ed25519")
    fe = inv.node("fe-l1")
    assert fe.kind is RemoteKind.FRR and fe.sudo and fe.config_db == "/etc/sonic/config_db.json"
    gpu = inv.node("gpu01")
    assert (gpu.kind, gpu.user, gpu.port) == (RemoteKind.LINUX, "root", 2222)  # a host of the plan: linux
    assert inv.node("gpu02") is None  # in the plan, not in the inventory: not reached, not an error


@pytest.mark.parametrize("text, fields", [
    ("topology: x\nnodes: {a: {address: 1.2.3}}", ["nodes.a.address"]),
    ("topology: x\nnodes: {a: {address: 10.0.0.1, kind: cisco}}", ["nodes.a.kind"]),
    ("topology: x\nnodes: {a: {address: 10.0.0.1, port: 70000}}", ["nodes.a.port"]),
    ("topology: x\nnodes: {a: {address: 10.0.0.1, password: hunter2}}", ["nodes.a.password"]),
    ("topology: x\ndefaults: {colour: red}\nnodes: {a: {address: 10.0.0.1}}", ["defaults.colour"]),
    ("nodes: {a: {address: 10.0.0.1, sudo: maybe}}\nextra: 1", ["extra", "topology", "nodes.a.sudo"]),
    ("topology: x\nnodes: {}", ["nodes"]),
    ("topology: x\nknown_hosts: 3\nnodes: {a: {address: 10.0.0.1}}", ["known_hosts"]),
])
def test_every_problem_is_named_by_its_field(text, fields):
    with pytest.raises(TopologyError) as e:
        parse_inventory(text, "bad.yml")
    assert [p.field for p in e.value.problems] == fields
    assert str(e.value).startswith("bad.yml: ") and "in the inventory" in str(e.value)
    assert "hunter2" not in str(e.value)  # a password written where none belongs is never echoed


def test_not_yaml_is_named_with_its_line():
    with pytest.raises(InputError, match=r"bad.yml:3: not YAML"):
        parse_inventory("topology: x\nnodes:\n  a: {address: 10.0.0.1: 2}\n", "bad.yml")


def test_a_node_the_declaration_lacks_is_named_with_the_declarations_nodes():
    inv = parse_inventory("topology: ai-cluster\nnodes: {be-s9: {address: 10.0.0.9}, be-s1: {address: 10.0.0.1}}", "f")
    with pytest.raises(TopologyError, match=r"nodes.be-s9: is no node of ai-cluster") as e:
        check_against(inv, {"be-s1", "be-s2"}, set())
    assert len(e.value.problems) == 1  # the control: be-s1 is one of them


def test_written_inventory_reads_back_the_same():
    inv = check_against(parse_inventory(GOOD, "floor.yml"), {"be-s1", "fe-l1", "gpu01"}, {"gpu01"})
    again = parse_inventory(inventory_yaml(inv, "written back"), "again.yml")
    assert again.nodes == inv.nodes and again.topology == inv.topology and again.known_hosts == inv.known_hosts


def test_an_empty_inventory_is_a_mapping_error():
    with pytest.raises(InputError, match="an inventory is a mapping"):
        parse_inventory("- a\n- b\n", "list.yml")
    assert isinstance(Inventory("x", "y", ()), Inventory)
