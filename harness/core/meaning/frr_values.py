"""The values of an frr.conf as FRR 8.4's command grammar takes them, for where FRR itself cannot
read the file (harness.plumbing.frr_reader falls back to fablab's model): a line whose value
FRR's CLI would not match (`ip route 10.99.0.0/33 Null0`, `detect-multiplier abc`,
`neighbor X remote-as 99999999999`) is refused as vtysh refuses it, `% Unknown command`, and
the model reads the file without it, as FRR runs it.

The ranges are FRR 8.4's DEFUNs (bgpd/bgp_vty.c, bfdd/bfdd_cli.c, staticd/static_vty.c,
lib/plist.c, zebra/interface.c); tests/unit/test_frr_values.py holds each against FRR itself.
"""
from __future__ import annotations

import ipaddress
from collections.abc import Callable

from harness.core.meaning.frr_form import FrrForm, Refusal

UNKNOWN = "% Unknown command"

Check = Callable[[str], bool]


def _range(low: int, high: int) -> Check:
    return lambda w: w.isascii() and w.isdigit() and len(w) <= 10 and low <= int(w) <= high


def _net(version: int | None, host: bool = False) -> Check:
    """A prefix A.B.C.D/M (X:X::X:X/M); `host`: an interface address, its host bits kept."""
    def check(w: str) -> bool:
        if "/" not in w:
            return False
        try:
            net = ipaddress.ip_interface(w) if host else ipaddress.ip_network(w, strict=False)
        except ValueError:
            return False
        return version is None or net.version == version
    return check


def _addr(version: int) -> Check:
    def check(w: str) -> bool:
        try:
            return ipaddress.ip_address(w).version == version
        except ValueError:
            return False
    return check


def _either(*checks: Check) -> Check:
    return lambda w: any(c(w) for c in checks)


def _word(*words: str) -> Check:
    return lambda w: w in words


ASN = _range(1, 4294967295)
U16 = _range(0, 65535)

# (the words a statement starts with, '*' for any one word) -> the checks of the words after them;
# a check list shorter than the words left leaves the rest to the model, as does no value at all
# where the value is optional.
TABLE: tuple[tuple[tuple[str, ...], tuple[Check, ...]], ...] = (
    (("ip", "route"), (_either(_net(4), _addr(4)),)),  # A.B.C.D/M, or A.B.C.D and its mask
    (("ipv6", "route"), (_net(6),)),
    (("router", "bgp"), (ASN,)),
    (("bgp", "router-id"), (_addr(4),)),
    (("ip", "router-id"), (_addr(4),)),
    (("neighbor", "*", "remote-as"), (_either(ASN, _word("internal", "external")),)),
    (("neighbor", "*", "local-as"), (ASN,)),
    (("neighbor", "*", "timers", "connect"), (_range(1, 65535),)),
    (("neighbor", "*", "timers"), (U16, U16)),
    (("neighbor", "*", "ebgp-multihop"), (_range(1, 255),)),
    (("neighbor", "*", "ttl-security", "hops"), (_range(1, 254),)),
    (("neighbor", "*", "bfd"), (_either(_range(2, 255), _word("profile", "check-control-plane-failure")),)),
    (("timers", "bgp"), (U16, U16)),
    (("network",), (lambda w: "/" not in w or _net(None)(w),)),  # ripd's `network WORD` names an interface
    (("detect-multiplier",), (_range(2, 255),)),
    (("receive-interval",), (_range(10, 60000),)),
    (("transmit-interval",), (_range(10, 60000),)),
    (("echo-interval",), (_range(10, 60000),)),
    (("minimum-ttl",), (_range(1, 254),)),
    (("ip", "address"), (_net(4, host=True),)),
    (("ipv6", "address"), (_net(6, host=True),)),
)


def _legacy_bfd(words: list[str]) -> bool:
    """`neighbor X bfd M RX TX` (bgpd's legacy timers: (2-255) (50-60000) (50-60000))."""
    if len(words) < 4 or not words[3].isdigit():
        return True
    return len(words) == 6 and _range(2, 255)(words[3]) and all(_range(50, 60000)(w) for w in words[4:6])


def _prefix_list(words: list[str]) -> bool:
    """`ip[v6] prefix-list NAME [seq N] permit|deny PREFIX|any [ge N] [le N]` (lib/plist.c)."""
    version, rest = (6 if words[0] == "ipv6" else 4), words[3:]
    if rest[:1] == ["seq"]:
        if len(rest) < 2 or not _range(1, 4294967295)(rest[1]):
            return False
        rest = rest[2:]
    if not rest or rest[0] not in ("permit", "deny"):
        return rest[:1] in (["description"], ["seq"]) or not rest
    if len(rest) < 2:
        return False
    if rest[1] == "any":
        return len(rest) == 2
    if not _net(version)(rest[1]):
        return False
    top = 32 if version == 4 else 128
    opts = rest[2:]
    while opts:
        if opts[0] not in ("ge", "le") or len(opts) < 2 or not _range(0, top)(opts[1]):
            return False
        opts = opts[2:]
    return True


def fits(text: str) -> bool:
    """Whether FRR's grammar takes the values of one line (its words as written)."""
    words = text.split()
    if not words:
        return True
    if words[0] == "no":
        return True  # a negation's values are not read
    if words[0] in ("ip", "ipv6") and words[1:2] == ["prefix-list"] and len(words) > 3:
        return _prefix_list(words)
    if len(words) > 2 and words[0] == "neighbor" and words[2] == "bfd" and len(words) > 3 and words[3].isdigit():
        return _legacy_bfd(words)
    for head, checks in TABLE:
        if len(words) > len(head) and all(h in ("*", w) for h, w in zip(head, words)):
            values = words[len(head):]
            return all(check(value) for check, value in zip(checks, values))
        if tuple(words) == head and head in (("router", "bgp"),):
            return True  # `router bgp` alone re-enters the instance
    return True


def refused(text: str) -> FrrForm:
    """`text` as the model reads it: each line whose values FRR would not take left out and
    refused in vtysh's words, the file's line behind each line kept."""
    kept, origin, refusals = [], [], []
    for no, line in enumerate(text.splitlines(), 1):
        statement = " ".join(line.split())
        if statement and not statement.startswith(("!", "#")) and not fits(statement):
            refusals.append(Refusal(no, statement, UNKNOWN))
            continue
        kept.append(line)
        origin.append(no)
    if not refusals:
        return FrrForm(text)
    return FrrForm("\n".join(kept) + "\n", tuple(origin), tuple(refusals))
