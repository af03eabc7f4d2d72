"""What an frr.conf holds once FRR 8.4 has read it (harness.core.meaning.frr reads it): every
statement with its line, grouped by the node FRR put it in."""
from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Statement:
    line: int
    text: str  # whitespace collapsed

    @property
    def words(self) -> list[str]:
        return self.text.split()


@dataclass(frozen=True)
class PrefixEntry:
    seq: int
    permit: bool
    prefix: ipaddress.IPv4Network | ipaddress.IPv6Network
    ge: int | None
    le: int | None
    line: int

    def lengths(self) -> tuple[int, int]:
        """The prefix lengths it matches (FRR's ge/le defaults: ge alone runs to the host length,
        le alone starts at the prefix's own)."""
        top = self.prefix.max_prefixlen
        if self.ge is None and self.le is None:
            return self.prefix.prefixlen, self.prefix.prefixlen
        return (self.ge if self.ge is not None else self.prefix.prefixlen), (self.le if self.le is not None else top)

    def __post_init__(self) -> None:
        # what matching needs, as integers: it runs for every probe of every session
        shift = self.prefix.max_prefixlen - self.prefix.prefixlen
        object.__setattr__(self, "_key", (self.prefix.version, shift, int(self.prefix.network_address) >> shift,
                                          *self.lengths()))

    def matches(self, p) -> bool:
        version, shift, bits, low, high = self._key
        n = p.prefixlen
        return p.version == version and low <= n <= high and n >= self.prefix.prefixlen \
            and int(p.network_address) >> shift == bits

    def __str__(self) -> str:
        more = (f" ge {self.ge}" if self.ge is not None else "") + (f" le {self.le}" if self.le is not None else "")
        return f"{'permit' if self.permit else 'deny'} {self.prefix}{more}"


@dataclass
class PrefixList:
    name: str
    family: str  # ip | ipv6
    entries: list[PrefixEntry] = field(default_factory=list)

    def ordered(self) -> list[PrefixEntry]:
        return list(self.entries)

    def decide(self, p) -> tuple[bool, int | None]:
        """permit?, and the line that decided (None: the implicit deny at the end)."""
        for e in self.entries:  # kept in seq order as they are read
            if e.matches(p):
                return e.permit, e.line
        return False, None


@dataclass(frozen=True)
class AccessEntry:
    permit: bool
    prefix: ipaddress.IPv4Network | ipaddress.IPv6Network | None  # None: any
    exact: bool
    line: int

    def matches(self, p) -> bool:
        if self.prefix is None:
            return True
        if p.version != self.prefix.version:
            return False
        inside = p.network_address in self.prefix
        return inside and (not self.exact or p.prefixlen == self.prefix.prefixlen)


@dataclass
class RouteMapEntry:
    seq: int
    permit: bool
    line: int
    matches: list[Statement] = field(default_factory=list)
    sets: list[Statement] = field(default_factory=list)
    flow: list[Statement] = field(default_factory=list)  # call, on-match, continue
    name: str = ""  # the route map's


@dataclass
class PeerConf:
    """What one `neighbor X ...` (a neighbour or a peer group) sets in `router bgp` itself."""
    name: str
    group: str | None = None  # the peer group it belongs to
    is_group: bool = False
    interface: bool = False  # an unnumbered neighbour on an interface
    remote_as: str | None = None  # external | internal | a number
    lines: list[int] = field(default_factory=list)
    settings: dict[str, Statement] = field(default_factory=dict)  # "timers", "bfd", "shutdown", ... -> statement


@dataclass
class AfConf:
    afi: str  # ipv4 | ipv6 | l2vpn
    safi: str  # unicast | evpn | ...
    line: int | None = None
    neighbors: dict[str, dict[str, Statement]] = field(default_factory=dict)  # name -> setting -> statement
    statements: list[Statement] = field(default_factory=list)  # network, redistribute, maximum-paths, ...
    vnis: dict[int, list[Statement]] = field(default_factory=dict)


@dataclass
class BgpInstance:
    asn: str
    vrf: str  # "default" for the default VRF
    line: int
    statements: list[Statement] = field(default_factory=list)  # bgp ..., timers bgp ..., other
    peers: dict[str, PeerConf] = field(default_factory=dict)
    afs: dict[tuple[str, str], AfConf] = field(default_factory=dict)

    def af(self, afi: str, safi: str, line: int | None = None) -> AfConf:
        if (afi, safi) not in self.afs:
            self.afs[(afi, safi)] = AfConf(afi, safi, line)
        return self.afs[(afi, safi)]


@dataclass
class FrrConfig:
    profile: str = "traditional"  # frr defaults ...: traditional unless the file says otherwise
    profile_line: int | None = None
    prefix_lists: dict[tuple[str, str], PrefixList] = field(default_factory=dict)  # (family, name)
    access_lists: dict[str, list[AccessEntry]] = field(default_factory=dict)
    route_maps: dict[str, list[RouteMapEntry]] = field(default_factory=dict)
    bgp: dict[str, BgpInstance] = field(default_factory=dict)  # vrf -> instance
    bfd_profiles: dict[str, dict[str, Statement]] = field(default_factory=dict)
    bfd_peers: dict[str, list[Statement]] = field(default_factory=dict)
    interfaces: dict[str, list[Statement]] = field(default_factory=dict)
    interface_vrfs: dict[str, str] = field(default_factory=dict)
    vrfs: dict[str, list[Statement]] = field(default_factory=dict)
    top: list[Statement] = field(default_factory=list)  # other top-level statements
    blocks: dict[str, list[Statement]] = field(default_factory=dict)  # blocks not modelled, by their header

    def route_map(self, name: str) -> list[RouteMapEntry] | None:
        entries = self.route_maps.get(name)
        return sorted(entries, key=lambda e: e.seq) if entries is not None else None
