"""Every traffic module's main() speaks the same protocol (harness/traffic/process.py; no root)."""
from __future__ import annotations

import signal
import threading

import pytest

from harness.traffic import receiver, sender, tcp
from harness.traffic.flows import UdpFlow, from_json, to_json
from harness.traffic.process import serve


@pytest.fixture(autouse=True)
def handlers_put_back():
    saved = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)}
    yield
    for signum, handler in saved.items():
        signal.signal(signum, handler)


def test_a_spec_is_read_run_and_its_result_printed_as_json(tmp_path, capsys):
    spec = tmp_path / "spec.json"
    spec.write_text(to_json(UdpFlow(flow_id=7, dst="10.0.0.1")))
    seen: list[tuple[UdpFlow, bool]] = []

    def run(flow: UdpFlow, stop: threading.Event) -> UdpFlow:
        seen.append((flow, stop.is_set()))
        return UdpFlow(flow_id=flow.flow_id + 1, dst=flow.dst)

    assert serve("harness.traffic.x", "X.", lambda text, group: from_json(UdpFlow, text), run,
                 ["--spec", str(spec)]) == 0
    assert seen == [(UdpFlow(flow_id=7, dst="10.0.0.1"), False)]
    assert from_json(UdpFlow, capsys.readouterr().out) == UdpFlow(flow_id=8, dst="10.0.0.1")
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_IGN  # a late stop request cannot kill it


@pytest.mark.parametrize("main, name", [(receiver.main, "receiver"), (sender.main, "sender"), (tcp.main, "tcp")])
def test_a_bad_spec_is_one_line_on_stderr_and_exit_1(main, name, tmp_path, capsys):
    spec = tmp_path / "spec.json"
    for text in ("not json", "[1, 2]"):
        spec.write_text(text)
        assert main(["--spec", str(spec)]) == 1
        out, err = capsys.readouterr()
        assert out == "" and err.startswith(f"{name}: ") and err.count("\n") == 1


def test_group_is_an_option_only_where_offered(capsys):
    with pytest.raises(SystemExit):
        tcp.main(["--group", "--spec", "-"])
    assert "unrecognized arguments: --group" in capsys.readouterr().err
