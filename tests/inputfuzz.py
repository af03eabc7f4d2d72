"""Mutated engineer's files for fablab's readers (issue 68, item 5): seeded, no dependency beyond
fablab's own (random.Random(seed), PyYAML, json, csv).

Each case starts from fablab's own render of TOPOLOGY (the cable list and its devices.csv, the
sonic-mgmt links and devices CSVs, the .clab.yml, configs/<switch>/{config_db.json,frr.conf}),
plus a numbering.csv and an inventory made from the same render; it changes one file, by its
structure (inputfuzz_csv, inputfuzz_yaml, inputfuzz_json, inputfuzz_frr: what an Excel export, a hand-edited
YAML or a Windows editor does) or by its bytes (inputfuzz_text), and runs the command an
engineer uses on that file. Its EXPECTATION:

- `same`: a neutral change (a BOM, CRLF, order, whitespace): exits as the unmutated input does,
  and where that is 0, prints the same result;
- `faithful`: a change fablab may read or refuse (a Windows code page, `;` as separator, a map
  written as a list): exit 2, or the unmutated input's exit and result, never another reading;
- `broken`: the input is invalid: must not exit 0;
- `any`: exit 0, 2 or 3.

Every case: no traceback (no exception out of main, no "Traceback" printed, never exit 1), at
most `max_lines` lines printed, within `deadline` seconds. tests/unit/test_input_fuzz.py runs a
fixed number per format; scripts/bench_fuzz_inputs.py runs the nightly size.
"""
from __future__ import annotations

import functools
import re
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from random import Random

sys.path.insert(0, str(Path(__file__).resolve().parent))

import inputfuzz_csv  # noqa: E402
import inputfuzz_frr  # noqa: E402
import inputfuzz_json  # noqa: E402
import inputfuzz_numbering  # noqa: E402
import inputfuzz_text  # noqa: E402
import inputfuzz_yaml  # noqa: E402
from inputfuzz_text import Mut, Target, Info  # noqa: E402

TOPOLOGY = "rail-only"  # 8 switches: FRR reads one mutated frr.conf in well under a second
SEED = 68
EXPECTATIONS = ("same", "faithful", "broken", "any")
DEADLINE_S = 10.0  # the most one case may take (the issue: a 10 MB plan answers in under 10 s)
MAX_LINES = 400  # what one case may print (--json: on stderr); a file of thousands of bad rows: MAX_LINES_BIG
MAX_LINES_BIG = 100
MAX_JSON = 2_000_000  # what --json may print, in characters
LINKS, SDEVICES, CLAB = f"sonic_{TOPOLOGY}_links.csv", f"sonic_{TOPOLOGY}_devices.csv", f"{TOPOLOGY}.clab.yml"
PLAN_FILES = ("cabling.csv", "devices.csv", LINKS, SDEVICES, CLAB)
CONFIG_SWITCHES = ("fe-l1", "be-r0", "fe-s1")  # a FE leaf (sessions, host ports), a BE leaf (lossless), a spine

# format -> (the files it is, the family of structure mutations, the commands that read it)
FORMATS: dict[str, tuple[tuple[str, ...], str, tuple[str, ...]]] = {
    "cable-csv": (("cabling.csv",), "csv", ("show", "import")),
    "devices-csv": (("devices.csv",), "csv", ("show", "import")),
    "sonic-links": ((LINKS,), "csv", ("show", "import")),
    "sonic-devices": ((SDEVICES,), "csv", ("show", "import")),
    "numbering": (("numbering.csv",), "numbering", ("show", "import")),
    "clab": ((CLAB,), "clab", ("show", "import")),
    "config_db": (tuple(f"configs/{s}/config_db.json" for s in CONFIG_SWITCHES), "config_db",
                  ("diff", "audit", "show-configs", "import-configs")),
    "frr": (tuple(f"configs/{s}/frr.conf" for s in CONFIG_SWITCHES), "frr", ("diff", "show-configs")),
    "inventory": (("inventory.yml",), "inventory", ("inventory",)),
}
FAMILIES = {"csv": inputfuzz_csv.MUTATIONS, "numbering": inputfuzz_csv.MUTATIONS + inputfuzz_numbering.MUTATIONS,
            "clab": inputfuzz_yaml.CLAB, "inventory": inputfuzz_yaml.INVENTORY, "config_db": inputfuzz_json.CONFIG_DB,
            "frr": inputfuzz_frr.FRR}


@dataclass(frozen=True)
class Case:
    fmt: str
    index: int
    mutation: str  # family.name of what was done, e.g. csv.bad_speed
    note: str  # the detail: which value, where
    expect: str
    path: str  # the file mutated
    command: tuple[str, ...]  # argv, {d} for the case's directory; ("inventory", FILE) for load_reach
    changes: dict[str, bytes | None] = field(default_factory=dict, compare=False, repr=False)  # path -> bytes
    steps: tuple[dict, ...] = ()  # recipes applied after the changes (large files made on the spot)
    heavy: bool = False  # run in a child process with a memory limit (aliases, deep nesting, 10 MB)
    says: str | None = None  # a pattern the output must hold
    max_lines: int = MAX_LINES
    same_output: bool = True  # for same/faithful: the printed result too, not only the exit
    deadline: float = DEADLINE_S
    label: str = ""  # a corpus entry's name

    @property
    def name(self) -> str:
        return self.label or f"{self.fmt}-{self.index:03d}-{self.mutation}"


# ------------------------------------------------------------------ the unmutated files


@functools.cache
def base_files() -> dict[str, bytes]:
    """fablab's render of TOPOLOGY (the plan files and configs), a numbering.csv and an inventory."""
    from harness.catalog import load_fabric
    from harness.core.plan import make_plan
    from harness.render import artifacts

    files = artifacts(make_plan(load_fabric(TOPOLOGY)))
    keep = {p: t.encode() for p, t in files.items()
            if p in PLAN_FILES or (p.startswith("configs/") and p.endswith(("/frr.conf", "/config_db.json")))}
    keep["numbering.csv"] = _numbering(files).encode()
    keep["inventory.yml"] = _inventory(files).encode()
    return keep


def _numbering(files: dict[str, str]) -> str:
    """device,item,value of every switch's ASN and loopback, a few port addresses and mgmt IPs:
    the numbers the render has, so the plan read with it is the plan read without."""
    import json

    rows = ["device,item,value"]
    for path in sorted(files):
        if path.endswith("/config_db.json"):
            db = json.loads(files[path])
            meta = db["DEVICE_METADATA"]["localhost"]
            rows.append(f"{meta['hostname']},asn,{meta['bgp_asn']}")
            rows += [f"{meta['hostname']},loopback,{k.split('|')[1]}" for k in db.get("LOOPBACK_INTERFACE", {})
                     if "|" in k]
            rows += [f"{meta['hostname']},{k.split('|')[0]},{k.split('|')[1]}"
                     for k in sorted(db.get("INTERFACE", {})) if "|" in k]
    for line in files["devices.csv"].splitlines()[1:4]:
        name, _, _, mgmt = line.split(",")
        rows.append(f"{name},mgmt,{mgmt}")
    return "\n".join(rows) + "\n"


def _inventory(files: dict[str, str]) -> str:
    """An inventory of every node at its mgmt address, as docs/staged.md writes one."""
    lines = ["# the fabric as cabled on the staging floor", f"topology: {TOPOLOGY}",
             "defaults: {user: admin, key: ~/.ssh/staging_ed25519}", "nodes:"]
    for line in files["devices.csv"].splitlines()[1:]:
        name, role, _, mgmt = line.split(",")
        if not mgmt:
            continue
        extra = ", user: root" if role in ("gpu", "cpu", "storage") else ""
        lines.append(f"  {name}: {{address: {mgmt.split('/')[0]}{extra}}}")
    return "\n".join(lines) + "\n"


@functools.cache
def info() -> Info:
    """Names and ports of the render, from its cable list and devices file."""
    files = base_files()
    devices = [line.split(",") for line in files["devices.csv"].decode().splitlines()[1:]]
    cables = [tuple(line.split(",")[:4]) for line in files["cabling.csv"].decode().splitlines()[1:]]
    return Info(roles={d[0]: d[1] for d in devices}, cables=cables)


# ------------------------------------------------------------------ commands


def argv(command: str, rng: Random, fmt: str) -> tuple[str, ...]:
    plan = {"cable-csv": "cabling.csv", "devices-csv": "cabling.csv", "sonic-links": LINKS, "sonic-devices": LINKS,
            "clab": CLAB, "numbering": rng.choice(["cabling.csv", LINKS, CLAB])}.get(fmt, "cabling.csv")
    return {"show": ("show", "--json", f"{{d}}/{plan}"),
            "import": ("import", f"{{d}}/{plan}", "-o", "{d}/out.py"),
            "diff": ("diff", TOPOLOGY, "{d}"),
            "audit": ("audit", "{d}", "--against", TOPOLOGY),
            "show-configs": ("show", "--json", TOPOLOGY, "--configs", "{d}"),
            "import-configs": ("import", "{d}/cabling.csv", "-o", "{d}/out.py", "--configs", "{d}"),
            "inventory": ("inventory", "{d}/inventory.yml")}[command]


def files_for(fmt: str) -> tuple[str, ...]:
    """The base files a case of `fmt` is laid out with."""
    if fmt == "inventory":
        return ("inventory.yml",)
    plan = PLAN_FILES + (("numbering.csv",) if fmt == "numbering" else ())
    if fmt in ("config_db", "frr"):
        return plan + tuple(p for p in base_files() if p.startswith("configs/"))
    return plan


# ------------------------------------------------------------------ generating cases


def combine(a: str, b: str) -> str:
    """The expectation of two mutations made one after the other."""
    if a == b:
        return a
    if "any" in (a, b):
        return "any"
    if "broken" in (a, b):
        return "broken"
    return "faithful"  # same + faithful


def case_at(seed: int, fmt: str, index: int) -> Case:
    """Case `index` of `fmt` for `seed`: the same case on every machine and in every process."""
    rng = Random(f"{seed}:{fmt}:{index}")
    paths, family, commands = FORMATS[fmt]
    path = rng.choice(paths)
    base = base_files()
    t = Target(fmt, path, base[path].decode(), {p: b.decode() for p, b in base.items()}, info())
    structural, generic = FAMILIES[family], inputfuzz_text.GENERIC
    for _ in range(50):
        pool = structural if rng.random() < 0.7 else generic
        fn = rng.choice(pool)
        mut = _tried(fn, Random(rng.random()), t)
        if mut is None:
            continue
        name = f"{fn.__module__.removeprefix('inputfuzz_')}.{fn.__name__}"
        if isinstance(mut.text, str) and not mut.steps and not mut.heavy and rng.random() < 0.15:
            second = rng.choice(generic)  # now and then a byte-wise change on top of a structural one
            more = _tried(second, Random(rng.random()), replace(t, text=mut.text))
            if more is not None and not more.steps and not more.others:
                name += f"+{second.__name__}"
                mut = replace(more, expect=combine(mut.expect, more.expect), others=mut.others,
                              note=f"{mut.note}; {more.note}", only=mut.only or more.only,
                              same_output=mut.same_output and more.same_output)
        only = mut.only
        if only is None and mut.expect == "broken" and family in ("config_db", "frr"):
            only = ("diff",)  # what the other commands do not read of a switch's files, they need not judge
        allowed = [c for c in commands if only is None or c in only]
        if not allowed:
            continue
        command = argv(rng.choice(allowed), rng, fmt)
        if mut.heavy and command[:2] == ("show", "--json"):
            command = ("show",) + command[2:]  # what the engineer reads: summarised, under MAX_LINES_BIG lines
        return _case(fmt, index, name, mut, path, command)
    raise AssertionError(f"no mutation applies to {fmt} {path}")


def _tried(fn, rng: Random, t: Target) -> Mut | None:
    """fn's mutation, or None where it does not apply to this text (a character cp1252 lacks, no
    such line or value left after an earlier change)."""
    try:
        return fn(rng, t)
    except (UnicodeError, ValueError, IndexError, KeyError, StopIteration):
        return None


def _case(fmt: str, index: int, name: str, mut: Mut, path: str, command: tuple[str, ...]) -> Case:
    assert mut.expect in EXPECTATIONS, mut
    changes = {p: _bytes(v) for p, v in mut.others.items()}
    if mut.text is not Mut.UNCHANGED:
        changes[path] = _bytes(mut.text)
    return Case(fmt, index, name, mut.note, mut.expect, path, command, changes, tuple(mut.steps), mut.heavy,
                mut.says, mut.max_lines or (MAX_LINES_BIG if mut.heavy else MAX_LINES), mut.same_output)


def _bytes(v: str | bytes | None) -> bytes | None:
    return v.encode() if isinstance(v, str) else v


def cases(seed: int, per_format: int, formats: tuple[str, ...] | None = None) -> list[Case]:
    return [case_at(seed, fmt, i) for fmt in (formats or tuple(FORMATS)) for i in range(per_format)]


def spread(seed: int, total: int, formats: tuple[str, ...] | None = None) -> list[Case]:
    """`total` cases, the formats in turn."""
    names = list(formats or FORMATS)
    return [case_at(seed, names[i % len(names)], i // len(names)) for i in range(total)]


# ------------------------------------------------------------------ laying a case out


def apply_steps(files: dict[str, bytes | None], steps: tuple[dict, ...], stored: Path | None = None) -> None:
    """Recipes, in order: edit (find -> replace, latin-1 text for bytes), write (a file stored
    with the case), delete, grow (`unit` repeated after `after` to `bytes`), nest (`inner`
    wrapped `depth` times in open/close, in place of `find`), recode (newlines and encoding)."""
    for s in steps:
        path, op = s["path"], s["op"]
        data = files.get(path)
        if op == "delete":
            files[path] = None
        elif op == "write":
            files[path] = (stored / s["file"]).read_bytes()
        elif op == "edit":
            find, new = s["find"].encode("latin-1"), s["replace"].encode("latin-1")
            if data is None or data.count(find) != 1:
                raise ValueError(f"{path}: the text to edit is not there once: {s['find'][:60]!r}")
            files[path] = data.replace(find, new)
        elif op == "grow":  # `numbered`: each copy's # is its number
            after, unit = s["after"].encode("latin-1"), s["unit"].encode("latin-1")
            at = data.index(after) + len(after)
            n = max(1, (s["bytes"] - len(data)) // len(unit))
            grown = b"".join(unit.replace(b"#", b"%d" % i) for i in range(n)) if s.get("numbered") else unit * n
            files[path] = data[:at] + grown + data[at:]
        elif op == "nest":
            find, d = s["find"].encode("latin-1"), s["depth"]
            nested = s["open"].encode() * d + s["inner"].encode() + s["close"].encode() * d
            files[path] = data.replace(find, nested, 1)
        elif op == "recode":
            text = data.decode("utf-8").replace("\n", s.get("newline", "\n"))
            files[path] = (s.get("prefix", "").encode() if s.get("prefix") else b"") + text.encode(s["encoding"])
        else:
            raise ValueError(f"unknown step {op}")


def lay_out(case: Case, directory: Path, steps_from: Path | None = None) -> None:
    """The case's files under `directory`: the base files of its format, changed."""
    base = base_files()
    files: dict[str, bytes | None] = {p: base[p] for p in files_for(case.fmt)}
    files.update(case.changes)
    apply_steps(files, case.steps, steps_from)
    for rel, data in files.items():
        if data is None:
            continue
        p = directory / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)


def normalised(text: str, directory: Path) -> str:
    return text.replace(str(directory), "{d}")


def pattern_ok(pattern: str | None, text: str) -> bool:
    return pattern is None or re.search(pattern, text) is not None
