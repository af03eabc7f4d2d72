"""One BE hop of the lossless contract: a port's own tables (admin state, speed, MTU, PFC
and its watchdog, the DSCP -> TC -> queue/PG maps, ECN, the CNP queue, buffers, cable
length) and both ends of a switch-to-switch link. Maps and profiles are followed from the
port as harness.core.meaning.configdb_qos reads them, whatever they are called."""
from __future__ import annotations

from dataclasses import dataclass

from harness.checks.lossless.outcome import Finding
from harness.core.meaning.configdb import port_settings
from harness.core.meaning.configdb_norm import norm, number, port_rows
from harness.core.meaning.configdb_qos import (ECN_MARKS_GREEN, MAPS, Buffer, PortQos, Queue, buffers, cable_lengths,
                                               port_qoses, queues)
from harness.core.model import Lossless


@dataclass(frozen=True)
class Read:
    """One switch's config_db read once, as the model reads it: the audit asks of every port."""
    db: dict
    qos: dict[str, PortQos]
    queues: dict[tuple[str, int], Queue]
    pgs: dict[tuple[str, int], Buffer]
    egress: dict[tuple[str, int], Buffer]
    cables: dict[str, tuple[str, str]]
    watchdogs: dict[str, tuple[str, dict]]


def read_db(db: dict) -> Read:
    return Read(db, port_qoses(db), queues(db), buffers(db, "BUFFER_PG"), buffers(db, "BUFFER_QUEUE"),
                cable_lengths(db), port_rows(db, "PFC_WD"))


def admin_text(db: dict, port: str) -> str:
    row = db.get("PORT", {}).get(port, {})
    return norm(row["admin_status"]) if "admin_status" in row else "unset (SONiC's default: down)"


def mtu_text(db: dict, port: str) -> str:
    row = db.get("PORT", {}).get(port, {})
    return norm(row["mtu"]) if "mtu" in row else "unset (SONiC's default: 9100)"


def port_findings(q: Lossless, sw: str, port: str, read: Read, speed_gbps: int | None = None) -> list[Finding]:
    """One BE port: admin state, declared speed, MTU, PFC and its watchdog, the DSCP -> TC ->
    queue/PG maps, ECN on the lossless queue, CNPs on the declared strict queue, buffers and
    cable length. Maps and profiles are followed from the port, whatever they are called."""
    out: list[Finding] = []
    roce, cnp, db = q.roce_priority, q.cnp_priority, read.db

    def miss(table: str, expected: str, found: object, at: str = port) -> None:
        out.append(Finding(sw, at, table, expected, "nothing" if found is None else str(found)))

    row = port_settings(db, port) or {}
    if row.get("admin_status") != "up":
        miss("PORT", "admin_status up (a BE path crosses it)", admin_text(db, port))
    if speed_gbps is not None and row.get("speed") != str(speed_gbps * 1000):
        miss("PORT", f"speed {speed_gbps * 1000} (the declared {speed_gbps}G)", row.get("speed"))
    if (number(row.get("mtu")) or 0) < q.roce_frame_bytes:
        miss("PORT", f"mtu >= {q.roce_frame_bytes} (RoCE MTU {q.roce_mtu} with its headers)", mtu_text(db, port))
    qos = read.qos.get(port)
    if qos is None:
        miss("PORT_QOS_MAP", "a row: the port's QoS maps and PFC", None)
        return out
    if roce not in qos.pfc:
        miss("PORT_QOS_MAP", f"pfc_enable including {roce}", qos.pfc_text or None)
    if qos.pfc - {roce}:
        miss("PORT_QOS_MAP", f"pfc_enable on no priority but {roce} (a paused class without lossless buffers "
             "backs up the fabric)", qos.pfc_text)
    out += _watchdog(sw, port, roce, qos, read)
    maps = {}
    for field, table in MAPS.items():
        m = qos.map(field)
        if not m.name:
            miss("PORT_QOS_MAP", f"{field} naming a {table}", None)
        elif m.entries is None:
            miss(table, f"map {m.name!r} (PORT_QOS_MAP.{field}) defined", "no such map")
        else:
            maps[field] = m
    if "dscp_to_tc_map" in maps:
        for dscp, tc, what in ((q.roce_dscp, roce, "DSCP"), (q.cnp_dscp, cnp, "CNP DSCP")):
            if maps["dscp_to_tc_map"].get(dscp) != tc:
                miss("DSCP_TO_TC_MAP", f"{what} {dscp} -> TC {tc}", f"TC {maps['dscp_to_tc_map'].get(dscp)}")
        strays = [str(d) for d, tc in maps["dscp_to_tc_map"].entries or () if tc == roce and d != q.roce_dscp]
        if strays:
            miss("DSCP_TO_TC_MAP", f"no DSCP but {q.roce_dscp} in lossless TC {roce}",
                 f"DSCP {','.join(strays)} -> TC {roce}")
    for field, table, source, target in (("tc_to_queue_map", "TC_TO_QUEUE_MAP", "TC", "queue"),
                                         ("tc_to_pg_map", "TC_TO_PRIORITY_GROUP_MAP", "TC", "PG"),
                                         ("pfc_to_queue_map", "MAP_PFC_PRIORITY_TO_QUEUE", "priority", "queue")):
        if field in maps and maps[field].get(roce) != roce:
            miss(table, f"{source} {roce} -> {target} {roce}", f"{target} {maps[field].get(roce)}")
    if "tc_to_queue_map" in maps and maps["tc_to_queue_map"].get(cnp) != cnp:
        miss("TC_TO_QUEUE_MAP", f"TC {cnp} -> queue {cnp} (CNPs, lossless.cnp_priority)",
             f"queue {maps['tc_to_queue_map'].get(cnp)}")
    out += _queues(sw, port, roce, cnp, read)
    out += _buffers(sw, port, roce, read)
    if port not in read.cables:
        miss("CABLE_LENGTH", "the port's cable length (it sizes the PFC headroom)", None)
    return out


def _watchdog(sw: str, port: str, roce: int, qos: PortQos, read: Read) -> list[Finding]:
    found = read.watchdogs.get(port)
    if roce not in qos.pfcwd or found is None:
        return [Finding(sw, port, "PFC_WD", f"the PFC watchdog on priority {roce}",
                        f"pfcwd_sw_enable={qos.pfcwd_text or None}, PFC_WD row {'present' if found else 'absent'}")]
    wd = found[1]
    out = []
    for name, low, high in (("detection_time", 100, 5000), ("restoration_time", 100, 60000)):
        value = number(wd.get(name))
        if value is None or not low <= value <= high:
            out.append(Finding(sw, port, "PFC_WD", f"{name} {low}..{high} ms", norm(wd.get(name, "unset"))))
    if norm(wd.get("action")) not in ("drop", "forward", "alert"):
        out.append(Finding(sw, port, "PFC_WD", "action drop, forward or alert", norm(wd.get("action", "unset"))))
    return out


def _queues(sw: str, port: str, roce: int, cnp_queue: int, read: Read) -> list[Finding]:
    """ECN marking on the lossless queue; the CNP queue on a strict scheduler. A WRED field
    left out is SONiC's default (no ECN, WRED off)."""
    out = []
    every = read.queues
    lossless = every.get((port, roce))
    wred = lossless.wred if lossless else None
    at = f"{port}|{roce}"
    ref = lossless.wred_ref if lossless and lossless.wred_ref else None
    if wred is None or wred.get("ecn") not in ECN_MARKS_GREEN:
        out.append(Finding(sw, at, "QUEUE", f"queue {roce} with a WRED profile that marks ECN on green packets",
                           f"wred_profile={ref}" + ("" if wred is None else f", ecn={wred.get('ecn')}")))
    elif wred.get("wred_green_enable") != "true":
        out.append(Finding(sw, at, "WRED_PROFILE", f"{ref}: wred_green_enable true (ECN marks only where WRED runs)",
                           wred.get("wred_green_enable")))
    elif (number(wred.get("green_min_threshold")) or 0) > (number(wred.get("green_max_threshold")) or 0):
        out.append(Finding(sw, at, "WRED_PROFILE", f"{ref}: green_min_threshold <= green_max_threshold",
                           f"{wred.get('green_min_threshold')} > {wred.get('green_max_threshold')}"))
    cnp = every.get((port, cnp_queue))
    scheduler = cnp.scheduler if cnp else None
    if scheduler is None or scheduler.type != "STRICT":
        out.append(Finding(sw, f"{port}|{cnp_queue}", "QUEUE", f"CNP queue {cnp_queue} on a STRICT scheduler",
                           "nothing" if scheduler is None else scheduler.type))
    return out


def _buffers(sw: str, port: str, roce: int, read: Read) -> list[Finding]:
    """The lossless PG on an ingress xon/xoff profile, the lossless queue on an egress profile,
    each profile on a defined pool of its direction with a threshold."""
    out = []
    at = f"{port}|{roce}"
    for table, pool_kind in (("BUFFER_PG", "ingress"), ("BUFFER_QUEUE", "egress")):
        b = (read.pgs if table == "BUFFER_PG" else read.egress).get((port, roce))

        def miss(where: str, expected: str, found: str) -> None:
            out.append(Finding(sw, at, where, expected, found))

        if b is None or not b.defined:
            miss(table, f"a {pool_kind} buffer profile for the lossless class, defined in BUFFER_PROFILE",
                 "nothing" if b is None else f"profile {b.profile!r} undefined")
        elif not b.pool_defined:
            miss("BUFFER_PROFILE", f"{b.profile}: pool {b.pool!r} defined in BUFFER_POOL", "no such pool")
        elif b.get("pool type") != pool_kind:
            miss("BUFFER_POOL", f"{b.pool} (of {b.profile}): type {pool_kind}", str(b.get("pool type")))
        elif b.get("dynamic_th") is None and b.get("static_th") is None:
            miss("BUFFER_PROFILE", f"{b.profile}: a threshold (dynamic_th or static_th)", "neither")
        elif table == "BUFFER_PG" and not (number(b.get("xoff")) or 0) > 0:
            miss("BUFFER_PROFILE", f"{b.profile} on the RoCE PG: lossless, xoff > 0 and xon set",
                 f"xoff={b.get('xoff')}, xon={b.get('xon')}")
    return out


def link_findings(a: str, a_port: str, a_read: Read, b: str, b_port: str, b_read: Read) -> list[Finding]:
    """Both ends of one switch-to-switch link: the same PFC priorities, MTU and speed."""
    out = []
    pa, pb = (getattr(r.qos.get(p), "pfc", frozenset()) for r, p in ((a_read, a_port), (b_read, b_port)))
    a_db, b_db = a_read.db, b_read.db
    if pa != pb:
        out.append(Finding(a, a_port, "PORT_QOS_MAP", f"pfc_enable as at its peer {b}:{b_port} "
                           f"({','.join(map(str, sorted(pb))) or 'none'})", ",".join(map(str, sorted(pa))) or "none"))
    for name in ("mtu", "speed"):
        ours = (port_settings(a_db, a_port) or {}).get(name)
        theirs = (port_settings(b_db, b_port) or {}).get(name)
        if ours != theirs:
            out.append(Finding(a, a_port, "PORT", f"{name} as at its peer {b}:{b_port} ({theirs})", str(ours)))
    return out

