"""A route that bounces: a spine sends one BE host's address down to a leaf that is not the
host's, and that leaf, as it should, sends it back up (a static route left from a migration,
or pushed by automation with the wrong next hop). The data plane keeps working for every
other address; for that one, the flows a leaf hashes onto the spine loop until their TTL runs
out. What it teaches is in the buffers: the route goes down and up again, so the lossless
priority's buffers can wait on each other in a cycle (PFC deadlock), which the deadlock check
names link by link."""
from __future__ import annotations

import json
from dataclasses import dataclass
from ipaddress import IPv4Network

from harness.core.errors import InputError
from harness.core.model import Plane, Role
from harness.core.plan import Plan
from harness.faults.protocol import Applied
from harness.faults.targets import Route
from harness.plumbing.labview import LabView

PROTOCOL = "static"  # a protocol zebra takes for its own (is_selfroute): it neither learns nor removes the route


@dataclass(frozen=True)
class Bounced:
    """The route as added, in `ip route` words after its prefix: `del` takes the same."""

    words: tuple[str, ...]


def place(plan: Plan) -> Route | None:
    """On the first BE spine: its first BE host address, sent down the port of another leaf
    under the same spine (None without a spine tier)."""
    for spine in (s for s in plan.switches if s.role is Role.BE_SPINE):
        leaves = {p.peer: p for p in spine.fabric_ports if plan.switch(p.peer).role is Role.BE_LEAF}
        for h in plan.hosts:
            for nic in h.nics:
                if nic.plane is Plane.BE and nic.peer in leaves:
                    wrong = next((p for leaf, p in leaves.items() if leaf != nic.peer), None)
                    if wrong is not None:
                        return Route(spine.name, wrong.name, f"{nic.address.ip}/32")
    return None


def _kernel_name(lab: LabView, node: str, port: str) -> str:
    """The kernel's name of a plan port (containerlab names sonic-vs's ethN)."""
    return next((k for (n, k), p in lab.kernel_port_names().items() if n == node and p == port), port)


def _gateway(lab: LabView, node: str, dev: str) -> tuple[str, ...]:
    """How the node's own routes reach the next hop behind `dev` (BGP unnumbered: 169.254.0.1
    onlink, or an IPv6 link-local), copied so the bounced route forwards as they do."""
    routes = json.loads(lab.ns_exec(node, ["ip", "-j", "-4", "route", "show", "table", "main"], check=True).stdout
                        or "[]")
    for r in routes:
        for hop in r.get("nexthops") or [r]:
            if hop.get("dev") != dev:
                continue
            if "gateway" in hop:
                return ("via", hop["gateway"], "dev", dev, *(("onlink",) if "onlink" in hop.get("flags", []) else ()))
            via = hop.get("via")
            if isinstance(via, dict) and via.get("host"):
                return ("via", "inet6", via["host"], "dev", dev)
    raise InputError(f"{node} routes nothing through {dev}: pick a port towards a leaf (cabling.csv lists them)")


def bounce(lab: LabView, target: Route) -> Applied[Bounced]:
    plan = lab.plan
    try:
        prefix = IPv4Network(target.prefix)
    except ValueError:
        raise InputError(f"--on {target}: {target.prefix!r} is not an IPv4 prefix") from None
    spine = next((s for s in plan.switches if s.name == target.node), None)
    if spine is None:
        raise InputError(f"--on {target}: {target.node} is not a switch")
    port = next((p for p in spine.fabric_ports if p.name == target.port), None)
    if port is None:
        raise InputError(f"--on {target}: {target.port} is not one of {target.node}'s fabric ports "
                         f"({', '.join(p.name for p in spine.fabric_ports) or 'none'})")
    words = (*_gateway(lab, target.node, _kernel_name(lab, target.node, target.port)), "proto", PROTOCOL)
    lab.ns_exec(target.node, ["ip", "route", "add", str(prefix), *words], check=True)
    return Applied(f"{target.node}: static route {prefix} down {target.port} to {port.peer}, which routes it back up",
                   Bounced(words))


def unbounce(lab: LabView, target: Route, state: Bounced) -> None:
    lab.ns_exec(target.node, ["ip", "route", "del", str(IPv4Network(target.prefix)), *state.words], check=True)
