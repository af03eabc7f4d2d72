"""What a config_db.json does to a port's traffic classes, whatever its maps and profiles are
called: the DSCP -> TC -> queue / PG chain, the priorities PFC pauses and the queue each
pauses, each queue's scheduling and WRED/ECN, each PG's and queue's buffers with their pool,
the PFC watchdog and the cable length. A map, scheduler, WRED or buffer profile is read
through the reference to it, so its name never counts; a field left out reads as SONiC's YANG
default (sonic-scheduler, sonic-wred-profile, sonic-buffer-profile/-pool)."""
from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from functools import cached_property, lru_cache

from harness.core.meaning.configdb_norm import (ConfigDb, Fact, Row, fields, indexed_rows, norm, norm_list, number,
                                                port_rows, reference, resolve, rows_of, sonic_defaults)

MAPS = {"dscp_to_tc_map": "DSCP_TO_TC_MAP", "tc_to_queue_map": "TC_TO_QUEUE_MAP",
        "tc_to_pg_map": "TC_TO_PRIORITY_GROUP_MAP", "pfc_to_queue_map": "MAP_PFC_PRIORITY_TO_QUEUE"}
# Maps a port may name that the chain does not follow: compared by their entries, not their names.
OTHER_MAPS = {"dot1p_to_tc_map": "DOT1P_TO_TC_MAP", "pfc_to_pg_map": "PFC_PRIORITY_TO_PRIORITY_GROUP_MAP",
              "tc_to_dscp_map": "TC_TO_DSCP_MAP", "dscp_to_fc_map": "DSCP_TO_FC_MAP", "exp_to_fc_map": "EXP_TO_FC_MAP",
              "mpls_tc_to_tc_map": "MPLS_TC_TO_TC_MAP", "tc_to_dot1p_map": "TC_TO_DOT1P_MAP"}
_MAP_INDEX = {f: i for i, f in enumerate(MAPS)}
# Tables whose rows act only through the references to them (their names are labels).
REFERENCED = (*MAPS.values(), *OTHER_MAPS.values(), "SCHEDULER", "WRED_PROFILE", "BUFFER_PROFILE", "BUFFER_POOL")
TABLES = (*REFERENCED, "PORT_QOS_MAP", "QUEUE", "BUFFER_PG", "BUFFER_QUEUE", "PFC_WD", "CABLE_LENGTH")

# A field a profile leaves out is its YANG default (yang_defaults, generated from SONiC's models)
SCHEDULER_DEFAULTS = sonic_defaults("SCHEDULER")
WRED_DEFAULTS = sonic_defaults("WRED_PROFILE")
PROFILE_DEFAULTS = sonic_defaults("BUFFER_PROFILE")
POOL_DEFAULTS = sonic_defaults("BUFFER_POOL")
_PFC_WD_DEFAULTS = sonic_defaults("PFC_WD")
_QUEUE_DEFAULTS = sonic_defaults("QUEUE")
_WRED_ORDER = ("ecn", "wred_green_enable", "green_min_threshold", "green_max_threshold", "green_drop_probability",
               "wred_yellow_enable", "yellow_min_threshold", "yellow_max_threshold", "yellow_drop_probability",
               "wred_red_enable", "red_min_threshold", "red_max_threshold", "red_drop_probability")
ECN_MARKS_GREEN = frozenset({"ecn_green", "ecn_green_yellow", "ecn_green_red", "ecn_all"})


@dataclass(frozen=True)
class QosMap:
    """One map a port names: its entries (key -> value), or None when the name is undefined."""
    field: str
    name: str  # "" when the port names no map
    entries: tuple[tuple[int, int], ...] | None
    rows: tuple[Row, ...] = ()

    @cached_property
    def lookup(self) -> dict[int, int]:
        return dict(self.entries or ())

    def get(self, key: int) -> int | None:
        return self.lookup.get(key)


@dataclass(frozen=True)
class PortQos:
    port: str
    key: str  # the PORT_QOS_MAP row, as written
    maps: tuple[QosMap, ...]
    pfc: frozenset[int]
    pfcwd: frozenset[int]
    pfc_text: str  # pfc_enable as written
    pfcwd_text: str
    other: tuple[tuple[str, str], ...]  # fields the chain does not follow, references read as content

    def map(self, field: str) -> QosMap:
        return self.maps[_MAP_INDEX[field]]

    def dscp(self, dscp: int) -> tuple[int, int | None, int | None]:
        """The TC, queue and PG of a DSCP; an unmapped DSCP is TC 0 (SAI's default)."""
        return self.chain[dscp]

    @cached_property
    def chain(self) -> tuple[tuple[int, int | None, int | None], ...]:
        to_tc, to_queue, to_pg = (self.map(f).lookup for f in ("dscp_to_tc_map", "tc_to_queue_map", "tc_to_pg_map"))
        return tuple((tc, to_queue.get(tc), to_pg.get(tc)) for tc in (to_tc.get(d, 0) for d in range(64)))


@dataclass(frozen=True)
class Scheduler:
    settings: tuple[tuple[str, str], ...]
    row: Row

    @property
    def type(self) -> str:
        return dict(self.settings)["type"]


@dataclass(frozen=True)
class Wred:
    settings: tuple[tuple[str, str], ...]
    row: Row

    def get(self, name: str) -> str | None:
        return dict(self.settings).get(name)


@dataclass(frozen=True)
class Queue:
    port: str
    index: int
    key: str
    scheduler_ref: str  # "" when none
    scheduler: Scheduler | None
    wred_ref: str
    wred: Wred | None


@dataclass(frozen=True)
class Buffer:
    """The buffer profile of a PG or queue, with its pool; `defined` False when the name is not."""
    key: str
    profile: str
    defined: bool
    settings: tuple[tuple[str, str], ...]  # the profile's, then its pool's ("pool type", ...)
    pool: str  # the pool's name, "" when the profile names none
    pool_defined: bool
    rows: tuple[Row, ...]

    def get(self, name: str) -> str | None:
        return dict(self.settings).get(name)


def _entries(db: ConfigDb, table: str, name: str) -> tuple[tuple[int, int], ...] | None:
    target = resolve(db, table, name) if name else {}
    if target is None:
        return None
    return tuple(sorted((a, b) for k, v in target.items() if (a := number(k)) is not None
                        and (b := number(v)) is not None))


def _map(db: ConfigDb, key: str, row: Mapping[str, object], field: str, table: str,
         read: dict[tuple[str, str], tuple[tuple[int, int], ...] | None]) -> QosMap:
    name = reference(row.get(field)) if row.get(field) is not None else ""
    if (table, name) not in read:  # a map is read once, however many ports name it
        read[(table, name)] = _entries(db, table, name)
    entries = read[(table, name)]
    if entries is None:
        return QosMap(field, name, None, (Row("PORT_QOS_MAP", key, field),))
    return QosMap(field, name, entries, (Row("PORT_QOS_MAP", key, field),) + ((Row(table, name),) if name else ()))


def port_qos(db: ConfigDb, port: str) -> PortQos | None:
    return port_qoses(db).get(port)


def port_qoses(db: ConfigDb) -> dict[str, PortQos]:
    """Every port's QoS, each row read once however many ports it keys."""
    read: dict[str, PortQos] = {}
    maps: dict[tuple[str, str], tuple[tuple[int, int], ...] | None] = {}
    return {port: replace(read[key], port=port) if key in read
            else read.setdefault(key, _port_qos(db, port, key, row, maps))
            for port, (key, row) in port_rows(db, "PORT_QOS_MAP").items()}


def _port_qos(db: ConfigDb, port: str, key: str, row: Mapping[str, object],
              read: dict[tuple[str, str], tuple[tuple[int, int], ...] | None]) -> PortQos:
    maps = tuple(_map(db, key, row, f, t, read) for f, t in MAPS.items())
    other = []
    for name, value in sorted(row.items()):
        if name in MAPS or name in ("pfc_enable", "pfcwd_sw_enable"):
            continue
        target = resolve(db, OTHER_MAPS[name], value) if name in OTHER_MAPS else None
        text = (", ".join(f"{k}->{norm(v)}" for k, v in sorted(target.items(), key=lambda kv: (number(kv[0]) or 0)))
                if target is not None else norm(value))
        other.append((name, text))
    pfc, pfcwd = (frozenset(int(p) for p in norm_list(row.get(f)) if p.isdigit())
                  for f in ("pfc_enable", "pfcwd_sw_enable"))
    return PortQos(port, key, maps, pfc, pfcwd, norm(row.get("pfc_enable", "")), norm(row.get("pfcwd_sw_enable", "")),
                   tuple(other))


def scheduler(db: ConfigDb, name: str) -> Scheduler | None:
    row = resolve(db, "SCHEDULER", name)
    if row is None:
        return None
    settings = fields(row, SCHEDULER_DEFAULTS)
    if settings["type"] == "STRICT":
        settings.pop("weight")  # a strict queue is served first: its weight is never read
    order = ["type", "weight"]
    return Scheduler(tuple(sorted(settings.items(), key=lambda kv: (kv[0] not in order, order.index(kv[0])
                                                                    if kv[0] in order else 0, kv[0]))),
                     Row("SCHEDULER", reference(name)))


def wred(db: ConfigDb, name: str) -> Wred | None:
    row = resolve(db, "WRED_PROFILE", name)
    if row is None:
        return None
    settings = fields(row, WRED_DEFAULTS)
    return Wred(tuple(sorted(settings.items(), key=lambda kv: (kv[0] not in _WRED_ORDER,
                                                              _WRED_ORDER.index(kv[0]) if kv[0] in _WRED_ORDER else 0,
                                                              kv[0]))), Row("WRED_PROFILE", reference(name)))


def queues(db: ConfigDb) -> dict[tuple[str, int], Queue]:
    out = {}
    read: dict[tuple[str, str], Scheduler | Wred | None] = {}  # each profile once, however many queues name it

    def profile(kind, name: object) -> Scheduler | Wred | None:
        if name is None:
            return None
        if (kind.__name__, str(name)) not in read:
            read[(kind.__name__, str(name))] = kind(db, str(name))
        return read[(kind.__name__, str(name))]

    for (port, index), (key, row) in indexed_rows(db, "QUEUE").items():
        s, w = row.get("scheduler"), row.get("wred_profile")
        out[(port, index)] = Queue(port, index, key, reference(s) if s is not None else "", profile(scheduler, s),
                                   reference(w) if w is not None else "", profile(wred, w))
    return out


def _profile(db: ConfigDb, name: str) -> tuple[bool, tuple[tuple[str, str], ...], str, bool]:
    """A buffer profile by content, its pool's folded in: (defined, settings, pool, pool defined)."""
    profile = resolve(db, "BUFFER_PROFILE", name)
    if profile is None:
        return False, (), "", False
    settings = fields(profile, PROFILE_DEFAULTS, ignore=("pool",))
    pool_name = reference(profile.get("pool")) if profile.get("pool") is not None else ""
    pool = resolve(db, "BUFFER_POOL", pool_name) if pool_name else None
    if pool is not None:
        settings.update({f"pool {k}": v for k, v in fields(pool, POOL_DEFAULTS).items()})
    return True, tuple(sorted(settings.items(), key=lambda kv: (kv[0].startswith("pool"), kv[0]))), pool_name, \
        pool is not None


def buffers(db: ConfigDb, table: str) -> dict[tuple[str, int], Buffer]:
    """(port, index) -> the buffer profile of a BUFFER_PG or BUFFER_QUEUE row, by content."""
    out = {}
    profiles: dict[str, tuple[bool, tuple[tuple[str, str], ...], str, bool]] = {}  # each read once
    for at, (key, row) in indexed_rows(db, table).items():
        if row.get("profile") is None:
            continue
        name = reference(row.get("profile"))
        if name not in profiles:
            profiles[name] = _profile(db, name)
        defined, settings, pool, pool_defined = profiles[name]
        rows = (Row(table, key, "profile"), Row("BUFFER_PROFILE", name)) + ((Row("BUFFER_POOL", pool),) if pool else ())
        out[at] = Buffer(key, name, defined, settings, pool, pool_defined, rows)
    return out


def cable_lengths(db: ConfigDb) -> dict[str, tuple[str, str]]:
    """port -> (its CABLE_LENGTH row's key, length), whatever the row is called."""
    return {port: (key, norm(length)) for key, row in rows_of(db, "CABLE_LENGTH").items()
            for port, length in row.items()}


# --------------------------------------------------------------------------- facts


def _num(value: int | None, unset: str = "default") -> str:
    return unset if value is None else str(value)


def facts(db: ConfigDb) -> Iterator[Fact]:
    for _, qos in sorted(port_qoses(db).items()):
        yield from _chain_facts(qos)
    for (port, i), q in sorted(queues(db).items()):
        where, rows = f"queue {i}", (Row("QUEUE", q.key),)
        if q.scheduler_ref:
            value = (q.scheduler.settings if q.scheduler else (("scheduler", f"'{q.scheduler_ref}' (undefined)"),))
            yield Fact("scheduler", port, where, "", value, rows + ((q.scheduler.row,) if q.scheduler else ()),
                       "no scheduler (SONiC's default)")
        if q.wred_ref:
            value = q.wred.settings if q.wred else (("wred_profile", f"'{q.wred_ref}' (undefined)"),)
            yield Fact("WRED/ECN", port, where, "", value, rows + ((q.wred.row,) if q.wred else ()),
                       "no WRED profile (no WRED, no ECN marking)")
        others = tuple(sorted(fields(rows_of(db, "QUEUE")[q.key], _QUEUE_DEFAULTS,
                                     ignore=("scheduler", "wred_profile")).items()))
        if others:
            yield Fact("queue", port, where, "", others, rows)
    for table, label in (("BUFFER_PG", "PG"), ("BUFFER_QUEUE", "queue")):
        for (port, i), b in sorted(buffers(db, table).items()):
            value = b.settings if b.defined else (("profile", f"'{b.profile}' (undefined)"),)
            if b.defined and not b.pool_defined:
                value += (("pool", f"'{b.pool}' (undefined)"),)
            yield Fact("buffers", port, f"{label} {i}", "", value, b.rows, "no buffer profile")
    for port, (key, row) in sorted(port_rows(db, "PFC_WD").items()):
        settings = tuple(sorted(fields(row, _PFC_WD_DEFAULTS).items()))
        if port == "GLOBAL":
            yield Fact("PFC watchdog", "device", "", "", settings, (Row("PFC_WD", key),))
        else:
            yield Fact("PFC watchdog", port, "", "", settings, (Row("PFC_WD", key),), "no PFC watchdog")
    for port, (key, length) in sorted(cable_lengths(db).items()):
        yield Fact("cable length", port, "", "", (("", length),), (Row("CABLE_LENGTH", key, port),),
                   "none (SONiC's default)")


def _chain_facts(q: PortQos | None) -> Iterator[Fact]:
    if q is None:
        return
    port, rows = q.port, (Row("PORT_QOS_MAP", q.key),)
    for m in q.maps:
        if m.entries is None:
            yield Fact("QoS maps", port, "", m.field, (("", f"'{m.name}' (undefined)"),), m.rows, "a defined map")
    dscp_rows = q.map("dscp_to_tc_map").rows + q.map("tc_to_queue_map").rows + q.map("tc_to_pg_map").rows
    for d, value in enumerate(_chain_values(q.chain)):
        yield Fact("DSCP->TC", port, "", f"DSCP {d}", value, dscp_rows, "TC 0, queue default, PG default (no QoS maps)")
    yield Fact("PFC", port, "", "", (("on priorities", ",".join(map(str, sorted(q.pfc))) or "none"),),
               rows, "on priorities none")
    for p in sorted(q.pfc):
        yield Fact("PFC", port, "", f"priority {p}", (("queue", _num(q.map("pfc_to_queue_map").get(p))),),
                   q.map("pfc_to_queue_map").rows, "")
    yield Fact("PFC watchdog", port, "", "priorities",
               (("on priorities", ",".join(map(str, sorted(q.pfcwd))) or "none"),), rows, "on priorities none")
    for name, text in q.other:
        yield Fact("QoS maps", port, "", name, (("", text),), (Row("PORT_QOS_MAP", q.key, name),), "none")


@lru_cache(maxsize=64)
def _chain_values(chain: tuple[tuple[int, int | None, int | None], ...]) -> tuple[tuple[tuple[str, str], ...], ...]:
    return tuple((("TC", str(tc)), ("queue", _num(queue)), ("PG", _num(pg))) for tc, queue, pg in chain)


# Which link of the chain a DSCP's difference is in: the first of its fields that differs.
CHAIN = {"TC": "DSCP->TC", "queue": "TC->queue", "PG": "TC->PG"}
