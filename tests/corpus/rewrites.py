"""Random rewordings that keep a config's meaning, and random mutations that change it, for the
property test in tests/unit/test_corpus.py. Each is grounded in how FRR 8.4 reads a file:

- statement order where FRR does not care: prefix-list lines that carry `seq`, top-level blocks,
  a group's own settings, an address family's lines after `activate`, the router's globals;
- names: peer groups, prefix lists, route maps and BFD profiles renamed consistently;
- `exit`, `exit-address-family`, `exit-vni` left out (FRR walks up to the parent node for a command
  the current one lacks: lib/command.c config_from_file) or kept; indentation (FRR strips it);
- a neighbour's settings moved from its peer group onto itself (`Conf.detach`);
- defaults written out: `frr defaults traditional` with the datacenter values given explicitly
  (bgpd/bgp_vty.c FRR_CFG_DEFAULT_*), `advertisement-interval 0`, `distance bgp 20 200 200`;
- `seq` renumbered keeping the order; `ge 32 le 32` as `ge 32`; `address-family ipv4` for
  `ipv4 unicast`; `router bgp N vrf default`; `neighbor X bfd` left out where `bfd profile` is given;
- what only FRR's own reading settles (`_frr_settles`): `link-detect`, `ra-interval msec`,
  router-level timers every group overrides, `router bgp` again without its ASN, a match FRR
  replaces, a member's `remote-as` bgpd refuses, a BFD profile's `minimum-ttl` on single-hop peers.
"""
from __future__ import annotations

import re

from hypothesis import strategies as st

from harness.core.declarations import Bfd

from .model import Conf, Entry, write_fablab

_WORDS = st.text(alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZ_", min_size=3, max_size=10).filter(
    lambda s: s[0].isalpha())


# -- structure-level, meaning kept -------------------------------------------------------------------

def rename(c: Conf, groups: dict, lists: dict, maps: dict, profiles: dict) -> None:
    """Rename groups, prefix lists, route maps and BFD profiles everywhere they are used."""
    def ref(s: str) -> str:
        s = re.sub(r"\b(prefix-list) (\S+)", lambda m: f"{m.group(1)} {lists.get(m.group(2), m.group(2))}", s)
        s = re.sub(r"\b(route-map) (\S+)", lambda m: f"{m.group(1)} {maps.get(m.group(2), m.group(2))}", s)
        s = re.sub(r"\b(bfd profile) (\S+)", lambda m: f"{m.group(1)} {profiles.get(m.group(2), m.group(2))}", s)
        return s
    c.prefix_lists = {lists.get(k, k): v for k, v in c.prefix_lists.items()}
    for rm in c.route_maps:
        rm.name = maps.get(rm.name, rm.name)
        rm.lines = [ref(x) for x in rm.lines]
    c.zebra = [ref(x) for x in c.zebra]
    c.bfd_profiles = {profiles.get(k, k): v for k, v in c.bfd_profiles.items()}
    b = c.bgp
    b.groups = {groups.get(k, k): [ref(s) for s in v] for k, v in b.groups.items()}
    for n in b.neighbors:
        n.group = groups.get(n.group, n.group) if n.group else None
        n.settings = [ref(s) for s in n.settings]
    for af in b.afs:
        af.peers = {groups.get(k, k): [ref(s) for s in v] for k, v in af.peers.items()}
        af.lines = [ref(x) for x in af.lines]
    c.in_permit_all = {groups.get(k, k) for k in c.in_permit_all}


def renumber(c: Conf, factor: int, offset: int) -> None:
    for entries in c.prefix_lists.values():
        for e in entries:
            e.seq = e.seq * factor + offset


@st.composite
def structural(draw, c: Conf) -> Conf:
    """A copy of C with a random selection of structure-level rewordings."""
    c = c.copy()
    if draw(st.booleans()):
        taken: set[str] = set()

        def fresh(old):
            new = draw(_WORDS.filter(lambda w: w not in taken))
            taken.add(new)
            return new
        rename(c, {g: fresh(g) for g in c.bgp.groups}, {p: fresh(p) for p in c.prefix_lists},
               {m.name: fresh(m.name) for m in c.route_maps}, {p: fresh(p) for p in c.bfd_profiles})
    if draw(st.booleans()):
        renumber(c, draw(st.integers(1, 7)), draw(st.integers(0, 3)))
    for n in list(c.bgp.neighbors):
        if n.group and draw(st.booleans()):
            c.detach(n.name)  # the group's settings written on the neighbour itself
    rnd = draw(st.randoms(use_true_random=False))
    for g, settings in c.bgp.groups.items():
        head = [s for s in settings if s.startswith("remote-as")]
        rest = [s for s in settings if not s.startswith("remote-as")]
        rnd.shuffle(rest)
        settings[:] = head + rest
    for af in c.bgp.afs:
        rnd.shuffle(af.lines)
        for who, settings in af.peers.items():
            head = [s for s in settings if s == "activate"]
            rest = [s for s in settings if s != "activate"]
            rnd.shuffle(rest)
            settings[:] = head + rest
    rnd.shuffle(c.interfaces)
    return c


# -- text-level, meaning kept ----------------------------------------------------------------------

_DC_DEFAULTS = ["bgp log-neighbor-changes", "bgp deterministic-med", "bgp default show-hostname",
                "bgp default show-nexthop-hostname", "no bgp ebgp-requires-policy", "timers bgp 3 9"]


@st.composite
def textual(draw, c: Conf) -> str:
    """C written in fablab's words, then reworded at random."""
    text = write_fablab(c)
    lines = text.splitlines()
    if draw(st.booleans()):  # the datacenter profile's defaults written out
        lines = ["frr defaults traditional" if x == "frr defaults datacenter" else x for x in lines]
        i = next(i for i, x in enumerate(lines) if x.startswith("router bgp "))
        lines[i + 1:i + 1] = [f" {x}" for x in _DC_DEFAULTS]
    elif draw(st.booleans()):  # some of them written out under datacenter
        i = next(i for i, x in enumerate(lines) if x.startswith("router bgp "))
        lines[i + 1:i + 1] = [f" {x}" for x in draw(st.lists(st.sampled_from(_DC_DEFAULTS), unique=True))]
    if draw(st.booleans()):
        lines = [re.sub(r"^(router bgp \d+)$", r"\1 vrf default", x) for x in lines]
    if draw(st.booleans()):
        lines = [x.replace("address-family ipv4 unicast", "address-family ipv4") for x in lines]
    if draw(st.booleans()):
        lines = [re.sub(r" ge 32 le 32$", " ge 32", x) for x in lines]
    if draw(st.booleans()):  # a BFD profile alone switches BFD on
        profiled = {m.group(1) for x in lines if (m := re.match(r"^\s*neighbor (\S+) bfd profile ", x))}
        lines = [x for x in lines if not (m := re.match(r"^\s*neighbor (\S+) bfd$", x)) or m.group(1) not in profiled]
    if draw(st.booleans()):  # the router's defaults made explicit on each session
        extra = []
        for x in lines:
            extra.append(x)
            m = re.match(r"^\s*neighbor (\S+) peer-group$", x)
            if m:
                extra.append(f" neighbor {m.group(1)} advertisement-interval 0")
            if re.match(r"^\s*maximum-paths \d+$", x):
                extra.append("  distance bgp 20 200 200")
        lines = extra
    lines = draw(_frr_settles(lines))
    drop = draw(st.sets(st.sampled_from(["exit", "exit-address-family", "exit-vni", "!"])))
    lines = [x for x in lines if x.strip() not in drop]
    if draw(st.booleans()):  # prefix-list lines with seq anywhere among themselves, at the top
        pl = [x for x in lines if x.startswith("ip prefix-list ") and " seq " in x]
        if len(pl) == len([x for x in lines if x.startswith("ip prefix-list ")]):
            rnd = draw(st.randoms(use_true_random=False))
            rnd.shuffle(pl)
            rest = [x for x in lines if not x.startswith("ip prefix-list ")]
            i = next(i for i, x in enumerate(rest) if x.startswith(("interface ", "route-map ", "router ")))
            lines = rest[:i] + pl + rest[i:]
    indent = draw(st.sampled_from(["keep", "none", "wide"]))
    if indent == "none":
        lines = [x.strip() for x in lines]
    elif indent == "wide":
        lines = [re.sub(r"^( +)", lambda m: "   " * len(m.group(1)), x) for x in lines]
    return "\n".join(lines) + "\n"


@st.composite
def _frr_settles(draw, lines: list[str]) -> list[str]:
    """Rewordings only FRR's own reading settles (issue 67): its defaults and units, a second
    `router bgp` without its ASN, a match FRR replaces, and lines bgpd or bfdd refuse or ignore."""
    if draw(st.booleans()):  # link-detect is FRR's default (lib/if.c); the RA interval in milliseconds
        out = []
        for x in lines:
            m = re.match(r"^(\s*)ipv6 nd ra-interval (\d+)$", x)
            out.append(f"{m.group(1)}ipv6 nd ra-interval msec {int(m.group(2)) * 1000}" if m else x)
            if re.match(r"^interface \S+$", x):
                out.append(" link-detect")
        lines = out
    groups = {m.group(1) for x in lines if (m := re.match(r"^\s*neighbor (\S+) peer-group$", x))}
    timed = {m.group(1) for x in lines if (m := re.match(r"^\s*neighbor (\S+) timers \d+ \d+$", x))}
    speakers = {m.group(1) for x in lines if (m := re.match(r"^\s*neighbor (\S+) (interface )?remote-as ", x))}
    if groups and speakers <= groups <= timed and draw(st.booleans()):  # router-level timers every group overrides
        i = next(i for i, x in enumerate(lines) if x.startswith("router bgp "))
        lines = lines[:i + 1] + [" timers bgp 30 90"] + lines[i + 1:]
    if draw(st.booleans()):  # bestpath and router-id given again under `router bgp` without its ASN
        i = next(i for i, x in enumerate(lines) if x.startswith("router bgp "))
        moved = [x for x in lines[i + 1:] if x.strip().startswith(("bgp bestpath ", "bgp router-id "))]
        if moved and " vrf " not in lines[i]:
            lines = [x for x in lines if x not in moved] + ["router bgp", *moved]
    if draw(st.booleans()):  # a match FRR 8.4 replaces with the entry's next one of the same kind
        out = []
        for x in lines:
            m = re.match(r"^(\s*)match ip address prefix-list (\S+)$", x)
            if m:
                out.append(f"{m.group(1)}match ip address prefix-list {m.group(2)}-REPLACED")
            out.append(x)
        lines = out
    if groups and draw(st.booleans()):  # a member's own remote-as: bgpd refuses it (a warning, no effect)
        out = []
        for x in lines:
            out.append(x)
            m = re.match(r"^(\s*)neighbor (\S+) interface peer-group \S+$", x)
            if m:
                out.append(f"{m.group(1)}neighbor {m.group(2)} remote-as 65535")
        lines = out
    if draw(st.booleans()):  # a BFD profile's minimum-ttl, which single-hop sessions do not use
        out = []
        for x in lines:
            out.append(x)
            if re.match(r"^ profile \S+$", x):
                out.append("  minimum-ttl 250")
        lines = out
    return lines


# -- mutations: each changes what the config does -----------------------------------------------------

def _filtered(c: Conf) -> list[tuple[str, str, str]]:
    """(group or neighbour, direction, prefix list) for every ipv4 filter attached."""
    out = []
    for who in list(c.bgp.groups) + [n.name for n in c.bgp.neighbors if n.group is None]:
        for d, pl in c.filters(who).items():
            out.append((who, d, pl))
    return out


@st.composite
def mutated(draw, c: Conf, multipath_matters: bool = True) -> tuple[Conf, str]:
    """A copy of C with one semantic change, and what it is. MULTIPATH_MATTERS: the switch has
    equal-cost paths to spread over (a leaf or a dual-homed host; a spine reaches each prefix through
    one leaf, so its maximum-paths changes nothing it does)."""
    c = c.copy()
    kinds = (["maximum-paths"] if multipath_matters else []) + ["prefix-list entry dropped", "prefix-list entry denies", "BFD timers",
             "remote-as", "vrf", "maximum-prefix", "timers", "not activated", "permit all"] \
        + (["a second match replaces the filter"] if _matched(c) else [])
    kind = draw(st.sampled_from(kinds))
    b = c.bgp
    v4 = b.af("ipv4 unicast")
    if kind == "maximum-paths":
        n = 1  # fewer paths than the switch has equal-cost uplinks
        v4.lines = [f"maximum-paths {n}" if x.startswith("maximum-paths") else x for x in v4.lines]
    elif kind in ("prefix-list entry dropped", "prefix-list entry denies"):
        who, d, pl = draw(st.sampled_from(_filtered(c)))
        entries = c.prefix_lists[pl]
        i = draw(st.integers(0, len(entries) - 1))
        if kind.endswith("dropped") and len(entries) > 1:
            del entries[i]
        else:
            entries[i].action = "deny"
    elif kind == "BFD timers":
        prof = draw(st.sampled_from(sorted(c.bfd_profiles)))
        key, default = draw(st.sampled_from([("detect-multiplier", Bfd().multiplier),
                                             ("receive-interval", Bfd().interval_ms),
                                             ("transmit-interval", Bfd().interval_ms)]))
        values = st.integers(2, 255) if key == "detect-multiplier" else st.integers(50, 60000)
        value = draw(values.filter(lambda v: v != default))
        lines = c.bfd_profiles[prof]
        lines[:] = [x for x in lines if not x.startswith(key)] + [f"{key} {value}"]
    elif kind == "remote-as":
        n = c.detach(draw(st.sampled_from([x.name for x in b.neighbors])))
        asn = draw(st.sampled_from(["internal", "65535", "4200009999"]))
        n.settings = [f"remote-as {asn}" if s.startswith("remote-as") else s for s in n.settings]
    elif kind == "vrf":
        b.vrf = draw(st.sampled_from(["BLUE", "Vrf-tenant", "mgmt"]))
    elif kind == "maximum-prefix":
        who = draw(st.sampled_from([w for w, s in v4.peers.items() if any(x.startswith("maximum-prefix") for x in s)]))
        now = next(int(x.split()[1]) for x in v4.peers[who] if x.startswith("maximum-prefix"))
        new = draw(st.integers(1, max(1, now - 1)))  # below what the session carries: it is torn down
        v4.peers[who] = [f"maximum-prefix {new} 75" if x.startswith("maximum-prefix") else x for x in v4.peers[who]]
    elif kind == "timers":
        g = draw(st.sampled_from(sorted(b.groups)))
        ka, hold = draw(st.sampled_from([(1, 3), (10, 30), (60, 180)]))
        b.groups[g] = [f"timers {ka} {hold}" if s.startswith("timers ") and "connect" not in s else s
                       for s in b.groups[g]]
    elif kind == "not activated":
        g = draw(st.sampled_from([w for w in v4.peers if "activate" in v4.peers[w]]))
        v4.peers[g] = [s for s in v4.peers[g] if s != "activate"]
    elif kind == "permit all":
        who, d, pl = draw(st.sampled_from([f for f in _filtered(c) if f[1] == "in"]))
        c.in_permit_all.add(who)
    elif kind == "a second match replaces the filter":  # FRR 8.4 keeps the last: the map then takes everything
        rm = draw(st.sampled_from(_matched(c)))
        c.prefix_lists["EVERYTHING"] = [Entry(5, "permit", "0.0.0.0/0", None, 32)]
        rm.lines.append("match ip address prefix-list EVERYTHING")
    return c, kind


def _matched(c: Conf) -> list:
    """Route maps whose entry matches a prefix list (what a redistribution takes)."""
    return [rm for rm in c.route_maps if rm.action == "permit"
            and any(x.startswith("match ip address prefix-list ") for x in rm.lines)]
