"""Whether the BGP sessions a case's own failure took down came back once it was undone.

A case that fails a link or a switch must leave the fabric as it found it: its route can come
back over the other sessions while one of its own does not, and the next check (or the next
`fablab check`) then finds the fabric short without knowing why. Each end is asked as its
switch sees it; a session still down is described with what FRR says of it, so the verdict
carries its own evidence.
"""
from __future__ import annotations

import json
from collections.abc import Iterable

from harness.core.errors import HarnessError
from harness.plumbing.labview import LabView
from harness.plumbing.wait import within

End = tuple[str, str]  # (switch, port)


def not_back(lab: LabView, ends: Iterable[End], timeout: float) -> tuple[str, ...]:
    """The sessions on these ends still not Established after up to `timeout` s, each as
    `sessions_of` describes it; () once every one is. A whole spine back with seven of its
    eight sessions once left the eighth Idle for good (FRR 8.4's bgpd waiting for a link-local
    address zebra had already learned)."""
    ends = tuple(ends)
    ports: dict[str, set[str]] = {}
    for sw, port in ends:
        ports.setdefault(sw, set()).add(port)
    down: list[End] = []

    def all_back() -> bool:
        down[:] = [(sw, p.peer) for sw, mine in ports.items() for p in lab.bgp_peers(sw)
                   if p.peer in mine and not p.established]
        return not down

    if within(all_back, timeout, interval=0.2) is not None:
        return ()
    return sessions_of(lab, ends, frozenset(down))


def sessions_of(lab: LabView, ends: Iterable[End], only: frozenset[End] | None = None) -> tuple[str, ...]:
    """Each end (or those `only` names) as its switch sees the session on it: BGP's state and
    BFD's, and for a session not Established why bgpd last reset it and the neighbour address
    zebra learned on the port (bgpd waits for it to start an unnumbered one)."""
    out = []
    for sw, port in ends:
        if only is not None and (sw, port) not in only:
            continue
        bgp = next((p.state for p in lab.bgp_peers(sw) if p.peer == port), "no session")
        bfd = next((b.status for b in lab.bfd_peers(sw) if b.interface == port), "no session")
        why = _why_down(lab, sw, port) if bgp not in ("Established", "no session") else ""
        out.append(f"{sw}:{port} BGP {bgp}{why}, BFD {bfd}")
    return tuple(out)


def _why_down(lab: LabView, sw: str, port: str) -> str:
    """" (last reset: ...; zebra's neighbour on the port: ...)", from FRR's own JSON; "" where
    it says nothing (evidence for a next look, never part of a verdict)."""
    said = []
    try:
        peer = next(iter(json.loads(lab.vtysh(sw, f"show bgp neighbors {port} json")).values()), {})
        if peer.get("lastResetDueTo"):
            said.append(f"last reset: {peer['lastResetDueTo']}")
        ifc = json.loads(lab.vtysh(sw, f"show interface {port} json")).get(port, {})
        said.append(f"zebra's neighbour on it: {', '.join(ifc.get('neighborIpAddresses', [])) or 'none'}")
    except (HarnessError, ValueError, AttributeError):
        pass
    return f" ({'; '.join(said)})" if said else ""
