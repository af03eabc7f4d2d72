"""Read the three things the buffer dependency graph is made of, from the running lab only:
each BE switch's kernel FIB, its running CONFIG_DB's pfc_enable per port, and the cables
between BE switches as the kernels peer their ends (not as the plan says: a cable nobody
planned carries dependencies too)."""
from __future__ import annotations

import json
import time
from ipaddress import IPv4Network

from harness.checks.cabling import kernel_ports
from harness.checks.deadlock.observation import DeadlockSeen, FibRoute, Wire
from harness.core.meaning.configdb_qos import port_qoses
from harness.core.model import Plane
from harness.core.plan import Plan
from harness.observe.routing import ROUTE_ARGV
from harness.plumbing.labview import LabView

UNREACHABLE = frozenset({"blackhole", "unreachable", "prohibit", "throw"})  # route types that forward nowhere


def be_switches(plan: Plan) -> tuple[str, ...]:
    return tuple(s.name for s in plan.switches if s.plane is Plane.BE)


def fib_routes(ip_json: str, node: str, port_of: dict[tuple[str, str], str],
               block: IPv4Network | tuple[IPv4Network, ...]) -> tuple[FibRoute, ...]:
    """The routes of `ip -j -4 route show table main` that overlap `block` (or any of the
    blocks: a plane numbered by the engineer is several), one per prefix: the
    lowest metric, which is the one the kernel forwards by (an engineer's `ip route add` at a
    lower metric beside zebra's route wins, and must be what is judged)."""
    blocks = (block,) if isinstance(block, IPv4Network) else block
    best: dict[IPv4Network, tuple[int, FibRoute]] = {}
    for r in json.loads(ip_json or "[]"):
        dst = r.get("dst", "")
        prefix = IPv4Network("0.0.0.0/0" if dst == "default" else dst if "/" in dst else f"{dst}/32")
        if not any(prefix.overlaps(b) for b in blocks):
            continue
        hops = r.get("nexthops") or ([r] if "dev" in r else [])
        devs = () if r.get("type") in UNREACHABLE else tuple(h["dev"] for h in hops if "dev" in h)
        route = FibRoute(str(prefix), tuple(sorted({port_of.get((node, d), d) for d in devs})),
                         str(r.get("protocol", "boot")))
        metric = int(r.get("metric", 0))
        if prefix not in best or metric < best[prefix][0]:
            best[prefix] = (metric, route)
    return tuple(route for _, (_, route) in sorted(best.items(), key=lambda kv: (kv[0].prefixlen, kv[0])))


def measure_deadlock(lab: LabView) -> DeadlockSeen:
    t0 = time.monotonic()
    plan = lab.plan
    switches = be_switches(plan)
    blocks = plan.plane_nets[Plane.BE]
    port_of = lab.kernel_port_names()
    fibs = {sw: fib_routes(lab.ns_exec(sw, ROUTE_ARGV, check=True).stdout, sw, port_of, blocks) for sw in switches}
    pfc = {sw: {port: tuple(sorted(q.pfc)) for port, q in sorted(port_qoses(lab.running_config_db(sw)).items())}
           for sw in switches}
    ours = set(switches)
    wires = sorted({tuple(sorted((f"{p.node}:{p.port}", f"{p.peer[0]}:{p.peer[1]}")))
                    for p in kernel_ports(lab, list(switches), lab.cabling_scope().skip_interfaces)
                    if p.peer is not None and p.peer[0] in ours})
    return DeadlockSeen(fibs, pfc, tuple(Wire(a, b) for a, b in wires), seconds=round(time.monotonic() - t0, 2))
