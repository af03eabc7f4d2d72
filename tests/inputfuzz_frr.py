"""Mutations of a switch's frr.conf of the kinds a hand edit or a Windows editor makes: lines FRR
refuses, changes of behaviour, route-map loops, truncated, binary and huge lines. tests/inputfuzz.py
says what the expectations mean; a change of behaviour is `broken` for `fablab diff` only."""
from __future__ import annotations

import re
from random import Random

from inputfuzz_text import Mut, Target

DIFF = ("diff",)


REFUSED = ["ip route 10.99.0.0/33 Null0", "frobnicate 7", "bgp router-id 10.16.0.300", "ip route 1.2.3.4 Null0",
           "ip prefix-list X seq 5 permit 10.0.0.0/40", "neighbor 10.0.0.300 remote-as 65000",
           "router bgp 65101 vrf", "neighbor fabric timers 3 abc", "ip prefix-list X seq 99999999999 permit any"]


def _lines(t: Target) -> list[str]:
    return t.text.split("\n")


def frr_neutral(rng: Random, t: Target) -> Mut:
    lines = _lines(t)
    how = rng.choice(["bangs", "blank", "comments", "dedent", "indent", "end", "no-version", "utf8-description"])
    if how == "bangs":
        out = [x for line in lines for x in ([line, "!"] if rng.random() < 0.3 else [line])]
    elif how == "blank":
        out = [x for line in lines for x in ([line, ""] if rng.random() < 0.3 else [line])]
    elif how == "comments":
        out = [x for line in lines for x in ([line, "! checked 2024-05-01 \u2013 ok"] if rng.random() < 0.2
                                              else [line])]
    elif how == "dedent":
        out = [line.strip() for line in lines]
    elif how == "indent":
        out = ["  " + line if line.startswith(" ") else line for line in lines]
    elif how == "end":
        out = lines + ["end"]
    elif how == "no-version":
        out = [line for line in lines if not line.startswith("frr version")]
    else:
        out = [line + " \u2013 B\u00e4y 4" if line.startswith(" description") else line for line in lines]
    return t.mut("same", "\n".join(out), f"the same config, {how}")


def frr_refused(rng: Random, t: Target) -> Mut:
    """A line FRR refuses: a warning naming file:line (docs/commands/diff.md), never a traceback."""
    lines = _lines(t)
    how = rng.choice(["insert", "multiplier", "remote-as", "timers", "truncated-line"])
    if how == "insert":
        at = rng.randrange(1, len(lines))
        lines.insert(at, rng.choice(REFUSED))
    elif how == "multiplier":
        lines = [re.sub(r"detect-multiplier \d+", f"detect-multiplier {rng.choice(['abc', '0', '999', '-3'])}", x)
                 for x in lines]
    elif how == "remote-as":
        lines = [re.sub(r"remote-as external", f"remote-as {rng.choice(['99999999999', '0', 'abc', '-1'])}", x)
                 for x in lines]
        sessions = "/be-" not in t.path  # a rail-only BE leaf has no BGP session to lose
        return t.mut("broken" if sessions else "any", "\n".join(lines), "the peer group's remote-as FRR refuses",
                     only=DIFF, says=r"frr\.conf:\d+")
    elif how == "timers":
        lines = [x.replace("timers 3 9", rng.choice(["timers 3 abc", "timers 99999 9", "timers -1 3"]))
                 for x in lines]
    else:
        i = rng.choice([k for k, x in enumerate(lines) if len(x) > 12])
        lines[i] = lines[i][:rng.randrange(3, len(lines[i]) - 2)]
    return t.mut("any", "\n".join(lines), f"a line FRR refuses: {how}", only=DIFF,
                 says=r"frr\.conf:\d+" if how != "truncated-line" else None)


def frr_behaviour(rng: Random, t: Target) -> Mut | None:
    how = rng.choice(["timers", "multiplier", "interval", "no-bfd", "paths", "no-neighbor", "no-prefix-in",
                      "asn-invalid", "no-router", "deny"])
    subs = {"timers": ("neighbor fabric timers 3 9", "neighbor fabric timers 10 30"),
            "multiplier": ("detect-multiplier 3", "detect-multiplier 5"),
            "interval": ("receive-interval 200", "receive-interval 900"),
            "no-bfd": (" neighbor fabric bfd\n neighbor fabric bfd profile fabric\n", "\n"),
            "paths": ("maximum-paths 64", "maximum-paths 1"),
            "no-prefix-in": ("  neighbor fabric prefix-list ", "  no neighbor fabric prefix-list "),
            "deny": ("route-map CONNECTED permit 10", "route-map CONNECTED deny 10")}
    text = t.text
    if how in subs:
        old, new = subs[how]
        if old not in text:
            return None
        text = text.replace(old, new, 1)
    elif how == "no-neighbor":
        found = re.findall(r"(?m)^ neighbor Ethernet\d+ interface peer-group fabric\n", text)
        if not found:
            return None
        text = text.replace(rng.choice(found), "", 1)
    elif how == "asn-invalid":
        text = re.sub(r"router bgp \d+", f"router bgp {rng.choice(['99999999999', '0', 'abc', '4294967296'])}", text)
    else:
        text = text[:text.index("router bgp")] + text[text.index("\nbfd\n"):]
    sessions = "/be-" not in t.path  # a rail-only BE leaf has no BGP session: its BGP settings change nothing
    return t.mut("broken" if sessions else "any", text, f"behaviour changed: {how}", only=DIFF)


def frr_junk(rng: Random, t: Target) -> Mut:
    lines = _lines(t)
    how = rng.choice(["binary-line", "control-chars", "huge-line", "many-lines", "gone", "long-word"])
    if how == "binary-line":
        lines.insert(rng.randrange(len(lines)), bytes(rng.randrange(1, 256) for _ in range(40)).decode("latin-1"))
        return t.mut("any", "\n".join(lines).encode("latin-1", "replace"), "a line of binary junk")
    if how == "control-chars":
        lines.insert(rng.randrange(len(lines)), "description \x1b[31mred\x1b[0m \x07\x08")
        return t.mut("any", "\n".join(lines), "escape and control characters")
    if how == "gone":
        return t.mut("broken", None, "frr.conf removed", only=("diff", "show-configs"))
    if how == "long-word":
        lines.insert(rng.randrange(1, len(lines)), "hostname " + "h" * 70_000)
        return t.mut("any", "\n".join(lines), "a 70 kB hostname")
    after = " description " if how == "huge-line" else "!\n"
    unit = "x" if how == "huge-line" else "!\n"
    size = rng.choice([1_000_000, 10_000_000])
    return Mut("any", steps=({"op": "grow", "path": t.path, "after": after, "unit": unit, "bytes": size},),
               note=f"{how}: {size:,} bytes", heavy=True)


def frr_policy(rng: Random, t: Target) -> Mut | None:
    """Policy FRR takes but that loops or points nowhere: a route-map calling itself, `continue`
    and `on-match goto` loops, a prefix-list or route-map that does not exist, a long AS path."""
    if "route-map CONNECTED permit 10\n" not in t.text:
        return None
    how = rng.choice(["call-self", "call-loop", "continue", "goto", "missing-list", "missing-map", "prepend",
                      "huge-list"])
    entry = "route-map CONNECTED permit 10\n"
    more = {"call-self": " call CONNECTED\n",
            "call-loop": " call OTHER\nexit\n!\nroute-map OTHER permit 10\n call CONNECTED\n",
            "continue": " continue 10\n", "goto": " on-match goto 5\n",
            "missing-list": " match ip address prefix-list NOSUCH\n",
            "missing-map": "exit\n!\nroute-map X permit 10\n call NOSUCH\n",
            "prepend": " set as-path prepend " + " ".join(["65000"] * 600) + "\n"}.get(how)
    if how == "huge-list":
        lines = "".join(f"ip prefix-list BIG seq {i + 1} permit 10.{i // 250 % 250}.{i % 250}.0/24\n"
                        for i in range(rng.choice([2000, 20000])))
        return Mut("any", t.text.replace(entry, lines + entry, 1), note=f"{lines.count(chr(10))} prefix-list entries",
                   only=DIFF, heavy=True)
    text = t.text.replace(entry, entry + more, 1)
    return t.mut("any", text, f"route-map CONNECTED: {how}", only=DIFF)


FRR = [frr_neutral, frr_refused, frr_behaviour, frr_junk, frr_policy] * 3
