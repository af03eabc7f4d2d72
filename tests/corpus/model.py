"""fablab's rendered frr.conf, read into a structure the style writers can write out in other words.

This reads fablab's own wording only (harness/templates' frr.conf: one statement per line, one
space of indentation per level, `exit` lines, `!` comments); it is the corpus' input, not a general
FRR parser. What it does not know it keeps as a raw line, so a writer can keep it as written.
"""
from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field

_NEIGHBOR = re.compile(r"^neighbor (\S+) (.+)$")
_PL = re.compile(r"^ip prefix-list (\S+) seq (\d+) (permit|deny) (\S+)(?: ge (\d+))?(?: le (\d+))?$")
_CLOSE = {"exit", "exit-address-family", "exit-vni", "exit-vrf", "end"}


@dataclass
class Entry:
    """One prefix-list entry."""
    seq: int
    action: str
    prefix: str
    ge: int | None = None
    le: int | None = None

    def match(self, *, ge32_short: bool = False) -> str:
        """The entry's prefix and length range; `ge 32 le 32` written `ge 32` when asked (for IPv4,
        `ge N` alone runs to /32: FRR 8.4 lib/plist.c)."""
        out = self.prefix
        if self.ge is not None:
            out += f" ge {self.ge}"
        if self.le is not None and not (ge32_short and self.ge == 32 and self.le == 32):
            out += f" le {self.le}"
        return out


@dataclass
class RouteMap:
    name: str
    action: str
    seq: int
    lines: list[str] = field(default_factory=list)  # "match ip address prefix-list X", "set src A"


@dataclass
class Neighbor:
    name: str
    interface: bool  # `neighbor NAME interface ...` (BGP unnumbered) or an address
    group: str | None
    settings: list[str] = field(default_factory=list)  # without "neighbor NAME ": "remote-as external", ...


@dataclass
class AddressFamily:
    name: str  # "ipv4 unicast" | "l2vpn evpn"
    peers: dict[str, list[str]] = field(default_factory=dict)  # group or neighbour -> settings, in order
    lines: list[str] = field(default_factory=list)  # redistribute, maximum-paths, advertise-all-vni, ...
    vnis: list[tuple[str, list[str]]] = field(default_factory=list)


@dataclass
class Bgp:
    asn: str
    vrf: str | None = None
    globals: list[str] = field(default_factory=list)
    groups: dict[str, list[str]] = field(default_factory=dict)  # name -> settings (after "peer-group")
    neighbors: list[Neighbor] = field(default_factory=list)
    afs: list[AddressFamily] = field(default_factory=list)

    def af(self, name: str) -> AddressFamily | None:
        return next((a for a in self.afs if a.name == name), None)

    def members(self, group: str) -> list[Neighbor]:
        return [n for n in self.neighbors if n.group == group]


@dataclass
class Conf:
    hostname: str
    header: list[str]  # frr version, frr defaults, hostname, service, zebra globals: in file order
    interfaces: list[tuple[str, list[str]]]
    prefix_lists: dict[str, list[Entry]]
    route_maps: list[RouteMap]
    zebra: list[str]  # `ip protocol bgp route-map X`
    bgp: Bgp | None
    bfd_profiles: dict[str, list[str]]
    trailer: list[str]  # line vty
    # A semantic fault the writers express in their own words: the inbound policy of these groups or
    # neighbours gains an entry that permits with no match (SONiC's `route-map FROM_BGP_PEER_V4 permit 100`).
    in_permit_all: set[str] = field(default_factory=set)

    def copy(self) -> "Conf":
        return copy.deepcopy(self)

    # -- questions the writers ask --------------------------------------------------------------
    def filters(self, target: str) -> dict[str, str]:
        """direction ("in"/"out") -> prefix list attached to a group or neighbour in ipv4 unicast."""
        af = self.bgp.af("ipv4 unicast") if self.bgp else None
        out: dict[str, str] = {}
        for s in (af.peers.get(target, []) if af else []):
            m = re.match(r"^prefix-list (\S+) (in|out)$", s)
            if m:
                out[m.group(2)] = m.group(1)
        return out

    def detach(self, name: str) -> Neighbor:
        """Take a neighbour out of its peer group, giving it the group's settings itself (same meaning)."""
        n = next(x for x in self.bgp.neighbors if x.name == name)
        if n.group is None:
            return n
        g = n.group
        n.settings = list(self.bgp.groups[g]) + n.settings
        for af in self.bgp.afs:
            if g in af.peers:
                af.peers[name] = list(af.peers[g]) + af.peers.get(name, [])
        if g in self.in_permit_all:
            self.in_permit_all.add(name)
        n.group = None
        return n


def parse(text: str) -> Conf:
    """fablab's frr.conf -> Conf."""
    header: list[str] = []
    interfaces: list[tuple[str, list[str]]] = []
    pls: dict[str, list[Entry]] = {}
    rms: list[RouteMap] = []
    zebra: list[str] = []
    bfd: dict[str, list[str]] = {}
    trailer: list[str] = []
    bgp: Bgp | None = None
    hostname = ""
    ctx: list[str] = []  # "interface", "route-map", "bgp", "af", "vni", "bfd", "profile", "line"
    cur_if: list[str] | None = None
    cur_rm: RouteMap | None = None
    cur_af: AddressFamily | None = None
    cur_vni: list[str] | None = None
    cur_prof: list[str] | None = None
    for raw in text.splitlines():
        line = " ".join(raw.split())
        if not line or line.startswith("!"):
            continue
        if line in _CLOSE:
            if ctx:
                ctx.pop()
            continue
        indented = raw[:1].isspace()
        if not indented:
            ctx = []
        top = ctx[-1] if ctx else None
        if top is None:
            if line.startswith("interface "):
                cur_if = []
                interfaces.append((line.split()[1], cur_if))
                ctx = ["interface"]
            elif line.startswith("ip prefix-list "):
                m = _PL.match(line)
                assert m, line
                pls.setdefault(m.group(1), []).append(Entry(int(m.group(2)), m.group(3), m.group(4),
                                                            int(m.group(5)) if m.group(5) else None,
                                                            int(m.group(6)) if m.group(6) else None))
            elif line.startswith("route-map "):
                _, name, action, seq = line.split()
                cur_rm = RouteMap(name, action, int(seq))
                rms.append(cur_rm)
                ctx = ["route-map"]
            elif line.startswith("router bgp "):
                parts = line.split()
                bgp = Bgp(parts[2], parts[4] if len(parts) > 4 else None)
                ctx = ["bgp"]
            elif line == "bfd":
                ctx = ["bfd"]
            elif line.startswith("line "):
                trailer.append(line)
                ctx = ["line"]
            elif line.startswith("ip protocol "):
                zebra.append(line)
            else:
                if line.startswith("hostname "):
                    hostname = line.split()[1]
                header.append(line)
        elif top == "interface":
            cur_if.append(line)
        elif top == "route-map":
            cur_rm.lines.append(line)
        elif top == "bfd":
            assert line.startswith("profile "), line
            cur_prof = []
            bfd[line.split()[1]] = cur_prof
            ctx.append("profile")
        elif top == "profile":
            cur_prof.append(line)
        elif top == "line":
            trailer.append(line)
        elif top == "bgp":
            if line.startswith("address-family "):
                cur_af = AddressFamily(line[len("address-family "):])
                bgp.afs.append(cur_af)
                ctx.append("af")
                continue
            m = _NEIGHBOR.match(line)
            if not m:
                bgp.globals.append(line)
                continue
            who, rest = m.groups()
            if rest == "peer-group":
                bgp.groups[who] = []
            elif who in bgp.groups:
                bgp.groups[who].append(rest)
            elif rest.startswith("interface peer-group "):
                bgp.neighbors.append(Neighbor(who, True, rest.split()[-1]))
            elif rest.startswith("peer-group ") and not any(n.name == who for n in bgp.neighbors):
                bgp.neighbors.append(Neighbor(who, False, rest.split()[-1]))
            else:
                n = next((x for x in bgp.neighbors if x.name == who), None)
                if n is None:
                    n = Neighbor(who, rest.startswith("interface"), None)
                    bgp.neighbors.append(n)
                    if rest.startswith("interface "):
                        rest = rest[len("interface "):]
                if rest.startswith("peer-group "):
                    n.group = rest.split()[-1]
                elif rest != "interface":
                    n.settings.append(rest)
        elif top == "af":
            if line.startswith("vni "):
                cur_vni = []
                cur_af.vnis.append((line.split()[1], cur_vni))
                ctx.append("vni")
                continue
            m = _NEIGHBOR.match(line)
            if m:
                cur_af.peers.setdefault(m.group(1), []).append(m.group(2))
            else:
                cur_af.lines.append(line)
        elif top == "vni":
            cur_vni.append(line)
    return Conf(hostname, header, interfaces, pls, rms, zebra, bgp, bfd, trailer)


def write_fablab(c: Conf) -> str:
    """Conf -> frr.conf in fablab's own wording (the reader's round trip; faults use it too)."""
    out = list(c.header) + ["!"]
    for name, lines in c.interfaces:
        out += [f"interface {name}"] + [f" {x}" for x in lines] + ["exit", "!"]
    for name, entries in c.prefix_lists.items():
        out += [f"ip prefix-list {name} seq {e.seq} {e.action} {e.match()}" for e in entries] + ["!"]
    rms = list(c.route_maps)
    for name, rm in _permit_all_maps(c).items():
        rms += rm
    for rm in rms:
        out += [f"route-map {rm.name} {rm.action} {rm.seq}"] + [f" {x}" for x in rm.lines] + ["exit", "!"]
    out += c.zebra + (["!"] if c.zebra else [])
    if c.bgp:
        b = c.bgp
        out.append(f"router bgp {b.asn}" + (f" vrf {b.vrf}" if b.vrf else ""))
        out += [f" {g}" for g in b.globals]
        for g, settings in b.groups.items():
            out += [f" neighbor {g} peer-group"] + [f" neighbor {g} {s}" for s in settings]
            for n in b.members(g):
                out.append(f" neighbor {n.name} interface peer-group {g}" if n.interface
                           else f" neighbor {n.name} peer-group {g}")
                out += [f" neighbor {n.name} {s}" for s in n.settings]
        for n in b.neighbors:
            if n.group is None:
                first, *rest = n.settings
                out.append(f" neighbor {n.name} interface {first}" if n.interface else f" neighbor {n.name} {first}")
                out += [f" neighbor {n.name} {s}" for s in rest]
        for af in b.afs:
            out += [" !", f" address-family {af.name}"]
            for who, settings in af.peers.items():
                for s in settings:
                    if s.startswith("prefix-list ") and s.endswith(" in") and who in c.in_permit_all:
                        s = f"route-map ACCEPT_{who} in"
                    out.append(f"  neighbor {who} {s}")
            out += [f"  {x}" for x in af.lines]
            for vni, lines in af.vnis:
                out += [f"  vni {vni}"] + [f"   {x}" for x in lines] + ["  exit-vni"]
            out.append(" exit-address-family")
        out += ["exit", "!"]
    if c.bfd_profiles:
        out.append("bfd")
        for p, lines in c.bfd_profiles.items():
            out += [f" profile {p}"] + [f"  {x}" for x in lines] + [" exit", " !"]
        out += ["exit", "!"]
    out += c.trailer + ["!"]
    return "\n".join(out) + "\n"


def _permit_all_maps(c: Conf, name=lambda who: f"ACCEPT_{who}") -> dict[str, list[RouteMap]]:
    """For the permit-all fault in styles that filter with a prefix list: the prefix list becomes a
    route map whose first entry permits with no match, ahead of the entry that matches the list."""
    out: dict[str, list[RouteMap]] = {}
    for who in sorted(c.in_permit_all):
        pl = c.filters(who).get("in")
        if pl:
            out[who] = [RouteMap(name(who), "permit", 5),
                        RouteMap(name(who), "permit", 10, [f"match ip address prefix-list {pl}"])]
    return out
