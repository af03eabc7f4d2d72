"""What to ask each kind of node over SSH, written as data (as netlab's devices/*.yml write what a
device can do): which command answers which read, and which parser reads its answer.

- sonic: SONiC's own CLI as an admin runs it: `show lldp table` (lldpshow), `sonic-cfggen -d
  --print-data` (the running CONFIG_DB), `vtysh` under sudo (FRR in the bgp container), the
  host's iproute2 for the kernel's FIB and links (SONiC programs its routes into the kernel
  too, through fpmsyncd's peer zebra).
- frr: FRR on Linux, as fablab's netns switches are: the same vtysh and iproute2, lldpd's
  `lldpctl -f json`, and the CONFIG_DB the switch runs kept in a file (`config_db`).
- linux: a GPU or storage host: iproute2 and lldpctl.
A read a kind has no command for is None: the view says so, naming the node and its kind.
"""
from __future__ import annotations

import shlex
from enum import StrEnum

from harness.core.inventory import InventoryNode, RemoteKind


class Read(StrEnum):
    LLDP = "lldp"
    CONFIG_DB = "config-db"
    ROUTES = "routes"
    WIDTHS = "route-widths"  # next hops per prefix, one line a route
    LINKS = "links"
    BGP = "bgp-summary"
    BFD = "bfd-peers"
    VTYSH = "vtysh"
    SYSCTL = "sysctl"
    PFC = "pfc-counters"
    STATUS = "interfaces-status"
    ROUTE_GET = "route-get"  # the FIB's answer for one address: a leak's path, traced hop by hop


_IP = {
    Read.ROUTES: "ip -j -4 route show table main",
    Read.WIDTHS: "ip -o -4 route show table main",
    Read.LINKS: "ip -j -d link show",
    Read.ROUTE_GET: "ip -j -4 route get {dst}",
    Read.SYSCTL: "cat /proc/sys/{key_path}",
}
_FRR = {
    Read.BGP: "vtysh{vty} -c 'show bgp ipv4 unicast summary json'",
    Read.BFD: "vtysh{vty} -c 'show bfd peers json'",
    Read.VTYSH: "vtysh{vty} {commands}",
}
COMMANDS: dict[RemoteKind, dict[Read, str]] = {
    RemoteKind.SONIC: {**_IP, **_FRR, Read.LLDP: "show lldp table", Read.CONFIG_DB: "sonic-cfggen -d --print-data",
                       Read.PFC: "show pfc counters", Read.STATUS: "show interfaces status"},
    RemoteKind.FRR: {**_IP, **_FRR, Read.LLDP: "lldpctl -f json{socket}", Read.CONFIG_DB: "cat {config_db}"},
    RemoteKind.LINUX: {**_IP, Read.LLDP: "lldpctl -f json{socket}"},
}


class Change(StrEnum):
    """What fablab may change on a node over SSH, only with --allow-faults."""

    PORT_DOWN = "port-down"  # administratively: the peer loses its carrier, as a pulled cable
    PORT_UP = "port-up"
    SYSCTL = "sysctl-set"


_IP_CHANGES = {
    Change.PORT_DOWN: "ip link set dev {port} down",
    Change.PORT_UP: "ip link set dev {port} up",
    Change.SYSCTL: "sysctl -q -w {key}={value}",
}
CHANGES: dict[RemoteKind, dict[Change, str]] = {
    RemoteKind.SONIC: {**_IP_CHANGES, Change.PORT_DOWN: "config interface shutdown {port}",
                       Change.PORT_UP: "config interface startup {port}"},
    RemoteKind.FRR: _IP_CHANGES,
    RemoteKind.LINUX: _IP_CHANGES,
}
# What must run as root on each kind (sudo -n where the inventory says sudo: true): every change too.
PRIVILEGED = {Read.BGP, Read.BFD, Read.VTYSH, Read.LLDP, Read.CONFIG_DB}


def command(node: InventoryNode, read: Read, **values: str) -> str | None:
    """The command line that answers `read` on `node`, or None where its kind has none."""
    assert node.kind is not None, "an inventory's kinds are filled in by check_against"
    template = COMMANDS[node.kind].get(read)
    if template is None:
        return None
    if read is Read.CONFIG_DB and node.kind is RemoteKind.FRR:
        if not node.config_db:
            return None
        values["config_db"] = shlex.quote(node.config_db)
    if read is Read.LLDP:
        values["socket"] = f" -u {shlex.quote(node.lldp_socket)}" if node.lldp_socket else ""
    if read in (Read.BGP, Read.BFD, Read.VTYSH):
        values["vty"] = f" --vty_socket {shlex.quote(node.vty_socket)}" if node.vty_socket else ""
    text = template.format(**values)
    return f"sudo -n {text}" if node.sudo and read in PRIVILEGED else text


def change(node: InventoryNode, what: Change, **values: str) -> str:
    assert node.kind is not None, "an inventory's kinds are filled in by check_against"
    text = CHANGES[node.kind][what].format(**{k: shlex.quote(v) for k, v in values.items()})
    return f"sudo -n {text}" if node.sudo else text


def read_only(vtysh_command: str) -> bool:
    """Whether a vtysh command only looks: `show` as FRR's CLI takes it, abbreviated to two
    letters or more (`sh ip bgp`); anything else (`conf t`, `clear`, `write`) may change the node."""
    first = vtysh_command.split()[0].lower() if vtysh_command.split() else ""
    return len(first) >= 2 and "show".startswith(first)


def vtysh_args(commands: tuple[str, ...]) -> str:
    return " ".join(f"-c {shlex.quote(c)}" for c in commands)
