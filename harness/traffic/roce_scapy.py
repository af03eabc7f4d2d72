"""RoCEv2 packets as scapy builds them: the reference `roce.frame` is held to, and the RETH
layer scapy 2.x lacks, for tests and captures that parse packets. Nothing on a sender's or
receiver's path imports this (scapy costs a process 0.4 s of CPU to import)."""
from __future__ import annotations

from scapy.contrib.roce import BTH
from scapy.fields import IntField, XIntField, XLongField
from scapy.layers.inet import IP, UDP
from scapy.packet import Packet, Raw, bind_layers

from harness.traffic.roce import (FABLAB_MAGIC, PSN_MASK, RC, RDMA_READ_REQUEST, RETH_OPCODES, ROCE_PORT, UC,
                                  RoceShape, fablab_payload)


class RETH(Packet):
    """RDMA Extended Transport Header, which scapy 2.8 lacks."""

    name = "RETH"
    fields_desc = [XLongField("va", 0), XIntField("rkey", 0), IntField("dlen", 0)]


for _opcode in RETH_OPCODES | {RC + RDMA_READ_REQUEST, UC + RDMA_READ_REQUEST}:
    bind_layers(BTH, RETH, opcode=_opcode)


def scapy_packet(shape: RoceShape, psn: int, seq: int = 0, ts_ns: int = 0,
                 magic: bytes = FABLAB_MAGIC) -> Packet:
    """The full scapy packet (ICRC left for scapy to compute)."""
    ip = IP(src=shape.src, dst=shape.dst, tos=(shape.dscp << 2) | shape.ecn, ttl=shape.ttl,
            id=shape.ip_id, flags="DF")
    bth = BTH(opcode=shape.opcode, pkey=shape.pkey, dqpn=shape.dst_qp, ackreq=int(shape.ackreq),
              psn=psn & PSN_MASK)
    layers = ip / UDP(sport=shape.sport, dport=ROCE_PORT, chksum=0) / bth
    if shape.opcode in RETH_OPCODES:
        dlen = shape.payload_len if shape.dma_len is None else shape.dma_len
        layers = layers / RETH(va=shape.va, rkey=shape.rkey, dlen=dlen)
    return layers / Raw(fablab_payload(shape.flow_id, seq, ts_ns, shape.payload_len, magic))
