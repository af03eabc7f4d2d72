"""Traffic: RoCEv2 (written from the wire format, byte-patched), UDP and TCP flows, sent and
received inside lab namespaces.

Specs and results are frozen dataclasses (`flows`, `results`); senders, receivers and TCP ends
run as separate processes in a namespace (`runner` starts them, `process` is their side), or one
process for many namespaces, speaking JSON only at that boundary;
`patterns` turns collectives (ring, all-to-all, incast) into flow lists.

The names below load when first used (PEP 562): a sender or receiver process, started as
`python -m harness.traffic.X`, imports this package first and must not pay for the others
(scapy alone, behind RETH, is 0.4 s of CPU).
"""
from __future__ import annotations

import importlib

# name -> module that defines it
_WHERE: dict[str, str] = {
    **dict.fromkeys(("ROCE_PORT", "TCP_PORT", "UDP_PORT", "ReceiveSpec", "RoceFlow", "SendSpec", "SpecError",
                     "TcpClientSpec", "TcpServerSpec", "TrafficError", "UdpFlow", "from_json", "to_json"),
                    "harness.traffic.flows"),
    **dict.fromkeys(("FlowReceived", "FlowSent", "Gap", "ReceiveResult", "SendResult", "TcpResult", "TcpStream",
                     "losses"), "harness.traffic.results"),
    **dict.fromkeys(("Endpoint", "FlowOptions", "PlannedFlow", "all_to_all", "incast", "ring"),
                    "harness.traffic.patterns"),
    **dict.fromkeys(("RoceShape", "RoceTemplate", "rdma_flow_label", "roce_sport", "verify_icrc"),
                    "harness.traffic.roce"),
    "RETH": "harness.traffic.roce_scapy",
    **dict.fromkeys(("TrafficProcess", "run_in_netns", "run_sender", "run_tcp_client", "start_receiver",
                     "start_receivers", "start_sender", "start_senders", "start_tcp_server"),
                    "harness.traffic.runner"),
}

__all__ = list(_WHERE)


def __getattr__(name: str):
    if name in _WHERE:
        value = getattr(importlib.import_module(_WHERE[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'harness.traffic' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_WHERE))
