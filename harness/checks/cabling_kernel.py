"""The kernel's view of a lab's cables (the cabling check's evidence on an emulation): in every
node's namespace the veth ends, and for each the other end as the kernel knows it (IFLA_LINK,
the peer's ifindex, in the namespace named by IFLA_LINK_NETNSID, resolved by asking the kernel
which id that namespace has here)."""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from harness.plumbing.labview import LabView

# Every runtime links a node's namespace under this directory (DESIGN: "The Lab is the only door").
NETNS_DIR = Path("/run/netns")
_NOT_ASSIGNED = 0xFFFFFFFF  # RTM_GETNSID's answer for a namespace that has no id here
_IFF_UP = 0x1
_IFF_LOWER_UP = 0x10000

End = tuple[str, str]  # (node, port) as cabling.csv names it


@dataclass(frozen=True)
class KernelPort:
    """One veth end as the kernel has it, named as the plan names ports."""

    node: str
    port: str
    peer: End | None  # the other end, when it is in one of the lab's namespaces
    outside: str = ""  # where the other end is when it is not (e.g. "the host's root namespace")
    up: bool = True  # administratively
    carrier: bool = True
    bridge: str | None = None  # the bridge this port is a member of, e.g. the OOB switch's
    bridge_up: bool = True


@dataclass(frozen=True)
class _Raw:
    index: int
    ifname: str
    peer_index: int | None
    peer_nsid: int | None  # None: the peer is in the same namespace
    up: bool
    carrier: bool
    master: int | None


def kernel_ports(lab: LabView, nodes: list[str], skip_ifnames: frozenset[str] = frozenset()) -> list[KernelPort]:
    """Every veth end in the namespaces of `nodes`, with its peer resolved to (node, port)."""
    paths = {node: NETNS_DIR / lab.namespace(node) for node in nodes}
    fds: dict[str, int] = {}
    neighbours: dict[str, list[str]] = {node: [] for node in nodes}
    for c in lab.plan.cables:
        if c.a_node in neighbours and c.b_node in neighbours:
            neighbours[c.a_node].append(c.b_node)
            neighbours[c.b_node].append(c.a_node)
    try:
        for node, path in paths.items():
            fds[node] = os.open(path, os.O_RDONLY)
        root = os.open(f"/proc/{os.getpid()}/ns/net", os.O_RDONLY)
        try:
            dumps = {node: _dump(lab, node, fds, neighbours[node], root) for node in nodes}
        finally:
            os.close(root)
    finally:
        for fd in fds.values():
            os.close(fd)
    names = {node: {r.index: r.ifname for r in raws} for node, (raws, _, _) in dumps.items()}
    port_of = lab.kernel_port_names()  # where the runtime names a cable's end otherwise (clab: ethN)
    out = []
    for node, (raws, nsids, bridges) in dumps.items():
        for r in raws:
            if r.ifname in skip_ifnames:
                continue
            peer: End | None = None
            outside = ""
            peer_node = node if r.peer_nsid is None else nsids.get(r.peer_nsid)
            if peer_node in names and r.peer_index in names[peer_node]:
                ifname = names[peer_node][r.peer_index]
                peer = (peer_node, port_of.get((peer_node, ifname), ifname))
            else:
                outside = peer_node or f"an unnamed namespace, id {r.peer_nsid} in {node}'s"
            bridge = bridges.get(r.master) if r.master else None
            out.append(KernelPort(node, port_of.get((node, r.ifname), r.ifname), peer, outside, r.up, r.carrier,
                                  bridge[0] if bridge else None, bridge[1] if bridge else True))
    return out


def _dump(lab: LabView, node: str, fds: dict[str, int], first: list[str], root: int
          ) -> tuple[list[_Raw], dict[int, str], dict[int, tuple[str, bool]]]:
    """One namespace: its veth ends, which node each peer namespace id stands for, its bridges."""
    with lab.netlink(node) as ipr:
        raws: list[_Raw] = []
        bridges: dict[int, tuple[str, bool]] = {}
        for msg in ipr.link("dump"):
            info = msg.get_attr("IFLA_LINKINFO")
            kind = info.get_attr("IFLA_INFO_KIND") if info is not None else None
            flags = msg["flags"]
            if kind == "bridge":
                bridges[msg["index"]] = (msg.get_attr("IFLA_IFNAME"), bool(flags & _IFF_UP))
            if kind != "veth":
                continue
            raws.append(_Raw(msg["index"], msg.get_attr("IFLA_IFNAME"), msg.get_attr("IFLA_LINK"),
                             msg.get_attr("IFLA_LINK_NETNSID"), bool(flags & _IFF_UP),
                             bool(flags & _IFF_LOWER_UP), msg.get_attr("IFLA_MASTER")))
        wanted = {r.peer_nsid for r in raws if r.peer_nsid is not None}
        nsids: dict[int, str] = {}
        # The planned neighbours first: on a correct lab they answer every id at once.
        order = list(dict.fromkeys(first + [n for n in fds if n not in first and n != node]))
        for other in order:
            if not wanted:
                break
            nsid = _nsid(ipr, fds[other])
            if nsid in wanted:
                nsids[nsid] = other
                wanted.discard(nsid)
        if wanted:
            nsid = _nsid(ipr, root)
            if nsid in wanted:
                nsids[nsid] = "the host's root namespace"
                wanted.discard(nsid)
        nsids |= _listed(ipr, wanted, NETNS_DIR)
    return raws, nsids, bridges


def _listed(ipr, wanted: set[int], directory: Path = NETNS_DIR) -> dict[int, str]:
    """The ids in `wanted` that name a namespace listed in `directory` (any lab's, or none)."""
    from pyroute2.netlink.exceptions import NetlinkError  # here: where a socket already exists

    found: dict[int, str] = {}
    for name in sorted(os.listdir(directory)) if wanted else ():
        try:
            fd = os.open(directory / name, os.O_RDONLY)
        except OSError:
            continue
        try:
            nsid = _nsid(ipr, fd)
        except NetlinkError:  # another lab's namespace, dying as that lab goes down (EINVAL)
            continue
        finally:
            os.close(fd)
        if nsid in wanted and nsid not in found:
            found[nsid] = f"namespace {name}"
            if len(found) == len(wanted):
                break
    return found


def _nsid(ipr, fd: int) -> int:
    answer = ipr.get_netnsid(fd=fd)
    nsid = answer.get("nsid") if answer else None
    return _NOT_ASSIGNED if nsid is None else nsid
