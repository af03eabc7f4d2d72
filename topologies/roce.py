"""The RoCE tuning the built-in clusters declare: ECN and DCQCN as Zhu et al. tuned them
("Congestion Control for Large-Scale RDMA Deployments", SIGCOMM 2015), PFC and the priorities
at fablab's defaults.

Why not the NICs' defaults (`Dcqcn()`, ConnectX's): their recovery is driven by a 32 KB byte
counter, which raises each QP's rate in proportion to itself, so after an incast's first cuts
the QPs that PFC starved stay starved; a 7->1 incast on ai-cluster does not reach a fair share
within seconds of this lab's time (Jain 0.41-0.83, docs/checks/dcqcn.md). Zhu's tuning drives
the increase by a timer (a 10 MB byte counter seldom fires), so every QP gains the same step
and they converge. Zhu's rate steps are for 40G NICs; here they are scaled by the NIC's speed.
"""
from __future__ import annotations

from harness.core.model import Dcqcn, Ecn, Lossless

ZHU_LINE_GBPS = 40  # the NICs Zhu et al.'s rate steps were chosen for


def roce_tuned(nic_gbps: int = 400) -> Lossless:
    """The lossless contract with Zhu et al.'s ECN (5 kB, 200 kB, 1 %) and DCQCN (a CNP per QP
    per 50 us, a 55 us increase timer, a 10 MB byte counter, 5 fast-recovery steps, additive
    and hyper steps of 40 and 200 Mbit/s at 40G, scaled to `nic_gbps`)."""
    steps = nic_gbps / ZHU_LINE_GBPS
    return Lossless(
        ecn=Ecn(min_bytes=5_000, max_bytes=200_000, probability_pct=1),
        dcqcn=Dcqcn(cnp_interval_us=50, rpg_time_reset_us=55, rpg_byte_reset=10_000_000, rpg_threshold=5,
                    rpg_ai_rate_mbps=40 * steps, rpg_hai_rate_mbps=200 * steps),
    )
