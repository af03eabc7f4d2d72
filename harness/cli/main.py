"""The `fablab` command. The only place where errors become messages and exit codes."""
from __future__ import annotations

import argparse
import faulthandler
import io
import json
import os
import signal
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from rich.markup import escape
from rich.table import Table

from harness.plumbing import interrupt
from harness.catalog import TOPOLOGY_HELP, builtins, load_fabric
from harness.cli.console import err, out
from harness.core.errors import HarnessError, InputError, TopologyError
from harness.core.hwsku import AUTOMATIC, SONIC_DEVICES, catalog
from harness.core.images import HOST_IMAGE, SONIC_IMAGE
from harness.core.model import build
from harness.core.plan import make_plan, summary



def cmd_list(args: argparse.Namespace) -> int:
    rows = []
    for name, builder in sorted(builtins().items()):
        plan = make_plan(load_fabric(name))
        s = summary(plan)
        doc = (sys.modules[builder.__module__].__doc__ or "").strip().splitlines()[0]
        rows.append({"name": name, "backend": s["backend"], "gpu_nodes": s["nodes"].get("gpu", 0),
                     "gpus": s["gpus"], "switches": sum(s["bom"]["switches"].values()), "about": doc})
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    table = Table(title="built-in topologies")
    for col in ("name", "backend", "gpu nodes", "GPUs", "switches", "about"):
        table.add_column(col)
    for r in rows:
        table.add_row(r["name"], r["backend"], str(r["gpu_nodes"]), str(r["gpus"]), str(r["switches"]), r["about"])
    out.print(table)
    return 0


def cmd_hwskus(args: argparse.Namespace) -> int:
    """The HwSKUs fablab ships: what `Hardware(...)` or a plan's HwSku column may name; the plan
    itself picks from those marked automatic."""
    rows = [{"name": h.name, "data_ports": h.data_ports,
             "ports": {f"{sp // 1000}G": k for sp, k in sorted(Counter(r.speed for r in h.data_rows).items(),
                                                             reverse=True)},
             "names": h.span, "breakout": bool(h.cages), "automatic": h.name in AUTOMATIC} for h in catalog()]
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    table = Table(title="HwSKUs fablab ships: what Hardware(be_leaf=...) may name (automatic: what the plan "
                        "picks from for a role that names none)")
    for col in ("HwSKU", "data ports", "by speed", "port names", "breakout", "automatic"):
        table.add_column(col)
    for r in rows:
        table.add_row(r["name"], str(r["data_ports"]), ", ".join(f"{k} × {sp}" for sp, k in r["ports"].items()),
                      r["names"], "yes" if r["breakout"] else "", "yes" if r["automatic"] else "")
    out.print(table)
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    from harness.checks.registry import not_applicable
    from harness.core.lossless_declaration import dcqcn_assumed
    from harness.core.numbering import own_numbering

    plan = make_plan(load_fabric(args.topology))
    if args.configs:  # the plan in the numbering those configs carry, audited
        from harness.render.configs import load_configs, numbered_by
        plan = numbered_by(plan, load_configs(plan, args.configs))
    s = summary(plan)
    # what the checks cannot exercise on this design, and what a verdict would rest on unsaid
    s["not_applicable"] = not_applicable(plan)
    s["assumed"] = [a for a in (dcqcn_assumed(plan.fabric.cluster.lossless) if any(sw.lossless for sw in plan.switches)
                                else "",) if a]
    if args.json:
        print(json.dumps(s, indent=2))
        return 0
    out.print(f"[bold]{s['name']}[/bold]: {s['gpus']} GPUs, {s['backend']} backend")
    t = Table(title="nodes per role")
    t.add_column("role")
    t.add_column("count", justify="right")
    for role, k in s["nodes"].items():
        t.add_row(role, str(k))
    out.print(t)
    t = Table(title="links per plane")
    t.add_column("plane")
    t.add_column("links", justify="right")
    for plane, k in s["links"].items():
        t.add_row(plane, str(k))
    out.print(t)
    t = Table(title="leaves (and 5-stage spines): oversubscription (down:up) and ASN")
    for col in ("switch", "oversubscription", "ASN"):
        t.add_column(col)
    for leaf, ratio in s["oversubscription"].items():
        t.add_row(leaf, "no uplinks" if ratio is None else f"{ratio:g}:1", str(s["asn"][leaf]))
    out.print(t)
    t = Table(title="bill of materials")
    t.add_column("item")
    t.add_column("count", justify="right")
    for section in ("switches", "ports_used", "cables", "optics"):
        for item, k in s["bom"][section].items():
            label = {"switches": "switch", "ports_used": "switch ports", "cables": "cable",
                     "optics": "transceivers"}[section]
            t.add_row(f"{label} {item}", str(k))
    out.print(t)
    if s["tenants"]:
        t = Table(title="FE tenants (EVPN/VXLAN)")
        for col in ("tenant", "VNI", "VLAN", "subnet", "members", "leaves"):
            t.add_column(col)
        for x in s["tenants"]:
            t.add_row(x["name"], str(x["vni"]), str(x["vlan"]), x["subnet"], " ".join(x["members"]),
                      " ".join(x["leaves"]))
        out.print(t)
        rules = s["acl"]["rules"]
        out.print("edge ACL (first match wins): " + "; ".join(f"{i}: {r}" for i, r in enumerate(rules))
                  + f"; default {s['acl']['default']}", soft_wrap=True)
    r = s["ranges"]
    if own_numbering(plan.fabric.cluster.addressing):
        def nets(items: list[str]) -> str:
            return ", ".join(items[:4]) + (f" (+{len(items) - 4} more)" if len(items) > 4 else "")
        out.print(f"numbering: yours (Addressing's items, numbering.csv or the devices file): BE {nets(r['planes']['be'])}; "
                  f"FE {nets(r['planes']['fe'])}; mgmt {r['mgmt']}", soft_wrap=True)
    else:
        out.print(f"ranges: BE {r['be']} (rails {', '.join(r['be_rails'])}), FE {r['fe']}, mgmt {r['mgmt']}")
    if s["routed_hosts"]:
        hosts = list(s["routed_hosts"].values())
        out.print(f"dual-homed FE hosts: {len(hosts)}, each its own /32 ({hosts[0]['loopback']} ...) and ASN "
                  f"({hosts[0]['asn']}-{hosts[-1]['asn']}), BGP to both leaves of its pair")
    for why, cases in _grouped(s["not_applicable"]).items():
        out.print(f"note: {', '.join(cases)} cannot apply to this design: {escape(why)}", soft_wrap=True)
    for assumed in s["assumed"]:
        out.print(f"note: assumed {escape(assumed)}", soft_wrap=True)
    return 0


def _grouped(reasons: dict[str, str]) -> dict[str, list[str]]:
    """why -> the cases it keeps out, in check order."""
    out: dict[str, list[str]] = {}
    for case_name, why in reasons.items():
        out.setdefault(why, []).append(case_name)
    return out


def cmd_render(args: argparse.Namespace) -> int:
    from harness.core.model import check_lab_name
    from harness.render import artifacts, write_artifacts

    # A bad --name is reported with the declaration's problems, before anything is written.
    problems = check_lab_name(args.name, "--name") if args.name is not None else []
    try:
        fabric = load_fabric(args.topology)
    except TopologyError as e:
        if problems:
            raise TopologyError(problems + list(e.problems), e.source) from None
        raise
    if problems:
        raise TopologyError(problems, "fablab render")
    plan = make_plan(fabric)
    lab = args.name or plan.name
    files = artifacts(plan, lab=lab, sonic_image=args.sonic_image, host_image=args.host_image,
                      clabernetes=args.clabernetes)
    written = write_artifacts(files, Path(args.output),
                              about={"topology": args.topology, "cluster": plan.name, "lab": lab})
    if args.json:
        print(json.dumps({"lab": lab, "output": str(args.output),
                          "files": [str(p) for p in written]}, indent=2))
    else:
        switches = len(plan.switches)
        routed = sum(1 for h in plan.hosts if h.routed)
        hosts = f", {routed} dual-homed hosts × frr.conf + daemons" if routed else ""
        out.print(f"rendered {plan.name}: {len(written)} files in {args.output} "
                  f"({switches} switches × config_db.json + frr.conf + init.sh{hosts}, clab file, cabling.csv, "
                  "topology.svg, lossless.json" + (f", {lab}.clabernetes.yaml" if args.clabernetes else "") + ")")
    return 0


def cmd_import(args: argparse.Namespace) -> int:
    """A cabling plan written as the Python declaration it is, for people who want to edit it."""
    from harness.catalog import load_cluster
    from harness.core.cabling.declare import cluster_of, name_of
    from harness.core.cabling.load import is_plan, read_plan
    from harness.core.model import check_lab_name
    from harness.core.pysource import declaration_source

    plan_path, target = Path(args.plan), Path(args.output)
    if not is_plan(plan_path):
        raise InputError(f"{plan_path}: not a cabling plan (a .csv or a .clab.yml); a .py declaration needs no import")
    if target.suffix != ".py":
        raise InputError(f"-o {target}: the declaration is Python: name it FILE.py")
    if target.exists() and not args.force:
        raise InputError(f"-o {target} exists: give another name, or --force to replace it")
    name = args.name or name_of(plan_path)
    problems = check_lab_name(name, "--name")
    if problems:
        raise TopologyError(problems, "fablab import")
    cluster = cluster_of(read_plan(plan_path), name, source=str(plan_path))
    plan = make_plan(build(cluster))  # every check a declaration gets, before anything is written
    numbered = ""
    if args.configs:  # their configs' ASNs, loopbacks and port addresses, audited, as Addressing's items
        from harness.render.configs import load_configs, numbered_by
        plan = numbered_by(plan, load_configs(plan, args.configs))
        cluster = plan.fabric.cluster
        numbered = f"`addressing` holds the numbering of the configs in {args.configs}.\n"
    doc = (f"{name}: the cabling plan {plan_path.name}, as `fablab import` declared it.\n\n"
           "Counts, speeds and HwSKUs come from the plan; `cabling` keeps its device names and ports.\n"
           + numbered +
           "Edit it as any declaration:  fablab show " + target.name + "\n")
    text = declaration_source(cluster, doc)
    tmp = target.with_name(f".{target.stem}.importing.py")
    tmp.write_text(text)
    try:
        if load_cluster(str(tmp)) != cluster:  # what is written must read back as the same declaration
            raise HarnessError(f"{target}: the written declaration does not read back equal; please report it")
        tmp.replace(target)
    finally:
        tmp.unlink(missing_ok=True)
    c = cluster
    out.print(f"wrote {escape(str(target))}: {c.gpu.count} GPU nodes × {c.gpu.gpus_per_node} rails, "
              f"{c.backend.kind} BE, {len(c.cabling.cables)} cables with their ports\n"
              f"next: fablab show {escape(str(target))} · fablab up {escape(str(target))}")
    return 0


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="fablab", description="Declare, render, boot and prove AI data-center fabrics. "
                                "Exit status: 0 pass, 1 fablab failed, 2 bad input or usage, 3 a check or audit "
                                "found a problem.")
    p.add_argument("--version", action=_Version)
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    s = sub.add_parser("list", help="list the built-in topologies")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_list)

    s = sub.add_parser("hwskus", help="the SONiC HwSKUs fablab ships (what Hardware(...) may name)")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_hwskus)

    s = sub.add_parser("show", help="nodes, links, oversubscription and BOM of a topology")
    s.add_argument("topology", help=TOPOLOGY_HELP)
    s.add_argument("--json", action="store_true")
    s.add_argument("--configs", metavar="DIR", help="show it in the numbering DIR's configs carry (their ASNs, "
                                                    "loopbacks and port addresses), audited as `up --configs` does")
    s.set_defaults(func=cmd_show)

    s = sub.add_parser("render", help="write the clab file, config_db.json, frr.conf, cabling and diagram")
    s.add_argument("topology", help=TOPOLOGY_HELP)
    s.add_argument("-o", "--output", required=True,
                   help="output directory: new, empty, or an earlier fablab render, which is replaced whole "
                        "(files of an earlier render that this one does not write are gone)")
    s.add_argument("--name", help="lab name (default: the cluster's name): lower-case letters, digits and '-', "
                                  "starting with a letter, at most 24")
    s.add_argument("--sonic-image", default=SONIC_IMAGE)
    s.add_argument("--host-image", default=HOST_IMAGE)
    s.add_argument("--clabernetes", action="store_true",
                   help="also write <lab>.clabernetes.yaml: the clab file as a clabernetes Topology, its bound files "
                        "as ConfigMaps (kubectl apply -f); docs/runtimes.md")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_render)
    s = sub.add_parser("import", help="write a cabling plan (sonic-mgmt links CSV, cable list CSV, .clab.yml) as the "
                                      "Python declaration it is, its names and ports kept")
    s.add_argument("plan", help="the cabling plan: *_links.csv (sonic-mgmt; *_devices.csv beside it), a cable list "
                                ".csv (devices.csv beside it), or a .clab.yml")
    s.add_argument("-o", "--output", required=True, help="the .py file to write")
    s.add_argument("--name", help="the cluster's name (default: from the plan's file name)")
    s.add_argument("--force", action="store_true", help="replace the output file if it exists")
    s.add_argument("--configs", metavar="DIR",
                   help="take the switches' ASNs, loopbacks and port addresses from DIR's configs (laid out as "
                        "`fablab render` writes them), written as Addressing's items")
    s.set_defaults(func=cmd_import)
    from harness.cli import audit as cli_audit, diff as cli_diff, labs as cli_lab, learn as cli_learn, rdma as cli_rdma
    from harness.cli import counters as cli_counters, staged as cli_staged, view as cli_view

    cli_lab.register(sub)
    cli_rdma.register(sub)
    cli_audit.register(sub)
    cli_diff.register(sub)
    cli_learn.register(sub)
    cli_counters.register(sub)
    cli_view.register(sub)
    cli_staged.register(sub)
    for name in PLAN_READERS:
        sub.choices[name].add_argument(
            "--sonic-devices", action="append", metavar="DIR",
            help=f"a tree of SONiC HwSKU folders (sonic-buildimage's device/, or a folder of a few) where a HwSKU "
                 f"the plan or declaration names and fablab does not ship is looked for by name; repeatable, searched "
                 f"before {SONIC_DEVICES}'s")
    return p


# The commands that read a declaration or a cabling plan, and so may meet a HwSKU fablab does not ship.
PLAN_READERS = ("show", "render", "import", "validate", "up", "check", "audit", "diff")


def _sonic_devices(args: argparse.Namespace) -> None:
    """--sonic-devices DIR: put before FABLAB_SONIC_DEVICES's trees, for this process and every
    one it starts (a lab's runner reads the declaration again)."""
    dirs = [Path(d).expanduser().absolute() for d in getattr(args, "sonic_devices", None) or ()]
    missing = [str(d) for d in dirs if not d.is_dir()]
    if missing:
        raise InputError(f"--sonic-devices {', '.join(missing)}: no such folder; give a tree of SONiC HwSKU folders "
                         "(device/<vendor>/<platform>/<HwSKU>/)")
    if dirs:
        os.environ[SONIC_DEVICES] = os.pathsep.join([*map(str, dirs), *filter(None, [os.environ.get(SONIC_DEVICES)])])


class _Version(argparse.Action):
    """--version: the version, and the commit when fablab runs from a git checkout (git is
    asked only when --version is given)."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, help=None):
        super().__init__(option_strings, dest=dest, default=default, nargs=0,
                         help="print fablab's version (and git commit) and exit")

    def __call__(self, parser, namespace, values, option_string=None):
        print(version_text())
        parser.exit()


# One exit code per kind of outcome, the same on every command (docs/cli.md).
EXIT_OK, EXIT_FAILURE, EXIT_INPUT, EXIT_FOUND = 0, 1, 2, 3


def _where_on_usr1() -> None:
    """`kill -USR1 PID` prints where every thread is to stderr: a run that hangs says where."""
    try:
        faulthandler.register(signal.SIGUSR1, all_threads=True)
    except (OSError, ValueError, io.UnsupportedOperation):
        pass  # stderr is no file (a test captures it), or not the main thread: nothing to print to


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    # SIGTERM takes the same path as Ctrl-C, so a lab being booted is torn down.
    interrupt.install()
    _where_on_usr1()
    try:
        _sonic_devices(args)
        code = args.func(args)
        sys.stdout.flush()  # here, not at exit: a reader gone before a buffered output is written ends quietly too
        return code
    except HarnessError as e:
        code = EXIT_INPUT if isinstance(e, InputError) else EXIT_FAILURE
        _error(args, e, code)
        return code
    except BrokenPipeError:
        return _closed_pipe()
    except KeyboardInterrupt:
        err.print("interrupted")
        return 130


def _error(args: argparse.Namespace, e: HarnessError, code: int) -> None:
    """The error on stderr; with --json also as a JSON document on stdout, for the program that
    reads it (a declaration's problems one object each)."""
    err.print(f"[red]error:[/red] {escape(str(e))}", soft_wrap=True)
    if getattr(args, "json", False):
        doc: dict = {"error": str(e), "kind": type(e).__name__, "exit": code}
        if isinstance(e, TopologyError):
            doc["source"] = e.source
            doc["problems"] = [{"field": p.field, "message": p.message, "hint": p.hint} for p in e.problems]
        try:
            print(json.dumps(doc, indent=2))
        except BrokenPipeError:
            _closed_pipe()


def _closed_pipe() -> int:
    """The reader went away (`fablab ... | head`): end quietly, as a Unix filter does. Python
    would otherwise report the pipe again when it flushes stdout at exit."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # stdout is no real file (a test's capture): nothing to flush
        pass
    return 141  # 128 + SIGPIPE, what the shell reports for a filter ended by a closed pipe


def version_text() -> str:
    from harness.report.provenance import fablab_version, git_commit

    commit, dirty = git_commit()
    where = f" (git {commit[:12]}{', modified' if dirty else ''})" if commit else ""
    return f"fablab {fablab_version() or 'unknown'}{where}"


if __name__ == "__main__":
    sys.exit(main())
