"""Running a mutated input through fablab and judging what it did (tests/inputfuzz.py makes the
cases): in this process (fablab's main(), its output captured), or in a worker process with a
memory limit and a deadline it is killed at (what may blow up: aliases, deep nesting, 10 MB).
Also the corpus of cases found: tests/corpus/inputs/<case>/case.json.

    python tests/inputfuzz_run.py --worker   # JSON lines in: {"seed","fmt","index"} or {"corpus": DIR}
"""
from __future__ import annotations

import contextlib
import faulthandler
import functools
import io
import json
import os
import re
import resource
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from dataclasses import asdict, dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from inputfuzz import MAX_JSON, Case, base_files, case_at, lay_out, normalised, pattern_ok  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "tests" / "corpus" / "inputs"
MEMORY_LIMIT = 3 * 2 ** 30  # a worker's address space: a billion laughs expanded ends as MemoryError, not an OOM
TRACEBACK = "Traceback (most recent call last)"
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\x9b]")  # ESC, CR, NUL, ...: a terminal acts on them


class Hang(BaseException):
    """The case ran past its deadline (raised by SIGALRM wherever fablab was)."""


@dataclass
class Result:
    code: int | None = None
    out: str = ""
    err: str = ""
    seconds: float = 0.0
    crash: str | None = None  # the exception that escaped main (or where a hang was)
    hang: bool = False
    written: str = ""  # the declaration `import -o` wrote


# ------------------------------------------------------------------ one case, in this process


def where(exc: BaseException) -> str:
    """`Type at harness/file.py:LINE (function)`: the innermost frame of fablab's own code."""
    frames = traceback.extract_tb(exc.__traceback__)
    ours = [f for f in frames if f"{os.sep}harness{os.sep}" in f.filename]
    f = (ours or frames or [None])[-1]
    if f is None:
        return type(exc).__name__
    inner = frames[-1]
    via = f" via {Path(inner.filename).name}:{inner.lineno}" if inner is not f else ""
    mark = f"{os.sep}harness{os.sep}"
    rel = "harness/" + f.filename.rsplit(mark, 1)[1] if mark in f.filename else f.filename
    return f"{type(exc).__name__} at {rel}:{f.lineno} ({f.name}){via}"


def _forget_failed_prints() -> None:
    """A print that failed (a string that is no text) stays in rich's buffer and fails every later
    print of the process: each case starts with empty consoles, as a new `fablab` process does."""
    from harness.cli import console

    for c in (console.out, console.err):
        with contextlib.suppress(Exception):
            del c._buffer[:]


def _inventory(path: str) -> tuple[int, str]:
    """What `fablab check --inventory FILE` does before it reaches a node: read, plan, check."""
    from harness.cli.console import visible
    from harness.cli.staged import load_reach
    from harness.core.errors import InputError

    try:
        reach, _ = load_reach(path)
    except InputError as e:
        return 2, f"error: {visible(str(e))}"  # as the CLI's consoles print it
    inv = reach.inventory
    nodes = sorted((n.name, n.address, str(n.kind), n.user, n.key, n.port, n.sudo, n.config_db) for n in inv.nodes)
    return 0, json.dumps({"topology": inv.topology, "known_hosts": inv.known_hosts, "nodes": nodes})


def run_argv(argv: list[str], deadline: float) -> Result:
    from harness.cli.main import main

    r = Result()
    # what a UTF-8 terminal or pipe takes: a string that is no text (half a UTF-16 pair) fails there too
    out, err = (io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="strict", write_through=True) for _ in "oe")
    main_thread = threading.current_thread() is threading.main_thread()

    def fire(signum, frame):
        raise Hang()

    old = signal.signal(signal.SIGALRM, fire) if main_thread else None
    start = time.monotonic()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            if main_thread:  # a hang in C code the alarm cannot reach ends the process, saying where
                with contextlib.suppress(ValueError, AttributeError, io.UnsupportedOperation):
                    faulthandler.dump_traceback_later(deadline * 3 + 30, exit=True, file=sys.__stderr__)
                signal.setitimer(signal.ITIMER_REAL, deadline)
            try:
                if argv[0] == "inventory":
                    r.code, text = _inventory(argv[1])
                    print(text)
                else:
                    r.code = main(argv)
            except SystemExit as e:
                r.code = e.code if isinstance(e.code, int) else 0 if e.code is None else 2
            finally:
                if main_thread:
                    signal.setitimer(signal.ITIMER_REAL, 0)
                    faulthandler.cancel_dump_traceback_later()
    except Hang as e:
        r.hang, r.crash = True, where(e)
    except KeyboardInterrupt:
        raise
    except BaseException as e:  # noqa: BLE001 - whatever escapes main is what this looks for
        r.crash = f"{where(e)}: {str(e)[:300]}"
    finally:
        if main_thread:
            signal.signal(signal.SIGALRM, old)
    r.seconds = time.monotonic() - start
    _forget_failed_prints()
    r.out, r.err = (s.buffer.getvalue().decode("utf-8", "replace") for s in (out, err))
    written = next((argv[i + 1] for i, a in enumerate(argv[:-1]) if a == "-o"), None)
    if r.code == 0 and written and Path(written).is_file():
        r.written = Path(written).read_text()
    return r


def run_case(case: Case, directory: Path, stored: Path | None = None) -> Result:
    lay_out(case, directory, stored)
    r = run_argv([a.replace("{d}", str(directory)) for a in case.command], case.deadline)
    r.out, r.err, r.written = (normalised(x, directory) for x in (r.out, r.err, r.written))
    return r


@functools.cache
def baseline(fmt: str, command: tuple[str, ...]) -> Result:
    """What the unmutated files of `fmt` give the command (in a directory of its own)."""
    plain = Case(fmt, -1, "none", "", "same", "", command)
    with tempfile.TemporaryDirectory(prefix="fablab-fuzz-base-") as d:
        r = run_case(plain, Path(d))
    assert r.code == 0 and not r.crash, \
        f"the unmutated {fmt} files fail {command}: {r.crash or (r.err + r.out)[-2000:]}"
    return r


def judge(case: Case, r: Result, base: Result | None = None) -> list[str]:
    """What is wrong with what the case did; [] when nothing."""
    found = []
    said = r.out + r.err
    if r.hang or r.seconds > case.deadline:
        found.append(f"hang: over {case.deadline:g} s" + (f" ({r.crash})" if r.crash else ""))
    elif r.crash:
        found.append(f"traceback: {r.crash}")
    elif TRACEBACK in said:
        found.append("a traceback printed: " + said[said.index(TRACEBACK):][-300:].replace("\n", " | "))
    if r.code is not None and r.code not in (0, 2, 3):
        found.append(f"exit {r.code}")
    if r.code is not None and not r.hang:
        if case.expect == "broken" and r.code == 0:
            found.append("exit 0 on a broken input")
        if case.expect in ("same", "faithful"):
            base = base or baseline(case.fmt, case.command)
            allowed = {base.code} | ({2} if case.expect == "faithful" else set())
            if r.code not in allowed:
                found.append(f"exit {r.code} where the unmutated input exits {base.code}"
                             + (f": {_first_error(said)}" if r.code == 2 else ""))
            elif r.code == base.code == 0 and case.same_output and _words(r) != _words(base):
                found.append("exit 0 with another result than the unmutated input's: "
                             + _first_change(base.out + base.written, r.out + r.written))
        if case.says and not pattern_ok(case.says, said):
            found.append(f"says nothing matching {case.says!r}")
    seen = r.err if "--json" in case.command else said
    raw = CONTROL.search(seen)
    if raw:  # fablab's consoles print no escape codes off a terminal: this one came from the input
        at = raw.start()
        found.append(f"a control character printed raw: {seen[max(0, at - 40):at + 20]!r}")
    lines = said.count("\n") if "--json" not in case.command else r.err.count("\n")
    if lines > case.max_lines:
        found.append(f"{lines:,} lines printed ({len(said):,} characters)")
    if len(r.out) > MAX_JSON:
        found.append(f"{len(r.out):,} characters printed")
    return found


def _words(r: Result) -> list[str]:
    """What was printed and written, word by word: a path of another length folds a line elsewhere."""
    return (r.out + r.written).split()


def _first_error(text: str) -> str:
    line = next((x for x in text.splitlines() if x.strip()), "")
    return line[:200]


def _first_change(a: str, b: str) -> str:
    for x, y in zip(a.splitlines(), b.splitlines()):
        if x != y:
            return f"{x.strip()[:90]!r} -> {y.strip()[:90]!r}"
    return f"{len(a.splitlines())} lines -> {len(b.splitlines())}"


# ------------------------------------------------------------------ the corpus


def load_corpus(root: Path = CORPUS) -> list[tuple[Path, Case]]:
    out = []
    for meta in sorted(root.glob("*/case.json")):
        d = json.loads(meta.read_text())
        out.append((meta.parent, Case(d["format"], 0, d["mutation"], d.get("note", ""), d["expect"], d.get("path", ""),
                                      tuple(d["command"]), {}, tuple(d.get("steps", ())), d.get("heavy", False),
                                      d.get("says"), d.get("max_lines", 400), d.get("same_output", True),
                                      d.get("deadline", 10.0), meta.parent.name)))
    return out


def edit_step(path: str, old: bytes, new: bytes) -> dict:
    """The smallest find -> replace of `old` into `new` whose find is in `old` once."""
    p = 0
    while p < min(len(old), len(new)) and old[p] == new[p]:
        p += 1
    s = 0
    while s < min(len(old), len(new)) - p and old[-1 - s] == new[-1 - s]:
        s += 1
    k = 8
    while True:
        a, b = max(0, p - k), min(len(old), len(old) - s + k)
        find = old[a:b]
        if old.count(find) == 1 or (a == 0 and b == len(old)):
            return {"op": "edit", "path": path, "find": find.decode("latin-1"),
                    "replace": new[a:len(new) - (len(old) - b)].decode("latin-1")}
        k *= 2


def keep(case: Case, found: list[str], directory: Path) -> Path:
    """The case as a corpus entry under `directory` (small: edits, recipes; a whole file only when the
    change is most of it)."""
    d = directory / re.sub(r"[^\w.+-]", "_", case.name)
    d.mkdir(parents=True, exist_ok=True)
    base, steps = base_files(), []
    for path, data in case.changes.items():
        if data is None:
            steps.append({"op": "delete", "path": path})
            continue
        step = edit_step(path, base[path], data)
        if len(step["find"]) + len(step["replace"]) > 8192 and len(data) < len(step["find"]) + len(step["replace"]):
            name = Path(path).name
            (d / name).write_bytes(data)
            step = {"op": "write", "path": path, "file": name}
        steps.append(step)
    doc = {"format": case.fmt, "mutation": case.mutation, "note": case.note, "expect": case.expect,
           "path": case.path, "command": list(case.command), "steps": steps + list(case.steps),
           "heavy": case.heavy, "says": case.says, "max_lines": case.max_lines, "same_output": case.same_output,
           "found": found}
    (d / "case.json").write_text(json.dumps(doc, indent=1, ensure_ascii=True) + "\n")
    return d


# ------------------------------------------------------------------ a worker process


def _worker() -> int:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
    proto = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # what fablab's children print never reaches the protocol
    corpus = {}
    for line in sys.stdin:
        req = json.loads(line)
        if "sleep" in req:  # the parent's deadline tested: a worker that does not answer
            time.sleep(req["sleep"])
            continue
        if "corpus" in req:
            stored = Path(req["corpus"])
            corpus = corpus or {str(p): c for p, c in load_corpus(stored.parent)}
            case = corpus[str(stored)]
        else:
            stored, case = None, case_at(req["seed"], req["fmt"], req["index"])
        d = Path(tempfile.mkdtemp(prefix="fablab-fuzz-"))
        try:
            r = run_case(case, d, stored)
            found = judge(case, r)
        except MemoryError as e:
            r, found = Result(crash=f"MemoryError: {e}"), [f"traceback: MemoryError {e}"]
        except Exception as e:  # noqa: BLE001 - the fuzzer's own fault, said as such
            r, found = Result(crash=where(e)), [f"the fuzzer failed: {where(e)}: {e}"]
        finally:
            shutil.rmtree(d, ignore_errors=True)
        r.out, r.err, r.written = r.out[-20000:], r.err[-20000:], ""
        lines = (r.out + r.err).count("\n")
        proto.write(json.dumps({"result": asdict(r), "found": found, "lines": lines}) + "\n")
        proto.flush()
    return 0


class Worker:
    """A child running cases one at a time; killed (its process group, which it leads) past a deadline."""

    def __init__(self, grace: float = 30.0) -> None:
        self.proc: subprocess.Popen | None = None
        self.grace = grace  # past the deadline: the worker's own alarm answers first, saying where

    def _start(self) -> subprocess.Popen:
        if self.proc is None or self.proc.poll() is not None:
            self.proc = subprocess.Popen([sys.executable, __file__, "--worker"], stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                                         start_new_session=True, cwd=ROOT)
        return self.proc

    def run(self, request: dict, deadline: float) -> tuple[Result, list[str]]:
        proc = self._start()
        start = time.monotonic()
        proc.stdin.write(json.dumps(request) + "\n")
        proc.stdin.flush()
        with selectors.DefaultSelector() as sel:
            sel.register(proc.stdout, selectors.EVENT_READ)
            ready = sel.select(timeout=deadline + self.grace)
        if not ready:
            self.close()
            said = f"hang: killed after {deadline + self.grace:g} s"
            return Result(hang=True, seconds=time.monotonic() - start), [said]
        line = proc.stdout.readline()
        if not line:
            code = proc.wait()
            self.proc = None
            return Result(code=code), [f"the worker died (exit {code}): a crash below Python, or out of memory"]
        doc = json.loads(line)
        return Result(**doc["result"]), doc["found"]

    def close(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)  # the worker's own group: it and what it started
            self.proc.wait()
        self.proc = None


if __name__ == "__main__" and sys.argv[1:] == ["--worker"]:
    sys.exit(_worker())
