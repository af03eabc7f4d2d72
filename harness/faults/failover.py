"""Faults in how the fabric survives a failure: BFD too slow to matter, slowed, or taken off;
a switch blind to carrier loss; a FIB that lags its RIB; a port that forwards nothing while
its control plane stays up; a link that drops every frame with its carrier up (gray)."""
from __future__ import annotations

from harness.core.errors import HarnessError, InputError
from harness.faults.cabling import Made, until_in_effect, vtysh_config
from harness.faults.protocol import Applied, NoState
from harness.faults.routing import Sysctls, read_sysctls, restore_sysctls
from harness.faults.targets import Cable, Port, Ports, Switches
from harness.plumbing.labview import LabView
from harness.plumbing.wait import until

BFD_NEVER_MS, BFD_NEVER_MULT = 3000, 50  # 150 s: beyond any BGP hold time


def bfd_timers(lab: LabView, switches, ms: int, mult: int) -> None:
    """The fabric's BFD profile at these timers on these switches, and waited for. A timer
    change is negotiated by BFD's poll sequence (RFC 5880 6.8.3): no session is reset, and a
    session runs the new timers once its peer has them from the Poll and answered with its
    Final, at once. So each neighbour's view of each changed switch is read: what the switch's
    own bfdd shows of its peers are their timers, which did not change."""
    profile = lab.plan.fabric.cluster.bfd.profile
    for n in switches:
        vtysh_config(lab, n, "bfd", f"profile {profile}", f"detect-multiplier {mult}", f"receive-interval {ms}",
                     f"transmit-interval {ms}")
    want = (ms, ms, mult)
    facing = sorted({(p.peer, p.peer_port) for n in switches for p in lab.plan.switch(n).fabric_ports})

    def in_force() -> bool:
        views = {node: {b.interface: b for b in lab.bfd_peers(node)} for node in {node for node, _ in facing}}
        return all((b := views[node].get(port)) is not None and
                   (b.remote_transmit_interval_ms, b.remote_receive_interval_ms, b.remote_detect_multiplier) == want
                   for node, port in facing)

    until_in_effect(lab, in_force, f"every BFD session of {', '.join(switches)} to run {ms} ms × {mult}")


# --------------------------------------------------------------------------- bfd-off, slow-bfd

def bfd_off(lab: LabView, target: Switches) -> Applied[NoState]:
    """BFD that does not detect in time: the profile's timers at 3 s × 50 (150 s), far beyond
    BGP's hold time, so a gray failure lasts until the hold timer expires. (Taking BFD off the
    peer group, or shutting the profile down, resets every BGP session, and FRR 8.4 has been
    seen to leave an unnumbered one waiting minutes for its peer's link-local address
    afterwards (that is bfd-removed); a timer change is negotiated by BFD's poll sequence and
    resets nothing. Slower timers would make the way back as slow: a peer learns the new ones
    from its next packet.)"""
    bfd_timers(lab, target.names, BFD_NEVER_MS, BFD_NEVER_MULT)
    return Applied(f"BFD detection {BFD_NEVER_MS // 1000} s × {BFD_NEVER_MULT} on {', '.join(target.names)}: it "
                   "never fires before BGP's hold time, so a gray failure lasts that long", NoState())


def slow_bfd(lab: LabView, target: Switches, interval_ms: int = 1000, multiplier: int = 3) -> Applied[NoState]:
    """BFD left at slow timers on these switches (a profile copied from a campus network): a
    gray failure now lasts interval × multiplier. Against an absolute objective this must
    fail; a budget derived from the timers would have grown with them."""
    bfd_timers(lab, target.names, interval_ms, multiplier)
    return Applied(f"BFD {interval_ms} ms × {multiplier} on {', '.join(target.names)}", NoState())


def declared_bfd(lab: LabView, target: Switches, state: NoState) -> None:
    """Back to the declared timers; returns once every session of the switches runs them."""
    bfd = lab.plan.fabric.cluster.bfd
    bfd_timers(lab, target.names, bfd.interval_ms, bfd.multiplier)


# --------------------------------------------------------------------------- bfd-removed

def _bgp_drops(lab: LabView, node: str, port: str) -> int:
    return sum(p.drops for p in lab.bgp_peers(node) if p.peer == port)


def bfd_removed(lab: LabView, target: Switches) -> Applied[NoState]:
    """No BFD on the fabric sessions of these switches: a gray failure then lasts until the
    BGP hold timer expires.

    A neighbour that keeps BFD sees its session to them fall silent, and its bgpd resets the
    BGP session a detection time later (software bfdd resets them at once, on its own side).
    Returns once every such neighbour has done so, so that a check that waits for BGP next
    does not start in the calm before that reset."""
    switches = target.names
    watched = [(p.peer, p.peer_port) for n in switches for p in lab.plan.switch(n).fabric_ports
               if p.peer not in switches]
    drops = {(node, port): _bgp_drops(lab, node, port) for node, port in watched}
    for n in switches:
        vtysh_config(lab, n, f"router bgp {lab.plan.switch(n).asn}", "no neighbor fabric bfd")

    def noticed(node: str, port: str) -> bool:
        bfd_up = any(b.up for b in lab.bfd_peers(node) if b.interface == port)
        return not bfd_up and _bgp_drops(lab, node, port) > drops[(node, port)]

    until(lambda: all(noticed(node, port) for node, port in watched), 30,
          f"the neighbours of {', '.join(switches)} to act on BFD gone silent")
    return Applied(f"BFD off on {', '.join(switches)}", NoState())


def bfd_back(lab: LabView, target: Switches, state: NoState) -> None:
    profile = lab.plan.fabric.cluster.bfd.profile
    for n in target.names:
        vtysh_config(lab, n, f"router bgp {lab.plan.switch(n).asn}", "neighbor fabric bfd",
                     f"neighbor fabric bfd profile {profile}")


# --------------------------------------------------------------------------- carrier-blind

def _carrier_keys(target: Ports) -> dict[str, list[str]]:
    keys: dict[str, list[str]] = {}
    for p in target.ports:
        keys.setdefault(p.node, []).append(f"net.ipv4.conf.{p.port}.ignore_routes_with_linkdown")
    return {node: ks + ["net.ipv4.conf.all.ignore_routes_with_linkdown"] for node, ks in keys.items()}


def carrier_blind(lab: LabView, target: Ports) -> Applied[Sysctls]:
    """The switch no longer acts on carrier loss of these ports: zebra ignores the carrier
    (`no link-detect`) and the kernel keeps routing over a next hop whose carrier is gone
    (ignore_routes_with_linkdown=0). A pulled cable is then noticed only when BFD (or the BGP
    hold timer) gives up on the session: the fast local repair a hard failure relies on is gone."""
    keys = _carrier_keys(target)
    state = read_sysctls(lab, keys)
    for p in target.ports:
        vtysh_config(lab, p.node, f"interface {p.port}", "no link-detect")
    for node, ks in keys.items():
        lab.set_sysctls(node, {k: 0 for k in ks})
    where = "; ".join(f"{node}:{','.join(p.port for p in target.ports if p.node == node)}" for node in keys)
    return Applied(f"carrier loss ignored on {where}", state)


def carrier_seen(lab: LabView, target: Ports, state: Sysctls) -> None:
    restore_sysctls(lab, target, state)
    for p in target.ports:
        vtysh_config(lab, p.node, f"interface {p.port}", "link-detect")


# --------------------------------------------------------------------------- fib-lag

def fib_lag(lab: LabView, target: Switches, hold_ms: int = 2000) -> Applied[NoState]:
    """zebra holds every RIB change `hold_ms` before it reaches the kernel: a withdrawal the
    switch has received keeps forwarding into the dead path until then. (As a restore
    control it is unreliable: bgpd waits for zebra to validate a next hop before it
    advertises, so the hold often delays the advertisement too; see forwarding-blackhole.)"""
    if not 0 <= hold_ms <= 10000:
        raise HarnessError(f"fib lag hold_ms {hold_ms}: zebra accepts 0..10000 ms")
    for n in target.names:
        vtysh_config(lab, n, f"zebra work-queue {hold_ms}")
    return Applied(f"FIB installs held {hold_ms} ms on {', '.join(target.names)}", NoState())


def fib_prompt(lab: LabView, target: Switches, state: NoState) -> None:
    for n in target.names:
        vtysh_config(lab, n, "no zebra work-queue")


# --------------------------------------------------------------------------- forwarding-blackhole

def _blackhole_table(port: str) -> str:
    return f"fablab_blackhole_{port}"


def blackhole(lab: LabView, target: Port) -> Applied[NoState]:
    """The switch's data plane drops everything it forwards out of the port, while its control
    plane (BGP, BFD: sent by the switch itself, not forwarded) stays up and keeps advertising:
    a port that came back with its forwarding entries not reprogrammed. Drops after
    fablab's flow counters (priority -10), so the counters still see the traffic arrive."""
    lab.check_node(target.node)
    if target.port not in {p.name for p in lab.plan.switch(target.node).ports}:
        raise InputError(f"--on {target}: {target.node} has no port {target.port!r}")
    lab.ns_exec(target.node, ["nft", "-f", "-"], check=True, input=(
        f"table inet {_blackhole_table(target.port)} {{\n  chain forward {{\n"
        f"    type filter hook forward priority 0; policy accept;\n"
        f'    oifname "{target.port}" drop\n  }}\n}}\n'))
    return Applied(f"forwarding out of {target} black-holed", NoState())


def unblackhole(lab: LabView, target: Port, state: NoState) -> None:
    lab.ns_exec(target.node, ["nft", "delete", "table", "inet", _blackhole_table(target.port)], check=True)


# --------------------------------------------------------------------------- gray-link

def _handle(lab: LabView, cable: Cable):
    """The lab's link for the cable: its ports where given, else the first between the nodes."""
    found = lab.cables(cable.a.node, cable.b.node)
    for i, c in enumerate(found):
        ends = {(c.a_node, c.a_port), (c.b_node, c.b_port)}
        if all((e.node, e.port) in ends for e in (cable.a, cable.b) if e.port):
            return lab.link(cable.a.node, cable.b.node, i)
    raise InputError(f"--on {cable}: no such cable in lab {lab.name} (cabling.csv lists them)")


def gray(lab: LabView, target: Cable) -> Applied[Made]:
    """Every frame dropped both ways, carriers up: only BFD can tell. Returns once BFD has
    gone down on it."""
    handle = _handle(lab, target)
    c = handle.cable
    made = Made(Cable(Port(c.a_node, c.a_port), Port(c.b_node, c.b_port)))
    handle.gray()
    (node, port), _ = handle.ends
    try:
        until_in_effect(lab, lambda: not any(p.interface == port and p.up for p in lab.bfd_peers(node)),
                        f"BFD on {node}:{port} to go down")
    except BaseException:
        handle.heal()
        raise
    return Applied(f"gray failure on {handle}: every frame dropped both ways, carriers up", made)


def ungray(lab: LabView, target: Cable, state: Made) -> None:
    _handle(lab, state.cable).heal()
