"""Cabling plans kept as CSV, in the styles engineers keep them: sonic-mgmt's connection graph
(its rows may stop short of the header, its BandWidth is Mb/s, its devices file lists PDUs and
console servers nobody cabled) and a DCIM cable list (its own columns, speeds with units)."""
from __future__ import annotations

import pytest

from harness.core.cabling.csv_plans import read_cable_csv, read_sonic_mgmt, sniff, speed_mbps
from harness.core.cabling.plan import End, PlanFormat
from harness.core.errors import TopologyError

LINKS = """StartDevice,StartPort,EndDevice,EndPort,BandWidth,VlanID,VlanMode
rtsw-g1-r0,Ethernet256,ctsw-01,Ethernet0,400000,,
rtsw-g1-r0,Ethernet264,ctsw-02,Ethernet0,400000,,
gpu-a01,enp12s0np0,rtsw-g1-r0,Ethernet0,400000
"""
DEVICES = """Hostname,ManagementIp,HwSku,Type,Protocol,Os,AuthType
rtsw-g1-r0,10.251.0.11/23,Arista-7060X6-64PE-P32O64,DevSonic,,sonic
ctsw-01,10.251.0.21/23,Arista-7060X6-64PE,DevSonic,,sonic
ctsw-02,10.251.0.22/23,Arista-7060X6-64PE,DevSonic,,sonic
gpu-a01,10.251.0.101/23,TestServ,Server,,ubuntu
pdu-1,192.168.9.2,Apc,Pdu,snmp,
"""


def test_a_sonic_mgmt_graph_keeps_its_names_ports_and_hardware():
    plan = read_sonic_mgmt(LINKS, "sonic_lab_links.csv", DEVICES)
    assert plan.format is PlanFormat.SONIC_MGMT
    assert [(str(c.a), str(c.b), c.speed_mbps) for c in plan.cables] == [
        ("rtsw-g1-r0:Ethernet256", "ctsw-01:Ethernet0", 400000),
        ("rtsw-g1-r0:Ethernet264", "ctsw-02:Ethernet0", 400000),
        ("gpu-a01:enp12s0np0", "rtsw-g1-r0:Ethernet0", 400000)]
    assert plan.device_names == ("rtsw-g1-r0", "ctsw-01", "ctsw-02", "gpu-a01")
    leaf = plan.device("rtsw-g1-r0")
    assert (leaf.hwsku, leaf.kind, leaf.mgmt_ip, leaf.role) == ("Arista-7060X6-64PE-P32O64", "DevSonic",
                                                                "10.251.0.11/23", None)
    # a device the file lists but nothing cables (a PDU) is kept, and named by no cable
    assert plan.device("pdu-1").kind == "Pdu" and "pdu-1" not in plan.device_names
    assert str(plan.cables[2].where) == "sonic_lab_links.csv:4"


def test_a_cable_list_with_its_own_columns_and_units():
    cables = ("# exported from the DCIM, rack B\n"
              "Rack, A_Device ,a_port,b_device,b_port,Speed,asset\n"
              "B1,gpu-a01,enp12s0np0,rtsw-g1-r0,Ethernet0,400G,X1\n"
              "\n"
              "B1,rtsw-g1-r0,Ethernet256,ctsw-01,Ethernet0,800 Gb/s,X2\n"
              "B1,ctsw-01,Ethernet8,rtsw-g1-r1,Ethernet256,,X3\n")
    devices = "name,role\nrtsw-g1-r0,be_leaf\nrtsw-g1-r1,be_leaf\nctsw-01,\ngpu-a01,gpu\n"
    plan = read_cable_csv(cables, "cables.csv", devices)
    assert plan.format is PlanFormat.CABLE_CSV
    assert [c.speed_mbps for c in plan.cables] == [400000, 800000, None]
    assert [c.where.line for c in plan.cables] == [3, 5, 6]
    assert plan.device("rtsw-g1-r0").role == "be_leaf" and plan.device("ctsw-01").role is None
    assert plan.cables[0].a == End("gpu-a01", "enp12s0np0")


@pytest.mark.parametrize("text, bare, mbps", [
    ("400000", "M", 400000), ("400G", "M", 400000), ("400Gbps", "M", 400000), ("400 Gb/s", "M", 400000),
    ("100M", "G", 100), ("1.6T", "M", 1600000), ("400", "auto", 400000), ("25000", "auto", 25000),
    ("1000", "auto", 1000)])
def test_speeds_as_plans_write_them(text, bare, mbps):
    assert speed_mbps(text, bare) == mbps


@pytest.mark.parametrize("text", ["fast", "", "0", "-400G", "400X", "1.5"])
def test_what_is_not_a_speed(text):
    with pytest.raises(ValueError):
        speed_mbps(text, "M")


def test_sniff_tells_the_formats_apart():
    assert sniff(LINKS) is PlanFormat.SONIC_MGMT
    assert sniff("# a comment\n\na_device,a_port,b_device,b_port\n") is PlanFormat.CABLE_CSV
    assert sniff(DEVICES) is None and sniff("") is None


BAD = [  # (what, links text, devices text, words in the problems)
    ("a port cabled twice", LINKS + "gpu-a02,enp12s0np0,rtsw-g1-r0,Ethernet0,400000\n", None,
     ["sonic_lab_links.csv:5: rtsw-g1-r0:Ethernet0 is cabled twice (also at line 4)"]),
    ("a speed that is not one", LINKS.replace("400000,,\n", "fast,,\n", 1), None,
     ["sonic_lab_links.csv:2: BandWidth 'fast' is not a speed", "write 400000 (Mb/s) or 400G"]),
    ("an empty end", LINKS + "gpu-a02,,rtsw-g1-r0,Ethernet8,400000\n", None, [":5: StartPort empty"]),
    ("a cable to itself", LINKS + "ctsw-01,Ethernet8,ctsw-01,Ethernet16,400000\n", None,
     [":5: a cable from ctsw-01 to itself"]),
    ("a device the devices file lacks", LINKS.replace("ctsw-02", "ctsw-2"), DEVICES,
     ["sonic_lab_links.csv:3: ctsw-2 is not in sonic_lab_devices.csv", "did you mean ctsw-02?"]),
    ("a header without EndPort", LINKS.replace("EndPort", "EndPrt"), None,
     ["sonic_lab_links.csv:1: no column EndPort", "StartDevice,StartPort,EndDevice,EndPort"]),
    ("a device listed twice", LINKS, DEVICES + "ctsw-01,10.251.0.23/23,Arista-7060X6-64PE,DevSonic\n",
     ["sonic_lab_devices.csv:7: ctsw-01 is listed twice (first at line 3)"]),
]


@pytest.mark.parametrize("what, links, devices, words", BAD, ids=[b[0] for b in BAD])
def test_a_bad_plan_is_refused_naming_file_line_and_fix(what, links, devices, words):
    with pytest.raises(TopologyError) as e:
        read_sonic_mgmt(links, "sonic_lab_links.csv", devices)
    assert all(w in str(e.value) for w in words), str(e.value)
    # the control: the plan without the fault reads
    assert read_sonic_mgmt(LINKS, "sonic_lab_links.csv", DEVICES).cables


def test_every_problem_at_once():
    links = LINKS + "gpu-a02,,rtsw-g1-r0,Ethernet8,400000\n" + "gpu-a03,enp1,rtsw-g1-r0,Ethernet0,fast\n"
    with pytest.raises(TopologyError) as e:
        read_sonic_mgmt(links, "sonic_lab_links.csv")
    assert len(e.value.problems) == 2 and {p.field for p in e.value.problems} == {
        "sonic_lab_links.csv:5", "sonic_lab_links.csv:6"}
