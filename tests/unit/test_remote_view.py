"""A fabric over SSH, with the SSH scripted: which command each kind of node is asked, how its
answer is read (SONiC's own `show lldp table` from sonic-utilities' tests), what is refused over
SSH and why, a node that cannot be reached named in the case, and the report's account of it,
which never holds a credential."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.checks.base import NotMeasurable
from harness.core.capabilities import Feature
from harness.core.inventory import Inventory, InventoryNode, Reach, RemoteKind
from harness.remote.commands import Read, command, read_only
from harness.remote.ssh import Ran, Unreachable
from harness.remote.view import RemoteView
from harness.traffic.probe import OpenProbes

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "sonic_show"


class ScriptedSsh:
    """Answers each command from a table; a node in `dead` is unreachable."""

    def __init__(self, answers: dict[tuple[str, str], str], dead: set[str] = frozenset()) -> None:
        self.answers, self.dead = answers, dead
        self.transcript: list[Ran] = []
        self.unreachable: dict[str, str] = {}
        self.fingerprints: dict[str, str] = {}
        self.case = ""

    def run(self, node: InventoryNode, line: str, timeout: float = 60.0) -> str:
        if node.name in self.dead:
            self.unreachable[node.name] = "no TCP connection to port 22: Connection refused"
            raise Unreachable(f"{node.name} ({node.address}): no TCP connection to port 22: Connection refused")
        self.transcript.append(Ran(node.name, node.address, line, 0, 0.01, self.case))
        self.fingerprints[node.name] = "ssh-ed25519 SHA256:x"
        return self.answers[(node.name, line)]

    def close(self) -> None:
        pass


SONIC = InventoryNode("be-s1", "10.250.0.14", RemoteKind.SONIC, "admin", "/home/eng/.ssh/secret_key", sudo=True)
FRR = InventoryNode("be-g1-r0", "10.250.0.3", RemoteKind.FRR, "root", config_db="/etc/sonic/config db.json",
                    lldp_socket="/run/l.sock", vty_socket="/run/frr/x")
HOST = InventoryNode("gpu01", "10.250.0.2", RemoteKind.LINUX, "root")


def test_each_kind_is_asked_as_the_real_system_answers():
    assert command(SONIC, Read.LLDP) == "sudo -n show lldp table"
    assert command(SONIC, Read.CONFIG_DB) == "sudo -n sonic-cfggen -d --print-data"
    assert command(SONIC, Read.BGP) == "sudo -n vtysh -c 'show bgp ipv4 unicast summary json'"
    assert command(SONIC, Read.ROUTES) == "ip -j -4 route show table main"  # no sudo for a read any user may do
    assert command(FRR, Read.CONFIG_DB) == "cat '/etc/sonic/config db.json'"  # quoted: a path is not a command
    assert command(FRR, Read.LLDP) == "lldpctl -f json -u /run/l.sock"
    assert command(FRR, Read.BFD) == "vtysh --vty_socket /run/frr/x -c 'show bfd peers json'"
    assert command(HOST, Read.LLDP) == "lldpctl -f json" and command(HOST, Read.BGP) is None
    assert command(HOST, Read.CONFIG_DB) is None and command(SONIC, Read.PFC) == "show pfc counters"


def _view(ai_plan, answers, dead=frozenset(), nodes=(SONIC, FRR, HOST)):
    view = RemoteView(ai_plan, Reach(Inventory("floor.yml", "ai-cluster", tuple(nodes))), "floor")
    view.ssh = ScriptedSsh(answers, set(dead))
    return view


def test_sonic_lldp_is_read_from_show_lldp_table(ai_plan):
    text = (FIXTURES / "show_lldp_table_2macs.txt").read_text()
    view = _view(ai_plan, {("be-s1", "sudo -n show lldp table"): text})
    found = view.lldp("be-s1")
    assert [(n.local_port, n.chassis, n.port_id, n.port_descr) for n in found] == [
        ("Ethernet0", "dummy", "00:00:00:00:00:01", "First MAC"), ("Ethernet0", "dummy", "00:00:00:00:00:02", "Second MAC")]


def test_reads_use_the_direct_paths_parsers(ai_plan):
    routes = json.dumps([{"dst": "10.0.0.3", "gateway": "169.254.0.1", "dev": "Ethernet0", "protocol": "bgp"}])
    db = json.dumps({"PORT": {"Ethernet0": {"mtu": "9100"}}})
    view = _view(ai_plan, {("be-g1-r0", "ip -j -4 route show table main"): routes,
                           ("be-g1-r0", "cat '/etc/sonic/config db.json'"): db})
    (route,) = view.routes("be-g1-r0").values()
    assert route.interfaces == ("Ethernet0",) and route.protocol == "bgp"
    assert view.running_config_db("be-g1-r0") == {"PORT": {"Ethernet0": {"mtu": "9100"}}}


def test_what_needs_fablabs_own_hands_is_not_measurable_over_ssh(ai_plan):
    view = _view(ai_plan, {})
    for attempt in (lambda: view.in_namespace("gpu01", lambda: None), lambda: view.counters("gpu01"),
                    lambda: view.in_namespace("gpu01", OpenProbes("gpu01", True, (), ()))):
        with pytest.raises(NotMeasurable, match="over SSH fablab sends no traffic and changes nothing"):
            attempt()
    for attempt in (lambda: view.link("be-s1", "be-g1-r0"), lambda: view.set_config_db("be-s1", "PORT", "x", "mtu", "1"),
                    lambda: view.set_sysctls("gpu01", {"net.ipv4.ip_forward": 1}),
                    lambda: view.vtysh("be-s1", "show bgp summary", "conf t", "no router bgp 65000")):
        with pytest.raises(NotMeasurable, match=r"changes nothing unless asked \(--allow-faults\)"):
            attempt()
    assert view.lacks(Feature.OWN_TRAFFIC) and view.lacks(Feature.LOSSLESS_DATA_PATH)
    assert view.ssh.transcript == []  # nothing was even asked


@pytest.mark.parametrize("line, looks", [
    ("show bgp summary json", True), ("sh ip bgp", True), ("SHOW running-config", True), ("sho bfd peers", True),
    ("conf t", False), ("configure terminal", False), ("clear bgp *", False), ("write memory", False),
    ("s", False), ("", False), ("shutdown", False),
])
def test_only_show_is_read_only_in_vtysh(line, looks):
    assert read_only(line) is looks


def test_with_allow_faults_a_cable_is_failed_at_its_upper_end_as_each_kind_does_it(ai_plan):
    answers = {("be-s1", "sudo -n config interface shutdown Ethernet0"): "",
               ("be-s1", "sudo -n config interface startup Ethernet0"): "",
               ("gpu01", "sysctl -q -w net.ipv4.ip_forward=1"): "",
               ("be-s1", "sudo -n vtysh -c 'conf t' -c 'router bgp 65000'"): ""}
    view = _view(ai_plan, answers)
    view.allow_faults = True
    link = view.link("be-s1", "be-g1-r0")
    assert link.ends == (("be-g1-r0", "Ethernet0"), ("be-s1", "Ethernet0"))
    view.set_carriers([link], up=False)
    link.up()
    view.set_sysctls("gpu01", {"net.ipv4.ip_forward": 1})
    view.vtysh("be-s1", "conf t", "router bgp 65000")
    assert [r.command for r in view.ssh.transcript] == [
        "sudo -n config interface shutdown Ethernet0", "sudo -n config interface startup Ethernet0",
        "sysctl -q -w net.ipv4.ip_forward=1", "sudo -n vtysh -c 'conf t' -c 'router bgp 65000'"]
    with pytest.raises(NotMeasurable, match="only shuts ports"):
        link.gray()  # nothing of fablab's drops frames on a staged fabric
    with pytest.raises(NotMeasurable, match="changes ports, sysctls and FRR's configuration only"):
        view.set_config_db("be-s1", "PORT", "Ethernet0", "mtu", "1500")
    with pytest.raises(NotMeasurable, match="index 1 is out of range"):
        view.link("be-s1", "be-g1-r0", 1)


def test_with_allow_traffic_the_agent_carries_probes_and_nothing_else(ai_plan):
    view = _view(ai_plan, {})
    view.allow_traffic = True
    assert view.lacks(Feature.OWN_TRAFFIC) is None
    assert "isolation's probes only" in view.lacks(Feature.LOSSLESS_DATA_PATH)
    with pytest.raises(NotMeasurable, match="agent carries isolation's probes only"):
        view.in_namespace("gpu01", lambda: None)  # fablab's code, not a request the agent knows


def test_an_unreachable_node_is_named_not_a_crash(ai_plan):
    view = _view(ai_plan, {("gpu01", "ip -j -d link show"): "[]"}, dead={"be-s1"})
    with pytest.raises(NotMeasurable, match=r"unreachable: be-s1 \(10.250.0.14\): no TCP connection"):
        view.routes("be-s1")
    assert view.port_states("gpu01") == ()  # the control: a reachable node still answers
    with pytest.raises(NotMeasurable, match="be-s2 is not in floor.yml: not reached"):
        view.routes("be-s2")
    with pytest.raises(NotMeasurable, match="be-g1-r0 .frr. has no command for interfaces-status"):
        view._ask("be-g1-r0", Read.STATUS)



def test_a_command_that_fails_on_a_reached_node_is_no_unreachable_node(ai_plan):
    from harness.remote.ssh import CommandFailed

    view = _view(ai_plan, {})

    def refuse(node, line, timeout=60.0):
        raise CommandFailed(f"{node.name} ({node.address}): `{line}` exited 1: Exiting: failed to connect to any daemons")

    view.ssh.run = refuse
    with pytest.raises(NotMeasurable, match=r"no answer: be-s1 .* exited 1: Exiting: failed to connect"):
        view.bgp_peers("be-s1")
    assert view.ssh.unreachable == {}  # the node was reached: the report does not list it as unreachable


def test_the_report_names_what_was_reached_and_never_a_credential(ai_plan):
    from harness.cli.staged import reached

    view = _view(ai_plan, {("gpu01", "ip -j -d link show"): "[]"}, dead={"be-s1"})
    view.ssh.case = "cabling"
    view.port_states("gpu01")
    with pytest.raises(NotMeasurable):
        view.routes("be-s1")
    doc = reached(view, view.reach, ai_plan)
    assert doc["reached"] == {"gpu01": {"address": "10.250.0.2", "kind": "linux", "user": "root",
                                        "host_key": "ssh-ed25519 SHA256:x"}}
    assert doc["unreachable"]["be-s1"].startswith("no TCP connection")
    assert doc["unreachable"]["be-s2"] == "not in the inventory" and "oob1" not in doc["unreachable"]
    assert doc["commands"] == {"cabling": [{"node": "gpu01", "address": "10.250.0.2", "command": "ip -j -d link show",
                                            "exit_status": 0, "seconds": 0.01}]}
    assert "secret_key" not in json.dumps(doc)
