"""RoCEv2 packets: IPv4 / UDP 4791 / BTH / [RETH] / payload / ICRC.

Each packet shape is written once from the wire format (`frame`, a `RoceTemplate`); every
packet after that is the template's bytes with PSN, sequence number and timestamp patched
in and the ICRC continued from a CRC precomputed over the constant prefix. No scapy here:
a sender or receiver process would pay 0.4 s of CPU importing it, and the labs start
thousands of them. scapy's own build is the reference the tests hold `frame` to
(harness/traffic/roce_scapy.py).
"""
from __future__ import annotations

import socket
import struct
import zlib
from dataclasses import dataclass

from harness.traffic.flows import ROCE_PORT, SpecError, TrafficError

ROCE_DSCP = 26
PSN_MASK = 0xFFFFFF

# Opcodes (IBA vol. 1, 9.2): transport in the top three bits, operation in the rest.
RC, UC = 0x00, 0x20
SEND_FIRST, SEND_MIDDLE, SEND_LAST, SEND_ONLY = 0x00, 0x01, 0x02, 0x04
RDMA_WRITE_FIRST, RDMA_WRITE_MIDDLE, RDMA_WRITE_LAST, RDMA_WRITE_ONLY = 0x06, 0x07, 0x08, 0x0A
RDMA_READ_REQUEST = 0x0C

# The operations this module builds; immediate data and atomics are not modelled.
SUPPORTED_OPCODES = frozenset(
    t + op for t in (RC, UC)
    for op in (SEND_FIRST, SEND_MIDDLE, SEND_LAST, SEND_ONLY,
               RDMA_WRITE_FIRST, RDMA_WRITE_MIDDLE, RDMA_WRITE_LAST, RDMA_WRITE_ONLY)
)
# Only the first packet of an RDMA WRITE (FIRST or ONLY) says where the data goes.
RETH_OPCODES = frozenset(t + op for t in (RC, UC) for op in (RDMA_WRITE_FIRST, RDMA_WRITE_ONLY))

IP_LEN, UDP_LEN, BTH_LEN, RETH_LEN, ICRC_LEN = 20, 8, 12, 16, 4
BTH_OFFSET = IP_LEN + UDP_LEN
# Every payload starts with this header; the receiver accounts flows with it.
FABLAB_MAGIC = b"FLB1"
PROBE_MAGIC = b"FLBP"  # path-priming packets: same 5-tuple, ignored by the receiver
FABLAB_HEADER = struct.Struct("!4sIQQ")  # magic, flow id, sequence number, send time (ns, CLOCK_REALTIME)
FABLAB_HEADER_LEN = FABLAB_HEADER.size
_SEQ_TS = struct.Struct("!QQ")
_U32_BE = struct.Struct("!I")
_U32_LE = struct.Struct("<I")
_IPV4 = struct.Struct("!BBHHHBBH4s4s")
_UDP = struct.Struct("!HHHH")
_BTH = struct.Struct("!BBHII")
_RETH = struct.Struct("!QII")
_DF = 0x4000



def rdma_flow_label(src_qp: int, dst_qp: int) -> int:
    """Linux's rdma_calc_flow_label(): a 20-bit flow label from the two QP numbers."""
    v = src_qp * dst_qp
    v ^= v >> 20
    v ^= v >> 40
    return v & 0xFFFFF


ROCE_SPORTS = 1 << 14  # the UDP source ports roce_sport gives: 0xC000..0xFFFF


def roce_sport(src_qp: int, dst_qp: int, flow_label: int = 0) -> int:
    """UDP source port of a QP, the flow entropy ECMP hashes on, as Linux rxe picks it since
    5.18 ("RDMA/rxe: Use the standard method to produce udp source port"): when the QP is
    connected, rdma_get_udp_sport(flow label, QPN, destination QPN), the flow label being
    derived from the two QPNs when the address vector gives none. Measured with rdma_rxe on
    Debian's 6.1 here (labs/test_rdma.py): QPN 0x11 to 0x11 leaves from 49441, 0x12 to 0x12
    from 49476. (Before 5.18 rxe used 0xC000 + hash_32(QPN, 14), and fablab followed that.)"""
    fl = flow_label or rdma_flow_label(src_qp, dst_qp)
    return 0xC000 | ((fl & 0x3FFF) ^ ((fl & 0xFC000) >> 14))


def ext_header_len(opcode: int) -> int:
    """Bytes of extended transport headers between BTH and payload for an opcode."""
    return RETH_LEN if opcode in RETH_OPCODES else 0


def payload_offset(opcode: int) -> int:
    """Offset of the payload from the start of the BTH (what a UDP socket receives)."""
    return BTH_LEN + ext_header_len(opcode)


@dataclass(frozen=True)
class RoceShape:
    """Everything constant in one QP's packets of one opcode."""

    src: str
    dst: str
    dst_qp: int
    opcode: int = RC + RDMA_WRITE_ONLY
    sport: int = 0xC000
    payload_len: int = 64  # bytes between BTH/RETH and ICRC, a multiple of 4 (no pad bytes)
    flow_id: int = 0
    ip_id: int = 1  # fixed: it is covered by the ICRC, and 0 would make the kernel pick one
    ttl: int = 64
    dscp: int = ROCE_DSCP
    ecn: int = 0
    pkey: int = 0xFFFF
    ackreq: bool = False
    va: int = 0
    rkey: int = 0
    dma_len: int | None = None  # RETH DMA length; None: payload_len

    def __post_init__(self) -> None:
        problems = []
        if self.opcode not in SUPPORTED_OPCODES:
            problems.append(f"opcode {self.opcode:#x} is not one of the SEND/RDMA WRITE opcodes of RC or UC")
        if self.payload_len % 4 or self.payload_len < FABLAB_HEADER_LEN:
            problems.append(f"payload_len {self.payload_len} must be a multiple of 4 and >= {FABLAB_HEADER_LEN}")
        if not 0 <= self.dst_qp <= PSN_MASK:
            problems.append(f"dst_qp {self.dst_qp} does not fit in 24 bits")
        if not 0 < self.ip_id <= 0xFFFF:
            problems.append(f"ip_id {self.ip_id} must be in 1..65535")
        if problems:
            raise SpecError("RoceShape: " + "; ".join(problems))


def fablab_payload(flow_id: int, seq: int, ts_ns: int, length: int, magic: bytes = FABLAB_MAGIC) -> bytes:
    """The payload: fablab header then zero padding up to `length` bytes."""
    return FABLAB_HEADER.pack(magic, flow_id, seq, ts_ns).ljust(length, b"\0")


def _checksum(header: bytes) -> int:
    """The IPv4 header checksum (RFC 791: ones' complement of the ones' complement sum)."""
    total = sum(struct.unpack(f"!{len(header) // 2}H", header))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def frame(shape: RoceShape, psn: int, seq: int = 0, ts_ns: int = 0, magic: bytes = FABLAB_MAGIC) -> bytes:
    """One whole packet of `shape`, from the IPv4 header to the ICRC."""
    reth = b""
    if shape.opcode in RETH_OPCODES:
        dlen = shape.payload_len if shape.dma_len is None else shape.dma_len
        reth = _RETH.pack(shape.va, shape.rkey, dlen)
    bth = _BTH.pack(shape.opcode, 0, shape.pkey, shape.dst_qp & PSN_MASK,
                    (0x80000000 if shape.ackreq else 0) | (psn & PSN_MASK))
    body = bth + reth + fablab_payload(shape.flow_id, seq, ts_ns, shape.payload_len, magic)
    udp_len = UDP_LEN + len(body) + ICRC_LEN
    src, dst = socket.inet_aton(shape.src), socket.inet_aton(shape.dst)
    fields = [0x45, (shape.dscp << 2) | shape.ecn, IP_LEN + udp_len, shape.ip_id, _DF, shape.ttl,
              socket.IPPROTO_UDP, 0, src, dst]
    fields[7] = _checksum(_IPV4.pack(*fields))
    packet = _IPV4.pack(*fields) + _UDP.pack(shape.sport, ROCE_PORT, udp_len, 0) + body + bytes(ICRC_LEN)
    return packet[:-ICRC_LEN] + _U32_LE.pack(icrc(packet))


def _masked(packet: bytes) -> bytes:
    """The bytes the ICRC covers: pseudo-LRH of ones, then IP/UDP/BTH with variant fields as ones."""
    masked = bytearray(packet[:-ICRC_LEN])
    masked[1] = 0xFF  # IP TOS (DSCP/ECN may be rewritten on the way)
    masked[8] = 0xFF  # IP TTL
    masked[10:12] = b"\xff\xff"  # IP header checksum
    masked[IP_LEN + 6:IP_LEN + 8] = b"\xff\xff"  # UDP checksum
    masked[BTH_OFFSET + 4] = 0xFF  # BTH resv8a: FECN, BECN and reserved bits
    return b"\xff" * 8 + bytes(masked)


def icrc(packet: bytes) -> int:
    """ICRC of an IPv4 RoCEv2 packet (its last four bytes are ignored)."""
    return zlib.crc32(_masked(packet))


def verify_icrc(packet: bytes) -> bool:
    """True if an IPv4 RoCEv2 packet ends with the right ICRC (little-endian on the wire)."""
    if len(packet) < BTH_OFFSET + BTH_LEN + ICRC_LEN:
        return False
    return _U32_LE.unpack_from(packet, len(packet) - ICRC_LEN)[0] == icrc(packet)


class RoceTemplate:
    """One shape written once (`frame`); `fill` patches PSN, sequence and timestamp and the ICRC.

    The buffer `fill` returns is reused by the next call: send or copy it first.
    """

    def __init__(self, shape: RoceShape) -> None:
        self.shape = shape
        self._buf = bytearray(frame(shape, psn=0))
        self._psn_at = BTH_OFFSET + 8
        self._seq_at = BTH_OFFSET + payload_offset(shape.opcode) + 8  # after magic and flow id
        self._icrc_at = len(self._buf) - ICRC_LEN
        # A view of the bytes after the constant prefix: it sees each packet's patches in place.
        self._varying = memoryview(self._buf)[self._psn_at:self._icrc_at]
        self._ackreq = 0x80000000 if shape.ackreq else 0
        # Everything before the PSN word is the same in every packet of this shape.
        self._prefix_crc = zlib.crc32(_masked(bytes(self._buf))[:8 + self._psn_at])

    def __len__(self) -> int:
        return len(self._buf)

    def fill(self, psn: int, seq: int, ts_ns: int) -> bytearray:
        buf = self._buf
        _U32_BE.pack_into(buf, self._psn_at, self._ackreq | (psn & PSN_MASK))
        _SEQ_TS.pack_into(buf, self._seq_at, seq, ts_ns)
        crc = zlib.crc32(self._varying, self._prefix_crc)
        _U32_LE.pack_into(buf, self._icrc_at, crc)
        return buf

    def render(self, psn: int, seq: int = 0, ts_ns: int = 0) -> bytes:
        """A packet as an independent bytes object (tests, captures)."""
        return bytes(self.fill(psn, seq, ts_ns))

    def probe(self) -> bytes:
        """A packet on this QP's 5-tuple that receivers ignore: resolves neighbours, warms paths."""
        return frame(self.shape, psn=0, magic=PROBE_MAGIC)


@dataclass(frozen=True)
class RoceHeaders:
    """What a receiver reads from the UDP payload of a RoCEv2 packet."""

    opcode: int
    dst_qp: int
    psn: int
    magic: bytes
    flow_id: int
    seq: int
    ts_ns: int


def parse_udp_payload(data: bytes) -> RoceHeaders:
    """Parse BTH and fablab header from what a UDP socket on port 4791 receives."""
    if len(data) < BTH_LEN + ICRC_LEN:
        raise TrafficError(f"{len(data)} bytes is too short for BTH and ICRC")
    opcode = data[0]
    offset = payload_offset(opcode)
    if len(data) < offset + FABLAB_HEADER_LEN + ICRC_LEN:
        raise TrafficError(f"{len(data)} bytes is too short for a fablab payload after opcode {opcode:#x}")
    word1, word2 = struct.unpack_from("!II", data, 4)
    magic, flow_id, seq, ts_ns = FABLAB_HEADER.unpack_from(data, offset)
    return RoceHeaders(opcode, word1 & PSN_MASK, word2 & PSN_MASK, magic, flow_id, seq, ts_ns)
