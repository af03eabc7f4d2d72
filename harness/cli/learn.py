"""Learning by breaking: `fablab learn` (the lessons), `fablab faults`, `break`, `fix`,
`mystery`, `spread` (QPs over uplinks), and into any node with `fablab vtysh` and `fablab
shell`, on every runtime."""
from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from rich.markup import escape
from rich.table import Table

from harness.cli.console import out
from harness.lab import Lab


LESSONS = Path(__file__).resolve().parents[2] / "docs" / "learn"  # in the repository, beside the code


@dataclass(frozen=True)
class Lesson:
    number: int
    title: str
    lab: str  # the topology it boots
    path: Path
    commands: tuple[str, ...]  # every line of its ```sh blocks, as written


def lessons(folder: Path = LESSONS) -> list[Lesson]:
    """The lessons under docs/learn/: NN-name.md, each "# Lesson N — Title", a "Lab: `topology`"
    line, and the commands in ```sh blocks."""
    if not folder.is_dir():
        from harness.core.errors import InputError

        raise InputError(f"no lessons at {folder}: they are in fablab's repository, docs/learn/")
    out = []
    for path in sorted(folder.glob("[0-9][0-9]-*.md")):
        text = path.read_text()
        title = re.search(r"^# Lesson \d+ — (.+)$", text, re.M)
        lab = re.search(r"^Lab: `([^`]+)`", text, re.M)
        blocks = re.findall(r"^```sh\n(.*?)^```", text, re.M | re.S)
        out.append(Lesson(int(path.name[:2]), title.group(1) if title else path.stem, lab.group(1) if lab else "",
                          path, tuple(line for b in blocks for line in b.splitlines() if line.strip())))
    return out


def cmd_learn(args: argparse.Namespace) -> int:
    found = lessons()
    if args.json:
        print(json.dumps([{"number": x.number, "title": x.title, "lab": x.lab, "path": str(x.path)} for x in found],
                         indent=2))
        return 0
    t = Table(title=f"the lessons ({LESSONS}): each boots its lab as root; start with 1")
    for col in ("#", "lesson", "lab", "file"):
        t.add_column(col)
    for x in found:
        t.add_row(str(x.number), x.title, x.lab, x.path.name)
    out.print(t)
    return 0


def cmd_faults(args: argparse.Namespace) -> int:
    from harness.faults import FAULTS, check_of

    if args.json:
        print(json.dumps([{**f.row(), "check": check_of(f.caught_by)} for f in FAULTS], indent=2))
        return 0
    t = Table(title="faults (fablab break LAB FAULT [--on TARGET]; fablab fix LAB [FAULT | --all])")
    for col in ("teaches", "fault", "what it does", "caught by", "--on"):
        t.add_column(col)
    last = None
    for f in FAULTS:  # listed grouped by what they teach
        t.add_row(f.teaches if f.teaches != last else "", f.name, f.what,
                  f"check --only {f.caught_by}", f.on)
        last = f.teaches
    out.print(t)
    return 0


def cmd_break(args: argparse.Namespace) -> int:
    from harness.faults import check_of, fault
    from harness.faults.store import break_

    f = fault(args.fault)  # an unknown name, or an --on that does not parse, before the lab is looked at
    target = f.target(args.on) if args.on is not None else None
    lab = Lab.attach(args.lab)
    entry = break_(lab, args.fault, target)
    if args.json:
        print(json.dumps(entry, indent=2))
    else:
        out.print(f"{lab.name}: {escape(entry['description'])}", soft_wrap=True)
        out.print(f"find it: fablab check {lab.name} --only {f.caught_by} (of check {check_of(f.caught_by)}); "
                  f"undo: fablab fix {lab.name} {args.fault}", soft_wrap=True)
    return 0


def cmd_fix(args: argparse.Namespace) -> int:
    from harness.faults.store import fix, in_place

    if args.fault is None and not args.all:
        from harness.core.errors import InputError

        raise InputError("name the fault to undo, or --all: fablab fix LAB [FAULT | --all]")
    lab = Lab.attach(args.lab)
    undone = fix(lab, None if args.all else args.fault)
    if args.json:
        print(json.dumps({"undone": undone, "in_place": in_place(lab)}, indent=2))
    elif not undone:
        out.print(f"{lab.name}: nothing to undo" + (f" ({args.fault} is not in place)" if args.fault else ""))
    else:
        for entry in undone:
            out.print(f"{lab.name}: undone {entry['fault']} on {escape(entry['on'])}", soft_wrap=True)
    return 0


def cmd_mystery(args: argparse.Namespace) -> int:
    from harness.core.codec import to_plain
    from harness.core.errors import InputError
    from harness.faults import mystery

    if args.on is not None and args.answer is None:
        raise InputError("--on says where the fault of --answer is: fablab mystery LAB --answer FAULT --on TARGET")
    lab = Lab.attach(args.lab)
    if args.reveal:
        m = mystery.reveal(lab)
        if args.json:
            print(json.dumps(to_plain(m), indent=2))
        else:
            out.print(f"{lab.name}: the mystery (seed {m.seed}) was "
                      + (f"{m.fault} on {escape(m.on or '')}: {escape(m.description)}" if m.fault
                         else "none: nothing was wrong") + f"; fablab fix {lab.name} --all ends it", soft_wrap=True)
        return 0
    if args.hint:
        out.print(f"{lab.name}: {escape(mystery.hint(lab))}", soft_wrap=True)
        return 0
    if args.answer is not None:
        a = mystery.answer(lab, args.answer, args.on)
        if args.json:
            print(json.dumps({"lab": lab.name, "verdict": a.verdict.value, "fault": a.fault, "on": a.on,
                              "solved": a.solved}, indent=2))
        else:
            said = a.fault + (f" on {a.on}" if a.on else "")
            out.print(f"{lab.name}: {escape(said)}: " + {
                mystery.Verdict.RIGHT: f"right. fablab fix {lab.name} --all "
                                       + ("ends the mystery" if a.fault == mystery.NONE
                                          else "undoes it; check again to see the lab pass"),
                mystery.Verdict.RIGHT_FAULT: "right, that is the fault; say where too (--on) to be sure of the place",
                mystery.Verdict.WRONG_PLACE: "the right fault, but not there; the failing check names where",
                mystery.Verdict.WRONG: "not that. Which claim fails, and what else could make it fail? "
                                       f"(fablab mystery {lab.name} --hint)",
            }[a.verdict], soft_wrap=True)
        return 0 if a.solved else 3  # a wrong answer is a problem found, as a failing check's is
    m = mystery.start(lab, args.seed)
    if args.json:
        print(json.dumps({"lab": lab.name, "seed": m.seed}))
    else:
        out.print(f"{lab.name}: a mystery is in place (seed {m.seed}): one fault, or none. Look first (fablab status "
                  f"{lab.name}), measure (fablab check {lab.name}), then find out why (fablab vtysh, exec, shell); "
                  f"answer with fablab mystery {lab.name} --answer FAULT --on TARGET (or --answer none); --hint "
                  "narrows it one step at a time, --reveal gives it", soft_wrap=True)
    return 0


def cmd_spread(args: argparse.Namespace) -> int:
    from harness.checks.registry import case, run_case
    from harness.core.errors import InputError

    try:
        counts = [int(x) for x in args.qps.split(",") if x.strip()]
    except ValueError:
        raise InputError(f"--qps {args.qps!r}: give QP counts separated by commas, e.g. 2,8,32,128") from None
    if not counts or min(counts) < 1:
        raise InputError(f"--qps {args.qps!r}: give QP counts of 1 or more")
    lab = Lab.attach(args.lab)
    rows = []
    for n in counts:
        r = run_case(case("ecmp"), lab, flows=n, measure_only=True)
        busiest = max(p.qps for p in r.paths)
        rows.append({"qps": n, "leaf": r.leaf, "per_uplink": r.per_path, "busiest_share": round(busiest / n, 3),
                     "fair_share": round(1 / len(r.paths), 3), "max_over_mean": r.max_over_mean,
                     "band": [r.low, r.high]})
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    t = Table(title=f"{lab.name}: how QPs between one GPU pair spread over {rows[0]['leaf']}'s uplinks")
    for col in ("QPs", "per uplink", "busiest uplink", "a perfect spread", "busiest / mean"):
        t.add_column(col, justify="right")
    for r in rows:
        t.add_row(str(r["qps"]), " ".join(f"{k} {v}" for k, v in r["per_uplink"].items()),
                  f"{r['busiest_share']:.0%}", f"{r['fair_share']:.0%}", f"{r['max_over_mean']:.2f}")
    out.print(t)
    return 0


def cmd_vtysh(args: argparse.Namespace) -> int:
    lab = Lab.attach(args.lab)
    commands = [x for c in args.command or [] for x in ("-c", c)]
    return subprocess.call(lab.vtysh_argv(args.node, tty=not commands and sys.stdin.isatty()) + commands)


def cmd_shell(args: argparse.Namespace) -> int:
    lab = Lab.attach(args.lab)
    return subprocess.call(lab.shell_argv(args.node, tty=sys.stdin.isatty()))


def register(sub: argparse._SubParsersAction) -> None:
    s = sub.add_parser("learn", help="the lessons in docs/learn/, in order, and the lab each needs")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_learn)

    s = sub.add_parser("faults", help="the faults `fablab break` can put into a lab, grouped by what they teach")
    s.add_argument("--json", action="store_true", help="each fault's name, what it teaches, the check that catches it")
    s.set_defaults(func=cmd_faults)

    s = sub.add_parser("break", help="put a fault into a running lab (fablab faults lists them); fablab fix undoes it")
    s.add_argument("lab")
    s.add_argument("fault")
    s.add_argument("--on", metavar="TARGET", help="where (each fault has a default; its form is in fablab faults)")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_break)

    s = sub.add_parser("fix", help="undo a fault put in with fablab break, or every one (--all)")
    s.add_argument("lab")
    s.add_argument("fault", nargs="?")
    s.add_argument("--all", action="store_true")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_fix)

    s = sub.add_parser("mystery", help="put one hidden fault (or none) into a lab, chosen by --seed; find it")
    s.add_argument("lab")
    s.add_argument("--seed", type=int, help="which mystery (default: a random one)")
    what = s.add_mutually_exclusive_group()
    what.add_argument("--hint", action="store_true", help="one more hint")
    what.add_argument("--reveal", action="store_true", help="name the fault (or none) and where")
    what.add_argument("--answer", metavar="FAULT", help="your answer: a fault's name (fablab faults), or none; "
                                                         "exit 0 right, 3 not")
    s.add_argument("--on", metavar="TARGET", help="with --answer: where, in the fault's --on form")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_mystery)

    s = sub.add_parser("spread", help="send N QPs between one GPU pair, for each N, and show how they land on the "
                                      "leaf's uplinks (more QPs per pair spread better: the idea behind E-ECMP)")
    s.add_argument("lab")
    s.add_argument("--qps", default="2,4,8,32,128", help="the QP counts to try (default 2,4,8,32,128)")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_spread)

    s = sub.add_parser("vtysh", help="FRR's shell on a switch (or a dual-homed host), on every runtime")
    s.add_argument("lab")
    s.add_argument("node")
    s.add_argument("-c", dest="command", action="append", metavar="CMD", help="run CMD and exit (repeatable)")
    s.set_defaults(func=cmd_vtysh)

    s = sub.add_parser("shell", help="a shell in any node (its network namespace or container), on every runtime")
    s.add_argument("lab")
    s.add_argument("node")
    s.set_defaults(func=cmd_shell)
