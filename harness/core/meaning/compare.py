"""Two frr.conf files of one switch compared by what they do on the planned fabric.

Per BGP session (keyed by the port or address it runs on): does it come up (the port is
cabled, remote-as fits the peer's planned ASN, the VRF holds the port, not shut down), the
families it carries, which prefixes it accepts and advertises (evaluated on probes: every
prefix of the plan, the planes' blocks, a default route, foreign prefixes, and the edges of
every prefix-list entry either file has), BFD and its effective timers, BGP timers,
maximum-prefix and every other setting. Per switch: the local AS and router-id, the instance
settings with the profile's defaults, what it originates, the multipath width it can use on
this fabric (maximum-paths capped by its planned sessions), EVPN route targets per VNI,
interfaces and the other top-level statements. Names (peer groups, lists, maps) never count.

The same difference on several sessions of a switch is one difference naming them all.
"""
from __future__ import annotations

import ipaddress
from dataclasses import dataclass

from harness.core.declarations import Plane
from harness.core.emulation import emulation_only
from harness.core.meaning.bgp import Behaviour, Decision, Session
from harness.core.meaning.difference import Difference
from harness.core.meaning.frr import COSMETIC, BgpInstance, parse
from harness.core.meaning.frr_form import FrrForm, form_of
from harness.core.meaning.speaker import Speaker, peer_of, session_state, speaker
from harness.core.plan import Plan

Prefix = ipaddress.IPv4Network | ipaddress.IPv6Network
V4 = ("ipv4", "unicast")
_FOREIGN = tuple(ipaddress.ip_network(p) for p in ("0.0.0.0/0", "192.0.2.0/24", "198.51.100.7/32", "203.0.113.0/25",
                                                     "100.64.0.0/10", "8.8.8.0/24"))


@dataclass(frozen=True)
class _Side:
    behaviour: Behaviour
    sessions: dict[str, tuple[BgpInstance, Session]]


def probes(plan: Plan, *configs: Behaviour, near: str | None = None) -> tuple[Prefix, ...]:
    """The prefixes a policy is judged on: every switch's loopback and what it originates; the
    host links of `near` and its peers (elsewhere a block's first and last stand for the rest:
    a filter that treats one host link apart names it, and its edges are probes too)."""
    # a foreign probe is no plane's: never one inside the engineer's own numbering
    ours = [net for nets in plan.plane_nets.values() for net in nets]
    found: set[Prefix] = {p for p in _FOREIGN if p.prefixlen == 0 or not any(p.overlaps(n) for n in ours)}
    close = {near} | {p.peer for s in plan.switches if s.name == near for p in s.ports}
    for sw in plan.switches:
        found.add(sw.loopback.network)
        links = sorted(p.address.network for p in sw.ports if p.address is not None)
        own = sorted(plan.originates.get(sw.name, ()))
        if near is None or sw.name in close:
            found |= set(links) | set(own)
        else:
            found |= set(links[:1] + links[-1:] + own[:2] + own[-1:])
        found |= set(plan.host_routes.get(sw.name, ()))
    found |= {t.subnet for t in plan.tenants}
    found |= {net for nets in plan.rail_nets for net in nets} | set(plan.fe_nets) | {plan.mgmt_network}
    found |= {net for nets in plan.plane_nets.values() for net in nets}
    if plan.host_block is not None:
        found.add(plan.host_block)
    addressing = plan.fabric.cluster.addressing
    for block in (addressing.be, addressing.fe, addressing.mgmt, addressing.tenants):
        try:
            found.add(ipaddress.ip_network(block))
        except ValueError:
            pass
    for b in configs:
        for plist in b.cfg.prefix_lists.values():
            for e in plist.entries:
                found |= _edges(e.prefix, *e.lengths())
        for entries in b.cfg.access_lists.values():
            found |= {e.prefix for e in entries if e.prefix is not None}
    return tuple(sorted((p for p in found if p.version == 4), key=lambda p: (p.network_address, p.prefixlen)))


def _edges(prefix: Prefix, low: int, high: int) -> set[Prefix]:
    """Prefixes just inside and just outside an entry: its lengths' ends and one step beyond,
    at the first and last address of the block, and the block next to it."""
    out = {prefix}
    top = prefix.max_prefixlen
    for length in {low - 1, low, high, high + 1, prefix.prefixlen - 1}:
        if not 0 <= length <= top:
            continue
        for addr in (prefix.network_address, prefix.broadcast_address):
            out.add(ipaddress.ip_network(f"{addr}/{length}", strict=False))
        beyond = int(prefix.broadcast_address) + 1
        if beyond < 2 ** top:
            out.add(ipaddress.ip_network(f"{ipaddress.ip_address(beyond)}/{length}", strict=False))
    return out


def _plane(plan: Plan, p: Prefix) -> str:
    if p.prefixlen == 0:
        return "default"
    a = plan.fabric.cluster.addressing
    numbered = [(p.value.upper() if p is not Plane.MGMT else "mgmt", str(net)) for p, nets in plan.plane_nets.items()
                for net in nets]
    for name, block in numbered + [("tenant", a.tenants)]:
        try:
            if p.subnet_of(ipaddress.ip_network(block)):
                return name
        except (ValueError, TypeError):
            continue
    return "foreign"


def _describe(plan: Plan, prefixes: set[Prefix], most: int = 3) -> str:
    by: dict[str, list[Prefix]] = {}
    for p in sorted(prefixes, key=lambda p: (p.network_address, p.prefixlen)):
        by.setdefault(_plane(plan, p), []).append(p)
    parts = []
    for plane, items in sorted(by.items()):
        shown = ", ".join(map(str, items[:most]))
        parts.append(f"{plane} {shown}" + (f" (+{len(items) - most} more)" if len(items) > most else ""))
    return "; ".join(parts)


class _Judge:
    def __init__(self, plan: Plan, sw: Speaker, ours: FrrForm, theirs: FrrForm, file: str) -> None:
        self.plan, self.sw, self.file = plan, sw, file
        self.a = Behaviour(parse(ours.text, "fablab's render", ours.origin), ours.peers)
        self.b = Behaviour(parse(theirs.text, file, theirs.origin), theirs.peers)
        self.probes = probes(plan, self.a, self.b, near=sw.name)
        self.out: list[Difference] = []
        # what `redistribute connected` sees: the management port's subnet too (in the default
        # VRF wherever management has no VRF of its own), which a filter must keep out
        self.connected = (sw.loopback.network,) + ((sw.mgmt.network,) if sw.mgmt else ()) \
            + tuple(p.address.network for p in sw.host_ports)
        self._cache: dict[tuple, frozenset[Prefix]] = {}

    def diff(self, subject: str, behaviour: str, expected: str, found: str, lines=()) -> None:
        self.out.append(Difference(self.sw.name, self.file, subject, behaviour, expected, found,
                                   tuple(sorted(set(lines)))))

    # ------------------------------------------------------------------ the plan's view of a session

    def peer_of(self, name: str) -> tuple[str | None, int | None, str | None]:
        return peer_of(self.sw, name)

    def state(self, side: Behaviour, inst: BgpInstance, s: Session) -> str:
        return session_state(self.sw, side.cfg.interface_vrfs, inst.asn, s)

    def _carried(self, side: Behaviour, inst: BgpInstance, s: Session, direction: str) -> tuple:
        """(what decides it, what it carries, each probe's decision), evaluated once per policy."""
        if "ipv4 unicast" not in s.families:
            return None, frozenset(), {}
        af = side.af_settings(inst, inst.peers[s.name], V4)
        # what decides: the lists and maps this direction names, and whether RFC 8212 applies
        used = tuple(sorted((k, v.words[3]) for k, v in af.items() if k.endswith(f" {direction}") and len(v.words) > 3))
        key = (id(side), inst.vrf, direction, used, side.is_ebgp(inst, inst.peers[s.name]))
        decisions: dict[Prefix, Decision] = {}
        if key not in self._cache:
            allowed = set()
            for p in self.probes:
                d = side.policy(inst, s.name, V4, direction, p)
                decisions[p] = d
                if d.permit:
                    allowed.add(p)
            self._cache[key] = frozenset(allowed)
            self._cache[key + ("d",)] = decisions  # type: ignore[assignment]
        return key, self._cache[key], self._cache[key + ("d",)]

    # ------------------------------------------------------------------ the comparison

    def run(self) -> list[Difference]:
        ia, ib = self.a.cfg.bgp, self.b.cfg.bgp
        for vrf in sorted(set(ia) | set(ib)):
            if vrf not in ib:
                self.diff(f"BGP in the {vrf} VRF", "BGP instance", f"router bgp {ia[vrf].asn}", "")
            elif vrf not in ia:
                ports = [p for p, v in self.b.cfg.interface_vrfs.items() if v == vrf]
                self.diff(f"BGP in VRF {vrf}", "BGP instance", "",
                          f"router bgp {ib[vrf].asn} vrf {vrf}" + ("" if ports else f": no port of {self.sw.name} is "
                                                                   f"in VRF {vrf}, so its sessions cannot come up"),
                          (ib[vrf].line,))
            else:
                self.instance(ia[vrf], ib[vrf])
        self.sessions()
        self.top()
        return _grouped(self.out)

    def instance(self, x: BgpInstance, y: BgpInstance) -> None:
        subject = "BGP" if x.vrf == "default" else f"BGP in VRF {x.vrf}"
        if x.asn != y.asn:
            self.diff(subject, "local AS", f"AS {x.asn}", f"AS {y.asn}", (y.line,))
        ix, iy = self.a.instance(x), self.b.instance(y)
        rid = str(self.sw.router_id)
        if (ix.router_id or rid) != (iy.router_id or rid):
            self.diff(subject, "router-id", ix.router_id or rid, iy.router_id or f"{rid} (from zebra)",
                      self._lines(y, "router-id"))
        sx, sy = dict(ix.settings), dict(iy.settings)
        for key in sorted(set(sx) | set(sy)):
            if sx.get(key) != sy.get(key):
                self.diff(subject, "BGP settings", f"{key} {sx.get(key, '')}".strip() if key in sx else "",
                          f"{key} {sy.get(key, '')}".strip() if key in sy else "", self._lines(y, key))
        # what it originates
        ox, supx, _ = self.a.originated(x, self.connected)
        oy, supy, lines = self.b.originated(y, self.connected)
        if ox != oy:
            self._sets(subject, "originates", ox, oy, lines)
        if supx != supy:
            self._sets(subject, "summarises away", supx, supy, lines)
        # multipath on this fabric: as wide as it can use
        paths = max(1, len(self.sw.fabric_ports) + len(self.sw.host_peers))
        for family in sorted(set(x.afs) | set(y.afs) | {V4}):
            if family[0] == "l2vpn":
                continue
            ex, ibx, _ = self.a.max_paths(x, family)
            ey, iby, lines = self.b.max_paths(y, family)
            if min(ex, paths) != min(ey, paths):
                self.diff(subject, "multipath", f"{min(ex, paths)} of its {paths} paths (maximum-paths {ex})",
                          f"{min(ey, paths)} of its {paths} paths (maximum-paths {ey})", lines)
            if min(ibx, paths) != min(iby, paths):
                self.diff(subject, "multipath (iBGP)", f"maximum-paths ibgp {ibx}", f"maximum-paths ibgp {iby}", lines)
            stx, sty = self.a.af_statements(x, family), self.b.af_statements(y, family)
            for text in sorted(set(stx) ^ set(sty)):
                self.diff(f"{subject} {' '.join(family)}", "BGP settings", text if text in stx else "",
                          text if text in sty else "", (sty.get(text),) if text in sty else ())
        ex, ey = self.a.evpn(x), self.b.evpn(y)
        for vni in sorted(set(ex) | set(ey)):
            if ex.get(vni, ("",))[0] != ey.get(vni, ("",))[0]:
                self.diff(f"{subject} EVPN {vni}", "EVPN", ex.get(vni, ("",))[0], ey.get(vni, ("",))[0],
                          ey.get(vni, ("", ()))[1])

    def _lines(self, inst: BgpInstance, key: str) -> tuple[int, ...]:
        word = key.split()[-1] if key else ""
        return tuple(st.line for st in inst.statements if word and word in st.text)

    def _sets(self, subject: str, behaviour: str, x: frozenset, y: frozenset, lines) -> None:
        missing, extra = set(x - y), set(y - x)
        if missing:
            self.diff(subject, behaviour, _describe(self.plan, missing), "not " + _describe(self.plan, missing), lines)
        if extra:
            self.diff(subject, behaviour, "not " + _describe(self.plan, extra), _describe(self.plan, extra), lines)

    def sessions(self) -> None:
        sa = {s.name: (i, s) for i, s in (x for x in self.a.sessions())}
        sb = {s.name: (i, s) for i, s in (x for x in self.b.sessions())}
        for name in sorted(set(sa) | set(sb), key=_port_order):
            port, _, peer = self.peer_of(name)
            subject = f"session {name}" + (f" ({peer})" if peer else "")
            if name not in sb:
                ia, s = sa[name]
                self.diff(subject, "comes up", self.state(self.a, ia, s), "down: no such neighbour")
                continue
            ib, t = sb[name]
            state_b = self.state(self.b, ib, t)
            if name not in sa:
                self.diff(subject, "comes up", "no session", state_b, t.lines)
                continue
            ia, s = sa[name]
            state_a = self.state(self.a, ia, s)
            if state_a != state_b:
                self.diff(subject, "comes up", state_a, state_b, t.lines)
            if s.families != t.families:
                self.diff(subject, "address families", ", ".join(sorted(s.families)) or "none",
                          ", ".join(sorted(t.families)) or "none", t.lines)
            for direction, behaviour in (("in", "accepts"), ("out", "advertises")):
                self.policies(subject, behaviour, direction, (ia, s), (ib, t))
            if s.bfd != t.bfd:
                self.diff(subject, "BFD", str(s.bfd) if s.bfd else "off", str(t.bfd) if t.bfd else "off", t.lines)
            if s.timers != t.timers:
                self.diff(subject, "BGP timers", _timers(s.timers), _timers(t.timers), t.lines)
            mx, my = _max_prefix(s.max_prefix), _max_prefix(t.max_prefix)
            if mx != my:
                self.diff(subject, "maximum-prefix", mx or "none", my or "none", t.lines)
            if s.extras != t.extras:
                for e in sorted(set(s.extras) ^ set(t.extras)):
                    self.diff(subject, "session settings", e if e in s.extras else "", e if e in t.extras else "",
                              t.lines)
        ox, oy = self.a.opaque_matches(), self.b.opaque_matches()
        for m in sorted(set(ox) ^ set(oy)):
            self.diff("route maps", "route-map match", m if m in ox else "", m if m in oy else "")

    def policies(self, subject: str, behaviour: str, direction: str, ours, theirs) -> None:
        """What one direction of a session carries, and what its route maps change on the way."""
        (ia, s), (ib, t) = ours, theirs
        kx, x, dx = self._carried(self.a, ia, s, direction)
        ky, y, dy = self._carried(self.b, ib, t, direction)
        pair = ("pair", kx, ky)
        if pair in self._cache:  # the same two policies on another session: the same differences
            for behaviour_, expected, found, lines in self._cache[pair]:  # type: ignore[union-attr]
                self.diff(subject, behaviour_, expected, found, lines)
            return
        before = len(self.out)
        self._compare_policies(subject, behaviour, direction, t, x, dx, y, dy)
        self._cache[pair] = [(d.behaviour, d.expected, d.found, d.lines) for d in self.out[before:]]  # type: ignore

    def _compare_policies(self, subject, behaviour, direction, t, x, dx, y, dy) -> None:
        if x != y:
            changed = x ^ y
            lines = sorted({ln for p in changed for ln in dy.get(p, Decision(False, ())).lines}) or t.lines
            if x - y:
                self.diff(subject, behaviour, _describe(self.plan, set(x - y)),
                          "refuses them" if direction == "in" else "does not send them", lines)
            if y - x:
                self.diff(subject, behaviour, "refuses " + _describe(self.plan, set(y - x)),
                          "accepts them" if direction == "in" else "sends them", lines)
        altered: dict[tuple[tuple[str, ...], tuple[str, ...]], set[Prefix]] = {}
        for p in x & y:
            if dx[p].sets != dy[p].sets:
                altered.setdefault((tuple(sorted(dx[p].sets)), tuple(sorted(dy[p].sets))), set()).add(p)
        for (was, now), prefixes in sorted(altered.items()):
            lines = sorted({ln for p in prefixes for ln in dy[p].lines})
            on = f" on {_describe(self.plan, prefixes)}"
            self.diff(subject, f"{behaviour}: attributes", ("; ".join(was) or "nothing set") + on,
                      ("; ".join(now) or "nothing set") + on, lines)

    def top(self) -> None:
        def statements(side: Behaviour) -> dict[str, int]:
            out = {}
            for st in side.cfg.top:
                if st.text.startswith(COSMETIC) or emulation_only(st.text):  # never the engineer's to write
                    continue
                w = st.words
                if "route-map" in w[:-1]:  # the map by what it does, never by its name
                    at = w.index("route-map")
                    w = w[:at] + [f"route-map <{side.canonical_route_map(w[at + 1])}>"] + w[at + 2:]
                out[" ".join(w)] = st.line
            # bgpd itself sends router advertisements every 10 s on a port with an unnumbered
            # neighbour (bgpd/bgp_zebra.c bgp_zebra_initiate_radv, BGP_UNNUM_DEFAULT_RA_INTERVAL):
            # written out there, they say what bgpd does anyway
            unnumbered = {s.name for _, s in side.sessions() if s.interface}
            for name, lines in side.cfg.interfaces.items():
                for st in lines:
                    if name in unnumbered and st.text in _RA_BY_BGPD:
                        continue
                    out[f"interface {name}: {st.text}"] = st.line
            for name, lines in side.cfg.vrfs.items():
                for st in lines:
                    out[f"vrf {name}: {st.text}"] = st.line
            for header, lines in side.cfg.bfd_peers.items():
                out[f"bfd {header}"] = lines[0].line if lines else 0
                for st in lines:
                    out[f"bfd {header}: {st.text}"] = st.line
            for header, lines in side.cfg.blocks.items():
                out[header] = lines[0].line if lines else 0
                for st in lines:
                    out[f"{header}: {st.text}"] = st.line
            return out

        x, y = statements(self.a), statements(self.b)
        for text in sorted(set(x) ^ set(y)):
            subject, _, what = text.partition(": ") if ": " in text else ("switch", "", text)
            self.diff(subject, "other settings", what if text in x else "", what if text in y else "",
                      (y[text],) if text in y else ())


_RA_BY_BGPD = ("ipv6 nd ra-interval 10", "no ipv6 nd suppress-ra")


def _timers(t: tuple[int, int, int]) -> str:
    return f"keepalive {t[0]} s, hold {t[1]} s, connect {t[2]} s"


def _max_prefix(items: tuple[tuple[str, str], ...]) -> str:
    out = []
    for family, value in items:
        w = value.split()
        if not w or w[0] == "no":
            continue
        threshold = w[1] if len(w) > 1 and w[1].isdigit() else "75"
        rest = " ".join(x for x in w[1:] if not (x.isdigit() and x == w[1]))
        out.append(f"{family}: {w[0]} (warn at {threshold} %{', ' + rest if rest else ''})")
    return "; ".join(out)


def _port_order(name: str) -> tuple:
    digits = "".join(c for c in name if c.isdigit())
    return (name.rstrip("0123456789"), int(digits) if digits.isdigit() and name.startswith("Ethernet") else 0, name)


def _grouped(found: list[Difference]) -> list[Difference]:
    """One difference for the same change on several sessions."""
    groups: dict[tuple, list[Difference]] = {}
    for d in found:
        if d.subject.startswith("session "):
            groups.setdefault((d.behaviour, d.expected, d.found), []).append(d)
        else:
            groups.setdefault((id(d),), []).append(d)
    out = []
    for items in groups.values():
        if len(items) == 1:
            out.append(items[0])
            continue
        names = [d.subject.removeprefix("session ").split(" (")[0] for d in items]
        lines = tuple(sorted({ln for d in items for ln in d.lines}))
        first = items[0]
        out.append(Difference(first.switch, first.file, f"sessions {', '.join(names)}", first.behaviour,
                              first.expected, first.found, lines))
    return out


def diff_frr(plan: Plan, switch: str, ours: str | FrrForm, theirs: str | FrrForm,
             file: str = "frr.conf") -> list[Difference]:
    """What `theirs` does differently from `ours` (fablab's render) on `switch` of `plan`: each
    a file's text (read by fablab's model of FRR) or what FRR itself made of it
    (harness.plumbing.frr_reader), said at the engineer's lines."""
    a, b = form_of(ours), form_of(theirs)
    if a.text == b.text and a.peers == b.peers:
        return []  # the same text does the same: no need to evaluate it
    return _Judge(plan, speaker(plan, switch), a, b, file).run()


def sessions_down(plan: Plan, switch: str, theirs: str | FrrForm, file: str = "frr.conf") -> list[Difference]:
    """What `fablab up --configs` says before it boots: each session of `theirs` that cannot come
    up on the planned fabric, and each planned session it has no neighbour for."""
    sw = speaker(plan, switch)
    form = form_of(theirs)
    side = Behaviour(parse(form.text, file, form.origin), form.peers)
    out = []
    have = set()
    for inst, s in side.sessions():
        port, _, peer = peer_of(sw, s.name)
        have.add(port)
        state = session_state(sw, side.cfg.interface_vrfs, inst.asn, s)
        if state.startswith("down"):
            out.append(Difference(switch, file, f"session {s.name}" + (f" ({peer})" if peer else ""), "comes up",
                                  "up", state, s.lines))
    for p in sw.ports:
        if (p.unnumbered or p.peer_asn is not None) and p.peer_asn is not None and p.name not in have:
            out.append(Difference(switch, file, f"session {p.name} ({p.peer}:{p.peer_port})", "comes up",
                                  f"up: to {p.peer}:{p.peer_port} (AS {p.peer_asn})", "no neighbour on it"))
    return out


def fold_uncabled(plan: Plan, switch: str, found: list[Difference]) -> list[Difference]:
    """config_db.json differences on ports the plan does not cable on `switch`, one per port:
    said as what they are (a port nobody cabled), not as its QoS, MTU and PFC one by one."""
    cabled = [p.name for p in speaker(plan, switch).ports]
    kept: list[Difference] = []
    stray: dict[str, list[Difference]] = {}
    for d in found:
        port = d.subject.split()[0] if d.subject else ""
        if port.startswith("Ethernet") and not port.endswith(",") and port not in cabled:
            stray.setdefault(port, []).append(d)
        else:
            kept.append(d)
    for port, items in sorted(stray.items()):
        shown = ", ".join(cabled[:8]) + (", ..." if len(cabled) > 8 else "")
        kept.append(Difference(switch, items[0].file, port, "cabling",
                               f"{port} is not cabled on {switch}; its cabled ports are {shown}",
                               "configured: " + ", ".join(sorted({d.behaviour for d in items})),
                               tuple(sorted({ln for d in items for ln in d.lines}))))
    return kept
