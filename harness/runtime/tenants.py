"""FE tenants on the netns runtime: what SONiC's VLAN, VXLAN and ACL tables become in a
namespace with the kernel's own devices.

A VTEP leaf gets, per tenant behind it, a bridge holding the members' ports and a VXLAN
device on the loopback without data-plane learning (FRR's "traditional" bridge per VNI):
zebra advertises the MACs the bridge learns on the ports as EVPN type-2 routes, and
installs remote MACs and flood lists from BGP. SONiC's single VLAN-aware Bridge with a VLAN
per tenant needs 802.1Q, which this kernel lacks; the L2 domains are the same. The edge ACL
is nftables in the bridge family, on the member ports' ingress, one counter per entry.
No SVI and no VRF: tenants are L2 only (see harness/core/tenancy.py).
"""
from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

from harness.plumbing import namespaces
from harness.core.acl import TABLE, AclEntry
from harness.core.errors import PrerequisiteError
from harness.core.plan import HostPlan, Plan, SwitchPlan
from harness.core.tenancy import NFT_TABLE, VXLAN_PORT, bridge_device, vxlan_device


# How long a member's IP binding on its leaf's bridge outlives its creation. A switch keeps a
# live host's binding by ARPing it; this bridge has no address to ARP from, and a gratuitous
# ARP for a binding it holds refreshes nothing, so at the kernel's default (60 s) the binding
# went at the first gc after it was a minute old, zebra withdrew its MAC/IP route on every
# leaf, and a tenants check announcing then saw no type-2 route for its whole wait (measured:
# lesson 13 in `make test`). Kept now while the bridge lives; zebra still withdraws the route
# with the MAC (seen: the member's port down, MAC and MAC/IP routes gone, the binding marked
# inactive). The largest value every kernel HZ accepts (INT_MAX / 1000 s: 24 days).
BINDING_KEPT_S = 2_147_483


def leaf_commands(plan: Plan, sw: SwitchPlan) -> list[str]:
    """`ip -batch` lines that make sw a VTEP for its tenants: per VNI a bridge holding the
    VXLAN device and the members' ports (the kernel here has no VLAN-aware bridge: SONiC's
    one Bridge with a VLAN per tenant becomes a bridge per tenant, the same L2 domains)."""
    lines: list[str] = []
    for t in plan.tenants:
        if t.vni not in sw.vnis:
            continue
        br, dev = bridge_device(t.vni), vxlan_device(t.vni)
        lines += [f"link add {br} type bridge",
                  f"link add {dev} type vxlan id {t.vni} local {sw.loopback.ip} dstport {VXLAN_PORT} nolearning "
                  "ttl 64",
                  f"link set {dev} mtu {t.mtu} master {br} up",
                  f"link set {br} mtu {t.mtu} up"]
        lines += [f"link set {p.name} master {br}" for p in sw.tenant_ports if t.vlan in p.vlans]
    return lines


def host_commands(host: HostPlan) -> list[str]:
    """`ip -batch` lines for a host's tenant NIC: its MTU (VXLAN's overhead off the FE's)."""
    return [f"link set {nic.name} mtu {nic.mtu} up" for nic in host.nics if nic.tenant is not None]


def check_supported(plan: Plan) -> None:
    """A host in several tenants needs 802.1Q on its NIC and on the leaf; refuse before
    anything is made if this kernel has none (no 8021q: /proc/net/vlan is missing)."""
    if Path("/proc/net/vlan").exists():
        return
    trunks = [(h.name, [n.tenant for n in h.nics if n.parent]) for h in plan.hosts if any(n.parent for n in h.nics)]
    if trunks:
        host, names = trunks[0]
        raise PrerequisiteError(
            f"{host} is in tenants {', '.join(names)}: a trunk needs 802.1Q VLAN interfaces, which this kernel "
            "lacks (no 8021q, no VLAN-aware bridge, no tc vlan action). Give each tenant its own members "
            "(e.g. a gateway per tenant), or run the clab runtime")


def acl_ruleset(entries: tuple[AclEntry, ...], sw: SwitchPlan) -> str:
    ports = ", ".join(f'"{p.name}"' for p in sw.tenant_ports)
    lines = [_nft_rule(e) for e in entries]
    body = "\n".join(f"    iifname {{ {ports} }} {line}" for line in lines)
    # The bridges' own input: ARP still comes in (gratuitous ARPs are how the leaf learns a
    # member's IP for EVPN), IP never does: a tenant reaches no address of the leaf.
    return f"""table bridge {NFT_TABLE} {{
  chain ingress {{
    type filter hook prerouting priority 0; policy accept;
{body}
  }}
  chain to_leaf {{
    type filter hook input priority 0; policy accept;
    ether type {{ ip, ip6 }} counter drop comment "to-leaf"
  }}
}}
"""


def _nft_rule(e: AclEntry) -> str:
    parts = ["ether type ip"]
    if e.src is not None:
        parts.append(f"ip saddr {e.src}")
    if e.dst is not None:
        parts.append(f"ip daddr {e.dst}")
    if e.protocol is not None:
        parts.append(f"ip protocol {e.protocol}")
    for ports, field in ((e.src_ports, "sport"), (e.dst_ports, "dport")):
        if ports is not None:
            parts.append(f"th {field} {ports}")
    verdict = "accept" if e.action == "permit" else "drop"
    return " ".join(parts) + f' counter {verdict} comment "{e.name}"'


def apply(plan: Plan, namespace_of: Callable[[str], str]) -> None:
    """Before FRR starts: zebra learns VNIs from the devices it finds."""
    entries = plan.acl
    for sw in plan.switches:
        if sw.vnis:
            ns = namespace_of(sw.name)
            namespaces.ip_batch(ns, leaf_commands(plan, sw))
            # No SVI snoops ARP here: a tenant bridge takes IP bindings from its members'
            # gratuitous ARPs instead, and zebra sends them as type-2 MAC/IP routes; and a
            # frame a member sends to the leaf's own MAC is never routed into the underlay
            # (SONiC: no VLAN_INTERFACE, so no router MAC in the tenant's VLAN).
            values: dict[str, int] = {}
            for t in plan.tenants:
                if t.vni in sw.vnis:
                    br = bridge_device(t.vni)
                    values |= {f"net.ipv4.conf.{br}.arp_accept": 1, f"net.ipv4.conf.{br}.forwarding": 0,
                               f"net.ipv6.conf.{br}.disable_ipv6": 1,
                               f"net.ipv4.neigh.{br}.gc_stale_time": BINDING_KEPT_S}
            namespaces.write_sysctls(ns, values)
            namespaces.nft(ns, acl_ruleset(entries, sw))
    for h in plan.hosts:
        lines = host_commands(h)
        if lines:
            namespaces.ip_batch(namespace_of(h.name), lines)


def nft_counters(nft_json: str) -> dict[str, int]:
    """Packets each ACL entry matched (by entry name) from `nft -j list table bridge ...`."""
    counts: dict[str, int] = {}
    for item in json.loads(nft_json)["nftables"]:
        rule = item.get("rule")
        if not rule or "comment" not in rule:
            continue
        for expr in rule["expr"]:
            if "counter" in expr:
                counts[rule["comment"]] = counts.get(rule["comment"], 0) + expr["counter"]["packets"]
    return counts


def show_acl_rules(text: str, table: str = TABLE) -> dict[str, str]:
    """Rule -> status of every rule of `table` in SONiC's `show acl rule` (acl-loader: columns
    Table, Rule, Priority, Action, Match, Status under a line of dashes; a rule's further match
    fields on rows of their own with the other columns blank; Status `N/A` where STATE_DB has
    none, absent before sonic-utilities#2667)."""
    lines = text.splitlines()
    rule_line = next((i for i, line in enumerate(lines) if set(line.strip()) <= {"-", " "} and "-" in line), None)
    if rule_line is None:
        return {}
    spans = [(m.start(), m.end()) for m in re.finditer(r"-+", lines[rule_line])]
    header = [lines[rule_line - 1][a:b if k + 1 < len(spans) else None].strip() if rule_line else ""
              for k, (a, b) in enumerate(spans)]
    col = {name: k for k, name in enumerate(header)}
    if "Rule" not in col or "Table" not in col:
        return {}
    rules: dict[str, str] = {}
    for line in lines[rule_line + 1:]:
        cells = [line[a:spans[k + 1][0] if k + 1 < len(spans) else None].strip() for k, (a, _) in enumerate(spans)]
        if cells[col["Rule"]] and cells[col["Table"]] == table:
            rules[cells[col["Rule"]]] = cells[col["Status"]] if "Status" in col and cells[col["Status"]] else "N/A"
    return rules


def aclshow_counters(text: str) -> dict[str, int]:
    """Packets per rule of the edge table from SONiC's `aclshow -a` (RULE NAME, TABLE NAME,
    PRIO, PACKETS COUNT, BYTES COUNT); 'N/A' counts as 0."""
    counts = {}
    for line in text.splitlines():
        cols = line.split()
        if len(cols) >= 5 and cols[1] == TABLE:
            counts[cols[0]] = int(cols[3]) if cols[3].isdigit() else 0
    return counts
