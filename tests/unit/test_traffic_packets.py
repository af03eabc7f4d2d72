"""Traffic without root: RoCEv2 bytes against scapy, ICRC, rxe source ports, specs, patterns,
and the receiver's accounting over a loopback UDP socket."""
from __future__ import annotations

import socket
import struct
import threading
from dataclasses import replace

import pytest
from scapy.compat import raw
from scapy.contrib.roce import BTH
from scapy.layers.inet import IP, UDP

from harness.core.errors import HarnessError
from harness.traffic import patterns
from harness.traffic.flows import (ReceiveGroupSpec, ReceiveSpec, RoceFlow, SendGroupSpec, SendSpec, SpecError,
                                   TcpClientSpec, UdpFlow, from_json, to_json)
from harness.traffic.results import ReceiveResult, SendResult
from harness.traffic.patterns import Endpoint, FlowOptions, all_to_all, incast, ring
from harness.traffic.receiver import psn_gaps, receive, receive_many
from harness.traffic.roce import (FABLAB_HEADER, FABLAB_MAGIC, RC, RDMA_WRITE_FIRST, RDMA_WRITE_LAST,
                                  RDMA_WRITE_MIDDLE, RDMA_WRITE_ONLY, PROBE_MAGIC, SEND_FIRST, SEND_LAST,
                                  SEND_MIDDLE, SEND_ONLY, SUPPORTED_OPCODES, UC, RoceShape, RoceTemplate, frame,
                                  rdma_flow_label, parse_udp_payload, roce_sport, verify_icrc)
from harness.traffic.roce_scapy import RETH, scapy_packet
from harness.traffic.sender import opcodes_of, send_order
from harness.traffic.tcp import iperf3_client_argv, parse_iperf3

SHAPE = RoceShape(src="10.99.0.0", dst="10.99.0.1", dst_qp=0x1234, sport=roce_sport(0x11, 0x1234), flow_id=7)


# ---------------------------------------------------------------------------- source ports


def test_flow_label_is_linux_rdma_calc_flow_label():
    # Linux: v = lqpn * rqpn; v ^= v >> 20; v ^= v >> 40; v & IB_GRH_FLOWLABEL_MASK
    assert rdma_flow_label(0x11, 0x11) == 289
    assert rdma_flow_label(0xFFFFFF, 0xFFFFFF) == ((0xFFFFFE000001 ^ (0xFFFFFE000001 >> 20)) ^
                                                   ((0xFFFFFE000001 ^ (0xFFFFFE000001 >> 20)) >> 40)) & 0xFFFFF


def test_roce_sport_matches_what_rxe_sent():
    # Seen on the wire from rdma_rxe (Debian 6.1, labs/test_rdma.py), perftest QPs 0x11 and 0x12
    assert roce_sport(0x11, 0x11) == 49441 and roce_sport(0x12, 0x12) == 49476
    # a flow label given in the address vector is used as it is
    assert roce_sport(0x11, 0x11, flow_label=0x4001) == 0xC000 | (0x0001 ^ 0x1)


def test_roce_sport_is_in_rxe_range_and_spreads():
    ports = [roce_sport(qpn, qpn) for qpn in range(0x100, 0x200)]
    assert all(0xC000 <= p <= 0xFFFF for p in ports)
    assert len(set(ports)) >= 200  # most consecutive QP pairs differ in the source port


# ---------------------------------------------------------------------------- fast path == scapy


@pytest.mark.parametrize("opcode", sorted(SUPPORTED_OPCODES))
@pytest.mark.parametrize("psn", [0, 1, 4242, 0xFFFFFF])
def test_fast_path_matches_scapy_byte_for_byte(opcode, psn):
    shape = RoceShape(src="10.1.2.3", dst="10.4.5.6", dst_qp=0xABCDE, opcode=opcode, sport=roce_sport(0x42, 0xABCDE),
                      payload_len=96, flow_id=3, ip_id=77, ttl=17, ecn=1, ackreq=bool(psn & 1), va=0x1000,
                      rkey=0xBEEF)
    template = RoceTemplate(shape)
    for seq, ts in ((0, 0), (psn * 7 + 1, 1_700_000_000_123_456_789), (2**64 - 1, 2**63)):
        fast = template.render(psn, seq, ts)
        assert fast == raw(scapy_packet(shape, psn, seq, ts))


@pytest.mark.parametrize("opcode", sorted(SUPPORTED_OPCODES))
@pytest.mark.parametrize("dma_len", [None, 4096])
def test_a_frame_written_from_the_wire_format_is_scapys(opcode, dma_len):
    shape = RoceShape(src="192.168.200.7", dst="10.0.255.254", dst_qp=0xFFFFFF, opcode=opcode, sport=0xFFFF,
                      payload_len=24, flow_id=2**32 - 1, ip_id=0xFFFF, ttl=255, dscp=63, ecn=3, pkey=0x8001,
                      va=2**64 - 1, rkey=2**32 - 1, dma_len=dma_len)
    for magic in (FABLAB_MAGIC, PROBE_MAGIC):
        assert frame(shape, 0xABCDEF, 5, 6, magic) == raw(scapy_packet(shape, 0xABCDEF, 5, 6, magic))
    assert RoceTemplate(shape).probe() == raw(scapy_packet(shape, 0, magic=PROBE_MAGIC))


def test_a_traffic_process_does_not_import_scapy():
    # 0.4 s of CPU per sender or receiver process, and the labs start thousands
    import subprocess
    import sys
    code = ("import sys, harness.traffic.sender, harness.traffic.receiver, harness.traffic.tcp; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'scapy'))")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert run.stdout.strip() == "[]"


def test_fast_path_wraps_psn_to_24_bits():
    template = RoceTemplate(SHAPE)
    assert template.render(0x1000005) == raw(scapy_packet(SHAPE, 5))


def test_template_buffer_is_reused_but_render_copies():
    template = RoceTemplate(SHAPE)
    a = template.render(1, 1, 1)
    b = template.render(2, 2, 2)
    assert a != b and verify_icrc(a) and verify_icrc(b)


def test_packet_layout():
    pkt = IP(RoceTemplate(SHAPE).render(99, seq=5, ts_ns=6))
    assert pkt.tos == 0x68 and pkt.tos >> 2 == 26  # DSCP 26, not ECN-capable
    assert pkt.flags == "DF" and pkt.id == 1
    assert pkt[UDP].dport == 4791 and pkt[UDP].sport == roce_sport(0x11, 0x1234) and pkt[UDP].chksum == 0
    bth = pkt[BTH]
    assert (bth.opcode, bth.dqpn, bth.psn, bth.pkey, bth.padcount) == (RC + RDMA_WRITE_ONLY, 0x1234, 99, 0xFFFF, 0)
    assert pkt[RETH].dlen == 64
    headers = parse_udp_payload(bytes(pkt[UDP].payload))
    assert (headers.dst_qp, headers.psn, headers.flow_id, headers.seq, headers.ts_ns) == (0x1234, 99, 7, 5, 6)
    assert headers.magic == b"FLB1"


@pytest.mark.parametrize("opcode,has_reth", [(RC + RDMA_WRITE_FIRST, True), (RC + RDMA_WRITE_MIDDLE, False),
                                             (RC + RDMA_WRITE_LAST, False), (UC + RDMA_WRITE_ONLY, True),
                                             (RC + SEND_ONLY, False)])
def test_reth_only_on_write_first_and_only(opcode, has_reth):
    shape = RoceShape(src="10.0.0.1", dst="10.0.0.2", dst_qp=9, opcode=opcode, payload_len=32)
    data = RoceTemplate(shape).render(1)
    assert len(data) == 20 + 8 + 12 + (16 if has_reth else 0) + 32 + 4
    assert (RETH in IP(data)) == has_reth


# ---------------------------------------------------------------------------- ICRC


def test_icrc_detects_payload_and_header_corruption():
    data = bytearray(RoceTemplate(SHAPE).render(7, 7, 7))
    assert verify_icrc(data)
    for offset in (len(data) - 10, 20 + 8 + 5, 12):  # payload, BTH dest QP, IP source address
        bad = bytearray(data)
        bad[offset] ^= 0x01
        assert not verify_icrc(bad), offset


def test_icrc_ignores_fields_that_change_in_flight():
    data = bytearray(RoceTemplate(SHAPE).render(7, 7, 7))
    data[1] |= 0x03  # ECN marked CE by a switch
    data[8] -= 3  # TTL after three hops
    data[10:12] = b"\x12\x34"  # IP checksum recomputed
    data[28 + 4] |= 0xC0  # BTH FECN/BECN
    assert verify_icrc(data)


def test_scapy_agrees_with_our_icrc():
    pkt = IP(RoceTemplate(SHAPE).render(123, 4, 5))
    wire_icrc = pkt[BTH].icrc
    pkt[BTH].icrc = None
    recomputed = IP(raw(pkt))[BTH].icrc
    assert recomputed == wire_icrc


def test_shape_validation():
    with pytest.raises(SpecError):
        RoceShape(src="1.1.1.1", dst="2.2.2.2", dst_qp=1, payload_len=30)
    with pytest.raises(SpecError):
        RoceShape(src="1.1.1.1", dst="2.2.2.2", dst_qp=1, opcode=0x11)  # ACKNOWLEDGE
    with pytest.raises(HarnessError):
        RoceShape(src="1.1.1.1", dst="2.2.2.2", dst_qp=1 << 24)


# ---------------------------------------------------------------------------- sender logic


def test_message_opcodes():
    assert opcodes_of(RoceFlow(1, "1.1.1.1", 1, 1)) == (RC + RDMA_WRITE_ONLY,)
    assert opcodes_of(RoceFlow(1, "1.1.1.1", 1, 1, message_packets=4)) == (
        RC + RDMA_WRITE_FIRST, RC + RDMA_WRITE_MIDDLE, RC + RDMA_WRITE_MIDDLE, RC + RDMA_WRITE_LAST)
    assert opcodes_of(RoceFlow(1, "1.1.1.1", 1, 1, op="send", transport="UC", message_packets=3)) == (
        UC + SEND_FIRST, UC + SEND_MIDDLE, UC + SEND_LAST)


def test_send_order_faults():
    assert send_order(5, (), ()) == range(5)
    assert list(send_order(6, (2,), (4,))) == [0, 1, -1, 3, 5, 4]
    assert list(send_order(3, (), (2,))) == [0, 1, 2]  # the last packet has no successor to swap with


# ---------------------------------------------------------------------------- receiver logic


def test_psn_gaps_in_24_bit_serial_arithmetic():
    assert psn_gaps([0, 1, 2, 3]) == (0, 0)
    assert psn_gaps([0, 1, 4, 5]) == (1, 2)
    assert psn_gaps([0xFFFFFE, 0xFFFFFF, 0, 1]) == (0, 0)  # wrap is not a gap
    assert psn_gaps([0xFFFFFF, 1]) == (1, 1)
    assert psn_gaps([0, 2, 1, 3]) == (1, 1)  # 1 arrives late: counted once, not again


def _roce_udp_payload(template: RoceTemplate, psn: int, seq: int) -> bytes:
    return template.render(psn, seq, 1)[28:]  # what a UDP socket on 4791 receives


def test_receiver_accounting_over_loopback():
    """receive() on 127.0.0.1 (no root): per-QP keys, loss, gaps, reordering, duplicates, probes."""
    a = RoceTemplate(RoceShape(src="127.0.0.1", dst="127.0.0.1", dst_qp=0x101, flow_id=1))
    b = RoceTemplate(RoceShape(src="127.0.0.1", dst="127.0.0.1", dst_qp=0x102, flow_id=2))
    plan = [(a, s) for s in (0, 1, 2, 5, 6, 7)]  # a: 3 and 4 lost
    plan += [(b, s) for s in (0, 1, 3, 2, 4, 4)]  # b: 2 late, 4 twice
    listener = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    listener.bind(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    listener.close()
    spec = ReceiveSpec(protocol="roce", port=port, bind="127.0.0.1", duration_s=10, expect_packets=len(plan),
                       rcvbuf=1 << 20, detail=True, bucket_ms=1000)
    ready = threading.Event()
    out: list[ReceiveResult] = []
    worker = threading.Thread(target=lambda: out.append(receive(spec, on_ready=ready.set)))
    worker.start()
    assert ready.wait(10)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as tx:
        tx.sendto(a.probe()[28:], ("127.0.0.1", port))
        tx.sendto(b"junk", ("127.0.0.1", port))
        for template, seq in plan:
            tx.sendto(_roce_udp_payload(template, 1000 + seq, seq), ("127.0.0.1", port))
    worker.join(10)
    result = out[0]
    assert (result.stop_reason, result.probes, result.malformed) == ("expected", 1, 1)
    fa, fb = result.flow(0x101), result.flow(0x102)
    assert (fa.flow_id, fa.received, fa.lost, fa.psn_gaps, fa.psn_missing, fa.reordered) == (1, 6, 2, 1, 2, 0)
    assert fa.seq_runs == ((0, 2), (5, 7))
    assert len(fa.gaps) == 1 and (fa.gaps[0].after_seq, fa.gaps[0].next_seq, fa.gaps[0].missing) == (2, 5, 2)
    assert (fb.received, fb.unique, fb.duplicates, fb.reordered, fb.lost, fb.psn_gaps) == (6, 5, 1, 1, 0, 1)
    assert [s for s, _ in fb.arrivals()] == [0, 1, 3, 2, 4, 4]
    assert sum(fa.buckets) == 6
    assert from_json(ReceiveResult, to_json(result)) == result


def _free_udp_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_one_loop_serves_many_receivers_each_to_its_own_end():
    """receive_many (no root, this namespace): each member counts its own flows and stops on its
    own condition, one when its packets are in, the other on the stop request."""
    ports = [_free_udp_port(), _free_udp_port()]
    specs = [ReceiveSpec(protocol="udp", port=ports[0], bind="127.0.0.1", duration_s=30, expect_packets=3),
             ReceiveSpec(protocol="udp", port=ports[1], bind="127.0.0.1", duration_s=30)]
    ready, stop = threading.Event(), threading.Event()
    out: list[list[ReceiveResult]] = []
    worker = threading.Thread(target=lambda: out.append(receive_many([(None, s) for s in specs], ready.set, stop)))
    worker.start()
    assert ready.wait(10)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as tx:
        for port, flow_id, count in ((ports[0], 1, 3), (ports[1], 2, 5)):
            for seq in range(count):
                tx.sendto(FABLAB_HEADER.pack(FABLAB_MAGIC, flow_id, seq, 1), ("127.0.0.1", port))
    stop.set()  # queued already: drained before the linger ends
    worker.join(10)
    first, second = out[0]
    assert (first.stop_reason, first.packets, [f.flow_id for f in first.flows]) == ("expected", 3, [1])
    assert (second.stop_reason, second.packets, [f.flow_id for f in second.flows]) == ("stopped", 5, [2])


def test_group_specs_check_their_members():
    flow = RoceFlow(1, "10.0.0.1", 0x10, 0x20)
    with pytest.raises(SpecError, match="no members"):
        SendGroupSpec((), ())
    with pytest.raises(SpecError, match="2 namespaces for 1 specs"):
        ReceiveGroupSpec(("a", "b"), (ReceiveSpec(),))
    with pytest.raises(SpecError, match="share rate_pps"):
        SendGroupSpec(("a", "b"), (SendSpec(flows=(flow,), packets=5, rate_pps=10),
                                   SendSpec(flows=(replace(flow, flow_id=2),), packets=5, rate_pps=20)))
    with pytest.raises(SpecError, match="unique across the members"):
        SendGroupSpec(("a", "b"), (SendSpec(flows=(flow,), packets=5), SendSpec(flows=(flow,), packets=5)))
    group = SendGroupSpec(("a", "b"), (SendSpec(flows=(flow,), packets=5, device="eth1"),
                                       SendSpec(flows=(replace(flow, flow_id=2),), packets=5, device="eth2")))
    assert from_json(SendGroupSpec, to_json(group)) == group


# ---------------------------------------------------------------------------- specs and JSON


def test_send_spec_json_roundtrip_with_mixed_flows():
    spec = SendSpec(flows=(RoceFlow(1, "10.0.0.1", 0x10, 0x20, omit=(3,), late=(5,)),
                           UdpFlow(2, "10.0.0.2", sport=3000)), rate_pps=1000.0, duration_s=2, device="veth0")
    assert from_json(SendSpec, to_json(spec)) == spec
    assert spec.packets_per_flow == 2000


def test_spec_errors_are_harness_errors():
    with pytest.raises(SpecError, match="needs packets"):
        SendSpec(flows=(UdpFlow(1, "1.1.1.1"),))
    with pytest.raises(SpecError, match="unique"):
        SendSpec(flows=(UdpFlow(1, "1.1.1.1"), UdpFlow(1, "1.1.1.2")), packets=1)
    with pytest.raises(SpecError, match="omitted and late"):
        RoceFlow(1, "1.1.1.1", 1, 1, omit=(2,), late=(2,))
    with pytest.raises(SpecError, match="kind"):
        from_json(SendSpec, '{"flows": [{"flow_id": 1, "dst": "1.1.1.1"}], "packets": 1}')
    with pytest.raises(SpecError, match="unknown fields"):
        from_json(SendSpec, '{"flows": [], "packets": 1, "pps": 3}')
    with pytest.raises(SpecError, match="exactly one"):
        TcpClientSpec(dst="1.1.1.1")


def test_send_result_rates():
    result = from_json(SendResult, to_json(SendResult((), 0, 1_000_000_000)))
    assert result.packets == 0 and result.pps == 0.0


# ---------------------------------------------------------------------------- patterns


def _members(n: int) -> list[Endpoint]:
    return [Endpoint(f"gpu{i:02d}", "rail0", f"10.1.0.{i}") for i in range(1, n + 1)]


def test_ring():
    planned = ring(_members(4))
    assert [(p.src.node, p.dst.node) for p in planned] == [
        ("gpu01", "gpu02"), ("gpu02", "gpu03"), ("gpu03", "gpu04"), ("gpu04", "gpu01")]
    assert all(p.flow.dst == p.dst.address and p.flow.src == p.src.address for p in planned)


def test_all_to_all_numbers_every_flow_uniquely():
    planned = all_to_all(_members(4), FlowOptions(qps_per_pair=2))
    assert len(planned) == 4 * 3 * 2
    assert len({p.flow.flow_id for p in planned}) == len(planned)
    assert len({p.flow.dst_qp for p in planned}) == len(planned)  # type: ignore[union-attr]
    assert len({roce_sport(p.flow.src_qp, p.flow.dst_qp) for p in planned}) == len(planned)  # type: ignore[union-attr]


def test_incast_and_specs():
    members = _members(5)
    planned = incast(members[1:], members[0], FlowOptions(protocol="udp"))
    assert {p.dst for p in planned} == {members[0]} and len(planned) == 4
    assert all(isinstance(p.flow, UdpFlow) for p in planned)
    sends = patterns.send_specs(planned, rate_pps=1000.0, duration_s=1.0)
    assert set(sends) == set(members[1:]) and all(s.device == "rail0" for s in sends.values())
    receives = patterns.receive_specs(planned, packets_per_flow=1000)
    assert receives[members[0]].expect_packets == 4000 and receives[members[0]].protocol == "udp"
    assert receives[members[0]].bind == members[0].address


def test_pattern_errors():
    m = _members(3)
    with pytest.raises(SpecError):
        ring(m[:1])
    with pytest.raises(SpecError):
        all_to_all([m[0], m[0]])
    with pytest.raises(SpecError):
        incast(m, m[0])


# ---------------------------------------------------------------------------- TCP/iperf3 glue


IPERF3_SAMPLE = """{
 "start": {"connected": [{"socket": 5, "local_host": "10.99.0.0", "local_port": 40000,
                          "remote_host": "10.99.0.1", "remote_port": 5201}],
           "timestamp": {"time": "x", "timesecs": 1700000000}},
 "intervals": [],
 "end": {"streams": [{"sender": {"socket": 5, "start": 0, "end": 1.5, "seconds": 1.5, "bytes": 1048576,
                                 "bits_per_second": 5592405.3, "sender": true}}]}
}"""


def test_parse_iperf3():
    result = parse_iperf3(IPERF3_SAMPLE)
    assert result.tool == "iperf3" and result.bytes == 1048576
    assert result.streams[0].local == "10.99.0.0:40000" and result.duration_s == pytest.approx(1.5)
    argv = iperf3_client_argv(TcpClientSpec(dst="10.99.0.1", streams=2, duration_s=3.0))
    assert argv[:3] == ["iperf3", "-c", "10.99.0.1"] and "-P" in argv and "-t" in argv


def test_fablab_header_layout():
    # magic, flow id (u32), sequence (u64), send time (u64): big-endian, right after BTH/RETH
    payload = RoceTemplate(SHAPE).render(1, seq=0x0102030405060708, ts_ns=9)[28 + 12 + 16:]
    assert payload[:24] == b"FLB1" + struct.pack("!IQQ", 7, 0x0102030405060708, 9)
