"""Exact packet counts per (egress port, UDP or TCP source port) on a switch, from nftables.

Interface counters also count BGP, BFD and RA packets; these count only the traffic under
test, matched in the forward hook by egress port and UDP destination port. Each (port,
source port) pair seen gets its own element, with a counter, in one dynamic set: one rule
and one set however many QPs and uplinks, only the pairs that occur take memory, and one
`nft list set` reads them all. A QP (its source port) that shows up under two ports was
split over two paths.

Where the source ports are known, every (port, source port) element is made up front, by nft
in process context, and the packet path only counts. An element the packet path adds needs
an atomic per-CPU allocation for its counter, and the per-CPU allocator refills its atomic
reserve from a kworker: on a busy machine a burst of new flows outruns it, and nft then adds
nothing and says nothing (a 1,904-QP spread once went uncounted from its 1,563rd QP on, at
every switch at once, while the receiver got every packet).
"""
from __future__ import annotations

import itertools
import json
from collections import defaultdict

from harness.core.errors import HarnessError, LabError
from harness.plumbing.labview import LabView

_ids = itertools.count(1)
_MAX_ELEMENTS = 1 << 20


class _Table:
    """One nftables table of a lab node's counters: installed, read set by set, removed. Use as
    a context manager."""

    def __init__(self, lab: LabView, node: str, prefix: str) -> None:
        self.lab, self.node, self.table = lab, node, f"{prefix}_{next(_ids)}"

    def ruleset(self) -> str:
        raise NotImplementedError

    def _nft(self, argv: list[str], stdin: str | None = None) -> str:
        # The host's nft in the switch's namespace: SONiC-VS images have no nft.
        run = self.lab.ns_exec(self.node, ["nft", *argv], input=stdin)
        if run.returncode != 0:
            raise LabError(f"nft on {self.node}: {run.stderr.strip()}")
        return run.stdout

    def _elements(self, name: str) -> list:
        """The elements of set `name` as nft's JSON has them."""
        doc = json.loads(self._nft(["-j", "list", "set", "inet", self.table, name]))
        return [e for item in doc.get("nftables", []) for e in (item.get("set") or {}).get("elem", [])]

    def install(self):
        self._nft(["-f", "-"], self.ruleset())
        return self

    def remove(self) -> None:
        self._nft(["delete", "table", "inet", self.table])

    def __enter__(self):
        return self.install()

    def __exit__(self, *exc: object) -> None:
        self.remove()


class FlowCounters(_Table):
    """Use as a context manager. `sports` None counts every source port; a list counts only
    those (other traffic to `dport` is not recorded). On a switch the traffic it forwards is
    counted; on a host (`sent=True`), the traffic it sends itself."""

    def __init__(self, lab: LabView, node: str, ports: list[str], sports: list[int] | None = None,
                 dport: int = 4791, protocol: str = "udp", sent: bool = False) -> None:
        if not ports:
            raise HarnessError(f"FlowCounters on {node}: ports is empty; give the egress ports to count on")
        bad = [s for s in sports or () if not 0 < s < 1 << 16]
        if bad or not 0 < dport < 1 << 16:
            raise HarnessError(f"FlowCounters on {node}: not UDP ports: {bad or dport}")
        if protocol not in ("udp", "tcp"):
            raise HarnessError(f"FlowCounters on {node}: protocol {protocol!r}: use udp or tcp")
        super().__init__(lab, node, "fablab_count")
        self.ports, self.dport, self.protocol = list(ports), dport, protocol
        self.sports = sorted(set(sports)) if sports is not None else None
        self.hook = "output" if sent else "forward"

    def ruleset(self) -> str:
        ports = ", ".join(f'"{p}"' for p in self.ports)
        wanted, match, made = "", "", ""
        size = min(len(self.ports) << 16, _MAX_ELEMENTS)
        if self.sports is not None:
            size = len(self.ports) * len(self.sports)
            wanted = ("  set wanted {\n    type inet_service\n"
                      f"    elements = {{ {', '.join(map(str, self.sports))} }}\n  }}\n")
            match = f" {self.protocol} sport @wanted"
            made = ("    elements = { "
                    + ", ".join(f'"{p}" . {s}' for p in self.ports for s in self.sports) + " }\n")
        return (f"table inet {self.table} {{\n"
                f"  set flows {{\n    type ifname . inet_service\n    size {size}\n"
                f"    flags dynamic\n    counter\n{made}  }}\n"
                f"{wanted}"
                f"  chain count {{\n    type filter hook {self.hook} priority -10; policy accept;\n"
                f"    oifname {{ {ports} }} {self.protocol} dport {self.dport}{match} "
                f"update @flows {{ oifname . {self.protocol} sport }}\n"
                f"  }}\n}}\n")

    def read_flows(self) -> dict[tuple[str, int], int]:
        """(port, source port) -> packets so far, for every pair seen (an element made up front
        that no packet reached is not a pair seen)."""
        out: dict[tuple[str, int], int] = {}
        for elem in self._elements("flows"):
            body = elem.get("elem", elem)
            port, sport = body["val"]["concat"]
            packets = int((body.get("counter") or {}).get("packets", 0))
            if packets:
                out[(port, int(sport))] = packets
        return out

    def read(self) -> dict[str, int]:
        """"port" -> packets and "port/sport" -> packets so far (pairs never seen are absent)."""
        out: dict[str, int] = defaultdict(int)
        for port in self.ports:
            out[port] = 0
        for (port, sport), packets in self.read_flows().items():
            out[port] += packets
            out[f"{port}/{sport}"] = packets
        return dict(out)

def paths_of(flows: dict[tuple[str, int], int]) -> dict[int, tuple[str, ...]]:
    """Source port -> the ports it was seen on (sorted); more than one means the flow was split."""
    seen: dict[int, set[str]] = defaultdict(set)
    for (port, sport), packets in flows.items():
        if packets:
            seen[sport].add(port)
    return {s: tuple(sorted(p)) for s, p in seen.items()}


class FlowPorts(_Table):
    """Which egress port each flow left a switch by, where there are too many flows to make a
    counter for every (port, flow) pair up front: a spine of 64 super-spine links forwarding its
    share of 97,280 QPs would need 6.2 million. A flow is (destination address, UDP source
    port), from one source address to a few destinations, so a source port may be used once per
    destination (RoCEv2 has 16,384 of them).

    A flow's pair is added by the packet path to a set without counters: presence is the path,
    and an element without a counter needs no per-CPU allocation (FlowCounters' docstring says
    why that matters). Packets are counted per port, on elements made up front. With two
    SCHED_FIFO loops holding both cores, 65,000 new flows were all seen this way, against 15,442
    with a counter on each element. Use as a context manager."""

    def __init__(self, lab: LabView, node: str, ports: list[str], source: str, destinations: list[str],
                 flows: int, dport: int = 4791) -> None:
        if not ports or not destinations or flows < 1:
            raise HarnessError(f"FlowPorts on {node}: needs ports, destinations and flows >= 1 "
                               f"(got {len(ports)}, {len(destinations)}, {flows})")
        super().__init__(lab, node, "fablab_ports")
        self.ports, self.dport = list(ports), dport
        self.source, self.destinations = source, sorted(set(destinations))
        # Room for every flow on two ports (a split is seen, not dropped), and the hash table
        # sized for it up front: nft sizes its buckets from `size`, so no resize under load.
        self.size = 2 * flows + len(self.ports)

    def ruleset(self) -> str:
        ports = ", ".join(f'"{p}"' for p in self.ports)
        # The ports are matched with an anonymous set: a lookup in `packets` would count too.
        return (f"table inet {self.table} {{\n"
                f"  set seen {{\n    type ifname . ipv4_addr . inet_service\n    size {self.size}\n"
                f"    flags dynamic\n  }}\n"
                f"  set packets {{\n    type ifname\n    size {len(self.ports)}\n    flags dynamic\n    counter\n"
                f"    elements = {{ {ports} }}\n  }}\n"
                f"  chain count {{\n    type filter hook forward priority -10; policy accept;\n"
                f"    oifname {{ {ports} }} ip saddr {self.source} ip daddr {{ {', '.join(self.destinations)} }} "
                f"udp dport {self.dport} update @seen {{ oifname . ip daddr . udp sport }} update @packets {{ oifname }}\n"
                f"  }}\n}}\n")

    def read_paths(self) -> dict[tuple[str, int], tuple[str, ...]]:
        """(destination, source port) -> the ports the flow left by (sorted), for every flow seen."""
        seen: dict[tuple[str, int], set[str]] = defaultdict(set)
        elements = self._elements("seen")
        for elem in elements:
            port, dst, sport = elem["concat"]  # an element without a counter is its key
            seen[(dst, int(sport))].add(port)
        if (count := len(elements)) >= self.size:
            raise LabError(f"nft on {self.node}: the set of flows seen is full ({count}); some went uncounted")
        return {f: tuple(sorted(p)) for f, p in seen.items()}

    def read_packets(self) -> dict[str, int]:
        """Port -> packets of the flows counted so far."""
        out = dict.fromkeys(self.ports, 0)
        for elem in self._elements("packets"):
            body = elem.get("elem", elem)
            out[body["val"]] = int((body.get("counter") or {}).get("packets", 0))
        return out

