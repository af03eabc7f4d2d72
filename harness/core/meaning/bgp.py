"""What a parsed frr.conf does (harness.core.meaning.frr): FRR 8.4's effective values, every
default filled in, every name resolved.

- The profile (`frr defaults datacenter|traditional`) decides the defaults (bgpd/bgp_vty.c,
  FRR_CFG_DEFAULT_*): timers 3/9 and connect 10 s in a data center, 60/180 and 120 s
  otherwise; RFC 8212 (`ebgp-requires-policy`) off in a data center, on otherwise;
  deterministic MED on in a data center. FRR 9/10 add defaults (enforce-first-as from 9.1,
  soft-version and dynamic capabilities in a data center) that 8.4 does not have.
- A neighbour takes its peer group's settings and overrides them with its own.
- `neighbor X bfd profile P` switches BFD on by itself; a profile that does not exist leaves
  bfdd's defaults (3 × 300 ms); legacy `bfd M RX TX` sets the timers on the session.
- A policy is evaluated, never compared as text: distribute-list (access list), prefix-list,
  then the route map, as bgp_input_filter / bgp_output_filter and the route-map code apply
  them. A prefix list, access list or route map a neighbour names that does not exist denies
  (prefix_list_apply and route_map_apply on NULL), a route-map entry without `match` matches
  everything, and a list ends in an implicit deny. Under RFC 8212 an eBGP session with no policy in a direction carries nothing
  that way.
- maximum-paths defaults to the build's MULTIPATH_NUM: 256 for Debian's FRR 8.4 (measured: FRR
  omits `maximum-paths 256` from its running config).
"""
from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass

from harness.core.meaning.frr import BgpInstance, FrrConfig, PeerConf, Statement
from harness.core.meaning.frr_form import PeerFacts
from harness.core.meaning.policy import Decision, Lists, Prefix

MULTIPATH_NUM = 256
BFD_DEFAULTS = {"detect-multiplier": 3, "receive-interval": 300, "transmit-interval": 300}

_PROFILES = {  # FRR 8.4 bgpd/bgp_vty.c FRR_CFG_DEFAULT_*
    "datacenter": {"keepalive": 3, "hold": 9, "connect": 10, "ebgp-requires-policy": False,
                   "deterministic-med": True, "import-check": True},
    "traditional": {"keepalive": 60, "hold": 180, "connect": 120, "ebgp-requires-policy": True,
                    "deterministic-med": False, "import-check": True},
}
# `bgp X` flags and their defaults outside the profile: compared by effective value.
_FLAGS = {"bestpath as-path multipath-relax": False, "default ipv4-unicast": True, "bestpath compare-routerid": False,
          "bestpath as-path confed": False, "bestpath as-path ignore": False, "always-compare-med": False,
          "suppress-duplicates": True, "graceful-shutdown": False, "fast-external-failover": True,
          "network import-check": True, "enforce-first-as": False, "reject-as-sets": False,
          "graceful-restart": False, "graceful-restart-disable": False, "ebgp-requires-policy": None,
          "deterministic-med": None, "log-neighbor-changes": None, "bestpath med missing-as-worst": False,
          "bestpath med confed": False}
# Only how FRR logs or shows: never behaviour.
# Per-family neighbour settings that are FRR 8.4's defaults: written out, they change nothing.
# The EVPN family's next hop unchanged measured: FRR's running config drops the statement.
_AF_DEFAULTS = {"send-community", "send-community both", "send-community all", "send-community standard",
                "send-community extended", "send-community large", "l2vpn evpn: attribute-unchanged next-hop"}
# Per-family settings that change what FRR keeps, not which routes a session takes or sends
# (SONiC's templates set the first: an Adj-RIB-In copy for soft resets).
_AF_BOOKKEEPING = {"soft-reconfiguration inbound"}
# A family's statements that say FRR's defaults (NVUE writes the distances out).
_AF_STATEMENT_DEFAULTS = {"distance bgp 20 200 200"}
_DISPLAY = ("log-neighbor-changes", "default show-hostname", "default show-nexthop-hostname", "no-rib",
            # what it does is in each session's families already
            "default ipv4-unicast",
            # what it does is in each session's policies already: an eBGP session with no policy in
            # a direction carries nothing that way (evaluated per session, `policy`)
            "ebgp-requires-policy")




@dataclass(frozen=True)
class Bfd:
    multiplier: int
    rx_ms: int
    tx_ms: int
    other: tuple[str, ...] = ()  # echo, passive-mode, minimum-ttl, shutdown, check-control-plane-failure

    def __str__(self) -> str:
        more = f", {', '.join(self.other)}" if self.other else ""
        return f"on, {self.multiplier} × {self.rx_ms}/{self.tx_ms} ms (rx/tx){more}"


@dataclass(frozen=True)
class Session:
    """One neighbour of one BGP instance, as FRR runs it."""
    name: str  # as written: an interface (unnumbered) or an address
    vrf: str
    interface: bool
    remote_as: str | None
    shutdown: bool
    families: frozenset[str]  # "ipv4 unicast", "l2vpn evpn", ... activated
    bfd: Bfd | None
    timers: tuple[int, int, int]  # keepalive, hold, connect (s)
    max_prefix: tuple[tuple[str, str], ...]  # (family, "N [threshold] [warning-only] ...")
    extras: tuple[str, ...]  # every other setting, normalised, with its family
    lines: tuple[int, ...]  # every line that configures it (its group's included)


@dataclass(frozen=True)
class Instance:
    asn: str
    vrf: str
    router_id: str | None
    settings: tuple[tuple[str, str], ...]  # effective instance settings, defaults filled in
    line: int


class Behaviour(Lists):
    """A parsed config's behaviour: sessions, policies (evaluated on demand), origination."""

    def __init__(self, cfg: FrrConfig, peers: Mapping[tuple[str, str], PeerFacts] | None = None) -> None:
        self.cfg = cfg
        self.peers = peers or {}  # what bgpd itself holds, where FRR read the file: it settles
        self.profile = _PROFILES.get(cfg.profile, _PROFILES["traditional"])
        self._flag_cache: dict[int, dict[str, tuple[bool, int | None]]] = {}  # the config never changes

    # ------------------------------------------------------------------ instances

    def _flags(self, inst: BgpInstance) -> dict[str, tuple[bool, int | None]]:
        cached = self._flag_cache.get(id(inst))
        if cached is not None:
            return cached
        flags: dict[str, tuple[bool, int | None]] = self._flag_cache.setdefault(id(inst), {})
        for st in inst.statements:
            w = st.words
            neg = w[0] == "no"
            body = w[1:] if neg else w
            if body[0] == "bgp" and len(body) > 1:
                name = " ".join(body[1:])
                if name.startswith("bestpath as-path multipath-relax"):
                    name = "bestpath as-path multipath-relax"  # as-set / no-as-set: accepted, ignored since 7.x
                flags[name] = (not neg, st.line)
        return flags

    def instance(self, inst: BgpInstance) -> Instance:
        flags = self._flags(inst)
        settings: dict[str, str] = {}
        router_id = None
        # `timers bgp` here is only each session's default: judged per session, where a peer
        # group's or a neighbour's own timers override it, never as the instance's
        for st in inst.statements:
            w = st.words
            if w[:2] == ["bgp", "router-id"] and len(w) > 2:
                router_id = w[2]
        for name, default in _FLAGS.items():
            if default is None:
                default = self.profile.get(name)
            if name in _DISPLAY or default is None:
                continue
            value = flags.get(name, (default, None))[0]
            settings[name] = "on" if value else "off"
        for name, (value, _) in flags.items():
            if name in _FLAGS or name.startswith(("router-id",) + _DISPLAY):
                continue
            settings[name] = "on" if value else "off"
        for st in inst.statements:
            if st.words[0] not in ("bgp", "no", "timers"):
                settings[st.text] = "on"
        return Instance(inst.asn, inst.vrf, router_id, tuple(sorted(settings.items())), inst.line)

    # ------------------------------------------------------------------ sessions

    def _merged(self, inst: BgpInstance, peer: PeerConf) -> tuple[dict[str, Statement], list[int]]:
        group = inst.peers.get(peer.group) if peer.group else None
        settings = dict(group.settings) if group else {}
        settings.update(peer.settings)
        lines = list(peer.lines) + (list(group.lines) if group else [])
        return settings, lines

    def af_settings(self, inst: BgpInstance, peer: PeerConf, family: tuple[str, str]) -> dict[str, Statement]:
        af = inst.afs.get(family)
        if af is None:
            return {}
        merged = dict(af.neighbors.get(peer.group, {})) if peer.group else {}
        merged.update(af.neighbors.get(peer.name, {}))
        return merged

    def sessions(self) -> list[tuple[BgpInstance, Session]]:
        out = []
        for inst in self.cfg.bgp.values():
            flags = self._flags(inst)
            default_v4 = flags.get("default ipv4-unicast", (True, None))[0]
            for peer in inst.peers.values():
                if peer.is_group:
                    continue
                out.append((inst, self._session(inst, peer, default_v4)))
        return out

    def _session(self, inst: BgpInstance, peer: PeerConf, default_v4: bool) -> Session:
        settings, lines = self._merged(inst, peer)
        group = inst.peers.get(peer.group) if peer.group else None
        remote = peer.remote_as or (group.remote_as if group else None)
        families = set()
        max_prefix = []
        extras = []
        for family in sorted(set(inst.afs) | {("ipv4", "unicast")}):
            af = self.af_settings(inst, peer, family)
            name = " ".join(family)
            act = af.get("activate")
            active = (act.words[0] != "no") if act is not None else (family == ("ipv4", "unicast") and default_v4)
            lines += [st.line for st in af.values()]
            if not active:
                continue
            families.add(name)
            for key, st in sorted(af.items()):
                if key == "activate" or key.startswith(("prefix-list", "route-map", "distribute-list", "filter-list")):
                    continue
                value = " ".join(st.words[3:]) if st.words[0] != "no" else "no " + " ".join(st.words[4:])
                setting = f"{key} {value}".strip()
                if key == "maximum-prefix":
                    max_prefix.append((name, value))
                elif setting not in _AF_DEFAULTS | _AF_BOOKKEEPING and f"{name}: {setting}" not in _AF_DEFAULTS:
                    extras.append(f"{name}: {setting}")
        keepalive, hold = self.profile["keepalive"], self.profile["hold"]
        for st in inst.statements:
            if st.words[:2] == ["timers", "bgp"] and len(st.words) > 3:
                keepalive, hold = int(st.words[2]), int(st.words[3])
        connect = self.profile["connect"]
        if (t := settings.get("timers")) is not None and len(t.words) > 4:
            keepalive, hold = int(t.words[3]), int(t.words[4])
        if (t := settings.get("timers connect")) is not None and len(t.words) > 4:
            connect = int(t.words[4])
        bfd = self._bfd(settings)
        facts = self.peers.get((inst.vrf, peer.name))
        if facts is not None:
            keepalive, hold, connect = facts.timers
            if bfd is not None and facts.bfd is not None and "bfd profile" not in settings:
                bfd = Bfd(*facts.bfd, bfd.other)  # with a profile, bfdd's profile decides: bgpd shows its defaults
        if bfd is not None and "ebgp-multihop" not in settings:
            # a profile's minimum-ttl is for multi-hop sessions only (bfdd/bfdd_cli.c refuses it on a
            # single-hop peer: "Minimum TTL is only available for multi hop sessions")
            bfd = Bfd(bfd.multiplier, bfd.rx_ms, bfd.tx_ms, tuple(o for o in bfd.other if not o.startswith("minimum-ttl")))
        for key, st in sorted(settings.items()):
            if key in ("timers", "timers connect", "bfd", "bfd profile", "shutdown") or key.startswith("no "):
                continue
            if key == "capability" and st.words[3:4] == ["extended-nexthop"] and peer.interface:
                continue  # an unnumbered neighbour has it anyway (RFC 5549 is how it carries IPv4)
            if key == "v6only" and peer.interface:
                continue  # an unnumbered fabric port has only its link-local address to try
            if key == "advertisement-interval" and st.words[3:] == ["0"] and self.is_ebgp(inst, peer):
                continue  # eBGP's default
            extras.append(" ".join(st.words[2:]))
        return Session(peer.name, inst.vrf, peer.interface, remote, "shutdown" in settings,
                       frozenset(families), bfd, (keepalive, hold, connect),
                       tuple(sorted(max_prefix)), tuple(sorted(extras)), tuple(sorted(set(lines))))

    def _bfd(self, settings: dict[str, Statement]) -> Bfd | None:
        on = settings.get("bfd")
        profile = settings.get("bfd profile")
        if on is None and profile is None:
            return None
        values = dict(BFD_DEFAULTS)
        other: list[str] = []
        if profile is not None and len(profile.words) > 4:
            for key, st in self.cfg.bfd_profiles.get(profile.words[4], {}).items():
                if key in values and len(st.words) > 1:
                    values[key] = int(st.words[1])
                elif not key.startswith("no "):
                    other.append(st.text)
        if on is not None and len(on.words) > 5 and on.words[3].isdigit():  # legacy: bfd MULT RX TX
            values = {"detect-multiplier": int(on.words[3]), "receive-interval": int(on.words[4]),
                      "transmit-interval": int(on.words[5])}
        if "bfd check-control-plane-failure" in settings:
            other.append("check-control-plane-failure")
        return Bfd(values["detect-multiplier"], values["receive-interval"], values["transmit-interval"],
                   tuple(sorted(other)))

    # ------------------------------------------------------------------ policies

    def policy(self, inst: BgpInstance, peer_name: str, family: tuple[str, str], direction: str,
               prefix: Prefix) -> Decision:
        """Would this session carry `prefix` in `direction` (in | out)?"""
        peer = inst.peers[peer_name]
        af = self.af_settings(inst, peer, family)
        lines: list[int] = []
        sets: tuple[str, ...] = ()
        has_policy = False
        for kind in ("distribute-list", "prefix-list", "filter-list", "route-map"):
            st = af.get(f"{kind} {direction}")
            if st is None:
                continue
            has_policy = True
            name = st.words[3]
            if kind == "distribute-list":
                d = self.access_list(name, prefix)
            elif kind == "prefix-list":
                d = self.prefix_list("ip" if prefix.version == 4 else "ipv6", name, prefix)
            elif kind == "filter-list":
                continue  # AS paths: a probe has none to refuse
            else:
                d = self.route_map(name, prefix)
            lines += [st.line, *d.lines]
            if not d.permit:
                return Decision(False, tuple(lines))
            sets += d.sets
        flags = self._flags(inst)
        rfc8212 = flags.get("ebgp-requires-policy", (self.profile["ebgp-requires-policy"], None))[0]
        if not has_policy and rfc8212 and self.is_ebgp(inst, peer):
            return Decision(False, tuple(lines))
        return Decision(True, tuple(lines), sets)

    def is_ebgp(self, inst: BgpInstance, peer: PeerConf) -> bool:
        group = inst.peers.get(peer.group) if peer.group else None
        remote = peer.remote_as or (group.remote_as if group else None)
        return remote != "internal" and remote != inst.asn

    # ------------------------------------------------------------------ what the switch originates

    def originated(self, inst: BgpInstance, connected: tuple[Prefix, ...]) -> tuple[frozenset[Prefix], frozenset[Prefix], tuple[int, ...]]:
        """(prefixes it originates, components its summary-only aggregates suppress, lines)."""
        af = inst.afs.get(("ipv4", "unicast"))
        if af is None:
            return frozenset(), frozenset(), ()
        out: set[Prefix] = set()
        lines: list[int] = []
        statics = [ipaddress.ip_network(st.words[2], strict=False) for st in self.cfg.top
                   if st.words[:2] == ["ip", "route"] and len(st.words) > 2]
        for st in af.statements:
            w = st.words
            if w[0] == "redistribute" and len(w) > 1:
                source = {"connected": connected, "static": tuple(statics)}.get(w[1], ())
                rmap = w[w.index("route-map") + 1] if "route-map" in w[:-1] else None
                for p in source:
                    if rmap is None or self.route_map(rmap, p).permit:
                        out.add(p)
                lines.append(st.line)
            elif w[0] == "network" and len(w) > 1:
                out.add(ipaddress.ip_network(w[1] if "/" in w[1] or len(w) < 4 or w[2] != "mask"
                                             else f"{w[1]}/{w[3]}", strict=False))
                lines.append(st.line)
        suppressed: set[Prefix] = set()
        for st in af.statements:
            w = st.words
            if w[0] == "aggregate-address" and len(w) > 1:
                agg = ipaddress.ip_network(w[1] if "/" in w[1] else f"{w[1]}/{w[2]}", strict=False)
                parts = {p for p in out if p != agg and p.version == agg.version and p.subnet_of(agg)}
                if parts:
                    out.add(agg)
                    if "summary-only" in w:
                        suppressed |= parts
                lines.append(st.line)
        return frozenset(out - suppressed), frozenset(suppressed), tuple(lines)

    def max_paths(self, inst: BgpInstance, family: tuple[str, str]) -> tuple[int, int, tuple[int, ...]]:
        """(eBGP width, iBGP width, lines)."""
        ebgp = ibgp = MULTIPATH_NUM
        lines = []
        for st in inst.afs.get(family).statements if family in inst.afs else []:
            w = st.words
            if w[0] == "maximum-paths" and len(w) > 1:
                if w[1] == "ibgp" and len(w) > 2:
                    ibgp = int(w[2])
                elif w[1].isdigit():
                    ebgp = int(w[1])
                lines.append(st.line)
        return ebgp, ibgp, tuple(lines)

    def af_statements(self, inst: BgpInstance, family: tuple[str, str]) -> dict[str, int]:
        """The family's other statements (not origination, not multipath), normalised -> line."""
        af = inst.afs.get(family)
        if af is None:
            return {}
        skip = ("redistribute", "network", "aggregate-address", "maximum-paths")
        return {st.text: st.line for st in af.statements
                if st.words[0] not in skip and st.text not in _AF_STATEMENT_DEFAULTS}

    def evpn(self, inst: BgpInstance) -> dict[str, tuple[str, tuple[int, ...]]]:
        """EVPN per VNI: the route targets it imports and exports (auto: ASN:VNI), and its RD."""
        af = inst.afs.get(("l2vpn", "evpn"))
        if af is None:
            return {}
        out: dict[str, tuple[str, tuple[int, ...]]] = {}
        for vni, statements in af.vnis.items():
            imports, exports, rd = set(), set(), "auto"
            for st in statements:
                w = st.words
                if w[0] == "route-target" and len(w) > 2:
                    if w[1] in ("import", "both"):
                        imports.add(w[2])
                    if w[1] in ("export", "both"):
                        exports.add(w[2])
                elif w[0] == "rd" and len(w) > 1:
                    rd = w[1]
            auto = f"{inst.asn}:{vni}"
            out[f"VNI {vni}"] = (f"import {','.join(sorted(imports or {auto}))}; export "
                                 f"{','.join(sorted(exports or {auto}))}; rd {rd}",
                                 tuple(st.line for st in statements))
        return out
