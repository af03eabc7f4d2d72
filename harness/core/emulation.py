"""What a lab adds to a switch's FRR only because it is an emulation.

An engineer's frr.conf is written for their switches; a lab runs it on FRR in a Linux
namespace (netns) or in docker-sonic-vs (clab), where the kernel is the forwarding plane.
Some lines are needed there and mean nothing on the switches the configs are for. The runtime
adds them at boot (netns: to zebra's startup part; clab: init.sh, before the frr.conf); no
render carries them, no engineer is asked for them, and `fablab diff` never reports them.
"""
from __future__ import annotations

__all__ = ["ZEBRA_LINES", "emulation_only"]

# Plain routes, not kernel nexthop groups: with groups, a flapped port stays out of the
# kernel's group while zebra believes it is back (seen with FRR 8.4 on kernel 6.x). A switch's
# ASIC is programmed through fpmsyncd, not the kernel's groups: the line is the lab's alone.
ZEBRA_LINES = ("no zebra nexthop kernel enable",)

# What the lines set, in both senses: an engineer's config may say either, and neither changes
# a route, a session or a packet on their switch.
_SETTINGS = tuple(" ".join(line.split()[1:]) if line.startswith("no ") else line for line in ZEBRA_LINES)


def emulation_only(text: str) -> bool:
    """A top-level frr.conf statement that only the emulation's own lines set."""
    words = text.split()
    said = " ".join(words[1:] if words[:1] == ["no"] else words)
    return any(said == s or said.startswith(s + " ") for s in _SETTINGS)
