"""Lesson 8 — the backend is lossless on every hop, and RoCE frames at the RoCE MTU cross it
with their DSCP.

Claim: every BE switch carries the declared lossless contract (PFC on the RoCE priority on
both ends of every link, DSCP -> traffic class -> queue -> priority group consistent with
it, ECN on the lossless queue, CNPs on a strict queue, the PFC watchdog, buffer profiles that
exist, an MTU that holds a RoCE frame), and RDMA WRITE frames with a full RoCE-MTU payload,
marked with the RoCE DSCP, arrive from every rail's first GPU NIC behind every leaf of the
rail, with that size and that DSCP.

Why it matters: one hop that disagrees stalls a training job. A port that maps the RoCE
DSCP to another class puts RoCE in a lossy queue; a link whose two ends enable PFC on
different priorities pauses nothing; a port whose MTU is below the RoCE frame drops every
full-size write (RoCE NICs send DF) and the QP retransmits forever; a hop that rewrites
DSCP sends RoCE to the wrong queue everywhere after it. The tables are read and held to the
declaration (on every runtime: SONiC-VS acts on neither PFC nor ECN), and the size and
marking are proven with real frames; what PFC does under an incast is labs/test_pfc.py's.

Make it fail: lower one port's MTU (`ip link set ... mtu 1500` in a switch), or rewrite
DSCP in a leaf (an nftables `ip dscp set cs0`): the negative controls below do both, beside
the passing run, and the verdict names the hop.
"""
from __future__ import annotations

from harness.checks.lossless import probe_pairs
from harness.checks.registry import case, run_case


def test_every_hop_is_lossless_and_carries_roce_frames(lab, results):
    audit = run_case(case("lossless-audit"), lab, results)
    assert audit.passed, audit.reason
    wire = run_case(case("lossless-wire"), lab, results)
    assert wire.passed, wire.reason
    assert all(p.received == p.sent > 0 and p.sizes == (wire.frame_bytes,) for p in wire.paths)


def _last_hop(lab):
    """The leaf port in front of the last destination the probes have on rail 0."""
    (_, _, _), (node, nic_name) = [p for p in probe_pairs(lab.plan) if p[0][2] == 0][-1]
    nic = lab.plan.host(node).nic(nic_name)
    return nic.peer, nic.peer_port


def test_a_port_too_small_for_roce_frames_is_named(lab, results, control):
    switch, port = _last_hop(lab)
    assert control(case("lossless-wire"), lab).passed  # the control: the same frames pass before the change
    sabotage = f"{switch}:{port} MTU lowered to 1500 in the kernel"
    lab.ns_exec(switch, ["ip", "link", "set", port, "mtu", "1500"], check=True)
    try:
        wire = run_case(case("lossless-wire"), lab, results, name="lossless-wire-small-mtu", sabotage=sabotage)
        audit = run_case(case("lossless-audit"), lab, results, name="lossless-audit-small-mtu", sabotage=sabotage)
    finally:
        lab.ns_exec(switch, ["ip", "link", "set", port, "mtu", str(lab.plan.switch(switch).mtu)], check=True)
    assert not wire.passed
    assert [(t.node, t.mtu) for t in wire.too_small] == [(switch, 1500)], wire.reason
    assert (switch, port, "PORT") in {(f.node, f.port, f.table) for f in audit.findings}


def test_a_hop_that_rewrites_dscp_is_seen_by_the_receivers(lab, results):
    leaf = next(s.name for s in lab.plan.switches if s.lossless and 0 in s.rails)
    rules = ("table inet fablab_dscp_rewrite {\n chain forward {\n  type filter hook forward priority 0;\n"
             "  ip dscp 26 ip dscp set cs0\n }\n}\n")
    lab.ns_exec(leaf, ["nft", "-f", "-"], input=rules, check=True)
    try:
        wire = run_case(case("lossless-wire"), lab, results, name="lossless-wire-dscp-rewritten",
                        sabotage=f"{leaf} rewrites DSCP 26 to 0 (nftables)")
    finally:
        lab.ns_exec(leaf, ["nft", "delete", "table", "inet", "fablab_dscp_rewrite"], check=True)
    assert not wire.passed
    rewritten = {p.source.split(":")[1] for p in wire.paths if 0 in p.dscps}
    untouched = {p.source.split(":")[1] for p in wire.paths if p.dscps == (26,)}
    assert rewritten == {"rail0"} and untouched  # only rail 0 crosses that leaf; the other rails are the control
