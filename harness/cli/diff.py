"""`fablab diff TOPOLOGY DIR|LAB`: an engineer's configs (a directory laid out as `fablab render`
writes it, or what a running lab's switches hold now) against what the declaration renders,
by behaviour (harness/core/meaning). Exit 0 when they agree, 3 on any difference."""
from __future__ import annotations

import argparse
import json
import re
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from rich.markup import escape
from rich.table import Table

from harness.catalog import TOPOLOGY_HELP, load_fabric
from harness.cli.console import out
from harness.core.errors import InputError
from harness.core.plan import Plan, make_plan

if TYPE_CHECKING:
    from harness.core.meaning.difference import Difference


@dataclass(frozen=True)
class Found:
    """What `fablab diff` found: the differences, how many switches, and how FRR read the files
    (their refused lines; why fablab's model read them instead, where FRR could not)."""
    differences: list[Difference]
    switches: int
    refused: list[str] = field(default_factory=list)  # file:line: `statement`: FRR's message
    note: str = ""


def differences(topology: str, directory: Path) -> tuple[list[Difference], int]:
    """Every difference between DIR's configs and TOPOLOGY's render, and how many switches."""
    found = directory_differences(topology, directory)
    return found.differences, found.switches


def directory_differences(topology: str, directory: Path) -> Found:
    """DIR's configs against TOPOLOGY's render, each frr.conf as FRR itself reads it."""
    # here, not at the top: every fablab command builds the parser that names this module
    from harness.core.meaning.compare import diff_frr, fold_uncabled
    from harness.core.meaning.configdb import diff_config_db
    from harness.core.meaning.difference import Difference
    from harness.core.meaning.frr_form import FrrForm
    from harness.plumbing.frr_reader import readings
    from harness.render import switch_configs
    from harness.render.configs import numbered_by, read_configs, refused_at

    directory = Path(directory)
    if not directory.is_dir():
        raise InputError(f"{directory} is not a directory: give one laid out as `fablab render` writes it "
                         "(configs/<switch>/frr.conf and config_db.json), or a running lab's name")
    plan = make_plan(load_fabric(topology))
    switches = [s.name for s in plan.switches]
    routed = [h.name for h in plan.hosts if h.routed]
    configs = read_configs(directory, switches + routed)  # the one reading of DIR (render/configs.py)
    if all(name in configs.frr for name in switches):  # judged in the configs' own numbering, audited first
        own = replace(configs, frr={n: configs.frr[n] for n in switches},
                      config_db={n: t for n, t in configs.config_db.items() if n in switches})
        plan = numbered_by(plan, own)  # a numbering fault: exit 2, naming device and port
    ours = switch_configs(plan)
    found: list[Difference] = _strays(plan, topology, directory)
    files = {name: directory / "configs" / name / "frr.conf" for name in switches + routed}
    theirs = dict(configs.frr)
    # FRR reads the engineer's files; fablab's render is already in FRR's form (a lab booted from it
    # diffs as the same as FRR runs it: `fablab diff T LAB`), and a file the same as the render to
    # the byte does the same, so FRR reads only the others
    other = [n for n, t in theirs.items() if t != ours[f"configs/{n}/frr.conf"]]
    read = readings({f"theirs/{n}": theirs[n] for n in other})
    same = {f"theirs/{n}": FrrForm(t) for n, t in theirs.items() if n not in other}
    same |= {f"ours/{n}": FrrForm(ours[f"configs/{n}/frr.conf"]) for n in theirs}
    forms = {**same, **read.files}
    for name in files:
        label = f"{directory}/configs/{name}/frr.conf"
        db = directory / "configs" / name / "config_db.json"
        if name not in theirs:
            if name not in routed:  # a dual-homed host's BGP is compared where DIR has it
                found.append(Difference(name, label, "switch", "configs", "an frr.conf, or BGP tables in its "
                                        "config_db.json (fablab renders an frr.conf)", "absent"))
            continue
        yours = forms[f"theirs/{name}"]
        if not files[name].is_file():  # BGP in CONFIG_DB (unified mode): the rows, not lines, say it
            label, yours = f"{db} (its BGP tables)", replace(yours, origin=())
        found += diff_frr(plan, name, forms[f"ours/{name}"], yours, label)
        if name not in routed and name in configs.config_db:  # optional: the netns runtime reads only frr.conf
            found += fold_uncabled(plan, name, diff_config_db(
                name, json.loads(ours[f"configs/{name}/config_db.json"]), configs.config_db[name], str(db)))
    refused = [refused_at(directory / "configs" / key.split("/", 1)[1], r) for key, r in read.refused()
               if key.startswith("theirs/")]
    return Found(found, len(plan.switches), refused, read.note)


def _strays(plan: Plan, topology: str, directory: Path) -> list[Difference]:
    """A switch directory the declaration has no switch for: never ignored in silence."""
    from harness.core.meaning.difference import Difference

    configs = directory / "configs"
    if not configs.is_dir():
        raise InputError(f"{directory} has no configs/ directory: lay it out as `fablab render` does "
                         "(configs/<switch>/frr.conf and config_db.json)")
    names = {sw.name for sw in plan.switches}
    hosts = {h.name for h in plan.hosts}
    out = []
    for d in sorted(p for p in configs.iterdir() if p.is_dir() and p.name not in names):
        if d.name in hosts:
            continue  # a routed host's configs, which fablab renders itself
        known = ", ".join(sorted(names)[:8]) + (", ..." if len(names) > 8 else "")
        out.append(Difference(d.name, f"{configs}/{d.name}", "switch", "switches",
                              f"no switch {d.name} in {topology} (its switches: {known})", "a directory of configs"))
    return out


def lab_differences(topology: str, lab_name: str) -> tuple[list[Difference], int]:
    """A running lab's configs, as its switches hold them now, against TOPOLOGY's render."""
    # here, not at the top: every fablab command builds the parser that names this module
    from harness.core.meaning.compare import diff_frr, fold_uncabled
    from harness.core.meaning.configdb import diff_config_db
    from harness.core.meaning.difference import Difference
    from harness.render import switch_configs

    from harness.core.meaning.frr_form import FrrForm
    from harness.lab import Lab
    from harness.plumbing.frr_reader import peer_facts

    lab = Lab.attach(lab_name)
    plan = make_plan(load_fabric(topology))
    ours = switch_configs(plan)
    running = {s.name for s in lab.plan.switches}
    found: list[Difference] = []
    for sw in plan.switches:
        if sw.name not in running:
            found.append(Difference(sw.name, f"lab {lab_name}", "switch", "switches", f"a switch of {topology}",
                                    f"not in lab {lab_name}"))
            continue
        text = lab.vtysh(sw.name, "show running-config")
        # bgpd's own view of each neighbour, as for a file FRR read: what its running config hides
        peers = peer_facts(lab.vtysh(sw.name, "show bgp vrf all neighbors json")) if _LEGACY_BFD.search(text) else {}
        found += diff_frr(plan, sw.name, ours[f"configs/{sw.name}/frr.conf"], FrrForm(text, peers=peers),
                          f"{lab_name}:{sw.name} running-config")
        db = lab.running_config_db(sw.name)
        if db:
            found += fold_uncabled(plan, sw.name, diff_config_db(
                sw.name, json.loads(ours[f"configs/{sw.name}/config_db.json"]), json.dumps(db, indent=4, sort_keys=True),
                f"{lab_name}:{sw.name} CONFIG_DB"))
    for name in sorted(running - {s.name for s in plan.switches}):
        found.append(Difference(name, f"lab {lab_name}", "switch", "switches", f"no switch {name} in {topology}",
                                "a running switch"))
    return found, len(plan.switches)


# a neighbour's BFD switched on without a profile: its timers may be legacy ones its running config
# does not write out (bgpd/bgp_bfd.c)
_LEGACY_BFD = re.compile(r"(?m)^\s*neighbor \S+ bfd$")


def cmd_diff(args: argparse.Namespace) -> int:
    target = Path(args.target)
    if target.is_dir():
        found = directory_differences(args.topology, target)
    else:
        from harness.lab import Lab

        if args.target not in Lab.names():
            raise InputError(f"{args.target!r} is neither a directory nor a running lab (running: "
                             f"{', '.join(Lab.names()) or 'none'}); `fablab render TOPOLOGY -o DIR` lays out a "
                             "directory")
        found = Found(*lab_differences(args.topology, args.target))  # FRR's own running config already
    if args.json:
        print(json.dumps({"topology": args.topology, "target": args.target, "switches": found.switches,
                          "read_by": "fablab's model" if found.note else "FRR", "note": found.note,
                          "frr_refused": found.refused,
                          "differences": [asdict(d) | {"source": d.source} for d in found.differences]}, indent=2))
        return 3 if found.differences or found.refused else 0
    if found.note:
        out.print(f"[yellow]note:[/yellow] {escape(found.note)}", soft_wrap=True)
    # Behaviour is judged as FRR runs the file, without these lines; a file with lines the
    # router refuses is still not the file its author meant, so it does not pass (exit 3).
    for line in found.refused:
        out.print(f"[yellow]refused:[/yellow] FRR refuses {escape(line)}", soft_wrap=True)
    if found.refused:
        out.print(f"{len(found.refused)} line(s) FRR refuses: behaviour judged as FRR runs the file without them",
                  soft_wrap=True)
    if not found.differences:
        out.print(f"no difference: {found.switches} switches of {args.topology}, by behaviour (BGP sessions, what they "
                  "accept and advertise, multipath, BFD, timers; QoS, PFC, buffers, MTUs, ACLs, VXLAN)"
                  + (f"; exit 3 for the {len(found.refused)} refused line(s)" if found.refused else ""), soft_wrap=True)
        return 3 if found.refused else 0
    table = Table("switch", "what", "behaviour", "expected", "found", "where",
                  title=f"{len(found.differences)} difference(s)")
    for d in found.differences:
        table.add_row(d.switch, d.subject, d.behaviour, d.expected or "—", d.found or "—", d.source)
    out.print(table)
    behaviours = sorted({d.behaviour for d in found.differences})
    out.print(f"{len(found.differences)} difference(s) on {len({d.switch for d in found.differences})} of "
              f"{found.switches} switches: " + ", ".join(behaviours), soft_wrap=True)
    return 3


def register(sub) -> None:
    s = sub.add_parser("diff", help="compare switch configs with what a declaration renders, by behaviour "
                                    "(exit 3 on a difference, or a line FRR refuses)")
    s.add_argument("topology", help=TOPOLOGY_HELP + ": the declaration that judges")
    s.add_argument("target", help="a directory laid out as `fablab render` writes it (configs/<switch>/frr.conf "
                                  "and config_db.json, or config_db.json alone with BGP in its tables as SONiC's "
                                  "unified mode holds it), or a running lab (what its switches hold now); FRR itself "
                                  "reads each frr.conf, without root")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_diff)
