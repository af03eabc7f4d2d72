"""VLANs and VXLAN as SONiC applies them, whatever their objects are called: a VLAN is its
vlanid, its members (port and tagging mode) and its SVI; a VNI is the VLAN it bridges and the
VTEP's source address; EVPN is the source its NVO names. A VLAN's key ("Vlan100"), a tunnel's
or a map's name are labels: only what they point to counts."""
from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from harness.core.meaning.configdb_norm import ConfigDb, Fact, Row, fields, norm, number, rows_of, sonic_defaults

TABLES = ("VLAN", "VLAN_MEMBER", "VLAN_INTERFACE", "VXLAN_TUNNEL", "VXLAN_TUNNEL_MAP", "VXLAN_EVPN_NVO")
_VLAN_NAME = re.compile(r"^Vlan(\d+)$")
_LABELS = ("description", "alias", "vlanid")
# A field left out is SONiC's default (yang_defaults; tagging_mode: vlanmgrd's, configdb_norm.APPLIED)
_VLAN = sonic_defaults("VLAN")
_TAGGING = sonic_defaults("VLAN_MEMBER")["tagging_mode"]
_SVI = sonic_defaults("VLAN_INTERFACE")


def vlan_ids(db: ConfigDb) -> dict[str, int]:
    """VLAN key -> vlanid; a VLAN without one is the number in its name, as SONiC requires."""
    out = {}
    for key, row in rows_of(db, "VLAN").items():
        vid = number(row.get("vlanid"))
        if vid is None and (m := _VLAN_NAME.match(str(key))):
            vid = int(m.group(1))
        if vid is not None:
            out[str(key)] = vid
    return out


def vlan_id(db: ConfigDb, name: object) -> int | None:
    text = norm(name)
    if text in vlan_ids(db):
        return vlan_ids(db)[text]
    m = _VLAN_NAME.match(text)
    return int(m.group(1)) if m else None


@dataclass(frozen=True)
class Member:
    vlan: int | None
    port: str
    tagging: str
    row: Row


def members(db: ConfigDb) -> tuple[Member, ...]:
    ids = vlan_ids(db)
    out = []
    for key, row in rows_of(db, "VLAN_MEMBER").items():
        name, _, port = str(key).partition("|")
        vid = ids.get(name) if name in ids else vlan_id(db, name)
        out.append(Member(vid, port, norm(row.get("tagging_mode", _TAGGING)), Row("VLAN_MEMBER", key)))
    return tuple(sorted(out, key=lambda m: (m.port, m.vlan or 0)))


@dataclass(frozen=True)
class VniMap:
    vni: int | None
    vlan: int | None
    source: str  # the tunnel's src_ip ("" when the tunnel is undefined)
    row: Row


def tunnel_sources(db: ConfigDb) -> dict[str, str]:
    return {str(k): norm(r.get("src_ip", "")) for k, r in rows_of(db, "VXLAN_TUNNEL").items()}


def vni_maps(db: ConfigDb) -> tuple[VniMap, ...]:
    sources = tunnel_sources(db)
    out = []
    for key, row in rows_of(db, "VXLAN_TUNNEL_MAP").items():
        tunnel = str(key).partition("|")[0]
        out.append(VniMap(number(row.get("vni")), vlan_id(db, row.get("vlan")), sources.get(tunnel, ""),
                          Row("VXLAN_TUNNEL_MAP", key)))
    return tuple(sorted(out, key=lambda m: (m.vni or 0, m.vlan or 0)))


def evpn_sources(db: ConfigDb) -> tuple[tuple[str, Row], ...]:
    """Each NVO's source, as the address of the tunnel it names."""
    sources = tunnel_sources(db)
    return tuple((sources.get(norm(r.get("source_vtep", "")), f"'{norm(r.get('source_vtep', ''))}' (undefined)"),
                  Row("VXLAN_EVPN_NVO", k)) for k, r in sorted(rows_of(db, "VXLAN_EVPN_NVO").items()))


def svis(db: ConfigDb) -> dict[int | str, tuple[tuple[str, ...], dict[str, str], tuple[Row, ...]]]:
    """vlanid -> (addresses, the SVI's settings, rows) of VLAN_INTERFACE."""
    out: dict[int | str, tuple[tuple[str, ...], dict[str, str], tuple[Row, ...]]] = {}
    for key, row in rows_of(db, "VLAN_INTERFACE").items():
        name, _, address = str(key).partition("|")
        vid = vlan_id(db, name)
        at: int | str = vid if vid is not None else name
        addresses, settings, rows = out.get(at, ((), dict(_SVI), ()))
        if address:
            addresses = tuple(sorted({*addresses, address}))
        else:
            settings = fields(row, _SVI)
        out[at] = (addresses, settings, rows + (Row("VLAN_INTERFACE", key),))
    return out


def facts(db: ConfigDb) -> Iterator[Fact]:
    ids = vlan_ids(db)
    for key, vid in sorted(ids.items(), key=lambda kv: kv[1]):
        settings = tuple(sorted(fields(rows_of(db, "VLAN")[key], _VLAN, ignore=_LABELS).items()))
        yield Fact("VLAN", f"VLAN {vid}", "", "", settings or (("", "defined"),), (Row("VLAN", key),), "no such VLAN")
    by_port: dict[str, list[Member]] = {}
    for m in members(db):
        by_port.setdefault(m.port, []).append(m)
    for port, ms in sorted(by_port.items()):
        text = ", ".join(f"{m.vlan if m.vlan is not None else '?'} {m.tagging}" for m in ms)
        yield Fact("VLAN", port, "", "", (("in VLAN", text),), tuple(m.row for m in ms), "no VLAN")
    several = len(tunnel_sources(db)) > 1
    for m in vni_maps(db):
        value = (("VLAN", str(m.vlan) if m.vlan is not None else "undefined"),) + ((("source", m.source),) if several
                                                                                   else ())
        yield Fact("VXLAN", f"VNI {m.vni}", "", "", value, (m.row,), "not mapped")
    sources = sorted(set(tunnel_sources(db).values()))
    if sources:
        rows = tuple(Row("VXLAN_TUNNEL", k, "src_ip") for k in rows_of(db, "VXLAN_TUNNEL"))
        yield Fact("VXLAN", "VTEP", "", "", (("source", ", ".join(sources)),), rows, "no VTEP")
    for source, row in evpn_sources(db):
        yield Fact("VXLAN", "EVPN NVO", "", "", (("source", source),), (row,), "no EVPN NVO")
    for at, (addresses, settings, rows) in sorted(svis(db).items(), key=lambda kv: str(kv[0])):
        subject = f"VLAN {at}" if isinstance(at, int) else str(at)
        value = (("addresses", ", ".join(addresses) or "none"),) + tuple(sorted(settings.items()))
        yield Fact("addresses", subject, "", "SVI", value, rows, "no SVI")
