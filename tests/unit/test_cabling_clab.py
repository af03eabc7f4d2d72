"""A containerlab file read as a cabling plan: in fablab's own render style (brief endpoints,
kinds, `fablab.node` labels) and in an engineer's (defaults, extended endpoints, a host link)."""
from __future__ import annotations

import pytest

from harness.core.cabling.clab_plan import read_clab
from harness.core.cabling.plan import End, PlanFormat
from harness.core.errors import InputError, TopologyError

ENGINEER = """\
name: rail-lab
topology:
  defaults:
    kind: sonic-vs
    env:
      HWSKU: Arista-7060X6-64PE-P32O64
  kinds:
    linux:
      image: ubuntu:22.04
  nodes:
    rtsw-g1-r0:
      mgmt-ipv4: 172.20.20.11
      labels:
        role: be_leaf
    ctsw-01:
      env:
        HWSKU: Arista-7060X6-64PE
    gpu-a01:
      kind: linux
  links:
    - endpoints: ["rtsw-g1-r0:eth33", "ctsw-01:eth1"]
    - type: veth
      endpoints:
        - node: gpu-a01
          interface: enp12s0np0
        - node: rtsw-g1-r0
          interface: Ethernet0
    - endpoints: ["gpu-a01:eth9", "host:gpu-a01-eth9"]
"""


def test_an_engineers_clab_file_keeps_its_names_and_sonic_ports():
    plan = read_clab(ENGINEER, "rail.clab.yml")
    assert plan.format is PlanFormat.CLAB
    # eth33 of a P32O64 is its 33rd row, Ethernet256; a port written as SONiC's own name is kept
    assert [(c.a, c.b) for c in plan.cables] == [
        (End("rtsw-g1-r0", "Ethernet256"), End("ctsw-01", "Ethernet0")),
        (End("gpu-a01", "enp12s0np0"), End("rtsw-g1-r0", "Ethernet0"))]
    assert [c.where.line for c in plan.cables] == [21, 22]  # the host link is not a cable
    leaf, spine, gpu = plan.device("rtsw-g1-r0"), plan.device("ctsw-01"), plan.device("gpu-a01")
    assert (leaf.hwsku, leaf.role, leaf.mgmt_ip, leaf.kind) == ("Arista-7060X6-64PE-P32O64", "be_leaf",
                                                                "172.20.20.11", "sonic-vs")
    assert spine.hwsku == "Arista-7060X6-64PE" and (gpu.kind, gpu.hwsku) == ("linux", None)


def test_fablabs_own_render_reads_back_with_its_names():
    rendered = """\
name: mylab
topology:
  kinds:
    sonic-vs:
      image: docker-sonic-vs:latest
  nodes:
    be-g1-r0:
      kind: sonic-vs
      labels:
        fablab.role: be_leaf
        fablab.plane: be
    gpu_01:
      kind: linux
      labels:
        fablab.node: gpu.01
        fablab.role: gpu
  links:
    - endpoints: ["gpu_01:rail0", "be-g1-r0:eth1"]
"""
    plan = read_clab(rendered, "mylab.clab.yml")
    assert plan.cables[0].a == End("gpu.01", "rail0") and plan.cables[0].b == End("be-g1-r0", "Ethernet0")
    assert plan.device("be-g1-r0").hwsku == "Force10-S6000" and plan.device("gpu.01").role == "gpu"


BAD = [  # (what, change to ENGINEER, words)
    ("a port past the HwSKU's rows", ("eth33", "eth99"), ["rail.clab.yml:21: rtsw-g1-r0:eth99 is no port of HwSKU "
                                                          "Arista-7060X6-64PE-P32O64", "eth1..eth98"]),
    ("an unknown HwSKU", ("HWSKU: Arista-7060X6-64PE\n", "HWSKU: Arista-7060X6-64P\n"),
     ["ctsw-01: HwSKU 'Arista-7060X6-64P' is not one fablab knows", "did you mean Arista-7060X6-64PE?"]),
    ("a link to no node", ('"ctsw-01:eth1"', '"ctsw-1:eth1"'), [":21: ctsw-1 is not a node", "did you mean ctsw-01?"]),
    ("a port cabled twice", ('"ctsw-01:eth1"', '"rtsw-g1-r0:eth1"'),
     [":22: rtsw-g1-r0:Ethernet0 is cabled twice (also at line 21)"]),
    ("a link with one end", ('["rtsw-g1-r0:eth33", "ctsw-01:eth1"]', '["rtsw-g1-r0:eth33"]'),
     [":21: a link without two endpoints"]),
    ("not YAML", ("  links:\n", "  links: [\n"), ["not YAML"]),
]


@pytest.mark.parametrize("what, change, words", BAD, ids=[b[0] for b in BAD])
def test_a_bad_clab_file_is_refused_naming_file_line_and_fix(what, change, words):
    bad = ENGINEER.replace(*change, 1)
    assert bad != ENGINEER
    with pytest.raises(InputError) as e:  # a TopologyError, or not YAML at all
        read_clab(bad, "rail.clab.yml")
    assert all(w in str(e.value) for w in words), str(e.value)
    assert read_clab(ENGINEER, "rail.clab.yml").cables  # the control


def test_a_file_without_nodes():
    with pytest.raises(TopologyError, match="no topology.nodes"):
        read_clab("name: x\n", "x.clab.yml")
