"""The faults a learner can put into a running lab from the command line, and take out again.

`fablab break LAB FAULT [--on ELEMENT]` applies one, `fablab fix LAB [FAULT | --all]` undoes
it, possibly from another process: each fault's `apply` returns what its `undo` needs (plain
JSON), kept in the lab's run directory (`faults.json`) until it is undone. Each names the
check that must fail while it is in place (`caught_by`, a `fablab check --only` name) and
what it teaches. They are the mistakes the checks exist to catch (harness.checks.sabotage has
the same moves for tests, as context managers).
"""
from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass

from harness.checks import sabotage
from harness.checks import fault_places as places
from harness.core.errors import HarnessError, InputError, LabError
from harness.core.model import Role
from harness.core.plan import Plan
from harness.plumbing import wait
from harness.plumbing.labview import LabView

STORE = "faults.json"
MYSTERY = "mystery.json"  # harness.checks.mystery's; `fix --all` ends a mystery too
Data = dict


@dataclass(frozen=True)
class Fault:
    name: str
    teaches: str  # the group it is listed under: cabling, isolation, ecmp, failover, lossless, tenants
    what: str  # one line: what it does to the lab
    caught_by: str  # the check (`fablab check --only`) that fails while it is in place
    on: str  # what --on takes
    default: Callable[[Plan], str | None]  # the element it goes on by default (None: nowhere in this plan)
    apply: Callable[[LabView, str], tuple[str, Data]]  # -> (what was done, what undo needs)
    undo: Callable[[LabView, str, Data], None]

    def row(self) -> dict[str, str]:
        return {"name": self.name, "teaches": self.teaches, "what": self.what, "caught_by": self.caught_by,
                "on": self.on}


# --------------------------------------------------------------------------- the faults' moves

def _swap(lab: LabView, element: str) -> tuple[str, Data]:
    a, b = map(places.end, places.pair(element))
    far = [list(sabotage._far_end(lab, a)), list(sabotage._far_end(lab, b))]  # as planned: stable
    return sabotage.swap_cables(lab, a, b).description, {"far": far}


def _unswap(lab: LabView, element: str, data: Data) -> None:
    x, y = (tuple(e) for e in data["far"])
    sabotage._move_far_ends(lab, x, y)  # the same move again puts both back


def _rogue(lab: LabView, element: str) -> tuple[str, Data]:
    a, b = places.pair(element)
    pa, pb = sabotage.free_port(lab, a), sabotage.free_port(lab, b)
    done = sabotage.rogue_cable(lab, (a, pa), (b, pb))
    return done.description, {"node": a, "port": pa}


def _unrogue(lab: LabView, element: str, data: Data) -> None:
    sabotage.unplug(lab, data["node"], data["port"])


TAKES_S = 30.0  # a fault that acts through the routing protocols (a session up, BFD down) takes effect within


def _until(lab: LabView, holds: Callable[[], bool], what: str) -> None:
    """Return once the fault has taken effect, so that a check run next sees it."""
    wait.until(holds, TAKES_S, what, interval=0.3,
               error=lambda: LabError(f"the fault is in, but {what} did not happen within {TAKES_S:.0f} s"))


def _stray(lab: LabView, element: str) -> tuple[str, Data]:
    a, b = places.pair(element)
    pa, pb = sabotage.free_port(lab, a), sabotage.free_port(lab, b)
    done = sabotage.stray_cable(lab, a, b, ports=(pa, pb))
    _until(lab, lambda: any(p.peer == pa and p.established for p in lab.bgp_peers(a)),
           f"the BGP session on {a}:{pa} to come up")
    return done.description, {"ends": [[a, pa], [b, pb]]}


def _unstray(lab: LabView, element: str, data: Data) -> None:
    sabotage.remove_stray(lab, [tuple(end) for end in data["ends"]])


def _leak(lab: LabView, host: str) -> tuple[str, Data]:
    return sabotage.leak_route(lab, host).description, {}


def _unleak(lab: LabView, host: str, data: Data) -> None:
    sabotage.unleak_route(lab, host)


def _sysctl_fault(key: str, value: int, what: str):
    def apply(lab: LabView, element: str) -> tuple[str, Data]:
        names = places.names(element)
        before = {n: lab.sysctl(n, key) for n in names}
        for n in names:
            lab.set_sysctls(n, {key: value})
        return f"{what} on {', '.join(names)}", {"before": before}

    def undo(lab: LabView, element: str, data: Data) -> None:
        for n, old in data["before"].items():
            lab.set_sysctls(n, {key: old})

    return apply, undo


_l3, _unl3 = _sysctl_fault("net.ipv4.fib_multipath_hash_policy", 0, "L3-only ECMP hashing (hash policy 0)")


def _bfd_off(lab: LabView, element: str) -> tuple[str, Data]:
    """BFD that does not detect in time: the profile's timers at 3 s × 50 (150 s), far beyond
    BGP's hold time, so a gray failure lasts until the hold timer expires. (Taking BFD off the
    peer group, or shutting the profile down, resets every BGP session, and FRR 8.4 has been
    seen to leave an unnumbered one waiting minutes for its peer's link-local address
    afterwards; a timer change is negotiated by BFD's poll sequence and resets nothing. Slower
    timers would make the way back as slow: a peer learns the new ones from its next packet.)"""
    names = places.names(element)
    sabotage.bfd_timers(lab, names, BFD_NEVER_MS, BFD_NEVER_MULT)
    return (f"BFD detection {BFD_NEVER_MS // 1000} s × {BFD_NEVER_MULT} on {', '.join(names)}: it never fires "
            "before BGP's hold time, so a gray failure lasts that long", {})


def _bfd_on(lab: LabView, element: str, data: Data) -> None:
    """Back to the declared timers, and waited for: each session runs them once the peer's next
    packet (at the old rate) has said so."""
    bfd = lab.plan.fabric.cluster.bfd
    names = places.names(element)
    sabotage.bfd_timers(lab, names, bfd.interval_ms, bfd.multiplier)

    def declared() -> bool:
        for n in names:
            for p in json.loads(lab.vtysh(n, "show bfd peers json") or "[]"):
                if (p.get("remote-transmit-interval"), p.get("remote-detect-multiplier")) != (bfd.interval_ms,
                                                                                              bfd.multiplier):
                    return False
        return True

    _until(lab, declared, f"every BFD session of {', '.join(names)} to run {bfd.interval_ms} ms × {bfd.multiplier}")


BFD_NEVER_MS, BFD_NEVER_MULT = 3000, 50


def _slow(lab: LabView, element: str) -> tuple[str, Data]:
    return sabotage.slow_bfd(lab, places.names(element)).description, {}


def _gray(lab: LabView, element: str) -> tuple[str, Data]:
    handle = lab.link(*places.pair(element))
    handle.gray()
    (node, port), _ = handle.ends
    _until(lab, lambda: not any(p.interface == port and p.up for p in lab.bfd_peers(node)),
           f"BFD on {node}:{port} to go down")
    return f"gray failure on {handle}: every frame dropped both ways, carriers up", {}


def _ungray(lab: LabView, element: str, data: Data) -> None:
    lab.link(*places.pair(element)).heal()


def _mtu(lab: LabView, element: str) -> tuple[str, Data]:
    node, port = places.end(element)
    old = lab.mtus(node).get(port)
    if old is None:
        raise InputError(f"--on {element}: {node} has no interface {port}")
    lab.ns_exec(node, ["ip", "link", "set", port, "mtu", "1500"], check=True)
    return f"{node}:{port} MTU {old} -> 1500 (a RoCE frame no longer fits)", {"mtu": old}


def _unmtu(lab: LabView, element: str, data: Data) -> None:
    node, port = places.end(element)
    lab.ns_exec(node, ["ip", "link", "set", port, "mtu", str(data["mtu"])], check=True)


def _config_db_fault(what: str, change: Callable[[LabView, str, str, dict], tuple[str, str, str, str]]):
    """A switch's running CONFIG_DB changed by one field, as a hand edit (or a bad push) does."""
    def apply(lab: LabView, element: str) -> tuple[str, Data]:
        node, port = places.end(element) if ":" in element else (element, "")
        table, key, field, value = change(lab, node, port, lab.running_config_db(node))
        old = lab.set_config_db(node, table, key, field, value)
        return f"{node}: {table}|{key} {field} {old} -> {value} ({what})", {"at": [table, key, field], "old": old}

    def undo(lab: LabView, element: str, data: Data) -> None:
        node = element.partition(":")[0]
        lab.set_config_db(node, *data["at"], data["old"])

    return apply, undo


def _pfc_change(lab: LabView, node: str, port: str, db: dict) -> tuple[str, str, str, str]:
    roce = lab.plan.fabric.cluster.lossless.roce_priority
    port = port or next(iter(db.get("PORT_QOS_MAP", {})), "")
    if port not in db.get("PORT_QOS_MAP", {}):
        raise InputError(f"{node}:{port} has no PORT_QOS_MAP row (no lossless port): pick a BE port")
    return "PORT_QOS_MAP", port, "pfc_enable", str((roce + 1) % 8)


def _dscp_change(lab: LabView, node: str, port: str, db: dict) -> tuple[str, str, str, str]:
    lossless = lab.plan.fabric.cluster.lossless
    maps = db.get("DSCP_TO_TC_MAP", {})
    if not maps:
        raise InputError(f"{node} has no DSCP_TO_TC_MAP: pick a BE switch")
    return "DSCP_TO_TC_MAP", next(iter(maps)), str(lossless.roce_dscp), "0"


_pfc, _unpfc = _config_db_fault("PFC on the wrong priority: RoCE is no longer lossless", _pfc_change)
_dscp, _undscp = _config_db_fault("RoCE's DSCP mapped to the lossy TC 0", _dscp_change)


def _acl(lab: LabView, leaf: str) -> tuple[str, Data]:
    deny = next((e for e in lab.plan.acl if e.action == "deny"), None) or lab.plan.acl[0]
    done = sabotage.flip_acl_entry(lab, leaf, deny.name)
    return done.description, {"entry": deny.name}


def _unacl(lab: LabView, leaf: str, data: Data) -> None:
    sabotage.flip_acl_entry(lab, leaf, data["entry"])  # flipped again is as declared


def _vlan(lab: LabView, element: str) -> tuple[str, Data]:
    leaf, port = places.end(element)
    own = next((t.vni for t in lab.plan.tenants for m in t.members if (m.leaf, m.leaf_port) == (leaf, port)), None)
    other = next((t.vni for t in lab.plan.tenants if t.vni != own and leaf in t.leaves), None)
    if own is None or other is None:
        raise InputError(f"--on {element}: not a member port on a leaf with another tenant's bridge")
    return sabotage.merge_tenants(lab, leaf, port, other).description, {"own": own}


def _unvlan(lab: LabView, element: str, data: Data) -> None:
    sabotage.move_port(lab, *places.end(element), data["own"])


def _routed(lab: LabView, leaf: str) -> tuple[str, Data]:
    vni = next((t.vni for t in lab.plan.tenants if leaf in t.leaves), None)
    if vni is None:
        raise InputError(f"--on {leaf}: no tenant has a bridge on it")
    return sabotage.route_tenant(lab, leaf, vni).description, {"vni": vni}


def _unrouted(lab: LabView, leaf: str, data: Data) -> None:
    sabotage.unroute_tenant(lab, leaf, data["vni"])


FAULTS: tuple[Fault, ...] = (
    Fault("swapped-cables", "cabling", "two NICs of a GPU node plugged into each other's leaf ports", "cabling",
          "NODE:PORT,NODE:PORT", places.two_rail_nics, _swap, _unswap),
    Fault("rogue-cable", "cabling", "a cable nobody planned between two switches' free ports", "cabling",
          "SWITCH,SWITCH", places.fe_and_be_switch, _rogue, _unrogue),
    Fault("stray-cable", "isolation", "an FE leaf cabled to a BE leaf and brought into BGP", "isolation",
          "SWITCH,SWITCH", places.fe_and_be_switch, _stray, _unstray),
    Fault("route-leak", "isolation", "a GPU node that forwards, and its FE leaf routing the BE range to it",
          "isolation", "HOST", places.fe_host, _leak, _unleak),
    Fault("l3-hashing", "ecmp", "ECMP hashing on addresses only: RoCE's few flows land on few uplinks", "ecmp",
          "SWITCH[,SWITCH...]", places.be_switches, _l3, _unl3),
    Fault("bfd-off", "failover", "BFD too slow to matter (3 s × 50): a gray failure lasts BGP's hold time", "failover",
          "SWITCH[,SWITCH...]", places.be_switches, _bfd_off, _bfd_on),
    Fault("slow-bfd", "failover", "BFD at 1000 ms × 3, copied from a campus profile", "failover",
          "SWITCH[,SWITCH...]", places.be_switches, _slow, _bfd_on),
    Fault("gray-link", "failover", "a link that drops every frame both ways while its carrier stays up", "ecmp",
          "NODE,NODE", places.be_uplink, _gray, _ungray),
    Fault("small-mtu", "lossless", "a BE port's MTU at 1500: RoCE frames at the RoCE MTU no longer fit", "lossless",
          "SWITCH:PORT", places.be_host_port, _mtu, _unmtu),
    Fault("pfc-priority", "lossless", "PFC enabled on the wrong priority in a port's QoS map", "lossless",
          "SWITCH[:PORT]", places.be_host_port, _pfc, _unpfc),
    Fault("dscp-map", "lossless", "RoCE's DSCP mapped to a lossy traffic class", "lossless",
          "SWITCH", lambda plan: places.first(plan, Role.BE_LEAF), _dscp, _undscp),
    Fault("acl-flip", "tenants", "an edge ACL deny rule typed as permit on one leaf", "tenants",
          "LEAF", places.vtep, _acl, _unacl),
    Fault("wrong-vlan", "tenants", "a tenant member's leaf port in another tenant's VLAN", "tenants",
          "LEAF:PORT", places.two_tenant_port, _vlan, _unvlan),
    Fault("tenant-routed", "tenants", "a leaf routing a tenant's segment into the underlay (an SVI, no VRF)",
          "tenants", "LEAF", places.vtep, _routed, _unrouted),
)
BY_NAME = {f.name: f for f in FAULTS}


def fault(name: str) -> Fault:
    if name not in BY_NAME:
        raise InputError(f"unknown fault {name!r}; the faults are: {', '.join(BY_NAME)} (fablab faults)")
    return BY_NAME[name]


# --------------------------------------------------------------------------- in place: the lab's faults.json

def in_place(lab: LabView) -> list[dict]:
    path = lab.run_dir / STORE
    return json.loads(path.read_text()) if path.exists() else []


def _save(lab: LabView, entries: list[dict]) -> None:
    path = lab.run_dir / STORE
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(entries, indent=2))
    tmp.replace(path)


def break_(lab: LabView, name: str, on: str | None = None, hidden: bool = False) -> dict:
    """Apply fault `name` on `on` (its default element when None); the entry kept for `fix`.
    `hidden`: a mystery's, which listings do not name."""
    f = fault(name)
    element = on or f.default(lab.plan)
    if element is None:
        raise InputError(f"{name}: {lab.plan.name} has nowhere to put it by default; give --on {f.on}")
    if any(e["fault"] == name and e["on"] == element for e in in_place(lab)):
        raise InputError(f"{name} on {element} is already in place: `fablab fix {lab.name} {name}` first")
    try:
        description, data = f.apply(lab, element)
    except KeyError as e:
        raise InputError(f"--on {element}: {lab.plan.name} has no {e.args[0]!r}") from None
    entry = {"fault": name, "on": element, "description": description, "data": data, "at": time.time(),
             "hidden": hidden}
    _save(lab, in_place(lab) + [entry])
    return entry


SETTLE_S = 90.0  # a healed link's BGP session back (BFD, then BGP's connect retry), with room on a busy machine


def fix(lab: LabView, name: str | None = None, settle_s: float = SETTLE_S) -> list[dict]:
    """Undo fault `name` wherever it is (every fault for None), newest first, then wait until
    the fabric has converged again (every session up, every route at its width), so that a
    check run next judges the lab, not its recovery; what was undone."""
    entries = in_place(lab)
    if name is not None:
        fault(name)
    undone, kept = [], list(entries)
    for entry in reversed(entries):
        if name is not None and entry["fault"] != name:
            continue
        try:
            BY_NAME[entry["fault"]].undo(lab, entry["on"], entry["data"])
        except HarnessError as e:
            _save(lab, kept)
            raise HarnessError(f"undoing {entry['fault']} on {entry['on']} failed: {e}") from e
        kept.remove(entry)
        undone.append(entry)
    _save(lab, kept)
    if name is None or not any(e.get("hidden") for e in kept):
        (lab.run_dir / MYSTERY).unlink(missing_ok=True)
    if undone and not kept:
        missing: list = []

        def converged() -> bool:
            missing[:] = lab.shortfalls()
            return not missing

        wait.until(converged, settle_s, "convergence after fix", interval=0.5,
                   error=lambda: LabError(f"undone, but the lab has not converged {settle_s:.0f} s later: "
                                          + "; ".join(str(m) for m in missing[:3])))
    return undone


def shown(lab: LabView) -> list[dict]:
    """The faults in place as a listing may show them: a mystery's as such, unnamed."""
    return [e if not e.get("hidden") else {"fault": "mystery", "on": "?", "description": "a hidden fault (or none)"}
            for e in in_place(lab)]
