"""Mystery mode: one hidden fault (or none), chosen by a seed, for a learner to find by
reasoning: the first look (`fablab status`, `fablab view`) shows a healthy lab, the checks show
which claim fails, `fablab vtysh` / `exec` / `shell` show why. Hints narrow one step at a time
(the symptom and the check that measures it; the plane and tier; how to find the element);
`--answer` judges a guess without giving the answer away; `--reveal` gives it.

The fault goes in as `fablab break` would put it, marked hidden (the lab's faults.json says a
mystery is in place, not which); `fablab fix LAB --all` takes it out like any other and ends
the mystery (harness.faults.store removes mystery.json).
"""
from __future__ import annotations

import json
import random
from dataclasses import dataclass
from enum import Enum

from harness.core.codec import from_plain, to_plain
from harness.core.errors import InputError, LabError
from harness.faults.protocol import Fault
from harness.faults.store import MYSTERY, SETTLE_S, break_, in_place
from harness.faults.table import BY_NAME, check_of, fault
from harness.plumbing import wait
from harness.plumbing.labview import LabView

STORE = MYSTERY
NONE_WEIGHT = 1  # "nothing is wrong" is one of the answers, as often as any one fault
NONE = "none"  # the answer `--answer` takes for "nothing is wrong"

# The faults a mystery draws from, in the order a seed indexes them (a seed keeps choosing the
# same answer: docs/learn/13-mystery.md relies on seed 1). Only faults the first look does not
# give away: with each of these in place and settled, `fablab status` and `fablab view` read as
# they do on a healthy lab (tests/integration/test_mystery_lab.py holds every one to that).
# Left out because status is right to show what they do, and showing it names the place:
# stray-cable(-unfiltered) (a session nobody planned: "3/2" on its two switches), gray-link and
# bfd-removed (sessions down on the switches concerned). They are lessons 4 and 8's.
DRAWN = ("swapped-cables", "rogue-cable", "route-leak", "l3-hashing", "bfd-off", "slow-bfd", "forwarding-blackhole",
         "small-mtu", "pfc-priority", "dscp-map", "acl-flip", "wrong-vlan", "tenant-routed")
GIVEN_AWAY = ("stray-cable", "stray-cable-unfiltered", "gray-link", "bfd-removed")

# Hint 1: the symptom, by the check that measures it. One text per check, not per fault, so that
# it narrows to a class of faults (every fault a check catches shares it), never to the answer.
SYMPTOMS = {
    "cabling": "every session is up, yet what is plugged in is not what was planned. Compare the cables in the "
               "kernel with the plan",
    "isolation": "every session is up, yet something can cross between planes that must never meet. Probe the "
                 "boundaries",
    "ecmp": "every session is up and every route at full width, yet RoCE traffic is not carried as it should be. "
            "Send QPs over a leaf's uplinks and read the figures per uplink (how many QPs, how many lost)",
    "failover": "nothing is wrong while every link is healthy: the fault shows only when a link fails gray. Fail "
                "one and time the loss (this check fails links for real: it takes a while)",
    "lossless": "routing is healthy; what is off is RoCE's lossless contract on the BE (PFC, DSCP, MTU). Audit it "
                "hop by hop and put RoCE frames on the wire",
    "tenants": "routing is healthy; what is off is the FE's tenancy: a segment or an edge ACL does not do what "
               "the declaration says. Send frames across tenants and count the ACL entries",
}


@dataclass(frozen=True)
class Clue:
    """What hints 2 and 3 say of one fault: where to look (plane and tier, never the node) and
    how to find the element there (the command and what to compare, never its name)."""

    plane: str
    find: str


CLUES = {
    "swapped-cables": Clue(
        "the BE, at its edge: between one GPU node and its rail leaves",
        "read the cabling check's figures: each end it names is plugged in elsewhere than planned. Two ends that "
        "traded places are one fault, not two; `fablab show ai-cluster` says where each should be"),
    "rogue-cable": Clue(
        "between the planes: a cable joining an FE switch and a BE switch",
        "the cabling check names the unknown cable's two ends. Is anything configured on it? `fablab vtysh LAB "
        "SWITCH -c 'show bgp summary'` on either end: no session on that port tells a rogue cable from a stray one"),
    "route-leak": Clue(
        "the FE, at its edge: an FE leaf and a GPU node below it",
        "the isolation check names a probe that crossed. Follow it: `fablab vtysh LAB LEAF -c 'show ip route'` on "
        "the FE leaves (a route to the BE's range that BGP did not put there), then `fablab exec LAB NODE -- sysctl "
        "net.ipv4.ip_forward` on the node it points to"),
    "l3-hashing": Clue(
        "the BE, on every switch, leaves and spines alike",
        "a RoCE QP differs from the next only in its UDP source port: does the hash look at it? `fablab exec LAB "
        "SWITCH -- sysctl net.ipv4.fib_multipath_hash_policy` on the BE switches (1 hashes on L4 ports, 0 on "
        "addresses only)"),
    "forwarding-blackhole": Clue(
        "the BE, one leaf's uplink to a spine (a leaf to spine port)",
        "the ecmp check's figures name the uplink whose QPs were lost, while status shows its BGP and BFD up: the "
        "control plane is fine, forwarding is not. `fablab exec LAB LEAF -- nft list ruleset` shows what drops "
        "forwarded frames out of that port"),
    "bfd-off": Clue(
        "the BE, on every switch, leaves and spines alike",
        "how fast a gray failure is seen is BFD's interval × multiplier: `fablab vtysh LAB SWITCH -c 'show bfd "
        "peers'` on a BE switch, against the timers `fablab show ai-cluster` declares; `fablab faults` tells the "
        "BFD faults apart by their timers"),
    "slow-bfd": Clue(
        "the BE, on every switch, leaves and spines alike",
        "how fast a gray failure is seen is BFD's interval × multiplier: `fablab vtysh LAB SWITCH -c 'show bfd "
        "peers'` on a BE switch, against the timers `fablab show ai-cluster` declares; `fablab faults` tells the "
        "BFD faults apart by their timers"),
    "small-mtu": Clue(
        "the BE, at its edge: one leaf's port facing a GPU",
        "the lossless audit names the switch, the port and what it found against what is declared; `fablab exec "
        "LAB LEAF -- ip -br link` (with `-d` for the MTU) shows it in the kernel"),
    "pfc-priority": Clue(
        "the BE, at its edge: one leaf's port facing a GPU",
        "the lossless audit names the switch, the port and the CONFIG_DB field it found otherwise than declared "
        "(which table: a port's QoS map or the switch's DSCP map tells the lossless faults apart)"),
    "dscp-map": Clue(
        "the BE, one leaf, switch-wide (not one port)",
        "the lossless audit names the switch and the CONFIG_DB field it found otherwise than declared (which "
        "table: a port's QoS map or the switch's DSCP map tells the lossless faults apart)"),
    "acl-flip": Clue(
        "the FE, one VTEP leaf, switch-wide (its edge ACL)",
        "the tenants check names the ACL entry decided otherwise than declared; `fablab exec LAB LEAF -- nft list "
        "ruleset` on each VTEP leaf shows that entry's verdict, and the other leaf is the control"),
    "wrong-vlan": Clue(
        "the FE, one VTEP leaf's port facing a tenant member",
        "the tenants check names frames that reached another tenant; `fablab exec LAB LEAF -- ip -br link` on the "
        "VTEP leaves shows which bridge (`master`) each member port is in, against `fablab show ai-cluster`"),
    "tenant-routed": Clue(
        "the FE, one VTEP leaf, switch-wide (its routing, not a port)",
        "the tenants check names frames that left their segment for the underlay; `fablab vtysh LAB LEAF -c 'show "
        "ip route'` on the VTEP leaves: a tenant's subnet in the default table, reachable from the underlay"),
}
NOTHING = Clue("none: FE, BE and management run as declared",
               f"nothing to find: `fablab mystery LAB --answer {NONE}`")


class Verdict(Enum):
    RIGHT = "right"  # the fault and where
    RIGHT_FAULT = "right fault"  # the fault, where not said
    WRONG_PLACE = "wrong place"  # the fault, somewhere else
    WRONG = "wrong"


@dataclass(frozen=True)
class Answer:
    verdict: Verdict
    fault: str  # as said: a fault's name, or NONE
    on: str | None  # as said

    @property
    def solved(self) -> bool:
        return self.verdict in (Verdict.RIGHT, Verdict.RIGHT_FAULT)


@dataclass(frozen=True)
class Mystery:
    seed: int
    fault: str | None  # None: nothing is wrong
    on: str | None
    description: str
    hints: int = 0  # how many were given


def candidates(lab: LabView) -> list[Fault | None]:
    """The faults this lab has a place for, and None (no fault)."""
    return [BY_NAME[n] for n in DRAWN if BY_NAME[n].default(lab.plan) is not None] + [None] * NONE_WEIGHT


def _load(lab: LabView) -> Mystery | None:
    path = lab.run_dir / STORE
    return from_plain(Mystery, json.loads(path.read_text())) if path.exists() else None


def _save(lab: LabView, m: Mystery) -> None:
    (lab.run_dir / STORE).write_text(json.dumps(to_plain(m), indent=2))


def start(lab: LabView, seed: int | None = None, settle_s: float = SETTLE_S) -> Mystery:
    """Put the seed's fault in (or none) and wait until the fabric has settled: a look taken
    while a cable is being moved would show the moment, and where, rather than the lab."""
    if _load(lab) is not None:
        raise InputError(f"a mystery is already in place in {lab.name}: `fablab mystery {lab.name} --reveal`, "
                         f"then `fablab fix {lab.name} --all`")
    if in_place(lab):
        raise InputError(f"{lab.name} has faults in place: `fablab fix {lab.name} --all` first, so that only the "
                         "mystery is wrong")
    seed = random.SystemRandom().randrange(10 ** 6) if seed is None else seed
    chosen = random.Random(seed).choice(candidates(lab))
    m = Mystery(seed, None, None, "nothing: the lab is as declared")
    if chosen is not None:
        entry = break_(lab, chosen.name, hidden=True)
        m = Mystery(seed, chosen.name, entry["on"], entry["description"])
    _save(lab, m)  # before the wait: `fix --all` ends it even if the lab never settles
    wait.until(lambda: not lab.shortfalls(), settle_s, "the lab to settle", interval=0.5,
               error=lambda: LabError(f"the mystery is in place but {lab.name} has not settled {settle_s:.0f} s "
                                      f"later: `fablab fix {lab.name} --all` ends it"))
    return m


def hints(lab_name: str, m: Mystery) -> tuple[str, ...]:
    """The hints for `m`, broadest first: the symptom and the check that measures it, then the
    plane and tier, then how to find the element. None names the fault or its node."""
    f = BY_NAME.get(m.fault) if m.fault else None
    if f is None:
        return ("the symptom: none. Status was healthy and no check a mystery's faults fail will fail, failover "
                f"included (fablab check {lab_name} --only failover is the slow one)",
                f"where: {NOTHING.plane}",
                "to find it: " + NOTHING.find.replace("LAB", lab_name))
    check = check_of(f.caught_by)
    clue = CLUES[f.name]
    return (f"the symptom: {SYMPTOMS[check]}: fablab check {lab_name} --only {check}",
            f"where: {clue.plane}",
            "to find it: " + clue.find.replace("LAB", lab_name))


def hint(lab: LabView) -> str:
    """The next hint (the last again once all are given), counted in mystery.json."""
    m = reveal(lab)
    given = hints(lab.name, m)
    n = min(m.hints, len(given) - 1)
    _save(lab, Mystery(m.seed, m.fault, m.on, m.description, n + 1))
    return f"hint {n + 1}/{len(given)}: {given[n]}"


def _ends(text: str) -> list[tuple[str, str]]:
    """A target as its ends, (node, port), in order; port "" where the text names none."""
    return sorted((node, port) for node, _, port in (part.partition(":") for part in text.split(",")))


def _same_place(said: str, hidden: str) -> bool:
    """The same ends; a port matches any where either side leaves it out (a rogue cable's
    hidden target may name only its nodes, and a learner who found the ports is not wrong)."""
    a, b = _ends(said), _ends(hidden)
    if len(a) != len(b):
        return False
    left = list(b)
    for node, port in a:
        match = next((e for e in left if e[0] == node and (not port or not e[1] or port == e[1])), None)
        if match is None:
            return False
        left.remove(match)
    return True


def answer(lab: LabView, said: str, on: str | None = None) -> Answer:
    """Judge a learner's answer (a fault's name, or NONE; `on` in the fault's --on form) against
    the mystery, without saying what it is."""
    m = reveal(lab)
    if said == NONE:
        if on is not None:
            raise InputError(f"--answer {NONE} is somewhere? nothing is wrong has no --on")
        return Answer(Verdict.RIGHT if m.fault is None else Verdict.WRONG, said, None)
    f = fault(said)  # an unknown name is bad input, not a wrong answer
    target = str(f.target(on)) if on is not None else None
    if f.name != m.fault:
        return Answer(Verdict.WRONG, said, target)
    if target is None:
        return Answer(Verdict.RIGHT_FAULT, said, None)
    return Answer(Verdict.RIGHT if _same_place(target, m.on or "") else Verdict.WRONG_PLACE, said, target)


def reveal(lab: LabView) -> Mystery:
    m = _load(lab)
    if m is None:
        raise InputError(f"no mystery in {lab.name}: fablab mystery {lab.name} [--seed N] starts one")
    return m
