"""The lossless RoCEv2 contract a Cluster declares (`Cluster.lossless`): the priorities and DSCPs of
RoCE and CNPs, the RoCE MTU, the ECN profile every BE switch marks by, the NICs' DCQCN, and how
the netns runtime's lossless data plane scales time. Part of harness.core.declarations, kept in
a module of its own for its size."""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Dcqcn:
    """A RoCE NIC's congestion control, DCQCN (defaults: ConnectX's, mlx5's roce_rp/roce_np).
    The receiving NIC sends at most one CNP per QP per `cnp_interval_us`; the sender cuts a QP's
    rate by alpha/2 on a CNP, recovers towards its target in `rpg_threshold` fast steps (each
    `rpg_time_reset_us` or `rpg_byte_reset` bytes), then adds `rpg_ai_rate_mbps` (additive)
    and `rpg_hai_rate_mbps` (hyper). Times and rates are scaled by `Lossless.time_scale`."""

    enabled: bool = True  # False: senders keep their rate, PFC alone holds the fabric lossless
    cnp_interval_us: float = 4.0  # min_time_between_cnps: one CNP per QP per this, > 0
    rpg_time_reset_us: float = 300.0  # rate-increase timer, > 0
    rpg_byte_reset: int = 32767  # rate-increase byte counter, > 0
    rpg_threshold: int = 1  # fast-recovery steps before additive increase, >= 1
    rpg_ai_rate_mbps: float = 5.0  # additive increase, > 0
    rpg_hai_rate_mbps: float = 50.0  # hyper increase, > 0
    rpg_min_rate_mbps: float = 1.0  # a QP's rate never falls below this, > 0
    rpg_min_dec_fac_pct: int = 50  # a CNP cuts the rate to at least this share of it, 1..100
    alpha_g: float = 1019 / 1024  # dce_tcp_g: alpha's EWMA keeps this share each update, 0..1
    alpha_update_us: float = 1.0  # dce_tcp_rtt: how often alpha is updated, > 0
    initial_alpha: float = 1023 / 1024  # alpha when a QP first sees a CNP, 0..1


@dataclass(frozen=True)
class Ecn:
    """The lossless queue's ECN marking, SONiC's WRED_PROFILE for green packets (RoCE's): a
    packet of an ECN-capable flow is marked CE with a probability that grows from 0 at
    `min_bytes` of queue to `probability_pct` at `max_bytes`, and always above it. Defaults:
    SONiC's own AZURE_LOSSLESS green thresholds, 5 % at the maximum."""

    min_bytes: int = 250000  # green_min_threshold, >= 0
    max_bytes: int = 2097152  # green_max_threshold, > min_bytes
    probability_pct: int = 5  # green_drop_probability: at max_bytes, 1..100


@dataclass(frozen=True)
class Lossless:
    """The backend's lossless RoCEv2 contract, the same on every hop: RoCE traffic is marked
    `roce_dscp` and travels in traffic class, queue, priority group and PFC priority
    `roce_priority` (ECN marking on that queue); congestion notifications (CNPs) are marked
    `cnp_dscp` and go to strict-priority queue `cnp_priority`; RoCE frames carry `roce_mtu`
    bytes of payload (an InfiniBand MTU), which every BE port's MTU must hold with the
    headers (`roce_frame_bytes`)."""

    roce_priority: int = 3  # traffic class, queue, PG and PFC priority of RoCE, 0..7
    roce_dscp: int = 26  # DSCP of RoCE traffic, 0..63
    cnp_priority: int = 6  # strict-priority queue of CNPs, 0..7, not roce_priority
    cnp_dscp: int = 48  # DSCP of CNPs, 0..63, not roce_dscp
    roce_mtu: int = 4096  # InfiniBand MTU of RoCE payloads: 256, 512, 1024, 2048 or 4096
    # The netns runtime's lossless data plane (PFC, ECN, CNPs, the PFC watchdog) runs every BE
    # link at its speed / time_scale and every data-plane time (pause quanta, CNP interval,
    # DCQCN's timers) time_scale times longer; bytes (buffers, thresholds, frames) are real.
    time_scale: int = 2000  # 400G runs at 200 Mbit/s; 1..1000000
    emulate: bool = True  # False: no lossless data plane (BE links lossy, at veth speed)
    dcqcn: Dcqcn = field(default_factory=Dcqcn)  # the NICs' congestion control
    ecn: Ecn = field(default_factory=Ecn)  # the RoCE queue's WRED/ECN profile on every BE switch

    @property
    def roce_frame_bytes(self) -> int:
        """The IP packet a full RoCEv2 RDMA WRITE carries: IPv4 20 + UDP 8 + BTH 12 + RETH 16
        + payload + ICRC 4. A port's (IP) MTU must be at least this."""
        return 20 + 8 + 12 + 16 + self.roce_mtu + 4


def dcqcn_assumed(lossless: Lossless) -> str:
    """What a verdict on DCQCN rests on when the declaration tuned nothing ("" when it did): the
    NICs' defaults, and where to declare a tuning instead."""
    if not lossless.dcqcn.enabled or lossless.dcqcn != Dcqcn():
        return ""
    return ("DCQCN at the NICs' defaults (ConnectX's; the declaration tunes none): declare Dcqcn(...) tuned for "
            "the incast, e.g. `lossless=topologies.roce.roce_tuned()` (Zhu et al.'s tuning), or see lesson 10")


ROCE_MTUS = (256, 512, 1024, 2048, 4096)  # the InfiniBand path MTUs a RoCE NIC negotiates
