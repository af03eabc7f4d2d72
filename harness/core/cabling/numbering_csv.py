"""`numbering.csv` beside a cabling plan: the engineer's own numbering, one number a row, as an
IPAM exports it.

    device,item,value
    rtsw-g1-r0,asn,4200100101
    rtsw-g1-r0,loopback,10.255.255.3/32
    rtsw-g1-r0,Ethernet0,10.77.0.4/31
    gpu-a01,enp12s0np0,10.77.0.5/31
    gpu-a01,mgmt,10.250.0.20/24

`item` is `asn`, `loopback` (also `Loopback0` or `lo`), `mgmt`, or a port or NIC name: either end
of a host link (the other end is the rest of its /31 or /30). What it gives lays over the
devices file's `mgmt_ip` and fablab's allocation (harness/core/numbering.py audits the result);
a row that is not a number names its file:line.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from ipaddress import IPv4Interface, IPv6Interface

from harness.core.declarations import Addressing
from harness.core.errors import Problem, too_many
from harness.core.inputfile import csv_rows, quoted

__all__ = ["FILE", "NumberingRows", "host_address", "not_host", "read_numbering"]

FILE = "numbering.csv"
_LOOPBACK = ("loopback", "loopback0", "lo")


@dataclass(frozen=True)
class NumberingRows:
    """The engineer's numbering item by item, as Addressing's fields take it: what numbering.csv,
    a devices file or a directory of configs (harness.core.confignumbering) gives."""

    asns: tuple[tuple[str, int], ...] = ()
    loopbacks: tuple[tuple[str, str], ...] = ()
    ports: tuple[tuple[str, str, str], ...] = ()
    mgmt_ips: tuple[tuple[str, str], ...] = ()
    allowas_in: int = 0  # configs only: the most any `neighbor ... allowas-in [N]` allows

    @property
    def empty(self) -> bool:
        return not (self.asns or self.loopbacks or self.ports or self.mgmt_ips)

    def laid_over(self, addressing: Addressing) -> Addressing:
        """`addressing` with these items in place of its own of the same device (and port)."""
        def over(theirs: tuple, ours: tuple, key) -> tuple:
            given = {key(x) for x in theirs}
            return tuple(x for x in ours if key(x) not in given) + theirs

        return replace(addressing, asns=over(self.asns, addressing.asns, lambda x: x[0]),
                       loopbacks=over(self.loopbacks, addressing.loopbacks, lambda x: x[0]),
                       ports=over(self.ports, addressing.ports, lambda x: (x[0], x[1])),
                       mgmt_ips=over(self.mgmt_ips, addressing.mgmt_ips, lambda x: x[0]))


def read_numbering(text: str, name: str) -> tuple[NumberingRows, list[Problem]]:
    problems: list[Problem] = []
    rows = list(csv_rows(text.lstrip("\ufeff"), name))
    header = [c.strip().lower() for c in rows[0][1]] if rows else []
    if not {"device", "item", "value"} <= set(header):  # in any order, as an IPAM exports them
        said = quoted(",".join(header)) if header else "missing"
        return NumberingRows(), [Problem(f"{name}:1", f"the header is {said}",
                                         "write device,item,value (e.g. rtsw-g1-r0,asn,4200100101)")]
    at = [header.index(c) for c in ("device", "item", "value")]
    asns, loopbacks, ports, mgmt = [], [], [], []
    first: dict[tuple[str, str], int] = {}
    for line, row in rows[1:]:
        cells = [c.strip() for c in row]
        if not any(cells) or cells[0].startswith("#"):
            continue
        where = f"{name}:{line}"
        if too_many(problems, where):
            break
        device, item, value = (cells[i] if i < len(cells) else "" for i in at)
        if not (device and item and value):
            problems.append(Problem(where, f"{quoted(','.join(row))} is not device,item,value", "fill all three"))
            continue
        key = (device, item.lower() if item.lower() in (*_LOOPBACK, "asn", "mgmt") else item)
        if key in first:
            problems.append(Problem(where, f"{device} {item} is given twice (first at line {first[key]})",
                                    "keep one row for each device and item"))
            continue
        first[key] = line
        if item.lower() == "asn":
            if not (value.isascii() and value.isdigit() and len(value) <= 10) or not 1 <= int(value) <= 4294967294:
                problems.append(Problem(where, f"{device}'s ASN {quoted(value)} is not 1..4294967294",
                                        "a private ASN: 64512-65534, or 4200000000-4294967294 (RFC 6996)"))
            else:
                asns.append((device, int(value)))
            continue
        try:
            iface = IPv4Interface(value)
        except ValueError:
            problems.append(Problem(where, f"{device}:{item}: {quoted(value)} is not an IPv4 address",
                                    "write it as 10.77.0.4/31 (a loopback: /32)"))
            continue
        if "/" not in value:
            problems.append(Problem(where, f"{device}:{item}: {value} has no prefix length",
                                    "write it with its subnet, e.g. 10.77.0.4/31"))
        elif (why := not_host(iface)) is not None:
            problems.append(Problem(where, f"{device}:{item}: {value} is {why}", "give a host address of the subnet"))
        elif item.lower() in _LOOPBACK:
            loopbacks.append((device, str(iface)))
        elif item.lower() == "mgmt":
            mgmt.append((device, str(iface)))
        else:
            ports.append((device, item, str(iface)))
    return NumberingRows(tuple(asns), tuple(loopbacks), tuple(ports), tuple(mgmt)), problems


def host_address(iface: IPv4Interface | IPv6Interface) -> bool:
    """Whether an interface address is one a host's port may have (not_host says why not)."""
    return not_host(iface) is None


def not_host(iface: IPv4Interface | IPv6Interface) -> str | None:
    """Why an address cannot be a port's: its subnet's network or broadcast address (a /31 and a
    /32 have neither, RFC 3021), or no unicast address at all (multicast, loopback, unspecified,
    reserved: 240/4 and 255.255.255.255)."""
    ip, net = iface.ip, iface.network
    for what, yes in (("multicast", ip.is_multicast), ("unspecified", ip.is_unspecified),
                      ("loopback", ip.is_loopback), ("reserved", ip.is_reserved)):
        if yes:
            return f"{'an' if what[0] in 'aeiou' else 'a'} {what} address, no port's"
    if net.prefixlen >= net.max_prefixlen - 1:
        return None
    if ip == net.network_address:
        return f"the network address of {net}, no host's"
    if iface.version == 4 and ip == net.broadcast_address:
        return f"the broadcast address of {net}, no host's"
    return None
