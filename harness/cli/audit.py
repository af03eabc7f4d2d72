"""`fablab audit --against TOPOLOGY DIR` and `fablab audit LAB`: the lossless contract checked
hop by hop, and the FE tenant tables of every VTEP leaf, in a render's config_db.json files or
in a running lab's CONFIG_DB and kernel MTUs.

The judge is always a declaration: the one named by `--against`, or for a running lab the one
fablab recorded when it booted the lab. Never a file that travels with the configs under test
(a render's lossless.json is documentation only)."""
from __future__ import annotations

import argparse
import json
from dataclasses import asdict
from pathlib import Path

from rich.table import Table

from harness.catalog import load_fabric
from harness.cli.console import out
from harness.core.errors import InputError
from harness.lab import Lab
from harness.core.plan import make_plan


def _result(target: str, against: str | None):
    # a check module: loaded when it runs; one judge for a directory and a lab, on what was read from either
    from harness.checks.lossless import configs_of_dir, judge_audit, measure_audit
    from harness.render.lossless import contract_of

    plan = make_plan(load_fabric(against)) if against else None
    if Path(target).is_dir():
        if plan is None:
            raise InputError(f"{target} is a render directory: name the declaration its configs must meet, e.g. "
                             f"`fablab audit --against ai-cluster {target}` (a built-in name, a .py file or a cabling plan). "
                             "The lossless.json beside the configs travels with them, so it cannot judge them")
        return judge_audit(plan, configs_of_dir(Path(target), contract_of(plan)))
    if target in Lab.names():
        lab = Lab.attach(target)
        return judge_audit(plan or lab.plan, measure_audit(lab, plan))
    raise InputError(f"{target!r} is neither a render directory nor a running lab "
                     f"(running: {', '.join(Lab.names()) or 'none'}; `fablab render TOPOLOGY -o DIR` makes a directory)")


def cmd_audit(args: argparse.Namespace) -> int:
    result = _result(args.target, args.against)
    contract = result.contract
    if args.json:
        print(json.dumps({"passed": result.passed, "reason": result.reason, "against": args.against,
                          "switches": result.switches, "ports": result.ports, "links": result.links,
                          "vtep_leaves": result.vtep_leaves, "tenant_ports": result.tenant_ports,
                          "contract": {"lossless": asdict(contract.lossless), "be_switches": list(contract.be_switches)},
                          "findings": [asdict(f) for f in result.findings]}, indent=2))
        return 0 if result.passed else 3
    if result.findings:
        table = Table("node", "port", "table", "expected", "found", title=f"{len(result.findings)} finding(s)")
        for f in result.findings:
            table.add_row(f.node, f.port, f.table, f.expected, f.found)
        out.print(table)
    out.print(result.reason if result.passed else result.reason.split(" | ")[-1], soft_wrap=True)
    return 0 if result.passed else 3


def register(sub: argparse._SubParsersAction) -> None:
    s = sub.add_parser("audit", help="check the lossless contract (PFC, DSCP/TC/queue/PG, ECN, CNP, watchdog, "
                                     "buffers, MTU) hop by hop, and the FE tenant tables (VLAN, VXLAN, ACL) of every "
                                     "VTEP leaf, in a render directory or a running lab, against a declaration "
                                     "(exit 0 clean, 3 findings, 2 bad input)")
    s.add_argument("target", help="a `fablab render` output directory, or a running lab")
    s.add_argument("--against", metavar="TOPOLOGY",
                   help="the declaration to hold the configs to (built-in name, .py file or cabling plan); required for a "
                        "directory; a running lab defaults to the declaration it was booted from")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_audit)
