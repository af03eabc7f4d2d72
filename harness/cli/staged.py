"""`fablab check LAB --via ssh` and `fablab check --inventory FILE`: the read-only checks on a
fabric reached over SSH (a lab's own mgmt plane from its management station, or a staged
fabric fablab did not boot), and what the report says about reaching it: the inventory, each
node's address and host key, the nodes not reached and why, and the commands each check ran.
Credentials (key contents, passwords) are never read into it."""
from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path

from rich.markup import escape

from harness.cli.console import out
from harness.core.errors import InputError
from harness.core.inputfile import read_text
from harness.core.inventory import Reach, check_against, parse_inventory
from harness.core.model import Role
from harness.core.plan import Plan


def load_reach(path: str) -> tuple[Reach, Plan]:
    """The inventory at `path` and the plan of the declaration it names, checked against each other."""
    from harness.catalog import load_fabric
    from harness.core.plan import make_plan

    file = Path(path)
    text = read_text(file)
    inventory = parse_inventory(text, path)
    topology = inventory.topology
    if not Path(topology).is_absolute() and (file.parent / topology).exists():
        topology = str(file.parent / topology)  # a declaration beside the inventory
    plan = make_plan(load_fabric(topology))
    inventory = check_against(inventory, {n.name for n in plan.fabric.nodes}, {h.name for h in plan.hosts})
    known = str(Path(inventory.known_hosts).expanduser()) if inventory.known_hosts else None
    if known is not None and not Path(known).is_file():
        raise InputError(f"{path}: known_hosts: no file {known}")
    return Reach(inventory, known_hosts=known), plan


def run(args: argparse.Namespace, checks, reach: Reach, plan: Plan, name: str, about: dict, report, provenance) -> int:
    """The checks over SSH, reported as `fablab check` reports, with remote.json beside the results."""
    from harness.checks.registry import run_checks
    from harness.cli.console import progress_printer
    from harness.remote.view import RemoteView
    from harness.report.results import Results

    results = Results(Path(args.results), name, provenance)
    printer = progress_printer(not args.json)
    with RemoteView(plan, reach, name, allow_traffic=args.allow_traffic, allow_faults=args.allow_faults) as view:
        def progress(phase: str, detail: str) -> None:
            view.ssh.case = phase
            printer(phase, detail)

        verdicts = run_checks(view, checks, results, progress)
        doc = reached(view, reach, plan)
    (results.directory / "remote.json").write_text(json.dumps(doc, indent=2))
    results.finish()
    code = report(args, f"fablab check {name}", verdicts, plan, {**about, "reach": _short(doc)}, results)
    if not args.json:
        managed = sum(1 for n in plan.fabric.nodes if n.role is not Role.OOB)  # the OOB switch has no mgmt address
        out.print(f"over SSH from {escape(doc['from'])}: {len(doc['reached'])}/{managed} nodes reached, "
                  f"{sum(len(c) for c in doc['commands'].values())} commands"
                  + (f"; not reached: {escape(', '.join(f'{n} ({w})' for n, w in doc['unreachable'].items()))}"
                     if doc["unreachable"] else "")
                  + f"; each check's commands: {results.directory}/remote.json", soft_wrap=True)
    return code


def reached(view, reach: Reach, plan: Plan) -> dict:
    """What the report says about reaching the fabric: no key, no password, only what answered."""
    by_case: dict[str, list[dict]] = defaultdict(list)
    for r in view.ssh.transcript:
        by_case[r.case or "-"].append({"node": r.node, "address": r.address, "command": r.command,
                                       "exit_status": r.exit_status, "seconds": r.seconds})
    listed = {n.name for n in reach.inventory.nodes}
    unreachable = dict(view.ssh.unreachable)
    unreachable.update({n.name: "not in the inventory" for n in plan.fabric.nodes
                        if n.name not in listed and n.role is not Role.OOB})
    return {"inventory": reach.inventory.source, "topology": reach.inventory.topology,
            "from": f"namespace {reach.station_netns}" if reach.station_netns else "this machine",
            "host_keys": "the lab's own (known_hosts)" if reach.known_hosts else "accepted as first seen",
            "reached": {n.name: {"address": n.address, "kind": str(n.kind), "user": n.user,
                                 "host_key": view.ssh.fingerprints[n.name]}
                        for n in reach.inventory.nodes if n.name in view.ssh.fingerprints},
            "unreachable": unreachable, "commands": dict(by_case)}


def _short(doc: dict) -> dict:
    return {k: doc[k] for k in ("inventory", "from", "unreachable")} | {"reached": len(doc["reached"])}


def cmd_inventory(args: argparse.Namespace) -> int:
    """A running lab's mgmt plane written as an inventory: what `fablab check --inventory` reads."""
    from dataclasses import replace

    from harness.core.inventory import inventory_yaml
    from harness.lab import Lab

    lab = Lab.attach(args.lab)
    reach = lab.mgmt_reach()
    topology = lab.state.topology
    if Path(topology).exists():
        topology = str(Path(topology).resolve())
    inventory = replace(reach.inventory, topology=topology, known_hosts=reach.known_hosts)
    text = inventory_yaml(inventory, f"the mgmt plane of lab {lab.name}, reached from namespace {reach.station_netns}: "
                                     f"ip netns exec {reach.station_netns} fablab check --inventory FILE")
    if args.output:
        Path(args.output).write_text(text)
        out.print(f"wrote {escape(args.output)}: {len(inventory.nodes)} nodes; next: ip netns exec "
                  f"{escape(reach.station_netns or '')} fablab check --inventory {escape(args.output)}", soft_wrap=True)
    else:
        print(text, end="")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    s = sub.add_parser("inventory", help="write a running lab's mgmt plane as an inventory (fablab check --inventory)")
    s.add_argument("lab")
    s.add_argument("-o", "--output", metavar="FILE", help="the file to write (default: standard output)")
    s.set_defaults(func=cmd_inventory)
