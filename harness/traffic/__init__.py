"""Traffic: RoCEv2 (scapy-built, byte-patched), UDP and TCP flows, sent and received inside lab namespaces.

Specs and results are frozen dataclasses (`flows`, `results`); senders, receivers and TCP ends
run as separate processes in a namespace (`runner` starts them, `process` is their side), or one
process for many namespaces, speaking JSON only at that boundary;
`patterns` turns collectives (ring, all-to-all, incast) into flow lists.
"""
from __future__ import annotations

from harness.traffic.flows import (ROCE_PORT, TCP_PORT, UDP_PORT, ReceiveSpec, RoceFlow, SendSpec, SpecError,
                                   TcpClientSpec, TcpServerSpec, TrafficError, UdpFlow, from_json, to_json)
from harness.traffic.results import FlowReceived, FlowSent, Gap, ReceiveResult, SendResult, TcpResult, TcpStream, losses
from harness.traffic.patterns import Endpoint, FlowOptions, PlannedFlow, all_to_all, incast, ring
from harness.traffic.roce import RETH, RoceShape, RoceTemplate, rdma_flow_label, roce_sport, verify_icrc
from harness.traffic.runner import (TrafficProcess, run_in_netns, run_sender, run_tcp_client, start_receiver,
                                    start_receivers, start_sender, start_senders, start_tcp_server)

__all__ = [
    "ROCE_PORT", "TCP_PORT", "UDP_PORT", "FlowReceived", "FlowSent", "Gap", "ReceiveResult", "ReceiveSpec",
    "RoceFlow", "SendResult", "SendSpec", "SpecError", "TcpClientSpec", "TcpResult", "TcpServerSpec", "TcpStream",
    "TrafficError", "UdpFlow", "from_json", "losses", "to_json",
    "Endpoint", "FlowOptions", "PlannedFlow", "all_to_all", "incast", "ring",
    "RETH", "RoceShape", "RoceTemplate", "rdma_flow_label", "roce_sport", "verify_icrc",
    "TrafficProcess", "run_in_netns", "run_sender", "run_tcp_client", "start_receiver", "start_receivers",
    "start_sender", "start_senders", "start_tcp_server",
]
