"""The two look-ups a leak's path trace makes in a node's FIB (harness/observe/paths.py's `Fib`:
its links by index, the interface a destination leaves by), answered over SSH by iproute2's
JSON, in the shape pyroute2's IPRoute gives them on the direct path. Read-only: anything
else a netlink socket could do (a fault, a route changed) is not measurable over SSH.
"""
from __future__ import annotations

import json
from collections.abc import Callable

from harness.checks.base import NotMeasurable

# iproute2's JSON keys for the netlink attributes a trace reads
_ATTRS = {"IFLA_IFNAME": "ifname", "IFLA_ADDRESS": "address", "RTA_OIF": "dev"}


class _Msg(dict):
    def get_attr(self, name: str):
        return self.get(_ATTRS.get(name, name))


class RemoteIpRoute:
    def __init__(self, node: str, ask: Callable[..., str], names: Callable[[], dict[str, int]]) -> None:
        """ask(read, **values): a command's output on the node; names(): its links, name -> index."""
        self._node = node
        self._ask = ask
        self._names = names

    def get_links(self, ifname: str | None = None) -> list[_Msg]:
        links = [_Msg(index=i, ifname=n) for n, i in self._names().items()]
        return [m for m in links if ifname is None or m["ifname"] == ifname]

    def route(self, command: str, dst: str) -> list[_Msg]:
        from pyroute2 import NetlinkError

        if command != "get":
            raise NotMeasurable(f"`ip route {command}` on {self._node}: over SSH fablab only reads")
        from harness.remote.commands import Read

        try:
            found = json.loads(self._ask(Read.ROUTE_GET, dst=dst) or "[]")
        except NotMeasurable as e:
            if not str(e).startswith("no answer"):
                raise  # the node is not reached: not a look-up the kernel refused
            raise NetlinkError(113, f"no route to {dst}") from None  # ip exits 2, as a look-up the kernel refused
        if not found:
            raise NetlinkError(113, f"no route to {dst}")
        dev = found[0].get("dev")
        return [_Msg(dev=self._names().get(dev))]

    def close(self) -> None:
        pass

    def __enter__(self) -> RemoteIpRoute:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def __getattr__(self, name: str):
        raise NotMeasurable(f"netlink's {name} on {self._node}: over SSH fablab only reads the FIB")
