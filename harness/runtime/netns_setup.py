"""What the netns runtime sets in each node's namespace before its daemons start: the
kernel's settings of a switch and of a host, and a switch's forwarding rules: around its
management port, and between the rails of a rail-only leaf that carries several."""
from __future__ import annotations

import zlib
from pathlib import Path

from harness.core.plan import SwitchPlan

MGMT_TABLE = "fablab_mgmt"
_HASH_SEED = Path("/proc/sys/net/ipv4/fib_multipath_hash_seed")


def switch_sysctls(name: str, hash_policy: int) -> dict[str, int]:
    values = {
        "net.ipv4.ip_forward": 1,
        "net.ipv6.conf.all.forwarding": 1,
        "net.ipv4.fib_multipath_hash_policy": hash_policy,
        "net.ipv4.conf.all.rp_filter": 0,
        "net.ipv4.conf.default.rp_filter": 0,
        # A next hop whose carrier is gone is skipped by the kernel at once, before zebra reacts.
        "net.ipv4.conf.all.ignore_routes_with_linkdown": 1,
        "net.ipv4.conf.default.ignore_routes_with_linkdown": 1,
        # Link-local addresses usable at once: BGP unnumbered need not wait for DAD.
        "net.ipv6.conf.default.accept_dad": 0,
        "net.ipv6.conf.all.accept_dad": 0,
    }
    if _HASH_SEED.exists():
        # A fixed seed per switch: runs repeat, and switches still hash differently
        # (one shared seed would polarise a multi-tier fabric).
        values["net.ipv4.fib_multipath_hash_seed"] = zlib.crc32(name.encode()) & 0x7FFFFFFF
    return values


# Hosts never forward (a GPU node sits on FE, BE and mgmt: forwarding would bridge planes),
# speak IPv4 only, and keep rp_filter off so that a leaked packet is seen, not hidden.
HOST_SYSCTLS = {
    "net.ipv4.ip_forward": 0,
    "net.ipv6.conf.all.disable_ipv6": 1,
    "net.ipv6.conf.default.disable_ipv6": 1,
    "net.ipv4.conf.all.rp_filter": 0,
    "net.ipv4.conf.default.rp_filter": 0,
    "net.ipv4.conf.all.arp_ignore": 1,
    "net.ipv4.conf.all.arp_announce": 2,
}


def routed_host_sysctls(name: str, hash_policy: int) -> dict[str, int]:
    """A dual-homed host: still no forwarding, but ECMP over its two NICs as the FE leaves hash,
    a NIC whose carrier is gone skipped at once, and a seed of its own (as a switch has)."""
    values = {**HOST_SYSCTLS, "net.ipv4.fib_multipath_hash_policy": hash_policy,
              "net.ipv4.conf.all.ignore_routes_with_linkdown": 1,
              "net.ipv4.conf.default.ignore_routes_with_linkdown": 1}
    if _HASH_SEED.exists():
        values["net.ipv4.fib_multipath_hash_seed"] = zlib.crc32(name.encode()) & 0x7FFFFFFF
    return values


# SONiC keeps eth0 in a management VRF; this kernel has no VRF, so the switch refuses to
# forward anything into or out of its management port instead, and (Linux being a weak
# host) keeps its mgmt address off the data ports and its data addresses off eth0.
# Likewise a rail-only leaf of several rails, which SONiC renders with a VRF per rail: each
# port group forwards only within itself.
def switch_rules(sw: SwitchPlan) -> str:
    own = f"{{ {sw.mgmt.ip}, {sw.mgmt.network.broadcast_address}, 255.255.255.255, 224.0.0.0/4 }}"
    rails = "".join(f"\n    iifname {{ {_names(g)} }} oifname != {{ {_names(g)} }} drop"
                    for g in sw.port_groups.values() if g) if sw.separate_rails else ""
    return f"""table inet {MGMT_TABLE} {{
  chain forward {{
    type filter hook forward priority 0; policy accept;
    iifname "eth0" drop
    oifname "eth0" drop{rails}
  }}
  chain input {{
    type filter hook input priority 0; policy accept;
    iifname "eth0" ip daddr != {own} drop
    iifname != {{ "eth0", "lo" }} ip daddr {sw.mgmt.ip} drop
  }}
}}
"""


def _names(ports) -> str:
    return ", ".join(f'"{p.name}"' for p in ports)
