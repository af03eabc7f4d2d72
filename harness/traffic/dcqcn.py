"""DCQCN's reaction point: how a RoCE NIC sets one QP's sending rate from the CNPs it receives.

Pure: no clock and no I/O. The sender drives a `ReactionPoint` per QP with explicit events and
the time they happen (`on_cnp`, `on_sent`, `advance`), so every rule is tested on made-up
timelines (tests/unit/test_dcqcn.py). Its parameters (`DcqcnParams`, in `flows` because a
SendSpec carries them to the sender process) come in already scaled to the lab.

The rules, and where each comes from:
  [Z]    Zhu et al., "Congestion Control for Large-Scale RDMA Deployments", SIGCOMM 2015
         (DCQCN), section 3.1 and figure 6: the reaction point's state (Rc, Rt, alpha, a byte
         counter and a timer), the cut, alpha's EWMA, and the three increase stages borrowed from
         QCN (IEEE 802.1Qau): fast recovery, additive and hyper increase.
  [mlx5] NVIDIA's documented ConnectX roce_rp parameters (what `harness.core.declarations.Dcqcn`
         declares): alpha updated on its own timer, every dce_tcp_rtt, by dce_tcp_g, set to
         initial_alpha_value on a QP's first CNP; a cut bounded by rpg_min_dec_fac and
         rpg_min_rate; rpg_threshold counts of either counter before the stage advances;
         rpg_max_rate 0 (the default): the port's speed caps every QP.
Where the two differ, [mlx5] wins: fablab's lab acts as a ConnectX NIC does. What the
declaration does not carry follows [Z]: every cut sets Rt to the rate before it (mlx5's
clamp_tgt_rate / clamp_tgt_rate_after_time_inc are not modelled), a CNP cuts at once (no
rate_reduce_monitor_period; the receiving NIC sends a QP one CNP per interval anyway), and a
QP starts at line rate (rate_to_set_on_first_cnp 0).

`cnp_packet` and `parse_cnp` build and read a CNP as the lab's NICs send it.
"""
from __future__ import annotations

import socket
import struct

from harness.traffic.flows import ROCE_PORT, DcqcnParams, SpecError
from harness.traffic.roce import BTH_LEN, ICRC_LEN, IP_LEN, PSN_MASK, UDP_LEN, icrc

__all__ = ["CNP_OPCODE", "ECT_0", "DcqcnParams", "RateTrace", "ReactionPoint", "cnp_packet", "jain", "parse_cnp"]

_NEVER = 1 << 62  # a timer that is not running
CNP_OPCODE = 0x81  # BTH opcode of a RoCEv2 CNP (IBA annex A17, RoCEv2)
CNP_RESERVED = 16  # bytes after the BTH of a CNP, before its ICRC
ECT_0 = 0b10  # the ECN field of data a switch may mark (RFC 3168)
_IPV4 = struct.Struct("!BBHHHBBH4s4s")
_UDP = struct.Struct("!HHHH")
_BTH = struct.Struct("!BBHII")


class ReactionPoint:
    """One QP's DCQCN state. Rates in bit/s, times in ns on whatever clock the caller uses (the
    same one for every call, never going back). Before its first CNP a QP sends at line rate and
    runs no timer: DCQCN only acts on a QP it has had to slow down."""

    __slots__ = ("p", "rate_bps", "target_bps", "alpha", "cnps", "lowest_bps", "time_stage", "byte_stage",
                 "_bytes", "_next_increase", "_next_alpha", "_cnp_in_period", "_line")

    def __init__(self, params: DcqcnParams) -> None:
        self.p = params
        self._line = params.line_rate_bps
        self.rate_bps = self._line  # Rc: the rate the QP sends at
        self.target_bps = self._line  # Rt: the rate it recovers towards
        self.alpha = params.initial_alpha  # only used once a CNP has set it ([mlx5] initial_alpha_value)
        self.cnps = 0
        self.lowest_bps = self._line
        self.time_stage = 0  # [Z] T: rate-increase timer periods since the last cut
        self.byte_stage = 0  # [Z] BC: rpg_byte_reset byte periods since the last cut
        self._bytes = 0  # bytes sent towards the next byte period
        self._next_increase = _NEVER
        self._next_alpha = _NEVER
        self._cnp_in_period = False

    @property
    def next_event_ns(self) -> int:
        """When `advance` next has something to do (a timer expiring); far away when idle."""
        return min(self._next_increase, self._next_alpha)

    @property
    def next_increase_ns(self) -> int:
        """When the rate-increase timer next fires (alpha's updates can wait: `on_cnp` catches up)."""
        return self._next_increase

    @property
    def active(self) -> bool:
        """Slowed down at least once: the timers run."""
        return self.cnps > 0

    def on_cnp(self, now: int) -> None:
        """A CNP for this QP arrived: cut the rate now."""
        self.advance(now)
        p = self.p
        if not self.cnps:
            # [mlx5] initial_alpha_value: alpha's start on the first CNP, and alpha's timer starts
            # with it; that CNP is not counted again at the first update (it set alpha already).
            self.alpha = p.initial_alpha
            self._next_alpha = now + p.alpha_update_ns
        else:
            self._cnp_in_period = True  # [mlx5] alpha rises at the end of this dce_tcp_rtt period
        self.cnps += 1
        # [Z] Rt <- Rc; Rc <- Rc (1 - alpha/2).
        self.target_bps = self.rate_bps
        cut = self.rate_bps * (1 - self.alpha / 2)
        # [mlx5] rpg_min_dec_fac: one CNP leaves at least this share; rpg_min_rate: the floor.
        floor = max(self.rate_bps * p.min_dec_fac_pct / 100, p.min_rate_bps)
        self.rate_bps = max(cut, floor)
        self.lowest_bps = min(self.lowest_bps, self.rate_bps)
        # [Z] a cut restarts the byte counter and the timer, and with them fast recovery.
        self.time_stage = self.byte_stage = self._bytes = 0
        self._next_increase = now + p.time_reset_ns

    def on_sent(self, nbytes: int, now: int) -> None:
        """The QP sent `nbytes` (an Ethernet frame's worth) at `now`: the byte counter moves."""
        if now >= self.next_event_ns:
            self.advance(now)
        if not self.cnps:
            return
        self._bytes += nbytes
        reset = self.p.byte_reset
        while self._bytes >= reset:  # [Z] every rpg_byte_reset bytes: BC += 1, one increase event
            self._bytes -= reset
            self.byte_stage += 1
            self._increase()

    def advance(self, now: int) -> None:
        """Run the timers up to `now`, in time order: alpha's updates and the rate-increase timer."""
        while True:
            t = min(self._next_alpha, self._next_increase)
            if t > now:
                return
            if self._next_alpha <= self._next_increase:
                self._update_alpha(now)
            else:
                self._next_increase += self.p.time_reset_ns
                self.time_stage += 1  # [Z] T += 1, one increase event
                self._increase()
                if self.rate_bps >= self._line and self.target_bps >= self._line:
                    self._next_increase = _NEVER  # back at line rate: nothing left to recover

    def _update_alpha(self, now: int) -> None:
        """[mlx5] every dce_tcp_rtt: alpha <- g alpha + (1 - g) if a CNP came in the period, else
        g alpha ([Z]'s EWMA with its gain written as mlx5's dce_tcp_g, the share kept). Periods
        without a CNP decay alpha in one step, so a long quiet stretch costs nothing."""
        p = self.p
        g = p.alpha_g
        alpha = self.alpha
        if self._cnp_in_period:
            alpha = g * alpha + (1 - g)
            self._next_alpha += p.alpha_update_ns
            self._cnp_in_period = False
        quiet = 0 if self._next_alpha > now else (now - self._next_alpha) // p.alpha_update_ns + 1
        if quiet:
            alpha *= g ** quiet
            self._next_alpha += quiet * p.alpha_update_ns
        self.alpha = alpha

    def _increase(self) -> None:
        """One increase event, of the stage the two counters say ([Z], QCN's RP): fast recovery
        while neither counter has passed rpg_threshold ([mlx5]: the counts before the state
        machine advances, so `threshold` fast steps), hyper increase once both have, by hai times
        how far the slower one is past it, additive in between. Then Rc halves its distance to Rt."""
        p = self.p
        f = p.threshold
        t, bc = self.time_stage, self.byte_stage
        if max(t, bc) <= f:
            pass  # fast recovery: Rt stays
        elif min(t, bc) > f:
            self.target_bps += (min(t, bc) - f) * p.hai_rate_bps
        else:
            self.target_bps += p.ai_rate_bps
        line = self._line
        if self.target_bps > line:  # [mlx5] rpg_max_rate 0: the port's speed
            self.target_bps = line
        self.rate_bps = min((self.target_bps + self.rate_bps) / 2, line)


class RateTrace:
    """At most `limit` samples of (t_ns, rate) spread evenly over a run of unknown length: one
    sample every `step_ns`, and when the buffer fills every other sample goes and the step
    doubles. `add` is cheap when it records nothing (one comparison)."""

    __slots__ = ("limit", "step_ns", "next_ns", "samples")

    def __init__(self, limit: int = 200, step_ns: int = 1_000_000) -> None:
        if limit < 2 or step_ns < 1:
            raise SpecError(f"RateTrace: limit {limit} must be >= 2 and step_ns {step_ns} >= 1")
        self.limit, self.step_ns, self.next_ns = limit, step_ns, 0
        self.samples: list[tuple[int, float]] = []

    def add(self, t_ns: int, rate: float) -> None:
        if t_ns < self.next_ns:
            return
        self.samples.append((t_ns, rate))
        if len(self.samples) >= self.limit:
            self.samples = self.samples[::2]
            self.step_ns *= 2
        self.next_ns = self.samples[-1][0] + self.step_ns

    def close(self, t_ns: int, rate: float) -> tuple[tuple[int, float], ...]:
        """The samples, ending with (t_ns, rate): the state at the end of the run (at most `limit`:
        `add` keeps fewer than that)."""
        out = self.samples
        if out and out[-1][0] == t_ns:
            out = out[:-1]
        return tuple(out) + ((t_ns, rate),)


def jain(values: list[float] | tuple[float, ...]) -> float:
    """Jain's fairness index, (sum x)^2 / (n sum x^2): 1 when all are equal, 1/n when one has all."""
    if not values:
        raise SpecError("jain: no values")
    square = sum(v * v for v in values)
    return sum(values) ** 2 / (len(values) * square) if square else 1.0


def cnp_packet(src: str, dst: str, dst_qp: int, dscp: int = 48, ttl: int = 64) -> bytes:
    """A CNP as the lab's NICs send it (harness/dataplane/lossless_dp.c, send_cnp): IPv4 from
    the data receiver `src` to the data sender `dst`, DSCP `dscp`, not ECN-capable, UDP from
    0xC000 | (qp & 0x3fff) to 4791, BTH opcode 0x81, pkey 0xffff, BECN set, dest QP `dst_qp`
    (the data's destination QP), 16 reserved bytes, ICRC."""
    if not 0 <= dst_qp <= PSN_MASK or not 0 <= dscp < 64:
        raise SpecError(f"cnp_packet: dst_qp {dst_qp} must fit in 24 bits and dscp {dscp} in 0..63")
    udp_len = UDP_LEN + BTH_LEN + CNP_RESERVED + ICRC_LEN
    fields = [0x45, dscp << 2, IP_LEN + udp_len, 1, 0x4000, ttl, socket.IPPROTO_UDP, 0,
              socket.inet_aton(src), socket.inet_aton(dst)]
    header = _IPV4.pack(*fields)
    total = sum(struct.unpack("!10H", header))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    fields[7] = ~total & 0xFFFF
    packet = (_IPV4.pack(*fields) + _UDP.pack(0xC000 | (dst_qp & 0x3FFF), ROCE_PORT, udp_len, 0)
              + _BTH.pack(CNP_OPCODE, 0, 0xFFFF, 0x40 << 24 | dst_qp, 0) + bytes(CNP_RESERVED) + bytes(ICRC_LEN))
    return packet[:-ICRC_LEN] + struct.pack("<I", icrc(packet))


def parse_cnp(packet: bytes | bytearray | memoryview, length: int | None = None) -> tuple[bytes, int] | None:
    """(source address, 4 bytes; dest QP) of an IPv4 packet that is a RoCEv2 CNP, else None."""
    n = len(packet) if length is None else length
    if n < IP_LEN or packet[0] >> 4 != 4:
        return None
    ihl = (packet[0] & 0x0F) * 4
    bth = ihl + UDP_LEN
    if (n < bth + BTH_LEN or packet[9] != socket.IPPROTO_UDP
            or (packet[6] << 8 | packet[7]) & 0x1FFF  # a later fragment: no UDP header
            or (packet[ihl + 2] << 8 | packet[ihl + 3]) != ROCE_PORT or packet[bth] != CNP_OPCODE):
        return None
    return bytes(packet[12:16]), (packet[bth + 5] << 16 | packet[bth + 6] << 8 | packet[bth + 7])
