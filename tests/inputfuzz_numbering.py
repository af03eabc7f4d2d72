"""Mutations of numbering.csv (device,item,value beside a plan) of the kinds an IPAM export or a
hand edit makes: ASNs and prefixes that are none, devices and ports the plan lacks, one number
given twice, a host's end of a link numbered in or out of its switch's /31. The CSV-wide ones
(encoding, order, separators) are inputfuzz_csv's. tests/inputfuzz.py says what the expectations
mean."""
from __future__ import annotations

from random import Random

from inputfuzz_csv import BAD_ASNS, parse, write
from inputfuzz_text import Mut, Target


def numbering_value(rng: Random, t: Target) -> Mut | None:
    if t.fmt != "numbering":
        return None
    how = rng.choice(["asn", "prefix", "device", "conflict", "loopback-twice", "item-case", "asn-zeros", "host-end",
                      "host-end"])
    header, rows = parse(t.text)
    asns = [r for r in rows if r[1] == "asn"]
    loops = [r for r in rows if r[1] == "loopback"]
    if how == "asn":
        row = rng.choice(asns)
        row[2] = rng.choice(BAD_ASNS)
        return t.mut("broken", write(header, rows), f"{row[0]}'s ASN {row[2]!r}")
    if how == "prefix":
        row = rng.choice(loops)
        row[2] = row[2].split("/")[0] + rng.choice(["", "/33", "/-1", "/abc", "/32/32"])
        return t.mut("broken", write(header, rows), f"{row[0]} loopback {row[2]!r}")
    if how == "device":
        rng.choice(rows)[0] = rng.choice(["nosuch", "be-r9", "BE-R0x"])
        return t.mut("broken", write(header, rows), "a device not in the plan")
    if how == "conflict":
        row = list(rng.choice(loops))
        row[2] = "10.99.99.99/32"
        rows.append(row)
        return t.mut("broken", write(header, rows), f"{row[0]}'s loopback given twice, differently")
    if how == "loopback-twice":
        a, b = rng.sample(loops, 2)
        b[2] = a[2]
        return t.mut("broken", write(header, rows), f"{a[0]} and {b[0]} share loopback {a[2]}")
    if how == "item-case":
        row = rng.choice(asns + loops)
        row[1] = {"asn": "ASN", "loopback": rng.choice(["Loopback0", "LO", "Loopback"])}[row[1]]
        return t.mut("same", write(header, rows), f"item written {row[1]}")
    if how == "host-end":
        return _host_end(rng, t, header, rows)
    row = rng.choice(asns)
    row[2] = "0" + row[2]
    return t.mut("faithful", write(header, rows), f"ASN with a leading zero {row[2]}")


def _host_end(rng: Random, t: Target, header: list[str], rows: list[list[str]]) -> Mut | None:
    """A host's end of a numbered link: its own address in the switch's /31 (the same plan), in
    another subnet, or the switch's own."""
    hosts = set(t.info.hosts)
    ends = {(c[2], c[3]): (c[0], c[1]) for c in t.info.cables if c[0] in hosts}
    ports = [r for r in rows if (r[0], r[1]) in ends]
    if not ports:
        return None
    dev, port, value = rng.choice(ports)
    host, nic = ends[(dev, port)]
    ip, _, length = value.partition("/")
    a, b, c, d = (int(x) for x in ip.split("."))
    how = rng.choice(["peer", "other", "same"])
    mine = {"peer": d ^ 1, "other": (d + 4) % 256, "same": d}[how]
    rows.append([host, nic, f"{a}.{b}.{c}.{mine}/{length}"])
    # the peer's own address is what the /31 implies: the same plan (exit 0), though `import` then
    # writes the row the engineer gave, as given
    return t.mut("same" if how == "peer" else "broken", write(header, rows),
                 f"{host}:{nic} numbered {how} to {dev}:{port} {value}", same_output=how != "peer")


MUTATIONS = [numbering_value] * 3
