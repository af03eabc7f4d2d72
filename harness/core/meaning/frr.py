"""An frr.conf read as FRR 8.4 reads it: into nodes, by FRR's grammar, never by its layout.

FRR (vtysh -b, or a daemon reading its file) executes each line in the node it is in; a
command that node does not know is tried in the parent node, and where the parent takes it
the parent becomes the current node (lib/command.c, command_config_read_one_line). So a
config needs no `exit`, `!` closes nothing, indentation means nothing, and `neighbor X
remote-as` written inside an address family lands in `router bgp`. This module does the
same with a vocabulary per node, and records every statement with its line number so that a
difference can point at the lines behind it.

`parse(text)` gives a `FrrConfig`: prefix lists, access lists, route maps, BGP instances
(neighbours, peer groups, address families, EVPN VNIs), BFD profiles, interfaces, and the
rest of the top level as statements. What the statements do is harness.core.meaning.bgp.
"""
from __future__ import annotations

import enum
import ipaddress
from harness.core.errors import InputError
from harness.core.meaning.frr_model import (  # the model, importable from here too
    AccessEntry, AfConf, BgpInstance, FrrConfig, PeerConf, PrefixEntry, PrefixList, RouteMapEntry, Statement)

__all__ = ["AccessEntry", "AfConf", "BgpInstance", "COSMETIC", "FrrConfig", "Node", "PeerConf", "PrefixEntry",
           "PrefixList", "RouteMapEntry", "Statement", "parse"]


class Node(enum.Enum):
    TOP = "config"
    BGP = "router bgp"
    AF = "address-family"
    VNI = "vni"
    ROUTE_MAP = "route-map"
    INTERFACE = "interface"
    BFD = "bfd"
    BFD_PROFILE = "bfd profile"
    BFD_PEER = "bfd peer"
    VRF = "vrf"
    LINE = "line"
    OTHER = "other block"  # a block fablab does not model (router ospf, key chain, ...): kept whole


# What each node takes (first words; for `no`, the word after it). A line no open node takes
# is a top-level statement, as in FRR's CONFIG_NODE.
_AF_NEIGHBOR = {"activate", "prefix-list", "route-map", "filter-list", "distribute-list", "maximum-prefix",
                "maximum-prefix-out", "soft-reconfiguration", "allowas-in", "next-hop-self", "send-community",
                "remove-private-AS", "route-reflector-client", "route-server-client", "default-originate",
                "as-override", "attribute-unchanged", "addpath-tx-all-paths", "addpath-tx-bestpath-per-AS",
                "addpath-rx-paths-limit", "weight", "unsuppress-map", "capability", "sender-as-path-loop-detection",
                "orf", "encapsulation-mpls", "encapsulation-srv6", "path-attribute"}
_AF_WORDS = {"network", "redistribute", "aggregate-address", "maximum-paths", "table-map", "distance", "bgp",
             "import", "export", "rd", "rt", "label", "nexthop", "sid", "advertise-all-vni", "advertise-default-gw",
             "advertise-svi-ip", "advertise", "vni", "flooding", "route-target", "default-originate", "autort",
             "dup-addr-detection", "disable-ead-evi-rx", "disable-ead-evi-tx", "ead-es-frag", "use-es-l3nhg",
             "advertise-pip", "enable-resolve-overlay-index", "ead-es-route-target"}
_BGP_WORDS = {"bgp", "neighbor", "timers", "address-family", "network", "redistribute", "aggregate-address",
              "maximum-paths", "coalesce-time", "write-quanta", "read-quanta", "update-delay", "distance",
              "table-map", "bmp", "segment-routing", "sid", "allocate-label", "match"}
_WORDS = {
    Node.VNI: {"route-target", "rd", "advertise-default-gw", "advertise-svi-ip"},
    Node.ROUTE_MAP: {"match", "set", "call", "on-match", "continue", "description"},
    Node.BFD: {"profile", "peer"},
    Node.BFD_PROFILE: {"detect-multiplier", "receive-interval", "transmit-interval", "echo", "echo-mode",
                       "echo-interval", "minimum-ttl", "passive-mode", "shutdown", "label"},
    Node.VRF: {"vni", "ip", "ipv6", "netns"},
    Node.LINE: {"exec-timeout", "login", "access-class", "ipv6", "exec"},
}
_WORDS[Node.BFD_PEER] = _WORDS[Node.BFD_PROFILE] | {"profile"}
_INTERFACE_IP = {"address", "ospf", "pim", "igmp", "rip", "router", "irdp", "nhrp", "multicast", "mroute"}
_INTERFACE_IPV6 = {"nd", "address", "ospf6", "mld", "pim", "router", "mroute"}
_INTERFACE_WORDS = {"description", "shutdown", "link-detect", "bandwidth", "multicast", "evpn", "link-params",
                    "vrrp", "pbr-policy", "mpls", "isis", "openfabric", "ospf", "bfd", "mtu"}
# Top-level statements that are only FRR's bookkeeping or how it logs: they change no route,
# session or packet, so two configs may differ in them.
COSMETIC = ("ip forwarding", "ipv6 forwarding",  # on in every switch: written out, they say the default
            "Building configuration", "Current configuration", "frr version", "hostname", "service ", "log ", "line ", "password", "enable password", "agentx",
            "no service", "debug ", "banner", "end", "write-")


_CLOSE = {"exit", "quit", "end", "exit-address-family", "exit-vni", "exit-vrf"}


def _takes(node: Node, words: list[str], af: tuple[str, str] | None) -> bool:
    w = words[1:] if words[0] == "no" and len(words) > 1 else words
    head = w[0]
    if node is Node.TOP:
        return True
    if node is Node.OTHER:
        return head not in _TOP_OPENERS and head not in ("ip", "ipv6", "bgp", "access-list", "hostname", "frr")
    if node is Node.BGP:
        return head in _BGP_WORDS
    if node is Node.AF:
        if head == "neighbor":
            return _af_neighbor_command(w)
        if af is not None and af[0] != "l2vpn" and head in ("vni", "advertise-all-vni", "flooding", "autort"):
            return False
        return head in _AF_WORDS
    if node is Node.INTERFACE:
        if head == "ip":
            return len(w) > 1 and w[1] in _INTERFACE_IP
        if head == "ipv6":
            return len(w) > 1 and w[1] in _INTERFACE_IPV6
        return head in _INTERFACE_WORDS
    if node is Node.VRF and head in ("ip", "ipv6"):
        return len(w) > 1 and w[1] in ("route", "protocol", "nht", "import-table")
    return head in _WORDS.get(node, set())


def _af_neighbor_command(w: list[str]) -> bool:
    """`neighbor X <what>` that belongs to an address family (capability orf does; the other
    capabilities are the session's)."""
    if len(w) < 3 or w[2] not in _AF_NEIGHBOR:
        return False
    return w[2] != "capability" or w[3:4] == ["orf"]


_TOP_OPENERS = {"router", "interface", "route-map", "bfd", "vrf", "line", "key", "segment-routing", "mpls",
                "nexthop-group", "pbr-map", "fpm", "evpn", "pseudowire", "l2vpn", "affinity-map", "srv6"}


class _Reader:
    def __init__(self) -> None:
        self.cfg = FrrConfig()
        self.stack: list[tuple[Node, object]] = [(Node.TOP, None)]
        self.trace: list[tuple[int, tuple, str]] = []  # line, the node it ran in (by identity), text

    def path(self) -> tuple:
        """The open nodes by what they are (not by how their header was worded)."""
        return tuple(_identity(node, data) for node, data in self.stack[1:])

    def feed(self, no: int, raw: str) -> None:
        text = " ".join(raw.split())
        if not text or text.startswith(("!", "#")):
            return
        words = text.split()
        if text in _CLOSE or words[0] in _CLOSE:
            self.close(words[0])
            return
        af = next((data for node, data in reversed(self.stack) if node is Node.AF), None)
        depth = len(self.stack) - 1
        while depth > 0 and not _takes(self.stack[depth][0], words, (af.afi, af.safi) if af else None):
            depth -= 1
        del self.stack[depth + 1:]
        self.trace.append((no, self.path(), text))
        self.handle(Statement(no, text))

    def close(self, word: str) -> None:
        kinds = [n for n, _ in self.stack]
        if word == "end":
            del self.stack[1:]
        elif word == "exit-address-family":
            if Node.AF in kinds:
                del self.stack[kinds.index(Node.AF):]
        elif word == "exit-vni":
            if Node.VNI in kinds:
                del self.stack[kinds.index(Node.VNI):]
        elif word == "exit-vrf":
            if Node.VRF in kinds:
                del self.stack[kinds.index(Node.VRF):]
        elif len(self.stack) > 1:
            self.stack.pop()

    # ------------------------------------------------------------------ statements by node

    def handle(self, st: Statement) -> None:
        node, data = self.stack[-1]
        getattr(self, f"_in_{node.name.lower()}")(st, data)

    def _in_top(self, st: Statement, _) -> None:
        w, cfg = st.words, self.cfg
        if w[:2] == ["frr", "defaults"] and len(w) > 2:
            cfg.profile, cfg.profile_line = w[2], st.line
        elif w[:2] == ["router", "bgp"] and len(w) > 2:
            vrf = w[4] if len(w) > 4 and w[3] in ("vrf", "view") else "default"
            inst = cfg.bgp.get(vrf)
            if inst is None:
                inst = cfg.bgp[vrf] = BgpInstance(w[2], vrf, st.line)
            self.stack.append((Node.BGP, inst))
        elif w == ["router", "bgp"] and "default" in cfg.bgp:  # FRR re-enters the instance it has
            self.stack.append((Node.BGP, cfg.bgp["default"]))
        elif w[0] == "interface" and len(w) > 1:
            cfg.interfaces.setdefault(w[1], [])
            if len(w) > 3 and w[2] == "vrf":
                cfg.interface_vrfs[w[1]] = w[3]
            self.stack.append((Node.INTERFACE, w[1]))
        elif w[0] == "route-map" and len(w) > 3:
            entry = RouteMapEntry(int(w[3]), w[2] == "permit", st.line, name=w[1])
            entries = cfg.route_maps.setdefault(w[1], [])
            entries[:] = [e for e in entries if e.seq != entry.seq]
            entries.append(entry)
            self.stack.append((Node.ROUTE_MAP, entry))
        elif w == ["bfd"]:
            self.stack.append((Node.BFD, None))
        elif w[0] == "vrf" and len(w) > 1:
            cfg.vrfs.setdefault(w[1], [])
            self.stack.append((Node.VRF, w[1]))
        elif w[0] == "line":
            self.stack.append((Node.LINE, None))
        elif len(w) > 2 and w[0] in ("ip", "ipv6") and w[1] == "prefix-list":
            self._prefix_list(st)
        elif w[0] == "access-list" or w[:2] == ["ip", "access-list"]:
            self._access_list(st)
        elif w[0] in _TOP_OPENERS:
            cfg.blocks.setdefault(st.text, [])
            self.stack.append((Node.OTHER, st.text))
        else:
            cfg.top.append(st)

    def _prefix_list(self, st: Statement) -> None:
        w = st.words
        family, name, rest = w[0], w[2], w[3:]
        plist = self.cfg.prefix_lists.setdefault((family, name), PrefixList(name, family))
        if not rest or rest[0] in ("description", "sequence-number"):
            return
        seq = None
        if rest[0] == "seq" and len(rest) > 1:
            seq, rest = int(rest[1]), rest[2:]
        if len(rest) < 2 or rest[0] not in ("permit", "deny"):
            return
        if seq is None:  # FRR numbers it after the highest so far, in steps of 5 (lib/plist.c)
            top = plist.entries[-1].seq if plist.entries else 0  # entries are kept in seq order
            seq = (top // 5) * 5 + 5
        ge = le = None
        if rest[1] == "any":
            prefix = ipaddress.ip_network("0.0.0.0/0" if family == "ip" else "::/0")
            le = prefix.max_prefixlen
        else:
            prefix = ipaddress.ip_network(rest[1], strict=False)
        opts = rest[2:]
        for i, word in enumerate(opts[:-1]):
            if word == "ge":
                ge = int(opts[i + 1])
            elif word == "le":
                le = int(opts[i + 1])
        entry = PrefixEntry(seq, rest[0] == "permit", prefix, ge, le, st.line)
        if not plist.entries or plist.entries[-1].seq < seq:  # in order, as files write them: no sort
            plist.entries.append(entry)
            return
        plist.entries = [e for e in plist.entries if e.seq != seq]
        plist.entries.append(entry)
        plist.entries.sort(key=lambda e: e.seq)  # first match wins, in seq order

    def _access_list(self, st: Statement) -> None:
        w = st.words[1:] if st.words[0] == "ip" else st.words
        name, rest = w[1], w[2:]
        if rest[:1] == ["seq"]:
            rest = rest[2:]
        if len(rest) < 2 or rest[0] not in ("permit", "deny"):
            return
        exact = "exact-match" in rest
        target = rest[1]
        prefix = None if target == "any" else ipaddress.ip_network(target, strict=False)
        self.cfg.access_lists.setdefault(name, []).append(AccessEntry(rest[0] == "permit", prefix, exact, st.line))

    def _in_bgp(self, st: Statement, inst: BgpInstance) -> None:
        w = st.words
        if w[0] == "address-family" and len(w) > 1:
            safi = w[2] if len(w) > 2 else ("evpn" if w[1] == "l2vpn" else "unicast")
            af = inst.af(w[1], safi, st.line)
            self.stack.append((Node.AF, af))
            return
        neg = w[0] == "no"
        body = w[1:] if neg else w
        if body[0] == "neighbor" and len(body) > 2:
            if _af_neighbor_command(body):  # outside an address family: IPv4 unicast's
                self._af_neighbor(inst.af("ipv4", "unicast"), st)
            else:
                self._neighbor(inst, st, neg, body)
            return
        if body[0] in ("network", "redistribute", "aggregate-address", "maximum-paths", "table-map", "distance"):
            inst.af("ipv4", "unicast").statements.append(st)
            return
        inst.statements.append(st)

    def _neighbor(self, inst: BgpInstance, st: Statement, neg: bool, body: list[str]) -> None:
        name, rest = body[1], body[2:]
        peer = inst.peers.get(name)
        if peer is None:
            peer = inst.peers[name] = PeerConf(name)
        peer.lines.append(st.line)
        if neg:
            if rest and rest[0] != "peer-group":
                peer.settings.pop(rest[0] if rest[0] != "timers" or len(rest) < 2 or rest[1] != "connect"
                                  else "timers connect", None)
                peer.settings[f"no {rest[0]}"] = st
            return
        if rest == ["peer-group"]:
            peer.is_group = True
        elif rest[0] == "interface":
            peer.interface = True
            more = rest[1:]
            if more[:1] == ["v6only"]:
                peer.settings["v6only"] = st
                more = more[1:]
            if more[:1] == ["peer-group"] and len(more) > 1:
                peer.group = more[1]
            elif more[:1] == ["remote-as"] and len(more) > 1:
                peer.remote_as = more[1]
        elif rest[0] == "peer-group" and len(rest) > 1:
            peer.group = rest[1]
        elif rest[0] == "remote-as" and len(rest) > 1:
            peer.remote_as = rest[1]
        elif rest[0] == "timers" and len(rest) > 1 and rest[1] == "connect":
            peer.settings["timers connect"] = st
        elif rest[0] == "bfd":
            key = "bfd profile" if rest[1:2] == ["profile"] else "bfd"
            if rest[1:2] == ["check-control-plane-failure"]:
                key = "bfd check-control-plane-failure"
            peer.settings[key] = st
        elif rest[0] in ("description",):
            pass  # a label
        else:
            peer.settings[rest[0]] = st

    def _af_neighbor(self, af: AfConf, st: Statement) -> None:
        w = st.words
        neg = w[0] == "no"
        body = w[1:] if neg else w
        name, what = body[1], body[2]
        key = what
        if what in ("prefix-list", "route-map", "filter-list", "distribute-list") and len(body) > 4:
            key = f"{what} {body[4]}"  # in | out
        settings = af.neighbors.setdefault(name, {})
        if neg:
            settings.pop(key, None)
            if what == "activate":
                settings["activate"] = st
            return
        settings[key] = st

    def _in_af(self, st: Statement, af: AfConf) -> None:
        w = st.words
        body = w[1:] if w[0] == "no" else w
        if body[0] == "neighbor":
            self._af_neighbor(af, st)
        elif body[0] == "vni" and w[0] != "no" and len(w) > 1 and af.afi == "l2vpn":
            vni = int(w[1])
            af.vnis.setdefault(vni, [])
            self.stack.append((Node.VNI, (af, vni)))
        else:
            af.statements.append(st)

    def _in_vni(self, st: Statement, data) -> None:
        af, vni = data
        af.vnis[vni].append(st)

    def _in_route_map(self, st: Statement, entry: RouteMapEntry) -> None:
        head = st.words[0]
        if head == "match":
            entry.matches.append(st)
        elif head == "set":
            entry.sets.append(st)
        elif head in ("call", "on-match", "continue"):
            entry.flow.append(st)

    def _in_interface(self, st: Statement, name: str) -> None:
        if st.words[0] != "description":
            self.cfg.interfaces[name].append(st)

    def _in_bfd(self, st: Statement, _) -> None:
        w = st.words
        if w[0] == "profile" and len(w) > 1:
            self.cfg.bfd_profiles.setdefault(w[1], {})
            self.stack.append((Node.BFD_PROFILE, w[1]))
        elif w[0] == "peer":
            self.cfg.bfd_peers.setdefault(st.text, [])
            self.stack.append((Node.BFD_PEER, st.text))

    def _in_bfd_profile(self, st: Statement, name: str) -> None:
        w = st.words
        key = " ".join(w[:2]) if w[0] in ("echo", "no") and len(w) > 1 else w[0]
        self.cfg.bfd_profiles[name][key] = st

    def _in_bfd_peer(self, st: Statement, header: str) -> None:
        self.cfg.bfd_peers[header].append(st)

    def _in_vrf(self, st: Statement, name: str) -> None:
        self.cfg.vrfs[name].append(st)

    def _in_line(self, st: Statement, _) -> None:
        pass

    def _in_other(self, st: Statement, header: str) -> None:
        self.cfg.blocks[header].append(st)


def _identity(node: Node, data) -> tuple:
    if node is Node.BGP:
        return ("bgp", data.vrf)
    if node is Node.AF:
        return ("af", data.afi, data.safi)
    if node is Node.VNI:
        return ("vni", data[1])
    if node is Node.ROUTE_MAP:
        return ("route-map", data.name, data.seq)
    return (node.value, data)


def trace(text: str) -> list[tuple[int, tuple, str]]:
    """Each statement of `text`: its line, the nodes it runs in (by what they are), its words."""
    reader = _Reader()
    for no, raw in enumerate(text.splitlines(), 1):
        try:
            reader.feed(no, raw)
        except (ValueError, IndexError):
            continue
    return reader.trace


def parse(text: str, source: str = "frr.conf", origin: tuple[int, ...] | None = None) -> FrrConfig:
    """Raises InputError naming source:line for a statement FRR would refuse as malformed
    (a prefix that is no prefix, a number that is none). With `origin`, `text` is FRR's own
    form of a file (harness.plumbing.frr_reader) and each statement carries the line of the
    file it came from (origin[n - 1] for line n; 0 where none)."""
    reader = _Reader()
    for no, raw in enumerate(text.splitlines(), 1):
        line = no if origin is None else (origin[no - 1] if no <= len(origin) else 0)
        try:
            reader.feed(line, raw)
        except (ValueError, IndexError) as e:
            raise InputError(f"{source}:{no}: FRR would refuse `{raw.strip()}` ({e}); fix the line "
                             f"(`vtysh --dryrun -f {source}` shows what FRR makes of the file)") from None
    return reader.cfg
