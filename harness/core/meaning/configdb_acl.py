"""ACLs as SONiC applies them: each table by the ports it binds, its stage and its type; its
rules in PRIORITY order (the higher first), the first that matches deciding. Two configs filter
alike when every probe packet gets the same decision on every port and stage, as Batfish
compares filters: the probes are built from both sides' rules (each network's first, last and
an inside address and one just outside it, each protocol, each L4 port and its neighbours, a
few defaults), so any rule that decides differently on either side is met by some probe. Rule
and table names never count."""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from ipaddress import IPv4Address, IPv4Network

from harness.core.meaning.configdb_norm import ConfigDb, Row, norm, norm_list, number, rows_of, sonic_defaults

_MODELLED = {"PRIORITY", "PACKET_ACTION", "SRC_IP", "DST_IP", "IP_PROTOCOL", "L4_SRC_PORT", "L4_DST_PORT",
             "L4_SRC_PORT_RANGE", "L4_DST_PORT_RANGE", "IP_TYPE", "MIRROR_ACTION", "MIRROR_INGRESS_ACTION",
             "MIRROR_EGRESS_ACTION"}
_IPV4_TYPES = {"ANY", "IP", "IPV4", "IPV4ANY", "NON_IPV6"}
_NAMES = {6: "tcp", 17: "udp", 1: "icmp", 132: "sctp"}
_WITH_PORTS = (6, 17, 132)
_SPORT = 49152  # an ephemeral source port: what most probes come from
_DEFAULT_ADDRESSES = (IPv4Address("192.0.2.1"),)  # an address no fabric uses (TEST-NET-1)
_DEFAULT_PORTS = (80,)
_DEFAULT_PROTOCOLS = (6, 17, 1)
_TABLE_DEFAULTS = sonic_defaults("ACL_TABLE")  # stage INGRESS, ports none (yang_defaults)


@dataclass(frozen=True)
class Packet:
    src: IPv4Address
    dst: IPv4Address
    protocol: int
    sport: int = 0
    dport: int = 0

    def __str__(self) -> str:
        name = _NAMES.get(self.protocol, f"proto {self.protocol}")
        ports = f"/{self.dport}" + (f" from port {self.sport}" if self.sport != _SPORT else "") \
            if self.protocol in _WITH_PORTS else ""
        return f"{self.src} -> {self.dst} {name}{ports}"


@dataclass(frozen=True)
class Rule:
    priority: int
    action: str
    src: IPv4Network | None
    dst: IPv4Network | None
    protocol: int | None
    sports: tuple[int, int] | None
    dports: tuple[int, int] | None
    ipv4: bool  # whether the rule can match an IPv4 packet at all (IP_TYPE)
    other: tuple[tuple[str, str], ...]  # match fields the probes do not carry
    row: Row
    spans: tuple[int, int, int, int] = (0, 0, 0, 0)  # src and dst as integer ranges: probes test thousands

    def matches(self, p: Packet) -> bool:
        return self.matches_flow(int(p.src), int(p.dst), p.protocol, p.sport, p.dport)

    def matches_flow(self, src: int, dst: int, protocol: int, sport: int, dport: int) -> bool:
        if not self.ipv4 or self.other:
            return False
        if self.src is not None and not self.spans[0] <= src <= self.spans[1]:
            return False
        if self.dst is not None and not self.spans[2] <= dst <= self.spans[3]:
            return False
        if self.protocol is not None and protocol != self.protocol:
            return False
        for span, port in ((self.sports, sport), (self.dports, dport)):
            if span is not None and (protocol not in _WITH_PORTS or not span[0] <= port <= span[1]):
                return False
        return True

    def signature(self) -> tuple:
        """What the rule matches and does, without its name or number."""
        return self.action, self.src, self.dst, self.protocol, self.sports, self.dports, self.ipv4, self.other

    def text(self) -> str:
        """A rule the probes cannot meet, by what it matches: its decision is compared so."""
        return " ".join(f"{k}={v}" for k, v in self.other) + f": {self.action}"


@dataclass(frozen=True)
class AclTable:
    name: str  # a label; kept to name the rows behind a difference
    type: str
    stage: str
    ports: tuple[str, ...]
    rules: tuple[Rule, ...]  # the higher PRIORITY first, as SONiC evaluates them
    row: Row

    def decide(self, p: Packet) -> Rule | None:
        flow = (int(p.src), int(p.dst), p.protocol, p.sport, p.dport)
        return next((r for r in self.rules if r.matches_flow(*flow)), None)

    def signature(self) -> tuple:
        return self.type, tuple(r.signature() for r in self.rules)


def _network(value: object) -> IPv4Network | None:
    text = norm(value)
    return IPv4Network(text if "/" in text else f"{text}/32", strict=False)


def _span(value: object) -> tuple[int, int] | None:
    low, _, high = norm(value).partition("-")
    a, b = number(low), number(high or low)
    return None if a is None or b is None else (a, b)


def _protocol(value: object) -> int | None:
    text = norm(value)
    try:
        return int(text, 0)
    except ValueError:
        return None


def _rule(table: str, key: str, row: dict) -> Rule:
    fields = {k.upper(): v for k, v in row.items()}
    other = []
    src = dst = None
    try:
        src = _network(fields["SRC_IP"]) if "SRC_IP" in fields else None
        dst = _network(fields["DST_IP"]) if "DST_IP" in fields else None
    except ValueError:  # an address that is not IPv4: a match the IPv4 probes cannot carry
        other += [(k, norm(fields[k])) for k in ("SRC_IP", "DST_IP") if k in fields]
    protocol = _protocol(fields["IP_PROTOCOL"]) if "IP_PROTOCOL" in fields else None
    spans = {}
    for side in ("SRC", "DST"):
        single, ranged = fields.get(f"L4_{side}_PORT"), fields.get(f"L4_{side}_PORT_RANGE")
        spans[side] = _span(ranged if ranged is not None else single) if (ranged or single) is not None else None
    other += [(k, norm(v)) for k, v in sorted(fields.items()) if k not in _MODELLED]
    action = norm(fields.get("PACKET_ACTION", "")).upper()
    mirror = next((norm(fields[k]) for k in ("MIRROR_ACTION", "MIRROR_INGRESS_ACTION", "MIRROR_EGRESS_ACTION")
                   if k in fields), None)
    if mirror is not None:
        action = f"{action + ' and ' if action else ''}MIRROR to {mirror}"
    ip_type = norm(fields.get("IP_TYPE", "ANY")).upper()
    ranges = (int(src.network_address) if src else 0, int(src.broadcast_address) if src else 0,
              int(dst.network_address) if dst else 0, int(dst.broadcast_address) if dst else 0)
    return Rule(number(fields.get("PRIORITY")) or 0, action or "FORWARD", src, dst, protocol, spans["SRC"],
                spans["DST"], ip_type in _IPV4_TYPES, tuple(other), Row("ACL_RULE", key), ranges)


def acl_tables(db: ConfigDb) -> tuple[AclTable, ...]:
    rules: dict[str, list[Rule]] = {}
    for key, row in rows_of(db, "ACL_RULE").items():
        table, _, _ = str(key).partition("|")
        rules.setdefault(table, []).append(_rule("ACL_RULE", key, dict(row)))
    out = []
    for name, row in sorted(rows_of(db, "ACL_TABLE").items()):
        ordered = sorted(rules.get(name, []), key=lambda r: (-r.priority, r.row.key))
        stage = norm(row.get("stage", _TABLE_DEFAULTS["stage"])).lower()
        ports = norm_list(row.get("ports", _TABLE_DEFAULTS["ports"]))
        out.append(AclTable(name, norm(row.get("type", "")).upper(), stage, tuple(sorted(set(ports))), tuple(ordered),
                            Row("ACL_TABLE", name)))
    return tuple(out)


def bindings(tables: Iterable[AclTable]) -> dict[tuple[str, str], tuple[AclTable, ...]]:
    """(port, stage) -> the tables that filter there. A table without rules filters nothing."""
    out: dict[tuple[str, str], list[AclTable]] = {}
    for t in tables:
        if t.rules:
            for port in t.ports:
                out.setdefault((port, t.stage), []).append(t)
    return {k: tuple(v) for k, v in out.items()}


def decide(tables: tuple[AclTable, ...], p: Packet) -> tuple[str, tuple[Row, ...]]:
    """What the tables at one port and stage do with a packet, and the rules that decide it:
    each table decides on its own; a drop by any of them drops it."""
    decisions, rows = [], []
    for t in tables:
        rule = t.decide(p)
        if rule is not None:
            decisions.append(rule.action)
            rows.append(rule.row)
    if "DROP" in decisions:
        return "DROP", tuple(r for r, d in zip(rows, decisions) if d == "DROP")
    return " and ".join(sorted(set(decisions) - {"FORWARD"})) or "FORWARD", tuple(rows)


def _addresses(nets: set[IPv4Network]) -> set[IPv4Address]:
    out = set(_DEFAULT_ADDRESSES)
    for n in nets:
        first, last = int(n.network_address), int(n.broadcast_address)
        out |= {IPv4Address(first), IPv4Address(last), IPv4Address((first + last) // 2)}
        out.add(IPv4Address(last + 1) if last < 2 ** 32 - 1 else IPv4Address(first - 1))
    return out


def _ports(spans: set[tuple[int, int]]) -> set[int]:
    out = set(_DEFAULT_PORTS)
    for low, high in spans:
        out |= {p for p in (low - 1, low, (low + high) // 2, high, high + 1) if 0 <= p <= 65535}
    return out


def probes(*sides: tuple[AclTable, ...]) -> list[Packet]:
    rules = [r for tables in sides for t in tables for r in t.rules]
    srcs = sorted(_addresses({r.src for r in rules if r.src is not None}))
    dsts = sorted(_addresses({r.dst for r in rules if r.dst is not None}))
    protocols = sorted(set(_DEFAULT_PROTOCOLS) | {r.protocol for r in rules if r.protocol is not None})
    dports = sorted(_ports({r.dports for r in rules if r.dports is not None}))
    sports = sorted({_SPORT} | _ports({r.sports for r in rules if r.sports is not None}) - set(_DEFAULT_PORTS))
    out = []
    for proto in protocols:
        l4 = [(s, d) for s in sports for d in dports] if proto in _WITH_PORTS else [(0, 0)]
        out += [Packet(a, b, proto, s, d) for a in srcs for b in dsts for s, d in l4]
    return out


@dataclass(frozen=True)
class AclDifference:
    """How two sets of tables at one port and stage decide differently."""
    examples: tuple[tuple[Packet, str, str], ...]  # a few packets: expected decision, found decision
    count: int  # every probe decided differently
    rows: tuple[Row, ...]  # the found rows behind the examples
    kinds: tuple[str, str] = ("", "")  # the table types at each side, when they differ
    unprobed: tuple[str, str] = ("", "")  # rules the probes cannot meet, when they differ

    def texts(self) -> tuple[str, str]:
        more = f" (and {self.count - len(self.examples)} more packets)" if self.count > len(self.examples) else ""
        expected = ["; ".join(f"{p}: {a}" for p, a, _ in self.examples) + more]
        found = ["; ".join(f"{p}: {b}" for p, _, b in self.examples) + more]
        for label, (a, b) in (("table type", self.kinds), ("rules", self.unprobed)):
            if a != b:
                expected.append(f"{label} {a or 'none'}")
                found.append(f"{label} {b or 'none'}")
        return "; ".join(filter(None, expected)), "; ".join(filter(None, found))


def compare(expected: tuple[AclTable, ...], found: tuple[AclTable, ...], limit: int = 3) -> AclDifference | None:
    if sorted(t.signature() for t in expected) == sorted(t.signature() for t in found):
        return None  # the same rules in the same order: the same decisions, no probe needed
    differing: list[tuple[Packet, str, str, tuple[Row, ...]]] = []
    for p in probes(expected, found):
        a, _ = decide(expected, p)
        b, rows = decide(found, p)
        if a != b:
            differing.append((p, a, b, rows))
    kinds = tuple(",".join(sorted({t.type for t in side})) for side in (expected, found))
    if not (expected and found):  # no table at one side: its decisions say so, its type is no news
        kinds = ("", "")
    unprobed = tuple("; ".join(sorted({r.text() for t in side for r in t.rules if r.other}))
                     for side in (expected, found))
    if not differing and kinds[0] == kinds[1] and unprobed[0] == unprobed[1]:
        return None
    chosen, seen = [], set()
    for item in differing:  # examples of different flows before more of one flow
        flow = (item[0].src, item[0].dst, item[1], item[2])
        if flow not in seen and len(chosen) < limit:
            seen.add(flow)
            chosen.append(item)
    for item in differing:
        if len(chosen) < limit and item not in chosen:
            chosen.append(item)
    rows = tuple(dict.fromkeys([r for c in chosen for r in c[3]] + [t.row for t in found]))
    return AclDifference(tuple((p, a, b) for p, a, b, _ in chosen), len(differing), rows, kinds, unprobed)
