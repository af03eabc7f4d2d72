"""harness/observe/lldp.py and harness/observe/sonic_show.py on real outputs: what lldpd's
`lldpctl -f json`/`-f json0` and SONiC's `show lldp table`, `show pfc counters` and
`show interfaces status` print, copied from those projects' tests and docs
(tests/fixtures/sonic_show/README.md says where from). The malformed inputs are those samples
cut or altered, each raising LabError with a message that names what is wrong."""
from __future__ import annotations

import copy
import json
from dataclasses import replace
from pathlib import Path

import pytest

from harness.core.errors import LabError
from harness.core.observed import LldpNeighbour as N
from harness.observe.lldp import neighbours_from_lldpctl_json, neighbours_from_show_lldp_table
from harness.observe.sonic_show import InterfaceStatus, interfaces_status, pfc_counters, show_tables

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "sonic_show"


def text(name: str) -> str:
    return (FIXTURES / name).read_text()


def doc(name: str) -> dict:
    return json.loads(text(name))


# ------------------------------------------------------------------------------ lldpctl JSON

LLDPD_NEIGHBOUR = N("eth0", "ns-2.example.com", "00:00:00:00:00:02", "eth1", "00:00:00:00:00:02")


@pytest.mark.parametrize("fixture, expected", [
    ("lldpctl_json_one_interface.json", (LLDPD_NEIGHBOUR,)),
    ("lldpctl_json0_one_interface.json", (LLDPD_NEIGHBOUR,)),  # the same neighbour, every level a list
    ("lldpctl_json_two_interfaces.json", (
        # Ethernet0's neighbour sends no system name: its chassis ID stands in
        N("Ethernet0", "00:11:22:33:44:55", "Ethernet1", "", "00:11:22:33:44:55"),
        N("Ethernet100", "switch13", "Ethernet26", "", "00:11:22:33:44:55"))),
    ("lldpctl_json_port_id_local.json", (N("eth0", "switchad11", "535", "ge-0/0/15.0", "00:11:22:33:44:55"),)),
    ("lldpctl_json_no_neighbour.json", ()),
])
def test_lldpctl_json_samples(fixture, expected):
    assert tuple(replace(n, age_s=-1) for n in neighbours_from_lldpctl_json(doc(fixture))) == expected


def test_a_neighbours_age_is_read_in_seconds():
    """lldpd prints how long ago a neighbour's information last changed as "D day(s), HH:MM:SS"."""
    by_port = {n.local_port: n for n in neighbours_from_lldpctl_json(doc("lldpctl_json_many_interfaces.json"))}
    assert by_port["Ethernet0"].age_s == 5 * 3600 + 9 * 60 + 5
    assert all(n.age_s == -1 for n in neighbours_from_show_lldp_table(
        (FIXTURES / "show_lldp_table_2macs.txt").read_text()))  # SONiC's table gives none


def test_lldpctl_json_with_many_interfaces_from_sonic():
    found = neighbours_from_lldpctl_json(doc("lldpctl_json_many_interfaces.json"))
    assert len(found) == 33
    assert [n.local_port for n in found] == sorted(n.local_port for n in found)
    by_port = {n.local_port: replace(n, age_s=-1) for n in found}
    assert by_port["Ethernet0"] == N("Ethernet0", "switch13", "Ethernet1", "this is a port description",
                                     "00:11:22:33:44:55")
    assert by_port["Ethernet96"] == N("Ethernet96", "00:11:22:33:44:55", "Ethernet25", "", "00:11:22:33:44:55")
    assert by_port["eth0"] == N("eth0", "switch218ad08", "ge-0/0/17", "TPS report vending machine",
                                "00:11:22:33:44:55")
    # "lldp_loc_chassis" (the switch itself, read by a second command) is no neighbour
    assert "arc-switch1025" not in {n.chassis for n in found}


def test_lldpctl_json0_without_neighbours():
    # json_writer.c: lldpd opens "lldp" as a list of one object; json0 keeps the list as is
    assert neighbours_from_lldpctl_json({"lldp": [{}]}) == ()


def test_two_neighbours_on_one_port_are_both_kept_and_sorted():
    # lldpd lists a port once per neighbour (sonic-utilities' tests/lldp_test.py has such an
    # output in XML): in json that is a list with the same interface name twice
    one = doc("lldpctl_json_port_id_local.json")["lldp"]["interface"]["eth0"]
    other = copy.deepcopy(one)
    other["chassis"] = {"aaa-switch": other["chassis"]["switchad11"]}
    found = neighbours_from_lldpctl_json({"lldp": {"interface": [{"eth0": one}, {"eth0": other}]}})
    assert [n.chassis for n in found] == ["aaa-switch", "switchad11"]


def _without(fixture: str, path: tuple, key: str) -> dict:
    d = doc(fixture)
    node = d
    for step in path:
        node = node[step]
    del node[key]
    return d


def _two_chassis_names() -> dict:
    d = doc("lldpctl_json_one_interface.json")
    chassis = d["lldp"]["interface"]["eth0"]["chassis"]
    chassis["ns-3.example.com"] = chassis["ns-2.example.com"]
    return d


def _json0_two_chassis() -> dict:
    d = doc("lldpctl_json0_one_interface.json")
    chassis = d["lldp"][0]["interface"][0]["chassis"]
    chassis.append(chassis[0])
    return d


@pytest.mark.parametrize("bad, match", [
    ('{"lldp": {}}', r"want an object with an 'lldp' key .* got str"),
    ({"lldp-deleted": {}}, r"'lldp' key .* with keys \['lldp-deleted'\]"),
    ({"lldp": "none"}, r"'lldp' is a str, neither an object \(json\) nor a list \(json0\)"),
    ({"lldp": {"interface": ["eth0"]}}, r"an 'interface' entry is a str, not an object"),
    (_without("lldpctl_json_one_interface.json", ("lldp", "interface", "eth0"), "chassis"),
     r"interface eth0 has no 'chassis'"),
    (_without("lldpctl_json_one_interface.json", ("lldp", "interface", "eth0"), "port"),
     r"interface eth0 has no 'port'"),
    (_without("lldpctl_json_one_interface.json", ("lldp", "interface", "eth0", "port", "id"), "value"),
     r"interface eth0: port 'id' has no 'value' string"),
    (_without("lldpctl_json_one_interface.json", ("lldp", "interface", "eth0", "chassis", "ns-2.example.com"),
              "id"), r"interface eth0: chassis has no 'id'"),
    (_two_chassis_names(), r"interface eth0: 'chassis' has neither an 'id' nor a single system name"),
    (_without("lldpctl_json0_one_interface.json", ("lldp", 0, "interface", 0), "name"),
     r"interface entry 0 has no 'name' string \(json0 shape\)"),
    (_json0_two_chassis(), r"interface eth0: 'chassis' holds 2 members, want 1"),
    ({"lldp": [{"interface": {"eth0": {}}}]}, r"'interface' is a dict, not a list \(json0 shape\)"),
])
def test_malformed_lldpctl_json_raises_a_lab_error(bad, match):
    with pytest.raises(LabError, match=match):
        neighbours_from_lldpctl_json(bad)


# --------------------------------------------------------------------------- show lldp table

@pytest.mark.parametrize("fixture, expected", [
    ("show_lldp_table_2macs.txt", (
        N("Ethernet0", "dummy", "00:00:00:00:00:01", "First MAC"),
        N("Ethernet0", "dummy", "00:00:00:00:00:02", "Second MAC"))),
    ("show_lldp_table_command_reference.txt", (
        N("Ethernet112", "T1-1", "hundredGigE1/2", "T0-2:hundredGigE1/29"),
        N("Ethernet116", "T1-2", "hundredGigE1/2", "T0-2:hundredGigE1/30"),
        N("eth0", "swtor-b2lab2-1610", "GigabitEthernet 0/2", ""))),  # a space in the ID, no description
])
def test_show_lldp_table_samples(fixture, expected):
    assert neighbours_from_show_lldp_table(text(fixture)) == expected


def test_show_lldp_table_without_neighbours():
    # lldpshow with no neighbour: the header, both rules, and a total of 0
    sample = text("show_lldp_table_2macs.txt").splitlines()
    empty = "\n".join(sample[:3] + sample[5:6] + ["Total entries displayed:  0"])
    assert neighbours_from_show_lldp_table(empty) == ()


_LLDP = text("show_lldp_table_2macs.txt")


@pytest.mark.parametrize("bad, match", [
    ("Error: Error response from daemon: Container lldp is not running\n",
     r"the switch answered 'Error: Error response from daemon"),  # lldpshow's "Error: {err}"
    ("", r"want one table, found 0"),
    (_LLDP.replace("Total entries displayed:  2\n", ""), r"no 'Total entries displayed' line: was the output cut short"),
    (_LLDP.replace("displayed:  2", "displayed:  3"), r"2 rows but 'Total entries displayed:  3'"),
    (_LLDP.replace("RemotePortDescr\n", "RemoteDescr\n"), r"no 'RemotePortDescr' column"),
    (_LLDP.replace("Ethernet0    dummy  ", "Ethernet0    dummy-long"),
     r"line 4: 'Ethernet0    dummy-long.*' does not line up with the columns of its header"),
])
def test_malformed_show_lldp_table_raises_a_lab_error(bad, match):
    with pytest.raises(LabError, match=match):
        neighbours_from_show_lldp_table(bad)


# ------------------------------------------------------------------------- show pfc counters

def test_show_pfc_counters_sample():
    assert pfc_counters(text("show_pfc_counters.txt")) == {
        "rx": {"Ethernet0": (1200, 201, 202, 203, 204, 205, 206, 207),  # "1,200": thousands separators
               "Ethernet4": (1400, 401, 402, 403, 404, 405, 406, 407),
               "Ethernet8": (1800, 801, 802, 803, 804, 805, 806, 807)},
        "tx": {"Ethernet0": (1210, 211, 212, 213, 214, 215, 216, 217),
               "Ethernet4": (1410, 411, 412, 413, 414, 415, 416, 417),
               "Ethernet8": (1810, 811, 812, 813, 814, 815, 816, 817)},
    }


def test_show_pfc_counters_after_a_clear():
    # pfcstat prints "Last cached time was ..." above each table once counters were cleared
    cleared = "\n\n".join(f"Last cached time was 2026-07-01 10:00:00.000000\n{part}"
                      for part in text("show_pfc_counters.txt").split("\n\n"))
    assert pfc_counters(cleared) == pfc_counters(text("show_pfc_counters.txt"))


_PFC = text("show_pfc_counters.txt")


@pytest.mark.parametrize("bad, match", [
    (text("show_pfc_counters_all_na.txt"), r"Ethernet-BP256 RX PFC0 is N/A: the switch keeps no such counter"),
    (text("show_pfc_counters_history.txt"),
     r"the table on line 1 is not a PFC counter table \(header \['Port', 'Priority'"),
    (_PFC.split("\n\n")[0], r"no 'Port Tx' table in the output"),
    (_PFC.split("\n\n")[0] + "\n\n" + _PFC.split("\n\n")[0], r"two 'Port Rx' tables \(the second on line 7\)"),
    (_PFC.replace("Ethernet4   1,400", "Ethernet4   1.400"), r"Ethernet4 RX PFC0 is '1.400', not a count"),
    (_PFC.replace("Ethernet8   1,800", "Ethernet4   1,800"), r"port Ethernet4 is listed twice in the RX table"),
    ("Error: no such command\n", r"no 'Port Rx' or 'Port Tx' table in the output \(it begins 'Error"),
])
def test_malformed_show_pfc_counters_raises_a_lab_error(bad, match):
    with pytest.raises(LabError, match=match):
        pfc_counters(bad)


# --------------------------------------------------------------------- show interfaces status

def test_show_interfaces_status_sample():
    found = interfaces_status(text("show_interfaces_status.txt"))
    assert len(found) == 15
    assert found["Ethernet0"] == InterfaceStatus("Ethernet0", (0,), 25000, 9100, "Ethernet0", "down", "up")
    assert found["Ethernet32"] == InterfaceStatus("Ethernet32", (13, 14, 15, 16), 40000, 9100, "etp9", "up", "up")
    assert found["PortChannel1001"] == InterfaceStatus("PortChannel1001", (), 40000, 9100, "N/A", "N/A", "N/A")
    # intfutil's port_speed_parse: Mbps under 1000, and for RJ45 up to 1000
    assert {name: found[name].speed_mbps for name in ("Ethernet16", "Ethernet24", "Ethernet28", "Ethernet36")} == \
        {"Ethernet16": 100, "Ethernet24": 1000, "Ethernet28": 1000, "Ethernet36": 10}
    assert list(found)[:2] == ["Ethernet0", "Ethernet16"]  # the order printed


@pytest.mark.parametrize("fixture, expected", [
    ("show_interfaces_status_ethernet32.txt",
     {"Ethernet32": InterfaceStatus("Ethernet32", (13, 14, 15, 16), 40000, 9100, "etp9", "up", "up")}),
    # 2019: no FEC column, and the header lost its leading spaces to the test's strip()
    ("show_interfaces_status_2019.txt",
     {"Ethernet0": InterfaceStatus("Ethernet0", (0,), 25000, 9100, "Ethernet0", "down", "up")}),
])
def test_show_interfaces_status_across_versions(fixture, expected):
    assert interfaces_status(text(fixture)) == expected


def test_speeds_as_intfutil_writes_them():
    # port_speed_parse prints 2500 Mb/s as "2.5G" and a missing speed as N/A
    sample = text("show_interfaces_status_ethernet32.txt")
    assert interfaces_status(sample.replace(" 40G", "2.5G"))["Ethernet32"].speed_mbps == 2500
    assert interfaces_status(sample.replace(" 40G", " N/A"))["Ethernet32"].speed_mbps == 0


_INTF = text("show_interfaces_status_ethernet32.txt")


@pytest.mark.parametrize("bad, match", [
    (_INTF.replace("  Speed", "  Rate "), r"the table on line 1 has no 'Speed' column"),
    (_INTF.replace(" 40G", "fast"), r"Ethernet32: speed 'fast' is none of"),
    (_INTF.replace(" 9100", "jumbo"), r"Ethernet32: MTU 'jumbo' is not a number"),
    (_INTF.replace("13,14,15,16", "13-16      "), r"Ethernet32: lanes '13-16' are not a comma-separated list"),
    (_INTF + _INTF.splitlines()[2] + "\n", r"Ethernet32 is listed twice"),
    (_INTF + "\n" + _INTF, r"want one table, found 2"),
    (_INTF.replace("    Asym PFC", ""), r"the header on line 1 names 10 columns .* its rule of dashes has 11"),
])
def test_malformed_show_interfaces_status_raises_a_lab_error(bad, match):
    with pytest.raises(LabError, match=match):
        interfaces_status(bad)


def test_table_reader_cuts_cells_at_the_rule_not_at_spaces():
    [table] = show_tables(text("show_interfaces_status.txt"), "show interfaces status")
    assert table.header[-2:] == ("Type", "Asym PFC")
    assert {row[-2] for row in table.rows} == {"QSFP28 or later", "RJ45", "DPU-NPU Data Port", "N/A"}
