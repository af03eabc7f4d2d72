"""Faults in the lossless contract: a port whose MTU no longer holds a RoCE frame, PFC on the
wrong priority, ECN off on a port's RoCE queue, RoCE's DSCP in a lossy traffic class (the last
three a switch's running CONFIG_DB changed by one field, as a hand edit or a bad push does)."""
from __future__ import annotations

from dataclasses import dataclass

from harness.core.errors import InputError
from harness.faults.protocol import Applied
from harness.faults.targets import Port, Switch
from harness.plumbing.labview import LabView

SMALL_MTU = 1500


@dataclass(frozen=True)
class Mtu:
    mtu: int  # the port's MTU before


@dataclass(frozen=True)
class ConfigDbField:
    """One CONFIG_DB field and its value before (None: it was not set)."""

    table: str
    key: str
    field: str
    old: str | None


def small_mtu(lab: LabView, target: Port) -> Applied[Mtu]:
    if not target.port:
        raise InputError(f"--on {target}: give the port too, SWITCH:PORT")
    old = lab.mtus(target.node).get(target.port)
    if old is None:
        raise InputError(f"--on {target}: {target.node} has no interface {target.port}")
    lab.ns_exec(target.node, ["ip", "link", "set", target.port, "mtu", str(SMALL_MTU)], check=True)
    return Applied(f"{target} MTU {old} -> {SMALL_MTU} (a RoCE frame no longer fits)", Mtu(int(old)))


def mtu_back(lab: LabView, target: Port, state: Mtu) -> None:
    lab.ns_exec(target.node, ["ip", "link", "set", target.port, "mtu", str(state.mtu)], check=True)


def _set(lab: LabView, node: str, table: str, key: str, field: str, value: str | None,
         what: str) -> Applied[ConfigDbField]:
    old = lab.set_config_db(node, table, key, field, value)
    new = "(removed)" if value is None else value
    return Applied(f"{node}: {table}|{key} {field} {old} -> {new} ({what})", ConfigDbField(table, key, field, old))


def pfc_priority(lab: LabView, target: Port) -> Applied[ConfigDbField]:
    """PFC enabled on a priority next to RoCE's in a port's QoS map (the switch's first
    lossless port when none is given)."""
    roce = lab.plan.fabric.cluster.lossless.roce_priority
    maps = lab.running_config_db(target.node).get("PORT_QOS_MAP", {})
    port = target.port or next(iter(maps), "")
    if port not in maps:
        raise InputError(f"{target.node}:{port} has no PORT_QOS_MAP row (no lossless port): pick a BE port")
    return _set(lab, target.node, "PORT_QOS_MAP", port, "pfc_enable", str((roce + 1) % 8),
                "PFC on the wrong priority: RoCE is no longer lossless")


def ecn_off(lab: LabView, target: Port) -> Applied[ConfigDbField]:
    """The RoCE queue of one port without its WRED profile (SONiC's default then: no WRED, no
    ECN): the port never marks CE, so its congestion sends no CNP and PFC alone holds it. One
    port's QUEUE row, not the WRED_PROFILE every port of the switch shares."""
    if not target.port:
        raise InputError(f"--on {target}: give the port too, SWITCH:PORT")
    roce = lab.plan.fabric.cluster.lossless.roce_priority
    key = f"{target.port}|{roce}"
    if "wred_profile" not in lab.running_config_db(target.node).get("QUEUE", {}).get(key, {}):
        raise InputError(f"{target}: QUEUE|{key} has no wred_profile (ECN is off there already, or no lossless "
                         "port): pick a BE port")
    return _set(lab, target.node, "QUEUE", key, "wred_profile", None, "ECN off on the RoCE queue: it never marks CE")


def dscp_map(lab: LabView, target: Switch) -> Applied[ConfigDbField]:
    lossless = lab.plan.fabric.cluster.lossless
    maps = lab.running_config_db(target.name).get("DSCP_TO_TC_MAP", {})
    if not maps:
        raise InputError(f"{target.name} has no DSCP_TO_TC_MAP: pick a BE switch")
    return _set(lab, target.name, "DSCP_TO_TC_MAP", next(iter(maps)), str(lossless.roce_dscp), "0",
                "RoCE's DSCP mapped to the lossy TC 0")


@dataclass(frozen=True)
class Storm:
    priorities: tuple[int, ...]  # what the NIC sends pause for


def pfc_storm(lab: LabView, target: Port) -> Applied[Storm]:
    """A GPU NIC (or any BE port) that keeps sending pause on the RoCE priority: the port
    facing it stops that priority for good, until its PFC watchdog calls it a storm."""
    if not target.port:
        raise InputError(f"--on {target}: give the NIC too, NODE:NIC (e.g. gpu02:rail0)")
    roce = lab.plan.fabric.cluster.lossless.roce_priority
    lab.set_pause_storm(target.node, target.port, frozenset({roce}))
    return Applied(f"{target} sends PFC pause on priority {roce} without end (a NIC gone wrong: a pause storm)",
                   Storm((roce,)))


def storm_over(lab: LabView, target: Port, state: Storm) -> None:
    lab.set_pause_storm(target.node, target.port, frozenset())


def config_db_back(lab: LabView, target: Port | Switch, state: ConfigDbField) -> None:
    lab.set_config_db(target.nodes()[0], state.table, state.key, state.field, state.old)
