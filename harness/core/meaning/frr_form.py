"""A file as FRR 8.4 itself read it (harness.plumbing.frr_reader): its running config, the
engineer's line behind each of its lines, the lines FRR refused, and what FRR says of each BGP
neighbour that its running config does not write out."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Refusal:
    """A line FRR refused or warned about, in FRR's words."""
    line: int | None  # of the file given; None where FRR named no line
    statement: str
    message: str

    def __str__(self) -> str:
        where = f"{self.line}: " if self.line else ""
        what = f"`{self.statement}`: " if self.statement else ""
        return f"{where}{what}{self.message}"


@dataclass(frozen=True)
class PeerFacts:
    """One neighbour's effective settings as bgpd holds them (`show bgp vrf all neighbors json`).
    Its running config can hide them: with bfdd running, a legacy `neighbor X bfd M RX TX` is
    written as `neighbor X bfd` (bgpd/bgp_bfd.c, bgp_bfd_peer_config_write), the timers kept."""
    bfd: tuple[int, int, int] | None  # detect multiplier, rx, tx (ms); None: BFD off
    timers: tuple[int, int, int]  # keepalive, hold, connect (s)


@dataclass(frozen=True)
class FrrForm:
    """What FRR made of one frr.conf."""
    text: str  # FRR's `show running-config`; the file itself where FRR did not read it
    origin: tuple[int, ...] | None = None  # the file's line behind each line of text; None: text is the file
    refusals: tuple[Refusal, ...] = ()
    peers: Mapping[tuple[str, str], PeerFacts] = field(default_factory=dict)  # (vrf, neighbour) -> facts


def form_of(config: str | FrrForm) -> FrrForm:
    """A config given as text is its own form (fablab's model reads it as written)."""
    return config if isinstance(config, FrrForm) else FrrForm(config)
