"""A node's interfaces as values, from `ip -j -d link show` run in the node (over SSH, or in its
namespace): what the cabling audit needs where it cannot ask the kernel itself (a staged
fabric's switches), and each interface's MTU."""
from __future__ import annotations

import json

from harness.core.errors import LabError
from harness.core.observed import PortState


def json_loads(text: str, where: str) -> object:
    """JSON a command printed; LabError naming the command where it is not."""
    try:
        return json.loads(text)
    except ValueError as e:
        raise LabError(f"{where}: not JSON ({e}): {text[:120]!r}") from None


def port_states(ip_json: str, where: str = "ip -j -d link show") -> tuple[PortState, ...]:
    links = json_loads(ip_json or "[]", where)
    if not isinstance(links, list):
        raise LabError(f"{where}: want a list of interfaces, got {type(links).__name__}")
    out = []
    for link in links:
        if not isinstance(link, dict) or "ifname" not in link:
            raise LabError(f"{where}: an interface without a name: {str(link)[:80]}")
        flags = set(link.get("flags", ()))
        info = link.get("linkinfo") or {}
        out.append(PortState(link["ifname"], "UP" in flags, "LOWER_UP" in flags, int(link.get("mtu", 0)),
                             str(info.get("info_kind", "")), link.get("master")))
    return tuple(out)
