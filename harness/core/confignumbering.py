"""The numbering an engineer's configs carry: each switch's ASN (frr.conf's `router bgp`, or SONiC's
DEVICE_METADATA bgp_asn), its loopback (config_db.json's LOOPBACK_INTERFACE, else frr.conf's
`interface lo` address) and its ports' addresses (config_db.json's INTERFACE, else frr.conf's
`interface ... ip address`). `--configs DIR` makes them the plan's numbering (harness/core/numbering.py
audits it), so a lab runs the engineer's addresses and every check judges in them; a host's
address is the other end of its leaf port's subnet where nothing else gives it.

Pure: it reads texts, the caller reads the files.
"""
from __future__ import annotations

from ipaddress import IPv4Interface

from harness.core.cabling.numbering_csv import NumberingRows
from harness.core.errors import InputError
from harness.core.inputfile import json_of
from harness.core.meaning.frr import parse

__all__ = ["numbering_of"]


def _db(text: str | None) -> dict:
    if not text:
        return {}
    try:
        doc = json_of(text, "config_db.json")
    except InputError:  # said where the file is read (render/configs.py); here it numbers nothing
        return {}
    return doc if isinstance(doc, dict) else {}


def _v4(text: str) -> IPv4Interface | None:
    try:
        return IPv4Interface(text) if "/" in text else None
    except ValueError:
        return None


def _keyed(table: object) -> list[tuple[str, IPv4Interface]]:
    """(interface, address) of a SONiC INTERFACE-style table's `NAME|ADDR/LEN` keys (IPv4 only)."""
    out = []
    for key in table if isinstance(table, dict) else ():
        name, _, addr = str(key).partition("|")
        iface = _v4(addr) if addr else None
        if iface is not None:
            out.append((name, iface))
    return out


def numbering_of(frr: dict[str, str], dbs: dict[str, str]) -> NumberingRows:
    """switch -> frr.conf text and switch -> config_db.json text: the numbering they carry. A switch
    whose configs say nothing of an item leaves it out (the audit then names what is missing)."""
    asns: list[tuple[str, int]] = []
    loopbacks: list[tuple[str, str]] = []
    ports: list[tuple[str, str, str]] = []
    for sw in sorted(set(frr) | set(dbs)):
        cfg = parse(frr.get(sw, ""))
        db = _db(dbs.get(sw))
        inst = cfg.bgp.get("default")
        asn = inst.asn if inst is not None else None
        if asn is None or not str(asn).isdigit():
            meta = db.get("DEVICE_METADATA", {})
            asn = (meta.get("localhost", {}) if isinstance(meta, dict) else {}).get("bgp_asn")
        if asn is not None and str(asn).isdigit():
            asns.append((sw, int(asn)))
        lo = [i for name, i in _keyed(db.get("LOOPBACK_INTERFACE")) if name == "Loopback0"]
        lo = lo or [i for name, i in _from_frr(cfg) if name == "lo" and i.network.prefixlen == 32]
        if lo:
            loopbacks.append((sw, str(lo[0])))
        addressed = _keyed(db.get("INTERFACE")) or [(n, i) for n, i in _from_frr(cfg) if n != "lo"]
        ports += [(sw, name, str(i)) for name, i in addressed]
    return NumberingRows(tuple(asns), tuple(loopbacks), tuple(ports),
                         allowas_in=max(map(_allowas_in, frr.values()), default=0))


def _allowas_in(text: str) -> int:
    found = 0
    for line in text.splitlines():
        w = line.split()
        if len(w) >= 3 and w[0] == "neighbor" and w[2] == "allowas-in":
            found = max(found, int(w[3]) if len(w) > 3 and w[3].isdigit() else 1 if w[3:4] == ["origin"] else 3)
    return found


def _from_frr(cfg) -> list[tuple[str, IPv4Interface]]:
    out = []
    for name, statements in cfg.interfaces.items():
        for st in statements:
            w = st.words
            if w[:2] == ["ip", "address"] and len(w) > 2 and (iface := _v4(w[2])) is not None:
                out.append((name, iface))
    return out
