"""A signal whose KeyboardInterrupt was swallowed is raised again at the next checkpoint."""
from __future__ import annotations

import signal

import pytest

from harness.plumbing import interrupt, wait


def _swallowed_signal() -> None:
    try:
        interrupt.handler(signal.SIGTERM, None)
    except KeyboardInterrupt:
        pass


def test_checkpoint_is_quiet_without_a_signal():
    interrupt.checkpoint()


def test_a_swallowed_signal_ends_a_wait():
    _swallowed_signal()
    with pytest.raises(KeyboardInterrupt):
        wait.until(lambda: False, timeout=5, what="never")
    assert not interrupt.pending()


def test_checkpoint_raises_once():
    _swallowed_signal()
    with pytest.raises(KeyboardInterrupt):
        interrupt.checkpoint()
    interrupt.checkpoint()


def test_handled_forgets_the_signal():
    _swallowed_signal()
    interrupt.handled()
    interrupt.checkpoint()


_SCRIPT = """
import sys, time
sys.path.insert(0, {root!r})
from harness.plumbing import interrupt
def main():
    print("ready", flush=True)
    if {wait}:
        time.sleep(30)
    return 0
sys.exit(interrupt.run_main(main))
"""


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_script_run_by_run_main_ends_on_a_signal_with_130_and_no_traceback(signum):
    """As a bench started in the background by a shell: SIGINT ignored when it starts (the
    shell's doing), and still interrupted; the control returns its own code, saying nothing."""
    import subprocess
    import sys
    from pathlib import Path

    root = str(Path(__file__).resolve().parents[2])

    def run(wait_: bool) -> subprocess.Popen:
        return subprocess.Popen([sys.executable, "-c", _SCRIPT.format(root=root, wait=wait_)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))

    control = run(False)
    out, err = control.communicate(timeout=30)
    assert (control.returncode, out, err) == (0, "ready\n", "")
    child = run(True)
    assert child.stdout.readline() == "ready\n"
    child.send_signal(signum)
    _, err = child.communicate(timeout=30)
    assert child.returncode == 130
    assert err == "interrupted\n"
