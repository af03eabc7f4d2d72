"""`fablab up | down | status | exec | link | clean`: running labs from the command line."""
from __future__ import annotations

import argparse
import json
import subprocess
from dataclasses import asdict
from pathlib import Path

from rich.markup import escape
from rich.table import Table

from harness.catalog import TOPOLOGY_HELP, load_fabric
from harness.core.budgets import CONVERGE_BASE_S, CONVERGE_PER_SWITCH_S, CONVERGE_SCALE_SWITCHES
from harness.cli.console import err, out, progress_printer
from harness.core.errors import HarnessError, InputError, TopologyError
from harness.core.kinds import LabPhase
from harness.lab import Lab
from harness.core.model import check_lab_name
from harness.core.plan import make_plan
from harness.cli.upconfigs import before_boot
from harness.render.configs import load_configs
from harness.runtime import RUNTIMES


def cmd_up(args: argparse.Namespace) -> int:
    plan = make_plan(load_fabric(args.topology))
    configs = load_configs(plan, args.configs) if args.configs else None  # before anything is booted
    down: list[str] = []
    not_applied: list[str] = []
    if configs is not None:  # said before anything boots
        plan, down, not_applied = before_boot(plan, configs, args)
    lab = Lab.up(plan, name=args.name, runtime=args.runtime, replace=args.replace,
                 progress=progress_printer(not args.json), timeout=args.timeout, topology=args.topology,
                 detached=True, configs=configs, mgmt_services=args.mgmt_services)
    found = 3 if lab.state.not_converged else 0  # the engineer's configs fall short of the plan; the lab is up
    summary = {"lab": lab.name, "topology": args.topology, "runtime": args.runtime,
               "configs": lab.state.configs or "fablab's render", "not_converged": lab.state.not_converged,
               "sessions_that_cannot_come_up": down, "config_db_not_applied": not_applied,
               "nodes": len(lab.plan.fabric.nodes), "switches": len(lab.plan.switches),
               "timings_s": {k: v for k, v in lab.state.timings.items() if k != "memory_mb"},
               "memory_mb": round(lab.state.timings.get("memory_mb", 0.0), 1), **lab.state.converged}
    if args.json:
        print(json.dumps(summary, indent=2))
        return found
    t = Table(title=f"lab {lab.name} is up ({args.topology}, {args.runtime})")
    t.add_column("phase")
    t.add_column("seconds", justify="right")
    for phase, seconds in summary["timings_s"].items():
        t.add_row(phase, f"{seconds:.2f}")
    out.print(t)
    if "bgp_up" in summary:
        routed = sum(1 for h in lab.plan.hosts if h.routed)
        speakers = f" and {routed} dual-homed hosts" if routed else ""
        out.print(f"{summary['nodes']} nodes, {summary['switches'] - routed} switches{speakers}; BGP sessions up "
                  f"{summary['bgp_up']}/{summary['bgp_expected']}, BFD {summary['bfd_up']}/{summary['bfd_expected']}; "
                  f"memory used {summary['memory_mb']:.0f} MB (MemAvailable before/after)")
    if lab.state.configs:
        out.print(f"configs: {lab.state.configs}", soft_wrap=True)
    if lab.state.not_converged:
        out.print(f"[red]{escape(lab.state.not_converged)}[/red]; the lab is up: `fablab check {lab.name}` judges it "
                  f"against the declaration", soft_wrap=True)
    out.print(f"next: fablab status {lab.name} · fablab exec {lab.name} NODE -- CMD · fablab down {lab.name}")
    return found


def cmd_down(args: argparse.Namespace) -> int:
    report = Lab.remove(args.lab)
    if args.json:
        print(json.dumps(report.__dict__, indent=2))
    else:
        out.print(f"lab {report.lab} removed: {report.processes} processes, {report.namespaces} namespaces "
                  f"in {report.seconds:.2f} s")
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    if args.lab:
        from harness.faults.store import shown

        lab = Lab.attach(args.lab)
        looks = lab.observe()
        faults = shown(lab)
        if args.json:
            print(json.dumps({"lab": lab.name, "phase": lab.state.phase, "topology": lab.state.topology,
                              "switches": [s.__dict__ for s in looks],
                              "faults": [{k: e[k] for k in ("fault", "on", "description")} for e in faults]},
                             indent=2, default=list))
            return 0
        t = Table(title=f"lab {lab.name}: {lab.state.topology}, {lab.state.phase}")
        for col in ("switch", "BGP", "BFD", "FIB"):
            t.add_column(col)
        for s in looks:
            t.add_row(s.switch, f"{s.sessions_up}/{s.sessions_expected}", f"{s.bfd_up}/{s.bfd_expected}",
                      "ok" if not s.missing_routes else f"{len(s.missing_routes)} short")
        out.print(t)
        for e in faults:
            out.print(f"fault in place: {e['fault']} on {escape(e['on'])}: {escape(e['description'])}", soft_wrap=True)
        return 0
    rows = [asdict(r) for r in Lab.listing()]
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    if not rows:
        out.print("no lab is running")
        return 0
    t = Table(title="labs")
    for col in ("lab", "runtime", "topology", "phase", "nodes present", "age"):
        t.add_column(col)
    for r in rows:
        t.add_row(r["lab"], r["runtime"], r["topology"], r["phase"], f"{r['nodes']}/{r['nodes_declared']}",
                  f"{r['age_s']} s")
    out.print(t)
    return 0


def cmd_exec(args: argparse.Namespace) -> int:
    lab = Lab.attach(args.lab)
    argv = args.cmd[1:] if args.cmd and args.cmd[0] == "--" else args.cmd
    if not argv:
        raise InputError("no command given: fablab exec LAB NODE -- CMD [ARGS...]")
    return subprocess.call(lab.exec_argv(args.node, argv))


def cmd_link(args: argparse.Namespace) -> int:
    lab = Lab.attach(args.lab)
    handle = lab.link(args.a, args.b, args.index)
    getattr(handle, args.action)()
    out.print(f"{lab.name}: {handle} {args.action}")
    return 0


def cmd_clean(args: argparse.Namespace) -> int:
    removed = [r.__dict__ for r in Lab.clean(everything=args.all)]
    if args.json:
        print(json.dumps(removed, indent=2))
    elif not removed:
        out.print("nothing to clean")
    else:
        for r in removed:
            out.print(f"removed lab {r['lab']}: {r['processes']} processes, {r['namespaces']} namespaces")
    return 0


def _checks(only: str | None):
    """The checks --only names, or None once the error (exit 2) is printed."""
    from harness.checks.registry import UnknownCheck, select

    try:
        return select(only)
    except UnknownCheck as e:
        err.print(f"[red]error:[/red] {escape(str(e))}", soft_wrap=True)
        return None


def cmd_check(args: argparse.Namespace) -> int:
    """Run the checks on a lab that is already up, e.g. after changing something by hand."""
    from harness.checks.registry import run_checks
    from harness.report.provenance import collect, lab_frr_version
    from harness.report.results import Results
    checks = _checks(args.only)
    if checks is None:
        return 2
    if args.inventory:
        return _check_inventory(args, checks)
    if args.lab is None:
        raise InputError("name the lab to check (fablab check LAB), or a staged fabric's --inventory FILE")
    if (args.allow_traffic or args.allow_faults) and args.via != "ssh":
        raise InputError("--allow-traffic and --allow-faults are for a fabric reached over SSH (--via ssh, --inventory)")
    try:
        lab = Lab.attach(args.lab)
    except HarnessError as e:
        err.print(f"[red]error:[/red] {escape(str(e))}; boot one with `fablab up TOPOLOGY --name {escape(args.lab)}`",
                  soft_wrap=True)
        return 2
    if lab.state.phase is not LabPhase.UP or lab.stale:
        why = "is still booting" if lab.state.phase is LabPhase.BOOTING and not lab.stale else \
            "was left behind by a process that is gone (`fablab clean` removes it)"
        err.print(f"[red]error:[/red] lab {escape(args.lab)} {why}: nothing to check", soft_wrap=True)
        return 2
    if args.against:
        _same_declaration(lab, args.against)
    provenance = collect(lab.plan.fabric.cluster, lab.state.topology, lab.state.runtime, lab.name,
                         frr_version=lab_frr_version(lab), configs=lab.state.configs)
    if args.via == "ssh":
        from harness.cli import staged

        return staged.run(args, checks, lab.mgmt_reach(), lab.plan, lab.name,
                          {"lab": lab.name, "topology": lab.state.topology, "runtime": lab.state.runtime, "via": "ssh"},
                          _report, provenance)
    results = Results(Path(args.results), lab.name, provenance)
    verdicts = run_checks(lab, checks, results, progress_printer(not args.json))
    results.finish()
    return _report(args, f"fablab check {lab.name}", verdicts, lab.plan,
                   {"lab": lab.name, "topology": lab.state.topology, "runtime": lab.state.runtime}, results)


def _check_inventory(args: argparse.Namespace, checks) -> int:
    """A fabric fablab did not boot, reached over SSH as its inventory says."""
    from harness.cli import staged
    from harness.report.provenance import collect

    if args.lab is not None:
        raise InputError(f"give either a lab ({args.lab}) or --inventory, not both: a lab's own mgmt plane is "
                         f"`fablab check {args.lab} --via ssh`")
    reach, plan = staged.load_reach(args.inventory)
    name = Path(args.inventory).stem
    provenance = collect(plan.fabric.cluster, reach.inventory.topology, "ssh", name)
    return staged.run(args, checks, reach, plan, name,
                      {"inventory": args.inventory, "topology": reach.inventory.topology, "via": "ssh"},
                      _report, provenance)


def _same_declaration(lab: Lab, against: str) -> None:
    """The checks judge a lab by the declaration fablab recorded when it booted the lab; with
    --against the engineer names the judge, and a lab booted from anything else is refused."""
    from harness.catalog import load_cluster
    from harness.report.provenance import declaration_sha256

    judge, booted = declaration_sha256(load_cluster(against)), declaration_sha256(lab.state.cluster)
    if judge != booted:
        raise InputError(f"lab {lab.name} was not booted from {against}: its recorded declaration hashes to "
                         f"{booted[:12]}, {against}'s to {judge[:12]}; boot it with `fablab up {against}`, or check "
                         "without --against")


def cmd_validate(args: argparse.Namespace) -> int:
    from harness.report.provenance import collect
    from harness.report.results import Results
    from harness.cli.validate import validate

    checks = _checks(args.only)
    if checks is None:
        return 2
    plan = make_plan(load_fabric(args.topology))
    lab = args.name or plan.name
    if problems := check_lab_name(lab, "--name"):  # before the results directory is made
        raise TopologyError(problems, source=args.topology)
    results = Results(Path(args.results), lab, collect(plan.fabric.cluster, args.topology, args.runtime, lab))
    verdicts = validate(plan, results, name=args.name, runtime=args.runtime,
                        progress=progress_printer(not args.json), topology=args.topology, checks=checks)
    return _report(args, f"fablab validate {args.topology}", verdicts, plan,
                   {"topology": args.topology, "runtime": args.runtime}, results)


def _report(args: argparse.Namespace, title: str, verdicts, plan, about: dict, results) -> int:
    """The same output for `check` and `validate`: table or JSON, and JUnit/HTML files when asked,
    each with the run's provenance; `results` is the run's Results (its directory is named).
    Exit 0 when nothing failed (not applicable is not a failure), 3 when a check failed."""
    from harness.report.results import check_document, junit_xml

    failed = [v for v in verdicts if v.passed is False]
    provenance = results.provenance
    written = []
    if args.junit:
        path = Path(args.junit)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(junit_xml(verdicts, title, provenance))
        written.append(f"JUnit {path}")
    if args.html:
        from harness.report.html import write_html

        written.append(f"HTML {write_html(Path(args.html), verdicts, plan, title, about, provenance)}")
    if args.json:
        print(json.dumps(check_document(verdicts, provenance, **about, results=str(results.directory)),
                         indent=2, default=str))
        return 3 if failed else 0
    t = Table(title=title, show_lines=True)
    for col in ("check", "result", "seconds", "figures", "plot"):
        t.add_column(col, overflow="fold")
    for v in verdicts:
        mark = "[green]PASS[/green]" if v.passed else "[red]FAIL[/red]" if v.passed is False else "n/a"
        t.add_row(v.check, mark, f"{v.seconds:.2f}", escape(v.reason), "\n".join(v.plots))
    out.print(t)
    out.print(f"checks' cost {sum(v.seconds for v in verdicts):.1f} s; results (JSON, PNG): {results.directory}/"
              + (f" ({results.latest}/ until the next run)" if results.latest else "")
              + "".join(f"; {w}" for w in written)
              + ("" if not failed else f"  — {len(failed)} check(s) failed: {', '.join(v.check for v in failed)}"))
    return 3 if failed else 0


def _report_options(s: argparse.ArgumentParser) -> None:
    from harness.checks.registry import NAMES

    s.add_argument("--only", metavar="NAME,...", help=f"run only these checks ({', '.join(NAMES)}), or these cases of them "
                   "(failover-gray, as `fablab faults` names them)")
    s.add_argument("--results", default="results", metavar="DIR",
                   help="parent of the run's own results directory (DIR/<UTC time>-<lab>-<random>/: JSON, "
                        "PNG plots, summary.json with provenance); DIR/latest points at the newest run")
    s.add_argument("--json", action="store_true", help="one JSON document with every check's result")
    s.add_argument("--junit", metavar="FILE", help="also write JUnit XML (one testcase per check) for CI")
    s.add_argument("--html", metavar="FILE", help="also write one self-contained HTML report")


def register(sub: argparse._SubParsersAction) -> None:
    s = sub.add_parser("validate", help="boot, run every check (as `fablab check`), report, tear down")
    s.add_argument("topology", help=TOPOLOGY_HELP)
    s.add_argument("--name", help="lab name (default: the cluster's name)")
    s.add_argument("--runtime", default="netns", help=f"one of: {', '.join(RUNTIMES)} (default netns)")
    _report_options(s)
    s.set_defaults(func=cmd_validate)

    s = sub.add_parser("check", help="run the checks on a running lab (exit 0 pass, 3 a check failed, 2 bad input)")
    s.add_argument("lab", nargs="?", help="a lab booted by `fablab up` (none with --inventory)")
    s.add_argument("--via", choices=("direct", "ssh"), default="direct",
                   help="ssh: read every node over SSH from the lab's management station, LLDP as the cabling's "
                        "evidence; the read-only checks only (docs/staged.md)")
    s.add_argument("--inventory", metavar="FILE",
                   help="check a fabric fablab did not boot, over SSH: FILE names each node's mgmt address, user, key "
                        "and the TOPOLOGY it must match (docs/staged.md)")
    s.add_argument("--allow-traffic", action="store_true", help="over SSH: run fablab's traffic agent on the nodes and send isolation's probes")
    s.add_argument("--allow-faults", action="store_true", help="over SSH: let a case shut ports, set sysctls, change FRR's configuration")
    s.add_argument("--against", metavar="TOPOLOGY",
                   help="refuse (exit 2) unless the lab was booted from this declaration (built-in name, .py file or "
                        "cabling plan)")
    _report_options(s)
    s.set_defaults(func=cmd_check)

    s = sub.add_parser("up", help="boot a topology and wait until it has converged")
    s.add_argument("topology", help=TOPOLOGY_HELP)
    s.add_argument("--name", help="lab name (default: the cluster's name)")
    s.add_argument("--runtime", default="netns", help=f"one of: {', '.join(RUNTIMES)} (default netns)")
    s.add_argument("--replace", action="store_true", help="replace a running lab of the same name")
    s.add_argument("--timeout", type=float, default=None,
                   help="seconds the fabric has to converge once every node's routing daemons run, the same on "
                        f"every runtime (default {CONVERGE_BASE_S:.0f} + {CONVERGE_PER_SWITCH_S:.0f} per switch, times "
                        f"switches/{CONVERGE_SCALE_SWITCHES} from {CONVERGE_SCALE_SWITCHES}: 1460 s at gpu4096); "
                        "the clab runtime's deploy and switch boot have budgets of their own (docs/runtimes.md)")
    s.add_argument("--configs", metavar="DIR",
                   help="boot your own switch configs (DIR/configs/<switch>/frr.conf, and config_db.json where you "
                        "have one; config_db.json alone where it holds the switch's BGP as SONiC's unified mode does) "
                        "instead of fablab's render; FRR itself reads each frr.conf first (the lines it refuses are "
                        "warnings); the checks still expect what the declaration says. "
                        "If they do not converge the lab stays up and up exits 3, naming what is missing")
    s.add_argument("--mgmt-services", action=argparse.BooleanOptionalAction, default=None,
                   help="sshd and lldpd in every node and a management station on the OOB network, for `fablab check "
                        "--via ssh` (default: on for a lab of up to 64 nodes on the netns runtime; docs/staged.md)")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_up)

    s = sub.add_parser("down", help="tear a lab down")
    s.add_argument("lab")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_down)

    s = sub.add_parser("status", help="running labs, or one lab's sessions and FIB")
    s.add_argument("lab", nargs="?")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_status)

    s = sub.add_parser("exec", help="run a command in a node: fablab exec LAB NODE -- CMD")
    s.add_argument("lab")
    s.add_argument("node")
    s.add_argument("cmd", nargs=argparse.REMAINDER)
    s.set_defaults(func=cmd_exec)

    s = sub.add_parser("link", help="fail or restore a cable: down|up (carrier), gray|heal (drops)")
    s.add_argument("lab")
    s.add_argument("a")
    s.add_argument("b")
    s.add_argument("action", choices=("down", "up", "gray", "heal"))
    s.add_argument("--index", type=int, default=0, help="which of several parallel cables")
    s.set_defaults(func=cmd_link)

    s = sub.add_parser("clean", help="remove what fablab labs left behind (and nothing else)")
    s.add_argument("--all", action="store_true",
                   help="also labs that are still running (detached ones from `fablab up`, live owners)")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_clean)

