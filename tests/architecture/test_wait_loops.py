"""One way to wait: every loop of harness/ that watches the clock goes through
harness/plumbing/wait.py, except at most three, each saying in a comment above it why
wait.until cannot serve it."""
from __future__ import annotations

import ast
from pathlib import Path

HARNESS = Path(__file__).resolve().parents[2] / "harness"
WAIT = HARNESS / "plumbing" / "wait.py"
CLOCK_NAMES = ("monotonic", "monotonic_ns", "clock", "deadline", "stop_at", "remaining")
ALLOWED = 3


def _reads_clock(node: ast.AST) -> bool:
    return any((isinstance(n, ast.Name) and any(c in n.id for c in CLOCK_NAMES))
               or (isinstance(n, ast.Attribute) and n.attr in CLOCK_NAMES) for n in ast.walk(node))


def _watches_clock(loop: ast.While) -> bool:
    """True if the loop's own code (not functions defined in it) ends on the clock: its test or
    a comparison in it reads a clock or a deadline, or it blocks with a timeout. A loop that
    only stamps what it saw with the time (a sampler) does not."""
    if _reads_clock(loop.test):
        return True
    todo = list(loop.body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        if isinstance(node, ast.Compare) and _reads_clock(node):
            return True
        if isinstance(node, ast.keyword) and node.arg == "timeout":
            return True
        todo.extend(ast.iter_child_nodes(node))
    return False


def clock_loops(root: Path = HARNESS) -> list[tuple[str, int, str]]:
    """(path, line, the comment above it) of every `while` loop that watches the clock."""
    found = []
    for path in sorted(root.rglob("*.py")):
        if path == WAIT:
            continue
        text = path.read_text()
        lines = text.splitlines()
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.While) and _watches_clock(node):
                above = []
                i = node.lineno - 2
                while i >= 0 and lines[i].strip().startswith("#"):
                    above.insert(0, lines[i].strip())
                    i -= 1
                found.append((str(path.relative_to(root.parent)), node.lineno, " ".join(above)))
    return found


def test_at_most_three_loops_watch_the_clock_outside_wait():
    loops = clock_loops()
    assert len(loops) <= ALLOWED, "loops that watch the clock; use wait.until/within/pause_until:\n" + "\n".join(
        f"{p}:{n}" for p, n, _ in loops)


def test_each_remaining_loop_says_why_not_wait_until():
    silent = [f"{p}:{n}" for p, n, why in clock_loops() if "wait.until" not in why]
    assert not silent, f"say above each loop why wait.until cannot serve it: {silent}"


def test_the_scan_sees_a_hand_written_deadline_loop(tmp_path):
    (tmp_path / "m.py").write_text(
        "import time\n"
        "def f(ok):\n"
        "    deadline = time.monotonic() + 5\n"
        "    while not ok():\n"
        "        if time.monotonic() > deadline:\n"
        "            raise TimeoutError\n"
        "def g(items):\n"
        "    while items:\n"
        "        items.pop()\n")
    assert [(n, why) for _, n, why in clock_loops(tmp_path)] == [(4, "")]
