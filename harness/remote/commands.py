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


_IP = {
    Read.ROUTES: "ip -j -4 route show table main",
    Read.WIDTHS: "ip -o -4 route show table main",
    Read.LINKS: "ip -j -d link show",
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
# What must run as root on each kind (sudo -n where the inventory says sudo: true).
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


def vtysh_args(commands: tuple[str, ...]) -> str:
    return " ".join(f"-c {shlex.quote(c)}" for c in commands)
