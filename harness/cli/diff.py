"""`fablab diff TOPOLOGY DIR`: the configs in DIR against what fablab renders for TOPOLOGY,
by meaning (harness/render/compare.py). Exit 0 when they agree, 3 on any difference."""
from __future__ import annotations

import argparse
import json
from dataclasses import asdict
from pathlib import Path

from rich.table import Table

from harness.catalog import load_fabric
from harness.cli.console import out
from harness.core.errors import InputError
from harness.core.plan import make_plan
from harness.render import artifacts
from harness.render.compare import Difference, diff_config_db, diff_frr


def differences(topology: str, directory: Path) -> tuple[list[Difference], int]:
    """Every difference, and how many switches were compared."""
    if not directory.is_dir():
        raise InputError(f"{directory} is not a directory: give one laid out as `fablab render` writes it "
                         "(configs/<switch>/frr.conf and config_db.json)")
    plan = make_plan(load_fabric(topology))
    ours = artifacts(plan)
    found: list[Difference] = []
    for sw in plan.switches:
        where = directory / "configs" / sw.name
        frr = where / "frr.conf"
        if not frr.is_file():
            found.append(Difference(sw.name, "frr.conf", "files", str(frr), "rendered", ""))
        else:
            found += diff_frr(sw.name, ours[f"configs/{sw.name}/frr.conf"], frr.read_text())
        db = where / "config_db.json"
        if db.is_file():  # optional: the netns runtime reads only frr.conf
            try:
                theirs = json.loads(db.read_text())
            except json.JSONDecodeError as e:
                raise InputError(f"{db}: not JSON ({e}); fix the file or leave it out") from e
            found += diff_config_db(sw.name, json.loads(ours[f"configs/{sw.name}/config_db.json"]), theirs)
    return found, len(plan.switches)


def cmd_diff(args: argparse.Namespace) -> int:
    found, switches = differences(args.topology, Path(args.directory))
    if args.json:
        print(json.dumps({"topology": args.topology, "directory": args.directory, "switches": switches,
                          "differences": [asdict(d) for d in found]}, indent=2))
        return 3 if found else 0
    if not found:
        out.print(f"no difference: {switches} switches of {args.topology}, frr.conf and config_db.json by meaning")
        return 0
    table = Table("switch", "file", "area", "where", "fablab", "theirs", title=f"{len(found)} difference(s)")
    for d in found:
        table.add_row(d.switch, d.file, d.area, d.where, d.fablab or "—", d.theirs or "—")
    out.print(table)
    areas = sorted({d.area for d in found})
    out.print(f"{len(found)} difference(s) on {len({d.switch for d in found})} of {switches} switches: "
              + ", ".join(areas), soft_wrap=True)
    return 3


def register(sub) -> None:
    s = sub.add_parser("diff", help="compare a directory of switch configs with fablab's render, by meaning "
                                    "(exit 3 on a difference)")
    s.add_argument("topology", help="built-in name or path to a .py file")
    s.add_argument("directory", help="configs laid out as fablab renders them: configs/<switch>/frr.conf "
                                     "(and config_db.json)")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_diff)
