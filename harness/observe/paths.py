"""Where would a packet go? A hop-by-hop walk of the kernel FIBs of a running lab."""
from __future__ import annotations

from ipaddress import IPv4Address


from harness.plumbing.labview import LabView
from harness.core.plan import CableRow


def owner_of(plan, address: str) -> str | None:
    """The node that holds an address (host NIC, switch port or loopback)."""
    ip = IPv4Address(address)
    for host in plan.hosts:
        if any(n.address.ip == ip for n in host.nics):
            return host.name
    for sw in plan.switches:
        if sw.loopback.ip == ip or sw.mgmt.ip == ip or any(p.address and p.address.ip == ip for p in sw.ports):
            return sw.name
    return None


class Fib:
    """Route look-ups in a running lab's nodes, one netlink socket per node for its lifetime."""

    def __init__(self, lab: LabView) -> None:
        self.lab = lab
        self._sockets: dict[str, object] = {}
        self._names: dict[str, dict[int, str]] = {}

    def socket(self, node: str):
        if node not in self._sockets:
            self._sockets[node] = self.lab.netlink(node)
        return self._sockets[node]

    def interfaces(self, node: str) -> dict[int, str]:
        if node not in self._names:
            self._names[node] = {link["index"]: link.get_attr("IFLA_IFNAME") for link in self.socket(node).get_links()}
        return self._names[node]

    def mac(self, node: str, ifname: str) -> bytes:
        link = self.socket(node).get_links(ifname=ifname)[0]
        return bytes.fromhex(link.get_attr("IFLA_ADDRESS").replace(":", ""))

    def oif(self, node: str, dst: str) -> str | None:
        """The interface `node` would send `dst` out of, or None when it has no route."""
        from pyroute2 import NetlinkError

        try:
            msg = self.socket(node).route("get", dst=dst)[0]
        except NetlinkError:
            return None
        return self.interfaces(node).get(msg.get_attr("RTA_OIF"))

    def close(self) -> None:
        for s in self._sockets.values():
            s.close()
        self._sockets.clear()

    def __enter__(self) -> Fib:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def peer_of(cables: list[CableRow], node: str, port: str) -> tuple[str, str] | None:
    for c in cables:
        if (c.a_node, c.a_port) == (node, port):
            return c.b_node, c.b_port
        if (c.b_node, c.b_port) == (node, port):
            return c.a_node, c.a_port
    return None


def trace(fib: Fib, src_node: str, src_port: str, dst: str, max_hops: int = 10) -> tuple[str, ...]:
    """Hops from a NIC to dst, following each node's FIB: ("stor1:fe0", "fe-l2", ..., "gpu01")."""
    lab = fib.lab
    cables = lab.all_cables()
    target = owner_of(lab.plan, dst)
    hops = [f"{src_node}:{src_port}"]
    here = peer_of(cables, src_node, src_port)
    for _ in range(max_hops):
        if here is None:
            hops.append("(no cable)")
            break
        node, _port = here
        hops.append(node)
        if node == target:
            break
        oif = fib.oif(node, dst)
        if oif is None:
            hops.append("(no route)")
            break
        here = peer_of(cables, node, oif)
    return tuple(hops)
