"""LLDP as the evidence of a cable, as on real gear: each node's LLDP agent names, for each of its
ports, the chassis and port that sent to it. Read on an emulation (lldpd in every namespace,
beside the kernel's veth peers, which cross-check it) and over SSH (where it is the only
evidence), then turned into the same cable ends the kernel's view gives, so the one audit
judges both.

A neighbour's port ID names the plan's port as the neighbour sends it: its interface name
(lldpd's `portidsubtype ifname`, fablab's netns nodes), its alias (SONiC's lldpmgrd sends the
port's alias, "etp1"), or, failing both, its port description. A port with carrier that hears
nobody is "no LLDP neighbour heard": a planned cable there is missing, an unplanned one is not
a cable at all. Where only one end's node answered (its peer unreachable, or the OOB switch
over SSH), that end's word is taken for both.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TypeVar

from harness.checks.base import NotMeasurable
from harness.checks.cabling_kernel import End, KernelPort
from harness.core.observed import LldpNeighbour, PortState
from harness.core.plan import Plan
from harness.plumbing import parallel, wait
from harness.plumbing.labview import LabView

T = TypeVar("T")

NO_LLDP = "no LLDP neighbour heard"
SETTLE_S = 8.0  # lldpd sends on a new port within about a second; a fabric long up is settled at once
POLL_S = 0.5
_NOT_PORTS = {"bridge", "vxlan", "dummy", "vrf", "bond", "macvlan", "ifb"}  # a kind that is never a cable's end

Live = dict[str, dict[str, tuple[bool, bool, str | None]]]  # node -> port -> (up, carrier, bridge)


def read_links(lab: LabView, nodes: tuple[str, ...]) -> dict[str, tuple[PortState, ...]]:
    """Each node's interfaces; a node that cannot be read is left out (its peers speak for it)."""
    return _each(lab.port_states, nodes)


def _each(read: Callable[[str], T | None], nodes: tuple[str, ...]) -> dict[str, T]:
    """read(node) for every node, a few at once (over SSH each is a round trip); a node that
    cannot be read (not reached) or has nothing to say (no LLDP agent: None) is left out."""
    def one(node: str) -> T | None:
        try:
            return read(node)
        except NotMeasurable:
            return None

    got = dict(zip(nodes, parallel.map_all(one, nodes)))
    return {node: value for node, value in got.items() if value is not None}


def live_ports(ports: list[KernelPort], links: dict[str, tuple[PortState, ...]] | None,
               skip: frozenset[str]) -> Live:
    """Every interface that could end a cable, by node, from the kernel's veth ends or a node's links."""
    live: Live = {}
    for p in ports:
        live.setdefault(p.node, {})[p.port] = (p.up, p.carrier, p.bridge)
    for node, states in (links or {}).items():
        for st in states:
            if st.name != "lo" and st.kind not in _NOT_PORTS and st.name not in skip:
                live.setdefault(node, {})[st.name] = (st.up, st.carrier, st.bridge)
    return live


def settled_lldp(lab: LabView, nodes: tuple[str, ...], live: Live, kernel: list[KernelPort] | None = None
                 ) -> dict[str, tuple[LldpNeighbour, ...]] | None:
    """Every node's LLDP table once it is settled: each port with carrier hears someone, two
    reads in a row agree and, where the kernel's veth peers are known (`kernel`), LLDP names
    the same peer on every port (a cable just moved is heard a second later), or SETTLE_S
    passed (a port facing a device that sends no LLDP, or a real disagreement). None where no
    node has an LLDP agent that answers."""
    def read() -> dict[str, tuple[LldpNeighbour, ...]]:
        return _each(lab.lldp, nodes)

    reads = [read()]

    def settled() -> bool:
        if not reads[-1]:
            return True  # no LLDP agent answers anywhere: nothing to wait for
        quiet = _silent(reads[-1], live) or _disagree(lab.plan, reads[-1], live, kernel or [])
        reads.append(read())
        return not quiet and _ageless(reads[-1]) == _ageless(reads[-2])  # ages tick between reads

    wait.within(settled, SETTLE_S, interval=POLL_S)  # not settled by then: judged as it stands
    return reads[-1] or None


def _ageless(lldp: dict[str, tuple[LldpNeighbour, ...]]) -> dict[str, tuple[LldpNeighbour, ...]]:
    return {node: tuple(replace(n, age_s=-1) for n in found) for node, found in lldp.items()}


def _disagree(plan: Plan, lldp: dict[str, tuple[LldpNeighbour, ...]], live: Live, kernel: list[KernelPort]
              ) -> bool:
    heard = {(p.node, p.port): p.peer for p in lldp_ports(plan, lldp, live)}
    return any(p.peer is not None and p.node in lldp and p.peer[0] in lldp and heard.get((p.node, p.port)) != p.peer
               for p in kernel)


def _silent(lldp: dict[str, tuple[LldpNeighbour, ...]], live: Live) -> list[End]:
    heard = {(node, n.local_port) for node, found in lldp.items() for n in found}
    return [(node, port) for node in lldp for port, (up, carrier, _) in live.get(node, {}).items()
            if up and carrier and (node, port) not in heard]


def lldp_ports(plan: Plan, lldp: dict[str, tuple[LldpNeighbour, ...]], live: Live) -> list[KernelPort]:
    """The cable ends LLDP shows, named as the plan names ports: each live port of a node that
    answered, with the end it hears; then, for each end heard on a node that did not answer, that end.
    A neighbour on an interface the node no longer has (lldpd forgets a deleted port a moment
    later) is no cable."""
    names = {n.name for n in plan.fabric.nodes}
    ports_of = _port_names(plan)
    out: dict[End, KernelPort] = {}
    for node, found in lldp.items():
        by_port: dict[str, LldpNeighbour] = {}
        for n in found:  # two on one port: a cable moved, the old one not yet aged out; the newest is the cable
            if n.local_port not in by_port or _newer(n, by_port[n.local_port], names):
                by_port[n.local_port] = n
        for port, (up, carrier, bridge) in sorted(live.get(node, {}).items()):
            n = by_port.get(port)
            if n is None:
                out[(node, port)] = KernelPort(node, port, None, NO_LLDP, up, carrier, bridge)
                continue
            peer = _end(n, names, ports_of)
            out[(node, port)] = KernelPort(node, port, peer, "" if peer else _outside(n), up, carrier, bridge)
        for port, n in by_port.items():  # heard where no interface list was read for the node
            if node not in live and (node, port) not in out:
                peer = _end(n, names, ports_of)
                out[(node, port)] = KernelPort(node, port, peer, "" if peer else _outside(n))
    for (node, port), p in list(out.items()):
        if p.peer is not None and p.peer[0] not in lldp and p.peer not in out:
            # its node did not answer: the end that heard it speaks for the cable (a bridge not seen)
            out[p.peer] = KernelPort(p.peer[0], p.peer[1], (node, port), bridge="(not read: LLDP from its peer)")
    return list(out.values())


def _newer(n: LldpNeighbour, than: LldpNeighbour, names: set[str]) -> bool:
    if (n.chassis in names) != (than.chassis in names):
        return n.chassis in names
    return 0 <= n.age_s < than.age_s or than.age_s < 0 <= n.age_s


def _port_names(plan: Plan) -> dict[str, dict[str, str]]:
    """node -> every name its ports go by (name, alias, containerlab name) -> the plan's name."""
    found: dict[str, dict[str, str]] = {}
    for sw in plan.switches:
        names = found.setdefault(sw.name, {})
        for p in sw.ports:
            for alias in (p.name, p.row.alias, p.clab):
                if alias:
                    names.setdefault(alias, p.name)
        names.setdefault("eth0", "eth0")
    for c in plan.cables:
        for node, port in ((c.a_node, c.a_port), (c.b_node, c.b_port)):
            found.setdefault(node, {}).setdefault(port, port)
    return found


def _end(n: LldpNeighbour, names: set[str], ports_of: dict[str, dict[str, str]]) -> End | None:
    if n.chassis not in names:
        return None
    ports = ports_of.get(n.chassis, {})
    for candidate in (n.port_id, n.port_descr):
        if candidate in ports:
            return (n.chassis, ports[candidate])
    return (n.chassis, n.port_id)


def _outside(n: LldpNeighbour) -> str:
    return f"LLDP: {n.chassis or n.chassis_id or 'an unnamed chassis'} port {n.port_id}, no node of the plan"
