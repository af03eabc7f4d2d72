"""How long until a port leaves, or rejoins, a node's route to one prefix: the failover
checks' timer for "the route moved" and "the route came back"."""
from __future__ import annotations

from collections.abc import Iterable
from ipaddress import IPv4Network

from harness.plumbing import wait
from harness.plumbing.labview import LabView


def route_change_ms(lab: LabView, node: str, prefix: IPv4Network, ports: str | Iterable[str], *, present: bool,
                    since: float, deadline: float, interval: float = 0.02,
                    needs_route: bool = False) -> float | None:
    """Milliseconds (to 0.1) from `since` until `node`'s kernel route to `prefix` uses one of
    `ports` (present=True) or none of them (present=False); None if it did not by `deadline`.
    Both are time.monotonic() moments; a window already over when called is None at once.
    No route at all counts as none of them, unless needs_route: then only a route that still
    exists without them does (the traffic moved, rather than lost its way). The route is read
    for the one prefix every `interval` s: a whole FIB is 1,100 routes of 16 hops at xlarge."""
    wanted = {ports} if isinstance(ports, str) else set(ports)

    def changed() -> bool:
        route = lab.route(node, prefix)
        if route is None:
            return not present and not needs_route
        return bool(wanted & set(route.interfaces)) == present

    took = wait.within(changed, deadline - since, since=since, interval=interval)
    return None if took is None else round(took * 1000, 1)
